// `luminal run DIR (--prompt TEXT | --prompt-ids 1,2,3 | --chat) [--max-tokens N] [--json] ...`:
// generation with a Llama-family model on the CPU or CUDA backend (--backend), sampled inside the
// graph (greedy by default; --temperature, --top-k, --top-p, --min-p, --repeat-penalty, --seed;
// the defaults come from generation_config.json when it sets do_sample); stops at the EOS ids of
// config.json and generation_config.json (unless --ignore-eos) and at --stop strings; streams the
// text (or the ids when the folder has no tokenizer.json), then prints load and compile times,
// TTFT, the time from the start to the first token, TPOT, tokens/s and peak memory. The graph
// computes only the last position's logits (models::Logits::Last).
//
// The sampler is compiled into the graph only when the settings sample (temperature > 0 or a
// repetition penalty), with only the filters they use (top-k, top-p); greedy decoding compiles
// just the argmax of the last logits.
//
// --chat renders the prompt with the model's chat template as a user message (--system TEXT: a
// system message first) with the generation prompt. --chat without --prompt is interactive: each
// line of stdin is a user turn; the whole conversation is rendered every turn and only the ids
// after the longest common prefix with what the KV cache holds are fed (the cache is rewound to
// that prefix; none in common: reset and feed everything). Usually the prefix is everything
// before the new turn; it is shorter where the re-tokenized answer differs from the generated ids.
// It stops at the end of the input.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>

#include "apps/luminal/commands.hpp"
#include "apps/luminal/progress.hpp"
#include "luminal/core/error.hpp"
#include "luminal/io/chat_template.hpp"
#include "luminal/io/hf_config.hpp"
#include "luminal/io/tokenizer.hpp"
#include "luminal/models/causal_lm.hpp"
#include "luminal/models/model_files.hpp"
#include "luminal/runtime/session.hpp"

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

// One generation, streamed to stdout (text, or comma-separated ids without a tokenizer, nothing
// with `quiet`), with its timings.
struct Timed {
  models::Generation out;
  std::string printed;
  double ttft = 0, tpot = 0;
};
Timed generate_streamed(models::CausalLM& lm, const std::vector<int32_t>& prompt, int max_tokens,
                        const models::SamplingConfig& sampling, const models::StopConditions& stop,
                        bool quiet) {
  Timed r;
  std::vector<double> step_ms;
  const auto t0 = Clock::now();
  auto last = t0;
  int count = 0;
  r.out = lm.generate(
      prompt, max_tokens, sampling,
      [&](int32_t id, std::string_view text) {
        const auto now = Clock::now();
        if (count == 0)
          r.ttft = ms_since(t0);
        else
          step_ms.push_back(std::chrono::duration<double, std::milli>(now - last).count());
        last = now;
        if (!quiet) {
          if (stop.tokenizer) {
            std::cout << text << std::flush;
            r.printed += text;
          } else {
            std::cout << (count ? "," : "") << id << std::flush;
          }
        }
        ++count;
        return true;
      },
      stop);
  for (double s : step_ms)
    r.tpot += s / static_cast<double>(step_ms.size());
  return r;
}

}  // namespace

