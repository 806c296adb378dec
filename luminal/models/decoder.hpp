#pragma once
// Decoder-only language models of the Llama family (Llama 1-3.x, Mistral, Qwen2, Qwen3) as one
// graph, with Hugging Face's tensor names as input labels: "ids" (I32 [s]), "rope.inv_freq"
// (Decoder::rope_inv_freq), the checkpoint's weights ("model.embed_tokens.weight",
// "model.layers.0.self_attn.q_proj.weight", ...) and the KV caches
// "model.layers.N.self_attn.{k,v}_cache" (carried); output "logits": [s, vocab] for every
// position (Logits::All) or [1, vocab] for the last one (Logits::Last, what generation needs).
// Example: examples/snippets/models/decoder.cpp (a config's graph: its inputs and carried caches).
//
// Dims: s, the tokens of this step (1 to max_step), and c, the context after it (1 to slots).
// Positions, the causal mask and the cache rows come from the dims inside the graph, so a step
// moves only its ids in and its logits out. Qwen2's q/k/v biases, Qwen3's per-head q/k RMSNorm
// and tied embeddings (lm_head = embed_tokens) are covered, and Gemma 3 (text): embeddings scaled
// by sqrt(hidden), RMSNorm by (1 + w), sandwich norms, GeGLU (tanh), QK-norm,
// query_pre_attn_scalar, final logit soft-capping (attn_logit_softcapping is ignored, as
// transformers' Gemma 3 ignores it), and sliding layers (a window
// masked over the full cache, their own RoPE base in "rope.local_inv_freq"). Qwen3-MoE and
// Mixtral read their experts stacked ("<block>experts.gate_up_proj" [E, 2F, hidden] and
// "<block>experts.down_proj" [E, hidden, F]; models/experts.hpp) and run the chosen ones only
// (MoeForm::Gathered) or every expert masked by the choice (MoeForm::Dense).
#include <map>
#include <optional>
#include <vector>

#include "luminal/io/hf_config.hpp"
#include "luminal/ir/graph.hpp"
#include "luminal/ir/tensor.hpp"
#include "luminal/nn/moe.hpp"
#include "luminal/runtime/runtime.hpp"

namespace luminal::models {

/// Which positions the LM head computes logits for.
enum class Logits {
  /// Every position of the step ([s, vocab]): teacher-forced scoring, parity tests.
  All,
  /// Only the last position ([1, vocab]): generation. The final norm and the LM head run on one
  /// row, so a prefill skips the [s, hidden] x [hidden, vocab] matmul and its [s, vocab] output.
  Last,
};

/// How a mixture-of-experts layer runs its experts (Qwen3-MoE, Mixtral).
enum class MoeForm {
  /// The chosen experts' weight rows gathered by expert id, then a batched matmul: only chosen
  /// experts are read (a backend's fused kernel never materialises the gathered rows).
  Gathered,
  /// Every expert on every token, weighted by the router's choice (zero elsewhere): reads every
  /// expert; the baseline.
  Dense,
};

struct DecoderShape {
  int slots = 2048;    // KV cache rows: the longest context
  int max_step = 512;  // most tokens one execute takes (longer prompts go in chunks)
  Logits logits = Logits::All;
  MoeForm moe = MoeForm::Gathered;
  /// How the MoE router's top-k is computed (nn::TopKForm): by default both forms, the search
  /// picking; Argmax or Ranks alone to compare them.
  nn::TopKForm router = nn::TopKForm::Searched;
  /// Dtype of activations and weights (the checkpoint's, or a float type to convert to).
  DType dtype = DType::F32;
  /// Weights declared in their stored type by Hugging Face name, so the compiler reads them as
  /// stored: block-quantized (dequantize()d in the graph) or bf16/f16 in an f32 model (cast).
  std::map<std::string, DType> block_weights = {};
  /// Sliding-window layers (Gemma 3's local ones) read only the cache rows their queries can see
  /// (nn::AttentionOptions::window_read) rather than masking the rest. Unset: LUMINAL_WINDOW_READ
  /// (0 or 1) decides, else off here; CausalLM::load turns it on for the CPU backend, whose
  /// kernels read the caches at a run-time row offset (cuda.Attention does too, on the host's
  /// checks; CUDA turns it on once its GPU parity has run).
  std::optional<bool> window_read = std::nullopt;
  /// Sliding-window layers keep their keys and values in a ring of window + max_step - 1
  /// positions, each in two rows (nn::AttentionOptions::ring), instead of `slots` rows, where
  /// that is fewer: a Gemma 3 local layer's cache no longer grows with the context. A step reads
  /// the rows its queries see, as window_read does; a rewind deeper than max_step positions
  /// resets the context (CausalLM::continue_from). Unset: LUMINAL_ROLLING_CACHE (0 or 1), else
  /// off.
  std::optional<bool> rolling_cache = std::nullopt;
};

/// LUMINAL_WINDOW_READ: 1 or 0, or nothing when unset; throws luminal::Error for another value.
std::optional<bool> window_read_env();
/// LUMINAL_ROLLING_CACHE, the same way.
std::optional<bool> rolling_cache_env();

struct Decoder {
  Graph graph;
  Tensor ids;
  /// Output "logits": [s, vocab] or [1, vocab] (DecoderShape::logits).
  Tensor logits;
  /// The last position's logits, [1, vocab] F32 (a sampler reads it; with Logits::Last the
  /// output itself).
  Tensor last_logits;
  /// The value of the "rope.inv_freq" input (computed as transformers does).
  std::vector<float> rope_inv_freq;
  /// Gemma 3: the "rope.local_inv_freq" input of the sliding layers (empty otherwise).
  std::vector<float> rope_local_inv_freq;
  DecoderShape shape;
  io::ModelConfig config;
  /// The rows of each sliding layer's ring cache (DecoderShape::rolling_cache: twice the
  /// positions it holds), 0 without one.
  int ring_rows = 0;
};

Decoder build_decoder(const io::ModelConfig& cfg, const DecoderShape& shape);

/// Sets a decoder's inputs that are not weights: "rope.inv_freq" and every KV cache. A step writes
/// its cache rows before attention reads rows [0, c), so no row is read before it is written: a
/// Session's caches are only marked set (nothing written; their pages become resident as the
/// context fills), other runtimes (the reference) get zeros.
void init_state(Runtime& rt, const Decoder& d);

}  // namespace luminal::models
