// `luminal bench DIR [-p 128] [-n 128] [-r 1] [--backend cpu|cuda] [--threads N] [--temperature T
// [--top-k K] [--top-p P]] [--json]`: loads a model, runs a short warm-up generation, then times a
// prefill of p tokens and the generation of n tokens after it, r times: the rates printed are the
// means of the r runs with their standard deviations, as llama-bench's -r reports them. Greedy
// unless --temperature > 0, which compiles and uses the in-graph sampler with the filters asked
// for; EOS ids are ignored so that all n are generated. Prints load + compile time, prefill tok/s,
// TTFT, TPOT, decode tok/s, peak memory (the process's VmHWM) and what the session allocated
// (weights, KV cache, arena, other buffers), as a table or one JSON object. The graph computes
// only the last position's logits (models::Logits::Last).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "apps/luminal/commands.hpp"
#include "apps/luminal/progress.hpp"
#include "luminal/core/error.hpp"
#include "luminal/io/hf_config.hpp"
#include "luminal/models/causal_lm.hpp"
#include "luminal/models/model_files.hpp"
#include "luminal/runtime/session.hpp"

namespace luminal::cli {

namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

// A few timings: their mean and (sample) standard deviation.
struct Samples {
  std::vector<double> v;
  void add(double x) { v.push_back(x); }
  double mean() const {
    double s = 0;
    for (double x : v)
      s += x;
    return v.empty() ? 0 : s / static_cast<double>(v.size());
  }
  double sd() const {
    if (v.size() < 2) return 0;
    const double m = mean();
    double s = 0;
    for (double x : v)
      s += (x - m) * (x - m);
    return std::sqrt(s / static_cast<double>(v.size() - 1));
  }
};

std::string fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

}  // namespace

