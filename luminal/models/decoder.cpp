#include "luminal/models/decoder.hpp"

#include <string>

#include "luminal/core/error.hpp"
#include "luminal/nn/attention.hpp"
#include "luminal/nn/linear.hpp"
#include "luminal/nn/mlp.hpp"
#include "luminal/nn/rope.hpp"
#include "luminal/runtime/session.hpp"

namespace luminal::models {

namespace {

nn::RopeScaling rope_scaling(const io::ModelConfig& cfg) {
  const io::RopeScaling& r = cfg.rope_scaling;
  switch (r.type) {
    case io::RopeType::None: return nn::RopeScaling::none();
    case io::RopeType::Linear: return nn::RopeScaling::linear(r.factor);
    case io::RopeType::Llama3:
      return nn::RopeScaling::llama3(r.factor, r.low_freq_factor, r.high_freq_factor,
                                     static_cast<double>(r.original_max_position_embeddings));
    default:
      throw Error("models: rope type '" + std::string(io::rope_type_name(r.type)) +
                  "' is not supported yet (supported: default, linear, llama3)");
  }
}

}  // namespace

Decoder build_decoder(const io::ModelConfig& cfg, const DecoderShape& shape) {
  using io::ModelFamily;
  if (cfg.family != ModelFamily::Llama && cfg.family != ModelFamily::Mistral &&
      cfg.family != ModelFamily::Qwen2 && cfg.family != ModelFamily::Qwen3) {
    throw Error("models: family '" + std::string(io::family_name(cfg.family)) +
                "' is not supported yet (supported: llama, mistral, qwen2, qwen3)");
  }
  if (cfg.hidden_act != "silu")
    throw Error("models: activation '" + cfg.hidden_act + "' is not supported (only silu)");
  if (cfg.sliding_window)
    throw Error("models: sliding-window attention is not supported yet (sliding_window = " +
                std::to_string(*cfg.sliding_window) + ")");
  if (shape.slots < 1 || shape.max_step < 1 || shape.max_step > shape.slots)
    throw Error("models: need 1 <= max_step <= slots, got max_step " +
                std::to_string(shape.max_step) + " and slots " + std::to_string(shape.slots));
  Decoder d;
  d.config = cfg;
  d.shape = shape;
  Graph& g = d.graph;
  g.declare_dim("s", 1, shape.max_step);
  g.declare_dim("c", 1, shape.slots);
  const int64_t H = cfg.num_attention_heads, KV = cfg.num_key_value_heads, hd = cfg.head_dim;
  const int64_t hidden = cfg.hidden_size, ffn = cfg.intermediate_size;
  const DType dt = shape.dtype;
  const double eps = cfg.rms_norm_eps;
  auto w = [&](const std::string& name, std::vector<Dim> dims) {
    auto it = shape.block_weights.find(name);
    if (it == shape.block_weights.end()) return g.tensor(name, dims, dt).persist();
    return g.tensor(name, dims, it->second).persist().dequantize(dt);
  };
  d.rope_inv_freq = nn::rope_inv_freq(static_cast<int>(hd), cfg.rope_theta, rope_scaling(cfg));
  Tensor inv_freq = g.tensor("rope.inv_freq", {hd / 2}, DType::F32).persist();
  d.ids = g.tensor("ids", {"s"}, DType::I32);
  const Tensor embed = w("model.embed_tokens.weight", {cfg.vocab_size, hidden});
  const Tensor pos = nn::step_positions(g);
  Tensor x = nn::embedding(embed, d.ids);  // [s, hidden]
  // Qwen2 has q/k/v biases and no o_proj bias (the config parser reports attention_bias true).
  const bool qkv_bias = cfg.attention_bias || cfg.family == ModelFamily::Qwen2;
  const bool o_bias = cfg.attention_bias && cfg.family != ModelFamily::Qwen2;
  for (int64_t l = 0; l < cfg.num_hidden_layers; ++l) {
    const std::string p = "model.layers." + std::to_string(l) + ".";
    auto proj = [&](const std::string& name, int64_t out, int64_t in, bool bias) {
      const Tensor weight = w(p + name + ".weight", {out, in});
      return [=, &g](const Tensor& t) {
        std::optional<Tensor> b;
        if (bias) b = g.tensor(p + name + ".bias", {out}, dt).persist();
        return nn::linear(t, weight, b);
      };
    };
    const Tensor h = x.rms_norm(w(p + "input_layernorm.weight", {hidden}), eps);
    Tensor q = proj("self_attn.q_proj", H * hd, hidden, qkv_bias)(h).reshape({"s", H, hd});
    Tensor k = proj("self_attn.k_proj", KV * hd, hidden, qkv_bias)(h).reshape({"s", KV, hd});
    Tensor v = proj("self_attn.v_proj", KV * hd, hidden, qkv_bias)(h).reshape({"s", KV, hd});
    if (cfg.family == ModelFamily::Qwen3) {
      q = q.rms_norm(w(p + "self_attn.q_norm.weight", {hd}), eps);
      k = k.rms_norm(w(p + "self_attn.k_norm.weight", {hd}), eps);
    }
    q = nn::apply_rope(q, pos, inv_freq);
    k = nn::apply_rope(k, pos, inv_freq);
    const Tensor o = nn::cached_attention(g, q, k, v, p + "self_attn", shape.slots);
    x = x + proj("self_attn.o_proj", hidden, H * hd, o_bias)(o);
    const Tensor h2 = x.rms_norm(w(p + "post_attention_layernorm.weight", {hidden}), eps);
    x = x + nn::swiglu_mlp(h2, w(p + "mlp.gate_proj.weight", {ffn, hidden}),
                           w(p + "mlp.up_proj.weight", {ffn, hidden}),
                           w(p + "mlp.down_proj.weight", {hidden, ffn}));
  }
  const Tensor head =
      cfg.tie_word_embeddings ? embed : w("lm_head.weight", {cfg.vocab_size, hidden});
  // Logits::Last takes the last row before the norm: both are per row, so the values equal the
  // last row of Logits::All's.
  if (shape.logits == Logits::Last) x = x.slice(0, Expr::var("s") - 1, Expr::var("s"));
  x = x.rms_norm(w("model.norm.weight", {hidden}), eps);
  const Tensor logits = nn::lm_head(x, head).cast(DType::F32);
  d.logits = logits.output("logits");
  d.last_logits =
      shape.logits == Logits::Last ? logits : logits.slice(0, Expr::var("s") - 1, Expr::var("s"));
  return d;
}

void init_state(Runtime& rt, const Decoder& d) {
  rt.set("rope.inv_freq", d.rope_inv_freq);
  const Graph& g = d.graph;
  auto* session = dynamic_cast<Session*>(&rt);
  for (NodeId id : g.inputs()) {
    const Node& n = g.node(id);
    if (!n.label.ends_with("_cache")) continue;
    // A step writes its rows before attention reads the first c: no cache row is read unwritten.
    if (session) {
      session->write(session->input(n.label), nullptr, 0);
      continue;
    }
    int64_t numel = 1;
    for (const Expr& e : n.shape)
      numel *= e.as_const();
    rt.set(n.label, std::vector<float>(static_cast<size_t>(numel), 0.f));
  }
}

}  // namespace luminal::models
