#pragma once
// A causal language model from a Hugging Face folder, ready to run:
//
//   cpu::CpuBackend cpu;
//   auto lm = models::CausalLM::load("tiny-llama/", cpu, {.slots = 1024, .max_step = 128});
//   std::vector<float> logits = lm.forward({1, 17, 42});   // [3, vocab], the KV cache fills
//   std::vector<int32_t> next = lm.generate_greedy(prompt, 16);
//   // with .sampler = true in the DecoderShape:
//   auto out = lm.generate(prompt, 64, {.temperature = 0.8, .top_p = 0.95, .seed = 7},
//                          [](int32_t id, std::string_view text) { std::cout << text; return true;
//                          },
//                          {.eos_ids = {2}, .strings = {"\n\n"}, .tokenizer = &tok});
//   lm.reset();                                             // an empty context again
//
// `load` reads a folder's config.json and safetensors weights (bound without copies on the CPU), or
// a GGUF file's metadata and weights (dequantised to f32; see model_files.hpp), builds
// the graph (models/decoder.hpp) plus, on the last position's logits, either the sampler
// (nn/sampling.hpp; DecoderShape::sampler = true) or just their argmax (nn::greedy_token; the
// default: the sampler's ~1100 nodes would triple a small model's compile time), and compiles it
// with buckets s = 1 (decode) and s in [2, max_step] (prefill; longer inputs go in chunks).
// `load_reference` runs the same graph on the ReferenceRuntime (slow; for parity tests on tiny
// models).
//
// Sampling happens inside the graph: each generate step uploads the token id and the step
// counter and downloads one I32 token id (never the logits). The sampler's settings are graph
// inputs, so every SamplingConfig uses the same compiled program. Without the sampler, generate()
// accepts only configs with !needs_sampler() (temperature 0, no repetition penalty); a sampler
// built without top-k or top-p (DecoderShape::sampler_top_k/_top_p = false, which compiles much
// faster) rejects configs that use them. The repetition
// penalty's set of seen tokens is a carried [vocab] input ("sampler.seen") that the graph updates
// from the ids of every step (prompt and generated tokens, over the whole context until reset()).
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "luminal/compiler/options.hpp"
#include "luminal/io/progress.hpp"
#include "luminal/io/tokenizer.hpp"
#include "luminal/models/decoder.hpp"
#include "luminal/nn/sampling.hpp"
#include "luminal/program/backend.hpp"
#include "luminal/runtime/runtime.hpp"

namespace luminal::models {

/// {temperature, top_k, top_p, min_p, repetition_penalty, seed}; the defaults are greedy.
using SamplingConfig = nn::SamplingConfig;

/// When generate() stops early.
struct StopConditions {
  /// Stop after one of these ids (it is returned in `tokens`; its text is not).
  std::vector<int64_t> eos_ids = {};
  /// Stop when the decoded text contains one of these (needs `tokenizer`); the text is cut
  /// before it.
  std::vector<std::string> strings = {};
  /// Decodes the generated ids (skipping special tokens) for the text and the stop strings.
  const io::Tokenizer* tokenizer = nullptr;
};

struct Generation {
  enum class Stop { MaxTokens, Eos, StopString, Callback };
  std::vector<int32_t> tokens;  // every generated id (the EOS id included)
  std::string text;             // decoded (with a tokenizer), cut before a stop string
  Stop stop = Stop::MaxTokens;
};
std::string_view stop_name(Generation::Stop s);  // "max_tokens", "eos", "stop_string", "callback"

/// Called once per generated token with its id and the text that became printable (empty
/// without a tokenizer; text that may start a stop string is held back until it cannot).
/// Return false to stop.
using TokenCallback = std::function<bool(int32_t id, std::string_view text)>;

/// Sampling defaults and EOS ids from a folder's generation_config.json.
struct GenerationDefaults {
  std::vector<int64_t> eos_ids;  // empty when the file does not list any
  bool do_sample = false;
  /// The file's sampling fields when do_sample is true, else greedy (SamplingConfig{}).
  SamplingConfig sampling;
};
/// Reads dir/generation_config.json; a missing file gives the defaults. Errors name the file.
GenerationDefaults read_generation_config(const std::filesystem::path& dir);

struct ModelFiles;  // model_files.hpp
}  // namespace luminal::models
namespace luminal::io {
class Weights;  // safetensors.hpp
}  // namespace luminal::io
namespace luminal::models {

class CausalLM {
 public:
  /// `path`: a Hugging Face folder or a .gguf file (models/model_files.hpp). `progress` is told
  /// of reading the weights (open_weights: "dequantising", "caching") and of binding them into
  /// the session ("binding"; io/progress.hpp); the search reports through options.verbose().
  static CausalLM load(const std::filesystem::path& path, Backend& backend,
                       const DecoderShape& shape = {}, CompileOptions options = {},
                       const io::LoadProgress& progress = {});
  /// The same from an opened model (its tokenizer and template stay with the caller).
  static CausalLM load(const ModelFiles& model, Backend& backend, const DecoderShape& shape = {},
                       CompileOptions options = {}, const io::LoadProgress& progress = {});
  static CausalLM load_reference(const std::filesystem::path& path, const DecoderShape& shape = {});
  /// A model from a config alone: seeded random weights generated on `backend`
  /// (models/synthetic.hpp; no files, nothing uploaded but the small state), then compiled as
  /// load() does. For benchmarks, tests and trying shapes before downloading a checkpoint.
  static CausalLM random(const io::ModelConfig& config, Backend& backend,
                         const DecoderShape& shape = {}, CompileOptions options = {},
                         uint64_t seed = 0);
  /// The same weights on the ReferenceRuntime (bit-identical values; slow, tiny models only).
  static CausalLM random_reference(const io::ModelConfig& config, const DecoderShape& shape = {},
                                   uint64_t seed = 0);