void add_run(CLI::App& app) {
  struct Opts {
    std::string dir, prompt, prompt_ids, system;
    int max_tokens = 64, slots = 2048, max_step = 128;
    double budget = 20;
    bool json = false, chat = false, ignore_eos = false;
    std::optional<double> temperature, top_p, min_p, repeat_penalty;
    std::optional<int64_t> top_k;
    uint64_t seed = 0;
    std::vector<std::string> stop;
    BackendChoice backend;
    std::string dtype;
  };
  auto o = std::make_shared<Opts>();
  auto* cmd = app.add_subcommand(
      "run", "Generate text with a Llama, Mistral, Qwen2/3, Gemma 3, Qwen3-MoE or Mixtral model");
  cmd->add_option("MODEL", o->dir,
                  "a Hugging Face folder (config.json, *.safetensors, tokenizer.json) or a .gguf "
                  "file (default: SmolLM2-135M-Instruct from `make run`)");
  auto* p = cmd->add_option("--prompt", o->prompt, "the prompt text (needs tokenizer.json)");
  auto* pi = cmd->add_option("--prompt-ids", o->prompt_ids, "the prompt as token ids: 1,17,42");
  p->excludes(pi);
  cmd->add_flag("--chat", o->chat,
                "apply the model's chat template to --prompt (a user message); without --prompt: "
                "interactive, one user turn per line of stdin");
  cmd->add_option("--system", o->system, "with --chat: the system message");
  cmd->add_option("--max-tokens", o->max_tokens, "tokens to generate (default 64)")
      ->check(CLI::Range(1, 1 << 20));
  add_backend_options(cmd, o->backend);
  add_dtype_option(cmd, o->dtype);
  cmd->add_option("--context", o->slots, "longest context, the KV cache size (default 2048)")
      ->check(CLI::Range(2, 1 << 20));
  cmd->add_option("--max-step", o->max_step, "longest prefill chunk (default 128)")
      ->check(CLI::Range(1, 1 << 20));
  cmd->add_option("--search-budget", o->budget,
                  "seconds the first run may spend searching each bucket's program (default 20; "
                  "later runs load it from the compile cache)")
      ->check(CLI::Range(0.0, 1e6));
  cmd->add_option("--temperature", o->temperature,
                  "sampling temperature, >= 0; 0 = greedy (default: generation_config.json's "
                  "when it sets do_sample, else 0)");
  cmd->add_option("--top-k", o->top_k, "keep the k most likely tokens, >= 0 (0 = off)");
  cmd->add_option("--top-p", o->top_p, "nucleus sampling mass, in (0, 1] (1 = off)");
  cmd->add_option("--min-p", o->min_p,
                  "drop tokens below min-p times the top probability, in [0, 1] (0 = off)");
  cmd->add_option("--repeat-penalty", o->repeat_penalty,
                  "repetition penalty over the context's tokens, > 0 (1 = off)");
  cmd->add_option("--seed", o->seed,
                  "random seed (default 0); the same seed repeats the draws (interactive turns use "
                  "seed, seed + 1, ...)");
  cmd->add_option("--stop", o->stop, "stop when the text contains STR (repeatable)");
  cmd->add_flag("--ignore-eos", o->ignore_eos,
                "do not stop at the EOS ids: generate all --max-tokens tokens (for benchmarks "
                "and parity runs)");
  cmd->add_flag("--json", o->json,
                "print one JSON object: prompt ids, generated ids, sampling settings, timings");
  cmd->callback([o] {
    const std::filesystem::path d = model_path(o->dir);
    const bool interactive = o->chat && o->prompt.empty();
    if (o->chat && !o->prompt_ids.empty())
      throw Error(
          "--chat renders text: give --prompt TEXT (or no prompt for interactive mode), "
          "not --prompt-ids");
    if (!o->system.empty() && !o->chat) throw Error("--system needs --chat");
    if (interactive && o->json)
      throw Error("--json needs a single prompt: give --prompt TEXT with --chat");
    if (o->prompt.empty() && o->prompt_ids.empty() && !o->chat)
      throw Error("give a prompt: --prompt TEXT, --prompt-ids 1,17,42 or --chat");
    // Sampling: generation_config.json's defaults (when it sets do_sample), then the flags.
    const auto t_open = Clock::now();
    models::ModelFiles model = models::open_model(d);
    const models::GenerationDefaults& gen = model.generation;
    models::SamplingConfig sampling = gen.sampling;
    auto check = [](const char* flag, double v, bool ok, const char* range) {
      if (!ok) {
        std::ostringstream m;
        m << flag << ": " << v << " is outside the valid range " << range;
        throw Error(m.str());
      }
      return v;
    };
    if (o->temperature)
      sampling.temperature =
          check("--temperature", *o->temperature,
                *o->temperature >= 0 && std::isfinite(*o->temperature), ">= 0 (0 = greedy)");
    if (o->top_k)
      sampling.top_k = static_cast<int64_t>(
          check("--top-k", static_cast<double>(*o->top_k), *o->top_k >= 0, ">= 0 (0 = off)"));
    if (o->top_p)
      sampling.top_p =
          check("--top-p", *o->top_p, *o->top_p > 0 && *o->top_p <= 1, "(0, 1] (1 = off)");
    if (o->min_p)
      sampling.min_p =
          check("--min-p", *o->min_p, *o->min_p >= 0 && *o->min_p <= 1, "[0, 1] (0 = off)");
    if (o->repeat_penalty)
      sampling.repetition_penalty =
          check("--repeat-penalty", *o->repeat_penalty,
                *o->repeat_penalty > 0 && std::isfinite(*o->repeat_penalty), "> 0 (1 = off)");
    sampling.seed = o->seed;
    for (const std::string& st : o->stop)
      if (st.empty()) throw Error("--stop: the stop string is empty");
    const bool has_tok = model.tokenizer.has_value();
    const std::string no_tok = model.gguf ? d.string() + ": the file has no tokenizer"
                                          : (d / "tokenizer.json").string() + ": not found";
    if (!o->stop.empty() && !has_tok)
      throw Error(no_tok + "; --stop needs the tokenizer to compare text");
    if (o->chat && !has_tok) throw Error(no_tok + "; --chat needs the tokenizer");
    std::optional<io::Tokenizer>& tok = model.tokenizer;
    std::vector<io::ChatMessage> conversation;
    if (o->chat) {
      if (!model.chat_template)
        throw Error(d.string() + ": the model has no chat template; --chat needs one");
      if (!o->system.empty()) conversation.push_back({"system", o->system});
    }
    auto render = [&] {
      return tok->encode(model.chat_template->render(conversation, true, model.template_variables),
                         false);
    };
    std::vector<int32_t> prompt;
    if (o->chat && !interactive) {
      conversation.push_back({"user", o->prompt});
      prompt = render();
    } else if (!o->prompt.empty()) {
      if (!tok) throw Error(no_tok + "; --prompt needs the tokenizer (or give --prompt-ids)");
      prompt = tok->encode(o->prompt, true);
    } else if (!interactive) {
      prompt = parse_ids(o->prompt_ids);
    }
    const io::ModelConfig& cfg = model.config;
    for (int32_t id : prompt)
      if (id >= cfg.vocab_size)
        throw Error("prompt id " + std::to_string(id) + " is outside the vocabulary of " +
                    std::to_string(cfg.vocab_size));
    if (static_cast<int64_t>(prompt.size()) + o->max_tokens > o->slots)
      throw Error("the prompt (" + std::to_string(prompt.size()) + " tokens) plus " +
                  std::to_string(o->max_tokens) + " new tokens exceed the context of " +
                  std::to_string(o->slots) + "; raise --context or lower --max-tokens");

    const std::unique_ptr<Backend> backend = make_backend(o->backend);
    models::DecoderShape shape;
    shape.slots = o->slots;
    shape.max_step = std::min(o->max_step, o->slots);
    shape.logits = models::Logits::Last;  // generation reads only the last position's
    shape.dtype = model_dtype(o->dtype, cfg, *backend);
    shape.router = router_form(*backend);
    LoadBar bar;
    // Greedy: only the argmax is compiled; sampling: only the filters the settings use.
    models::CausalLM lm =
        models::CausalLM::load(model, *backend, shape, compile_options(o->budget), bar.callback(),
                               models::SamplerShape::needed_by(sampling));
    const double load_ms = ms_since(t_open);
    // Whether the programs came from the compile cache (a later start) or were searched.
    bool from_cache = true;
    for (const SearchReport& r : lm.session().reports())
      from_cache = from_cache && r.cached;
    std::cerr << "luminal: programs " << (from_cache ? "loaded from the compile cache" : "searched")
              << "\n";
    std::cerr << "luminal: weights " << weights_line(lm) << "\n"
              << "luminal: weight kernels " << kernels_line(lm, *backend) << "\n";
    models::StopConditions stop;
    if (!o->ignore_eos) stop.eos_ids = model.eos_ids;
    stop.strings = o->stop;
    if (tok) stop.tokenizer = &*tok;

    if (interactive) {
      std::cerr << "load + compile: " << load_ms << " ms; one user turn per line, end with EOF\n";
      const bool tty = isatty(STDIN_FILENO) != 0;
      std::string line;
      for (int turn = 1;; ++turn) {
        if (tty) std::cerr << "> " << std::flush;
        if (!std::getline(std::cin, line)) break;
        if (!line.empty() && line.back() == '\r') line.pop_back();
        conversation.push_back({"user", line});
        const std::vector<int32_t> ids = render();
        if (static_cast<int64_t>(ids.size()) + o->max_tokens > o->slots)
          throw Error("the conversation (" + std::to_string(ids.size()) + " tokens) plus " +
                      std::to_string(o->max_tokens) + " new tokens exceed the context of " +
                      std::to_string(o->slots) + "; raise --context or lower --max-tokens");
        // The longest common prefix of the cache and the new ids stays (CausalLM::continue_from).
        const size_t reused = lm.continue_from(ids, sampling);
        const std::vector<int32_t> fresh(ids.begin() + static_cast<std::ptrdiff_t>(reused),
                                         ids.end());
        models::SamplingConfig s = sampling;
        s.seed = o->seed + static_cast<uint64_t>(turn - 1);
        const Timed r = generate_streamed(lm, fresh, o->max_tokens, s, stop, false);
        std::cout << "\n" << std::flush;
        conversation.push_back({"assistant", r.out.text});
        std::cerr << "[turn " << turn << ": prompt " << ids.size() << " tokens (" << reused
                  << " reused from the cache), generated " << r.out.tokens.size()
                  << " (stop: " << models::stop_name(r.out.stop) << "), TTFT " << r.ttft << " ms, "
                  << (r.tpot > 0 ? 1000.0 / r.tpot : 0) << " tok/s]\n";
      }
      return;
    }

    const double before_generate = ms_since(t_open);
    const Timed r = generate_streamed(lm, prompt, o->max_tokens, sampling, stop, o->json);
    const double first_token = before_generate + r.ttft;  // from the start of the command
    const models::Generation& out = r.out;
    const std::vector<int32_t>& generated = out.tokens;
    if (o->json) {
      std::cout << "{\"prompt_ids\": [";
      for (size_t i = 0; i < prompt.size(); ++i)
        std::cout << (i ? ", " : "") << prompt[i];
      std::cout << "], \"generated_ids\": [";
      for (size_t i = 0; i < generated.size(); ++i)
        std::cout << (i ? ", " : "") << generated[i];
      std::cout << "], \"stop_reason\": \"" << models::stop_name(out.stop)
                << "\", \"sampling\": {\"temperature\": " << sampling.temperature
                << ", \"top_k\": " << sampling.top_k << ", \"top_p\": " << sampling.top_p
                << ", \"min_p\": " << sampling.min_p
                << ", \"repetition_penalty\": " << sampling.repetition_penalty
                << ", \"seed\": " << sampling.seed << "}, \"backend\": \""
                << backend->name().substr(0, backend->name().find(' '))
                << "\", \"load_ms\": " << load_ms << ", \"ttft_ms\": " << r.ttft
                << ", \"first_token_ms\": " << first_token << ", \"tpot_ms\": " << r.tpot
                << ", \"peak_rss_bytes\": " << peak_rss_bytes() << "}\n";
      return;
    }
    if (tok && out.text.size() > r.printed.size()) std::cout << out.text.substr(r.printed.size());
    std::cout << "\n";
    std::cerr << "load + compile: " << load_ms << " ms; prompt " << prompt.size()
              << " tokens, generated " << generated.size()
              << " (stop: " << models::stop_name(out.stop) << ")\nTTFT: " << r.ttft
              << " ms\nfirst token: " << first_token << " ms after start\nTPOT: " << r.tpot
              << " ms\n"
              << (r.tpot > 0 ? 1000.0 / r.tpot : 0) << " tok/s\n";
    std::fprintf(stderr, "peak memory: %.1f MiB resident (VmHWM)\n",
                 static_cast<double>(peak_rss_bytes()) / (1 << 20));
  });
}

}  // namespace luminal::cli
