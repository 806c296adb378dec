// `luminal run DIR (--prompt TEXT | --prompt-ids 1,2,3) [--max-tokens N] [--json] ...`: greedy
// generation with a Llama-family model on the CPU backend; streams the text (or the ids when the
// folder has no tokenizer.json), then prints load and compile times, TTFT, TPOT and tokens/s.
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>

#include "apps/luminal/commands.hpp"
#include "luminal/core/error.hpp"
#include "luminal/cpu/cpu_backend.hpp"
#include "luminal/io/hf_config.hpp"
#include "luminal/io/tokenizer.hpp"
#include "luminal/models/causal_lm.hpp"

namespace luminal::cli {

namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

std::vector<int32_t> parse_ids(const std::string& text) {
  std::vector<int32_t> ids;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    try {
      size_t used = 0;
      const long v = std::stol(item, &used);
      if (used != item.size() || v < 0 || v > INT32_MAX) throw std::invalid_argument(item);
      ids.push_back(static_cast<int32_t>(v));
    } catch (const std::exception&) {
      throw Error("--prompt-ids: '" + item + "' is not a token id; give ids like 1,17,42");
    }
  }
  if (ids.empty()) throw Error("--prompt-ids: no ids given; give ids like 1,17,42");
  return ids;
}

}  // namespace

void add_run(CLI::App& app) {
  struct Opts {
    std::string dir, prompt, prompt_ids;
    int max_tokens = 64, threads = 0, slots = 2048, max_step = 128;
    bool json = false;
  };
  auto o = std::make_shared<Opts>();
  auto* cmd = app.add_subcommand(
      "run", "Generate text greedily with a Llama, Mistral, Qwen2 or Qwen3 model (CPU backend)");
  cmd->add_option("DIR", o->dir, "model folder: config.json, *.safetensors, tokenizer.json")
      ->required();
  auto* p = cmd->add_option("--prompt", o->prompt, "the prompt text (needs tokenizer.json)");
  auto* pi = cmd->add_option("--prompt-ids", o->prompt_ids, "the prompt as token ids: 1,17,42");
  p->excludes(pi);
  cmd->add_option("--max-tokens", o->max_tokens, "tokens to generate (default 64)")
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--threads", o->threads, "CPU threads (default: all)")
      ->check(CLI::Range(0, 4096));
  cmd->add_option("--context", o->slots, "longest context, the KV cache size (default 2048)")
      ->check(CLI::Range(2, 1 << 20));
  cmd->add_option("--max-step", o->max_step, "longest prefill chunk (default 128)")
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_flag("--json", o->json, "print one JSON object: prompt ids, generated ids, timings");
  cmd->callback([o] {
    const std::filesystem::path d(o->dir);
    require_model_folder(d);
    if (o->prompt.empty() && o->prompt_ids.empty())
      throw Error("give a prompt: --prompt TEXT or --prompt-ids 1,17,42");
    const bool has_tok = std::filesystem::exists(d / "tokenizer.json");
    std::optional<io::Tokenizer> tok;
    if (has_tok) tok = io::Tokenizer::from_folder(d);
    std::vector<int32_t> prompt;
    if (!o->prompt.empty()) {
      if (!tok)
        throw Error((d / "tokenizer.json").string() +
                    ": not found; --prompt needs the tokenizer (or give --prompt-ids)");
      prompt = tok->encode(o->prompt, true);
    } else {
      prompt = parse_ids(o->prompt_ids);
    }
    const io::ModelConfig cfg = io::parse_config(d / "config.json");
    for (int32_t id : prompt)
      if (id >= cfg.vocab_size)
        throw Error("prompt id " + std::to_string(id) + " is outside the vocabulary of " +
                    std::to_string(cfg.vocab_size));
    if (static_cast<int64_t>(prompt.size()) + o->max_tokens > o->slots)
      throw Error("the prompt (" + std::to_string(prompt.size()) + " tokens) plus " +
                  std::to_string(o->max_tokens) + " new tokens exceed the context of " +
                  std::to_string(o->slots) + "; raise --context or lower --max-tokens");

    cpu::CpuBackend cpu(o->threads);
    models::DecoderShape shape;
    shape.slots = o->slots;
    shape.max_step = std::min(o->max_step, o->slots);
    const auto t_load = Clock::now();
    models::CausalLM lm = models::CausalLM::load(
        d, cpu, shape, CompileOptions().search_graph_limit(20).verbose(false));
    const double load_ms = ms_since(t_load);
    auto stream = tok ? std::optional(tok->stream_decoder(true)) : std::nullopt;
    std::vector<int32_t> generated;
    std::vector<double> step_ms;
    const int64_t V = lm.vocab_size();
    const auto t0 = Clock::now();
    std::vector<float> logits = lm.forward(prompt);
    double ttft = 0;
    for (int t = 0; t < o->max_tokens; ++t) {
      const float* last = logits.data() + logits.size() - static_cast<size_t>(V);
      const int32_t next = static_cast<int32_t>(std::max_element(last, last + V) - last);
      if (t == 0) ttft = ms_since(t0);
      generated.push_back(next);
      if (!o->json) {
        if (stream)
          std::cout << stream->push(next) << std::flush;
        else
          std::cout << (t ? "," : "") << next << std::flush;
      }
      if (std::find(cfg.eos_token_ids.begin(), cfg.eos_token_ids.end(), next) !=
          cfg.eos_token_ids.end())
        break;
      if (t + 1 == o->max_tokens) break;
      const auto ts = Clock::now();
      logits = lm.forward({next});
      step_ms.push_back(ms_since(ts));
    }
    double tpot = 0;
    for (double s : step_ms)
      tpot += s / static_cast<double>(step_ms.size());
    if (o->json) {
      std::cout << "{\"prompt_ids\": [";
      for (size_t i = 0; i < prompt.size(); ++i)
        std::cout << (i ? ", " : "") << prompt[i];
      std::cout << "], \"generated_ids\": [";
      for (size_t i = 0; i < generated.size(); ++i)
        std::cout << (i ? ", " : "") << generated[i];
      std::cout << "], \"load_ms\": " << load_ms << ", \"ttft_ms\": " << ttft
                << ", \"tpot_ms\": " << tpot << "}\n";
      return;
    }
    if (stream) std::cout << stream->flush();
    std::cout << "\n";
    std::cerr << "load + compile: " << load_ms << " ms; prompt " << prompt.size()
              << " tokens, generated " << generated.size() << "\nTTFT: " << ttft
              << " ms\nTPOT: " << tpot << " ms\n"
              << (tpot > 0 ? 1000.0 / tpot : 0) << " tok/s\n";
  });
}

}  // namespace luminal::cli
