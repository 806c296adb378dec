#pragma once
// A causal language model from a Hugging Face folder or a GGUF file, ready to run: forward()
// appends ids to the context and returns their logits, generate() samples the next tokens in
// the graph (streamed through a callback, stopped by EOS ids or stop strings), reset() empties
// the context and continue_from() keeps the common prefix of a chat rendered again.
// Example: examples/snippets/models/causal_lm.cpp (a model loaded, run greedy, then with the
// sampler).
//
// `load` reads a folder's config.json and safetensors weights (bound without copies on the CPU), or
// a GGUF file's metadata and weights (kept in their blocks where the backend reads them; see
// model_files.hpp), builds the graph (models/decoder.hpp) plus its token head on the last
// position's logits: the sampler (nn/sampling.hpp; SamplerShape::sampler) or just their argmax
// (the default: the sampler's ~1100 nodes would triple a small model's compile time), and
// compiles it in a Session with buckets s = 1 (decode) and s in [2, max_step] (prefill; longer
// inputs go in chunks). The session's inputs, outputs and dims are resolved once at load: a step
// writes its ids by handle, executes with a dims array and reads the token id by handle (no
// lookup by name, no map, no allocation).
// DecoderShape::logits says which logits the graph computes: every position's (Logits::All,
// the default: forward() for teacher forcing) or the last one's (Logits::Last: what generate()
// needs; the prefill runs the LM head over one row and holds no [max_step, vocab] buffer).
// `load_reference` and `random_reference` run the same graph on the ReferenceRuntime instead (by
// name; slow; for parity tests on tiny models).
//
// Sampling happens inside the graph: each generate step uploads the token id and the step
// counter and downloads one I32 token id (never the logits). The sampler's settings are graph
// inputs, so every SamplingConfig the head serves uses the same compiled program; generate()
// rejects a config that needs what the head lacks (TokenHead::check). The repetition penalty's
// seen tokens cover the whole context (prompt and generated tokens) until reset().
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "luminal/compiler/options.hpp"
#include "luminal/io/progress.hpp"
#include "luminal/io/tokenizer.hpp"
#include "luminal/models/decoder.hpp"
#include "luminal/models/token_head.hpp"
#include "luminal/nn/sampling.hpp"
#include "luminal/program/backend.hpp"
#include "luminal/runtime/runtime.hpp"

namespace luminal {
class Session;  // runtime/session.hpp
}  // namespace luminal

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

struct ModelFiles;  // model_files.hpp
namespace detail {
class Steps;  // causal_lm.cpp: a step's traffic, the session's by handle or the reference's by name
}  // namespace detail
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
  /// `head`: the token head (token_head.hpp; the argmax by default).
  static CausalLM load(const std::filesystem::path& path, Backend& backend,
                       const DecoderShape& shape = {}, CompileOptions options = {},
                       const io::LoadProgress& progress = {}, const SamplerShape& head = {});
  /// The same from an opened model (its tokenizer and template stay with the caller).
  static CausalLM load(const ModelFiles& model, Backend& backend, const DecoderShape& shape = {},
                       CompileOptions options = {}, const io::LoadProgress& progress = {},
                       const SamplerShape& head = {});
  static CausalLM load_reference(const std::filesystem::path& path, const DecoderShape& shape = {},
                                 const SamplerShape& head = {});
  /// A model from a config alone: seeded random weights generated on `backend`
  /// (models/synthetic.hpp; no files, nothing uploaded but the small state), then compiled as
  /// load() does. For benchmarks, tests and trying shapes before downloading a checkpoint.
  static CausalLM random(const io::ModelConfig& config, Backend& backend,
                         const DecoderShape& shape = {}, CompileOptions options = {},
                         uint64_t seed = 0, const SamplerShape& head = {});
  /// The same weights on the ReferenceRuntime (bit-identical values; slow, tiny models only).
  static CausalLM random_reference(const io::ModelConfig& config, const DecoderShape& shape = {},
                                   uint64_t seed = 0, const SamplerShape& head = {});

  CausalLM(CausalLM&&) noexcept;
  CausalLM& operator=(CausalLM&&) noexcept;
  ~CausalLM();

  /// Appends `ids` to the context and returns their logits, row-major: every one of them
  /// ([n, vocab]) with DecoderShape::logits = Logits::All (the default), the last one's
  /// ([1, vocab]) with Logits::Last. Throws when the context would exceed the cache (shape.slots).
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
  /// With a ring cache (DecoderShape::rolling_cache) a rewind further back than the positions
  /// the ring still holds throws; can_rewind() says whether rewind(tokens) would succeed.
  void rewind(int tokens);
  bool can_rewind(int tokens) const;
  /// Makes the context a prefix of `ids` (a whole conversation rendered again) and returns how
  /// many of them it holds: the longest common prefix of the context and `ids`, but at most
  /// ids.size() - 1 (generate needs one id to feed). Rewinds to it, or resets when it is empty,
  /// when `sampling` has a repetition penalty and the prefix is not the whole context (rewinding
  /// cannot forget seen tokens), or when a ring cache no longer holds it (can_rewind). Then
  /// generate(the rest of `ids`, ...) continues the chat.
  size_t continue_from(std::span<const int32_t> ids, const SamplingConfig& sampling);
  int context() const { return static_cast<int>(ids_.size()); }
  /// The ids the context holds, in order (generate does not feed its last token).
  const std::vector<int32_t>& context_ids() const { return ids_; }
  int64_t vocab_size() const { return decoder_.config.vocab_size; }
  /// The token head (load's SamplerShape): the sampler and its filters, or only the argmax.
  const SamplerShape& head() const { return head_.shape; }
  bool has_sampler() const { return head_.shape.sampler; }
  const Decoder& decoder() const { return decoder_; }
  /// The session the model runs in (reports, memory, plans); throws for a model on the
  /// ReferenceRuntime (load_reference, random_reference).
  Session& session();
  /// The runtime either way, by name (the session or the ReferenceRuntime).
  Runtime& runtime();

 private:
  CausalLM();
  static CausalLM build(const io::ModelConfig& config, const DecoderShape& shape,
                        const SamplerShape& head);
  void start_session(Backend& backend, CompileOptions options);
  void start_reference();
  void bind(std::shared_ptr<const io::Weights> weights, const std::string& source,
            const io::LoadProgress& progress = {});
  /// The inputs that are not weights: rope table, empty caches, sampler defaults.
  void init_inputs();
  /// Runs `ids` through the graph in chunks of at most max_step, appending each chunk's logits
  /// to `logits` when given (Logits::Last: only the last chunk's).
  void run(std::span<const int32_t> ids, std::vector<float>* logits);

  Decoder decoder_;
  TokenHead head_;
  std::unique_ptr<detail::Steps> steps_;
  std::vector<int32_t> ids_;  // the context, reserved to shape.slots
  size_t written_ = 0;        // the positions written since reset() (can_rewind)
};

}  // namespace luminal::models
