#pragma once
// A causal language model from a Hugging Face folder, ready to run:
//
//   cpu::CpuBackend cpu;
//   auto lm = models::CausalLM::load("tiny-llama/", cpu, {.slots = 1024, .max_step = 128});
//   std::vector<float> logits = lm.forward({1, 17, 42});   // [3, vocab], the KV cache fills
//   std::vector<int32_t> next = lm.generate_greedy(prompt, 16);
//   lm.reset();                                             // an empty context again
//
// `load` reads config.json and the safetensors weights (bound without copies on the CPU), builds
// the graph (models/decoder.hpp), and compiles it with buckets s = 1 (decode) and s in
// [2, max_step] (prefill; longer inputs go in chunks). `load_reference` runs the same graph on
// the ReferenceRuntime (slow; for parity tests on tiny models).
#include <filesystem>
#include <memory>
#include <vector>

#include "luminal/compiler/options.hpp"
#include "luminal/models/decoder.hpp"
#include "luminal/program/backend.hpp"
#include "luminal/runtime/runtime.hpp"

namespace luminal::models {

class CausalLM {
 public:
  static CausalLM load(const std::filesystem::path& dir, Backend& backend,
                       const DecoderShape& shape = {}, CompileOptions options = {});
  static CausalLM load_reference(const std::filesystem::path& dir, const DecoderShape& shape = {});

  /// Appends `ids` to the context and returns the logits of every one of them ([n, vocab],
  /// row-major). Throws when the context would exceed the cache (shape.slots).
  std::vector<float> forward(const std::vector<int32_t>& ids);
  /// forward(prompt), then `n` tokens chosen by argmax, each fed back; returns the n tokens.
  std::vector<int32_t> generate_greedy(const std::vector<int32_t>& prompt, int n);
  /// Forgets the context (the cache rows are overwritten as it fills again).
  void reset() { context_ = 0; }
  int context() const { return context_; }
  int64_t vocab_size() const { return decoder_.config.vocab_size; }
  const Decoder& decoder() const { return decoder_; }
  Runtime& runtime() { return *runtime_; }

 private:
  CausalLM() = default;
  void bind(const std::filesystem::path& dir, bool session);

  Decoder decoder_;
  std::unique_ptr<Runtime> runtime_;
  int context_ = 0;
};

}  // namespace luminal::models
