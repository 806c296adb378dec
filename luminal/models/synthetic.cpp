#include "luminal/models/synthetic.hpp"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "luminal/core/error.hpp"
#include "luminal/ir/graph.hpp"
#include "luminal/models/decoder.hpp"
#include "luminal/nn/sampling.hpp"
#include "luminal/runtime/session.hpp"

namespace luminal::models {

namespace {

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

int64_t static_numel(const Node& n) {
  int64_t numel = 1;
  for (const Expr& e : n.shape) {
    if (!e.is_const())
      throw Error("models: weight '" + n.label + "' has a dynamic shape " +
                  shape_to_string(n.shape) + "; random weights need static shapes");
    numel *= e.as_const();
  }
  return numel;
}

/// The weights of a graph in input order.
std::vector<NodeId> weight_inputs(const Graph& g) {
  std::vector<NodeId> out;
  for (NodeId id : g.inputs())
    if (is_weight(g.node(id).label)) out.push_back(id);
  return out;
}

// The value of one element, in f32 as the generator graph computes it:
// (u * 2 - 1) * scale + offset, each operation rounded (no fused multiply-add; this file is
// compiled with -ffp-contract=off).
float weight_value(float u, const WeightInit& w) { return (u * 2.0f - 1.0f) * w.scale + w.offset; }

}  // namespace

LlamaSize smollm2_135m_size() {
  return {.layers = 30,
          .hidden = 576,
          .ffn = 1536,
          .heads = 9,
          .kv_heads = 3,
          .vocab = 49152,
          .rope_theta = 100000.0,
          .tie_embeddings = true};
}

LlamaSize llama3_8b_size() {
  return {.layers = 32,
          .hidden = 4096,
          .ffn = 14336,
          .heads = 32,
          .kv_heads = 8,
          .vocab = 128256,
          .rope_theta = 500000.0};
}

io::ModelConfig llama_config(const LlamaSize& size) {
  auto positive = [](const char* what, int64_t v) {
    if (v < 1)
      throw Error(std::string("models: llama_config needs ") + what + " >= 1, got " +
                  std::to_string(v));
  };
  positive("layers", size.layers);
  positive("hidden", size.hidden);
  positive("ffn", size.ffn);
  positive("heads", size.heads);
  positive("kv_heads", size.kv_heads);
  positive("vocab", size.vocab);
  if (size.hidden % size.heads != 0 || (size.hidden / size.heads) % 2 != 0)
    throw Error("models: llama_config needs hidden (" + std::to_string(size.hidden) +
                ") to be heads (" + std::to_string(size.heads) + ") times an even head size");
  if (size.heads % size.kv_heads != 0)
    throw Error("models: llama_config needs kv_heads (" + std::to_string(size.kv_heads) +
                ") to divide heads (" + std::to_string(size.heads) + ")");
  io::ModelConfig c;
  c.family = io::ModelFamily::Llama;
  c.model_type = "llama";
  c.architectures = {"LlamaForCausalLM"};
  c.hidden_size = size.hidden;
  c.intermediate_size = size.ffn;
  c.num_hidden_layers = size.layers;
  c.num_attention_heads = size.heads;
  c.num_key_value_heads = size.kv_heads;
  c.head_dim = size.hidden / size.heads;
  c.vocab_size = size.vocab;
  c.max_position_embeddings = 1 << 20;
  c.rms_norm_eps = 1e-5;
  c.rope_theta = size.rope_theta;
  c.tie_word_embeddings = size.tie_embeddings;
  c.hidden_act = "silu";
  c.layer_types.assign(static_cast<size_t>(size.layers), "full_attention");
  return c;
}

int64_t parameter_count(const io::ModelConfig& c) {
  const int64_t h = c.hidden_size, hd = c.head_dim, q = c.num_attention_heads * hd,
                kv = c.num_key_value_heads * hd;
  const bool qkv_bias = c.attention_bias || c.family == io::ModelFamily::Qwen2;
  const bool o_bias = c.attention_bias && c.family != io::ModelFamily::Qwen2;
  int64_t layer = 2 * h                           // the two norms
                  + h * q + 2 * h * kv + q * h    // q, k, v, o
                  + 3 * h * c.intermediate_size;  // gate, up, down
  if (qkv_bias) layer += q + 2 * kv;
  if (o_bias) layer += h;
  if (c.family == io::ModelFamily::Qwen3) layer += 2 * hd;  // q/k norms
  const int64_t embed = c.vocab_size * h;
  return c.num_hidden_layers * layer + embed + (c.tie_word_embeddings ? 0 : embed) + h;
}

std::map<std::string, DType> matrix_block_types(
    const io::ModelConfig& cfg, const DecoderShape& shape,
    const std::function<DType(std::string_view label)>& type_of) {
  const Decoder plain = build_decoder(cfg, shape);
  std::map<std::string, DType> out;
  for (NodeId id : plain.graph.inputs()) {
    const Node& n = plain.graph.node(id);
    if (is_weight(n.label) && n.shape.size() == 2) out[n.label] = type_of(n.label);
  }
  return out;
}

bool is_weight(std::string_view label) {
  return ends_with(label, ".weight") || ends_with(label, ".bias") ||
         ends_with(label, "experts.gate_up_proj") || ends_with(label, "experts.down_proj");
}

WeightInit weight_init(std::string_view label, std::span<const Expr> shape) {
  if (ends_with(label, ".bias")) return {0.02f, 0.f};
  if (shape.size() == 1 && label.find("norm") != std::string_view::npos) return {0.05f, 1.f};
  if (label.find("embed") != std::string_view::npos) return {0.5f, 0.f};
  if (shape.size() >= 2 && shape.back().is_const() && shape.back().as_const() > 0)
    return {static_cast<float>(1.0 / std::sqrt(static_cast<double>(shape.back().as_const()))), 0.f};
  return {0.1f, 0.f};
}

int64_t label_hash(std::string_view label) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char ch : label) {
    h ^= ch;
    h *= 1099511628211ull;
  }
  return static_cast<int64_t>(h % (uint64_t{1} << 31));
}