  /// Appends `ids` to the context and returns the logits of every one of them ([n, vocab],
  /// row-major). Throws when the context would exceed the cache (shape.slots).
  std::vector<float> forward(const std::vector<int32_t>& ids);
  /// Appends `prompt` to the context, then generates up to `max_new_tokens` tokens sampled in
  /// the graph with `sampling` (validated first), each fed back (the last one is not).
  Generation generate(const std::vector<int32_t>& prompt, int max_new_tokens,
                      const SamplingConfig& sampling = {}, const TokenCallback& on_token = {},
                      const StopConditions& stop = {});
  /// generate(prompt, n) with greedy sampling (argmax; ties to the lowest id): the n tokens.
  std::vector<int32_t> generate_greedy(const std::vector<int32_t>& prompt, int n);
  /// Forgets the context (the cache rows are overwritten as it fills again) and the seen tokens.
  void reset();
  /// Keeps only the first `tokens` of the context (0 <= tokens <= context()); the next ones
  /// overwrite the cache from there (e.g. a chat whose re-rendered history differs from what was
  /// generated after a common prefix). The repetition penalty's seen tokens are kept: reset()
  /// when that matters.
  void rewind(int tokens);
  int context() const { return context_; }
  int64_t vocab_size() const { return decoder_.config.vocab_size; }
  /// Whether the graph holds the sampler (DecoderShape::sampler), else only the argmax.
  bool has_sampler() const { return decoder_.shape.sampler; }
  /// The sampler's filters (DecoderShape::sampler_top_k, sampler_top_p).
  nn::SamplerFilters filters() const {
    return {.top_k = decoder_.shape.sampler_top_k, .top_p = decoder_.shape.sampler_top_p};
  }
  const Decoder& decoder() const { return decoder_; }
  Runtime& runtime() { return *runtime_; }

 private:
  CausalLM() = default;
  void add_token_head();
  void bind(std::shared_ptr<const io::Weights> weights, const std::string& source, bool session,
            const io::LoadProgress& progress = {});
  /// The inputs that are not weights: rope table, empty caches, sampler defaults.
  void init_inputs();
  /// The "s" buckets (decode, prefill) unless `options` has its own.
  void set_buckets(CompileOptions& options) const;
  /// Runs `ids` through the graph in chunks of at most max_step; calls after(n) after each.
  void run(const std::vector<int32_t>& ids, const std::function<void(size_t)>& after);

  Decoder decoder_;
  nn::SamplerInputs sampler_;
  std::unique_ptr<Runtime> runtime_;
  int context_ = 0;
};

}  // namespace luminal::models