void add_bench(CLI::App& app) {
  struct Opts {
    std::string dir;
    int prompt = 128, gen = 128, reps = 1;
    double temperature = 0, top_p = 1;
    int64_t top_k = 0;
    bool json = false;
    BackendChoice backend;
    std::string dtype;
  };
  auto o = std::make_shared<Opts>();
  auto* cmd = app.add_subcommand(
      "bench", "Time prefill and decoding of a model: tok/s, TTFT, TPOT, peak memory");
  cmd->add_option("MODEL", o->dir,
                  "a Hugging Face folder or a .gguf file (default: SmolLM2-135M-Instruct from "
                  "`make run`)");
  cmd->add_option("-p,--prompt-tokens", o->prompt, "prompt tokens to prefill (default 128)")
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_option("-n,--gen-tokens", o->gen, "tokens to generate after it (default 128)")
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_option("-r,--repetitions", o->reps,
                  "time the prefill and the generation this many times and print the means "
                  "(default 1; llama-bench's -r)")
      ->check(CLI::Range(1, 1000));
  add_backend_options(cmd, o->backend);
  add_dtype_option(cmd, o->dtype);
  cmd->add_option("--temperature", o->temperature,
                  "> 0: sample with the in-graph sampler at this temperature (default 0: greedy)")
      ->check(CLI::Range(0.0, 1e6));
  cmd->add_option("--top-k", o->top_k, "with --temperature: top-k (default 0: off)")
      ->check(CLI::Range(int64_t{0}, int64_t{1} << 30));
  cmd->add_option("--top-p", o->top_p, "with --temperature: top-p (default 1: off)")
      ->check(CLI::Range(0.0, 1.0));
  cmd->add_flag("--json", o->json, "print one JSON object instead of a table");
  cmd->callback([o] {
    const std::filesystem::path d = model_path(o->dir);
    models::OpenOptions oo;
    oo.tokenizer = false;
    const models::ModelFiles model = models::open_model(d, oo);
    const io::ModelConfig& cfg = model.config;
    const std::unique_ptr<Backend> backend = make_backend(o->backend);
    models::DecoderShape shape;
    shape.slots = o->prompt + o->gen;
    shape.max_step = std::min(o->prompt, 512);
    shape.logits = models::Logits::Last;  // generation reads only the last position's
    shape.dtype = model_dtype(o->dtype, cfg, *backend);
    shape.router = router_form(*backend);
    models::SamplingConfig sampling;
    sampling.temperature = o->temperature;
    sampling.top_k = o->top_k;
    sampling.top_p = o->top_p > 0 ? o->top_p : 1;
    sampling.seed = 1;
    const models::SamplerShape head = models::SamplerShape::needed_by(sampling);
    const auto t_load = Clock::now();
    LoadBar bar;
    models::CausalLM lm =
        models::CausalLM::load(model, *backend, shape, compile_options(20), bar.callback(), head);
    const double load_ms = ms_since(t_load);
    // A fixed prompt of ids spread over the vocabulary (the ids do not change the work).
    std::vector<int32_t> prompt(static_cast<size_t>(o->prompt));
    for (size_t i = 0; i < prompt.size(); ++i)
      prompt[i] = static_cast<int32_t>((i * 7919 + 13) % static_cast<size_t>(cfg.vocab_size));
    lm.generate(prompt, std::min(o->gen, 2), sampling);  // warm-up
    // Per run: TTFT, TPOT and their rates; the figures printed are the means over the runs.
    Samples ttfts, tpots, prefill_rates, decode_rates;
    for (int r = 0; r < o->reps; ++r) {
      lm.reset();
      std::vector<double> steps;
      double ttft = 0;
      const auto t0 = Clock::now();
      auto last = t0;
      bool first = true;
      lm.generate(prompt, o->gen, sampling, [&](int32_t, std::string_view) {
        const auto now = Clock::now();
        if (first)
          ttft = ms_since(t0), first = false;
        else
          steps.push_back(std::chrono::duration<double, std::milli>(now - last).count());
        last = now;
        return true;
      });
      double tpot = 0;
      for (double s : steps)
        tpot += s / static_cast<double>(steps.size());
      ttfts.add(ttft);
      tpots.add(tpot);
      prefill_rates.add(ttft > 0 ? o->prompt * 1000.0 / ttft : 0);
      decode_rates.add(tpot > 0 ? 1000.0 / tpot : 0);
    }
    const double ttft = ttfts.mean(), tpot = tpots.mean();
    const double prefill_tok_s = prefill_rates.mean(), decode_tok_s = decode_rates.mean();
    const uint64_t rss = peak_rss_bytes();
    const SessionMemory mem = session_memory(lm);
    const std::string name = backend->name();
    const std::string weights = weights_line(lm), kernels = kernels_line(lm, *backend);
    if (o->json) {
      std::ostringstream j;
      j << "{\"model\": \""
        << escape(d.filename().empty() ? d.parent_path().filename().string()
                                       : d.filename().string())
        << "\", \"backend\": \"" << escape(name) << "\", \"prompt_tokens\": " << o->prompt
        << ", \"gen_tokens\": " << o->gen << ", \"repetitions\": " << o->reps
        << ", \"sampler\": " << (head.sampler ? "true" : "false")
        << ", \"load_ms\": " << fixed(load_ms, 1)
        << ", \"prefill_tok_s\": " << fixed(prefill_tok_s, 2) << ", \"ttft_ms\": " << fixed(ttft, 3)
        << ", \"prefill_tok_s_sd\": " << fixed(prefill_rates.sd(), 2)
        << ", \"tpot_ms\": " << fixed(tpot, 3) << ", \"decode_tok_s\": " << fixed(decode_tok_s, 2)
        << ", \"decode_tok_s_sd\": " << fixed(decode_rates.sd(), 2)
        << ", \"peak_rss_bytes\": " << rss << ", \"session_bytes\": " << mem.total
        << ", \"kv_cache_bytes\": " << mem.kv_cache << ", \"arena_bytes\": " << mem.arena
        << ", \"weights\": \"" << escape(weights) << "\", \"weight_kernels\": \"" << escape(kernels)
        << "\"}\n";
      std::cout << j.str();
      return;
    }
    auto mib = [](uint64_t b) { return fixed(static_cast<double>(b) / (1 << 20), 1) + " MiB"; };
    // With -r > 1: "+- sd" after each rate, and the count of runs.
    auto sd = [&](const Samples& x) {
      return o->reps > 1 ? " +- " + fixed(x.sd(), 2) : std::string();
    };
    const std::string runs = o->reps > 1 ? ", mean of " + std::to_string(o->reps) + " runs" : "";
    std::cout << "model           " << d.string() << "\n"
              << "backend         " << name << "\n"
              << "weights         " << weights << "\n"
              << "weight kernels  " << kernels << "\n"
              << "load + compile  " << fixed(load_ms, 1) << " ms\n"
              << "prefill         " << o->prompt << " tokens, " << fixed(prefill_tok_s, 2)
              << sd(prefill_rates) << " tok/s (TTFT " << fixed(ttft, 3) << " ms" << runs << ")\n"
              << "decode          " << o->gen << " tokens, " << fixed(decode_tok_s, 2)
              << sd(decode_rates) << " tok/s (TPOT " << fixed(tpot, 3) << " ms" << runs << ")"
              << (head.sampler ? ", sampled in the graph" : ", greedy") << "\n"
              << "peak memory     " << mib(rss) << " resident (VmHWM)\n"
              << "session         " << memory_line(mem) << "\n";
  });
}

}  // namespace luminal::cli