int random_weights(Session& session, uint64_t seed, const CompileOptions& options) {
  const Graph& model = session.graph();
  const std::vector<NodeId> weights = weight_inputs(model);
  if (weights.empty()) return 0;
  // One generator per dtype, sized for the largest weight of that dtype.
  std::vector<DType> dtypes;
  for (NodeId id : weights)
    if (std::find(dtypes.begin(), dtypes.end(), model.node(id).dtype) == dtypes.end())
      dtypes.push_back(model.node(id).dtype);
  const auto words = nn::seed_words(seed);
  for (DType dt : dtypes) {
    if (!is_float(dt))
      throw Error("models: random weights need float weights, got " + std::string(name(dt)));
    int64_t largest = 1;
    for (NodeId id : weights)
      if (model.node(id).dtype == dt) largest = std::max(largest, static_numel(model.node(id)));
    Graph g;
    g.declare_dim("n", 1, largest);
    const Tensor seed_in = g.tensor("seed", {2}, DType::I64);
    const Tensor step = g.tensor("step", {1}, DType::I64);
    const Tensor scale = g.tensor("scale", {1}, DType::F32);
    const Tensor offset = g.tensor("offset", {1}, DType::F32);
    const Tensor u = nn::hash_uniform(nn::counter_hash(seed_in, step, 1, "n")).reshape({"n"});
    Tensor v = (u * 2.0 - 1.0) * scale + offset;
    if (dt != DType::F32) v = v.cast(dt);
    v.output("value");
    // The search times on a small representative: the generator is a handful of elementwise
    // kernels, and timing it at the largest weight's size would cost more than it saves.
    CompileOptions o;
    o.cache_dir(options.cache_dir())
        .search_graph_limit(std::min(options.search_graph_limit(), 4))
        .verbose(false)
        .dim_buckets("n", {DimBucket(1, largest).representative(std::min<int64_t>(largest, 4096))});
    Session gen(std::move(g), session.backend(), o);
    gen.set("seed", std::vector<int64_t>{words[0], words[1]});
    for (NodeId id : weights) {
      const Node& n = model.node(id);
      if (n.dtype != dt) continue;
      const WeightInit w = weight_init(n.label, n.shape);
      gen.set("step", std::vector<int64_t>{label_hash(n.label)});
      gen.set("scale", std::vector<float>{w.scale});
      gen.set("offset", std::vector<float>{w.offset});
      gen.execute({{"n", static_numel(n)}});
      session.set_from(n.label, gen, "value");
    }
    session.sync();  // the generator's buffers go away with it
  }
  return static_cast<int>(weights.size());
}

int random_weights_host(Runtime& rt, uint64_t seed) {
  const Graph& g = rt.graph();
  const std::vector<NodeId> weights = weight_inputs(g);
  for (NodeId id : weights) {
    const Node& n = g.node(id);
    const WeightInit w = weight_init(n.label, n.shape);
    const int64_t step = label_hash(n.label);
    std::vector<float> v(static_cast<size_t>(static_numel(n)));
    for (size_t i = 0; i < v.size(); ++i)
      v[i] = weight_value(
          nn::hash_uniform_host(nn::counter_hash_host(seed, step, 0, static_cast<int64_t>(i))), w);
    rt.set(n.label, v);
  }
  return static_cast<int>(weights.size());
}

}  // namespace luminal::models
