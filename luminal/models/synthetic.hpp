#pragma once
// Models from a config alone: seeded random weights, generated on the session's backend.
// llama_config() makes a config from a few sizes and CausalLM::random() a model from it; for any
// graph whose weights are inputs named "*.weight" / "*.bias", random_weights(session, seed) fills
// them on the backend (nothing crosses from the host) and init_state() sets a decoder's rope
// table and its KV caches (decoder.hpp).
// Example: examples/snippets/models/synthetic.cpp (a random model, then a decoder's session
// filled by hand).
//
// Every weight is uniform in [offset - scale, offset + scale) (weight_init: norm weights around 1,
// biases small, matrices +-1/sqrt(fan_in), so activations stay O(1) through the layers). Element i
// of the weight labelled L is counter_hash(seed, label_hash(L), 0, i) mapped to (0, 1) by
// hash_uniform (nn/sampling.hpp) and then scaled in f32 and rounded to the weight's dtype, so
// the values do not depend on the order or number of the other weights, and random_weights_host
// (for runtimes without a backend, like the reference) gives the same bits as the backend.
#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <string_view>

#include "luminal/compiler/options.hpp"
#include "luminal/core/expr.hpp"
#include "luminal/io/hf_config.hpp"
#include "luminal/runtime/runtime.hpp"

namespace luminal {
class Session;
}  // namespace luminal

namespace luminal::models {

struct DecoderShape;  // decoder.hpp

/// The sizes of a Llama-shaped model (Llama 2/3 layout: RMSNorm, GQA, RoPE, SwiGLU).
struct LlamaSize {
  int64_t layers = 2;
  int64_t hidden = 256;
  int64_t ffn = 512;
  int64_t heads = 8;
  int64_t kv_heads = 4;
  int64_t vocab = 1000;
  double rope_theta = 10000.0;
  bool tie_embeddings = false;
};
/// The published shapes of SmolLM2-135M (30 layers, hidden 576, tied embeddings) and
/// Llama-3-8B (32 layers, hidden 4096, vocabulary 128256), for benchmarks and tests that build
/// random-weight models of those shapes.
LlamaSize smollm2_135m_size();
LlamaSize llama3_8b_size();
/// A Llama config with these sizes (head_dim = hidden / heads, rms_norm_eps 1e-5, silu). Throws
/// when the sizes do not fit together (heads not dividing hidden, kv_heads not dividing heads).
io::ModelConfig llama_config(const LlamaSize& size);
/// The number of weights (parameters) of a build_decoder model with this config.
int64_t parameter_count(const io::ModelConfig& cfg);

/// Whether an input label names a weight ("*.weight", "*.bias", or the stacked experts
/// "*experts.gate_up_proj" and "*experts.down_proj" of models/experts.hpp).
bool is_weight(std::string_view label);

/// Block types for a model stored quantized (DecoderShape::block_weights): `type_of(label)` for
/// every matrix (a rank-2 weight) of build_decoder(cfg, shape)'s graph, for benchmarks and tests
/// of random blocks in a model's shapes.
std::map<std::string, DType> matrix_block_types(
    const io::ModelConfig& cfg, const DecoderShape& shape,
    const std::function<DType(std::string_view label)>& type_of);

/// A weight's values: uniform in [offset - scale, offset + scale).
struct WeightInit {
  float scale = 0;
  float offset = 0;
};
/// Norm weights (rank 1, "norm" in the label): 1 +- 0.05; biases: +-0.02; embeddings: +-0.5;
/// other matrices [out, in]: +-1/sqrt(in).
WeightInit weight_init(std::string_view label, std::span<const Expr> shape);

/// The counter of a label (FNV-1a mod 2^31): the hash's step for that weight.
int64_t label_hash(std::string_view label);

/// Sets every weight input of `session` (labels as is_weight says) to its seeded values,
/// computed by a small generator graph compiled on the session's backend (with `options`' cache
/// folder and a small search) and copied into place with Session::set_from, one weight at a
/// time: the peak extra memory is one copy of the largest weight. Returns the number of weights
/// set. Throws when a weight's shape is not static.
int random_weights(Session& session, uint64_t seed, const CompileOptions& options = {});
/// The same values computed on the host and set through Runtime::set (any runtime; the
/// reference). Bit-identical to random_weights on a backend without fused multiply-adds.
int random_weights_host(Runtime& rt, uint64_t seed);

}  // namespace luminal::models
