#include "luminal/models/decoder.hpp"

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>

#include "luminal/core/error.hpp"
#include "luminal/models/experts.hpp"
#include "luminal/nn/attention.hpp"
#include "luminal/nn/linear.hpp"
#include "luminal/nn/mlp.hpp"
#include "luminal/nn/moe.hpp"
#include "luminal/nn/rope.hpp"
#include "luminal/runtime/session.hpp"

namespace luminal::models {

namespace {

// A constant as the dtype holds it (Gemma multiplies by sqrt(hidden) in the model's dtype).
double round_to(DType dt, double v) {
  uint8_t bytes[8] = {};
  store_from_double(dt, bytes, 0, v);
  return load_as_double(dt, bytes, 0);
}

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

namespace {

// A mixture of SwiGLU experts (Qwen3-MoE, Mixtral): the router's softmax, the top
// num_experts_per_tok experts per token (nn::router_softmax_topk: ranked by the logits), their
// weights renormalised where the config says (norm_topk_prob; Mixtral always). The experts read the
// stacked weights
// "<block>experts.gate_up_proj" [E, 2F, hidden] (gate rows, then up rows: one matmul gives both)
// and "<block>experts.down_proj" [E, hidden, F] (models/experts.hpp stacks a checkpoint's
// per-expert tensors into them).
//   MoeForm::Gathered: the chosen experts' rows gathered by id (nn::expert_linear), then the
//     weighted sum over the k choices: only the chosen experts are read.
//   MoeForm::Dense: every expert on every token, weighted by the choice (zero elsewhere): reads
//     every expert; the baseline for tiny expert counts.
template <class Weight>
Tensor moe_block(const Tensor& h, const io::ModelConfig& cfg, const std::string& p, const Weight& w,
                 MoeForm form, nn::TopKForm router_form) {
  const int64_t E = cfg.num_experts, K = cfg.num_experts_per_tok, F = cfg.moe_intermediate_size;
  const int64_t hidden = cfg.hidden_size;
  const std::string block = p + moe_block_prefix(cfg);
  const Expr s = Expr::var("s");
  const Tensor router = w(block + "gate.weight", {E, hidden});
  const nn::TopK top =
      nn::router_softmax_topk(nn::linear(h, router), K, cfg.norm_topk_prob, router_form, h.dtype());
  const Tensor& weights = top.weights;  // [s, K], h's dtype
  const Tensor gate_up = w(block + "experts.gate_up_proj", {E, 2 * F, hidden});
  const Tensor down = w(block + "experts.down_proj", {E, hidden, F});
  if (form == MoeForm::Gathered) {
    const Tensor gu = nn::expert_linear(h, gate_up, top.ids);  // [s, K, 2F]
    const Tensor act = gu.slice(2, 0, F).silu() * gu.slice(2, F, 2 * F);
    const Tensor y = nn::expert_linear(act, down, top.ids);  // [s, K, hidden]
    return (y * weights.reshape({s, K, 1}).expand({s, K, hidden})).sum(1);
  }
  // Dense: every expert on every token (batched matmuls over the stacked weights), each
  // expert's output weighted by its share of the token (the choice's weight, or zero).
  Graph g = h.graph();
  const Tensor picked = top.ids.reshape({s, K, 1}).expand({s, K, E}).eq(
      g.arange(E).reshape({1, 1, E}).expand({s, K, E}));
  const Tensor share =
      picked.where(weights.reshape({s, K, 1}).expand({s, K, E}), 0.0).sum(1);  // [s, E]
  const Tensor hx = h.reshape({1, s, hidden}).expand({E, s, hidden});
  const Tensor gu = hx.matmul(gate_up.transpose(1, 2));  // [E, s, 2F]
  const Tensor act = gu.slice(2, 0, F).silu() * gu.slice(2, F, 2 * F);
  const Tensor y = act.matmul(down.transpose(1, 2));  // [E, s, hidden]
  return (y * share.transpose(0, 1).reshape({E, s, 1}).expand({E, s, hidden})).sum(0);
}

std::optional<bool> env_bool(const char* name) {
  const char* v = std::getenv(name);
  if (v == nullptr || *v == '\0') return std::nullopt;
  if (std::string_view(v) == "1") return true;
  if (std::string_view(v) == "0") return false;
  throw Error(std::string(name) + " must be 0 or 1, got '" + v + "'");
}
}  // namespace

std::optional<bool> window_read_env() { return env_bool("LUMINAL_WINDOW_READ"); }
std::optional<bool> rolling_cache_env() { return env_bool("LUMINAL_ROLLING_CACHE"); }

Decoder build_decoder(const io::ModelConfig& cfg, const DecoderShape& shape) {
  using io::ModelFamily;
  const bool gemma = cfg.family == ModelFamily::Gemma3;
  const bool qk_norm = cfg.family == ModelFamily::Qwen3 || cfg.family == ModelFamily::Qwen3Moe;
  const std::string act = gemma ? "gelu_pytorch_tanh" : "silu";
  if (cfg.hidden_act != act)
    throw Error("models: activation '" + cfg.hidden_act + "' is not supported for " +
                std::string(io::family_name(cfg.family)) + " (only " + act + ")");
  if (!gemma && (cfg.attn_logit_softcapping || cfg.final_logit_softcapping))
    throw Error("models: logit soft-capping is supported for gemma3 only so far");
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
  // A weight as the model computes with it: declared in its stored type where block_weights
  // names one (block-quantized: dequantize()d; bf16/f16 in an f32 model: cast), else in dt.
  auto stored = [&](const std::string& name, std::vector<Dim> dims) {
    auto it = shape.block_weights.find(name);
    return g.tensor(name, dims, it == shape.block_weights.end() ? dt : it->second).persist();
  };
  auto widen = [&](const Tensor& t) {
    if (t.dtype() == dt) return t;
    return is_block(t.dtype()) ? t.dequantize(dt) : t.cast(dt);
  };
  auto w = [&](const std::string& name, std::vector<Dim> dims) {
    return widen(stored(name, std::move(dims)));
  };
  // Gemma's RMSNorm scales by (1 + w), in f32 (w + 1 is computed from the weight alone).
  auto norm = [&](const Tensor& t, const std::string& name, int64_t n) {
    const Tensor weight = w(name, {n});
    return gemma ? t.rms_norm(weight + 1.0, eps) : t.rms_norm(weight, eps);
  };
  d.rope_inv_freq = nn::rope_inv_freq(static_cast<int>(hd), cfg.rope_theta, rope_scaling(cfg));
  Tensor inv_freq = g.tensor("rope.inv_freq", {hd / 2}, DType::F32).persist();
  // Gemma 3's sliding layers rotate with their own (unscaled) base.
  std::optional<Tensor> local_inv_freq;
  if (gemma && cfg.rope_local_base_freq) {
    d.rope_local_inv_freq =
        nn::rope_inv_freq(static_cast<int>(hd), *cfg.rope_local_base_freq, nn::RopeScaling::none());
    local_inv_freq = g.tensor("rope.local_inv_freq", {hd / 2}, DType::F32).persist();
  }
  d.ids = g.tensor("ids", {"s"}, DType::I32);
  const Tensor embed_stored = stored("model.embed_tokens.weight", {cfg.vocab_size, hidden});
  const Tensor embed = widen(embed_stored);
  const Tensor pos = nn::step_positions(g);
  // 16-bit embeddings of an f32 model: the rows gathered, then widened (never the whole table).
  Tensor x = is_block(embed_stored.dtype())
                 ? nn::embedding(embed, d.ids)
                 : widen(nn::embedding(embed_stored, d.ids));  // [s, hidden]
  // Gemma scales the embeddings by sqrt(hidden), rounded to the model's dtype.
  if (gemma) x = x * round_to(dt, std::sqrt(static_cast<double>(hidden)));
  nn::AttentionOptions attn;
  if (gemma) {
    // attn_logit_softcapping is read but not applied: transformers' Gemma 3 attention ignores it
    // (QK-norm replaced it); nn::AttentionOptions::softcap is there for Gemma 2-style models.
    attn.scale = 1.0 / std::sqrt(cfg.query_pre_attn_scalar.value_or(static_cast<double>(hd)));
  }
  // Qwen2 has q/k/v biases and no o_proj bias (the config parser reports attention_bias true).
  const bool qkv_bias = cfg.attention_bias || cfg.family == ModelFamily::Qwen2;
  const bool o_bias = cfg.attention_bias && cfg.family != ModelFamily::Qwen2;
  // (the sliding layers' form: DecoderShape::window_read, else LUMINAL_WINDOW_READ, else masked)
  const bool window_read =
      cfg.sliding_window && shape.window_read.value_or(window_read_env().value_or(false));
  // (the sliding layers' cache: a ring of window + max_step - 1 positions, two rows each, where
  // that is fewer rows than slots and DecoderShape::rolling_cache, else LUMINAL_ROLLING_CACHE,
  // asks for it)
  if (cfg.sliding_window && shape.rolling_cache.value_or(rolling_cache_env().value_or(false))) {
    const int64_t rows = 2 * (*cfg.sliding_window + shape.max_step - 1);
    if (rows < shape.slots) d.ring_rows = static_cast<int>(rows);
  }
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
    const Tensor h = norm(x, p + "input_layernorm.weight", hidden);
    Tensor q = proj("self_attn.q_proj", H * hd, hidden, qkv_bias)(h).reshape({"s", H, hd});
    Tensor k = proj("self_attn.k_proj", KV * hd, hidden, qkv_bias)(h).reshape({"s", KV, hd});
    Tensor v = proj("self_attn.v_proj", KV * hd, hidden, qkv_bias)(h).reshape({"s", KV, hd});
    if (qk_norm || gemma) {
      q = norm(q, p + "self_attn.q_norm.weight", hd);
      k = norm(k, p + "self_attn.k_norm.weight", hd);
    }
    // (a sliding layer: Gemma 3's local ones, every layer of a Mistral-7B-v0.1-style config, a
    // Qwen2 layer past max_window_layers with use_sliding_window)
    const bool sliding = cfg.sliding_window && cfg.is_sliding_layer(l);
    const Tensor& freq = sliding && gemma && local_inv_freq ? *local_inv_freq : inv_freq;
    q = nn::apply_rope(q, pos, freq);
    k = nn::apply_rope(k, pos, freq);
    nn::AttentionOptions layer_attn = attn;
    if (sliding) {
      layer_attn.window = cfg.sliding_window;
      layer_attn.window_read = window_read;
      layer_attn.ring = d.ring_rows > 0;
    }
    const Tensor o = nn::cached_attention(g, q, k, v, p + "self_attn",
                                          layer_attn.ring ? d.ring_rows : shape.slots, layer_attn);
    const Tensor attn_out = proj("self_attn.o_proj", hidden, H * hd, o_bias)(o);
    if (gemma) {
      // Gemma 3: sandwich norms around attention and the GeGLU feed-forward.
      x = x + norm(attn_out, p + "post_attention_layernorm.weight", hidden);
      const Tensor h2 = norm(x, p + "pre_feedforward_layernorm.weight", hidden);
      const Tensor ff = nn::geglu_tanh_mlp(h2, w(p + "mlp.gate_proj.weight", {ffn, hidden}),
                                           w(p + "mlp.up_proj.weight", {ffn, hidden}),
                                           w(p + "mlp.down_proj.weight", {hidden, ffn}));
      x = x + norm(ff, p + "post_feedforward_layernorm.weight", hidden);
      continue;
    }
    x = x + attn_out;
    const Tensor h2 = norm(x, p + "post_attention_layernorm.weight", hidden);
    if (cfg.is_moe_layer(l)) {
      x = x + moe_block(h2, cfg, p, w, shape.moe, shape.router);
      continue;
    }
    x = x + nn::swiglu_mlp(h2, w(p + "mlp.gate_proj.weight", {ffn, hidden}),
                           w(p + "mlp.up_proj.weight", {ffn, hidden}),
                           w(p + "mlp.down_proj.weight", {hidden, ffn}));
  }
  const Tensor head =
      cfg.tie_word_embeddings ? embed : w("lm_head.weight", {cfg.vocab_size, hidden});
  // Logits::Last takes the last row before the norm: both are per row, so the values equal the
  // last row of Logits::All's.
  if (shape.logits == Logits::Last) x = x.slice(0, Expr::var("s") - 1, Expr::var("s"));
  x = norm(x, "model.norm.weight", hidden);
  Tensor logits = nn::lm_head(x, head).cast(DType::F32);
  if (gemma && cfg.final_logit_softcapping) {
    const double cap = *cfg.final_logit_softcapping;
    logits = (logits * (1.0 / cap)).tanh() * cap;
  }
  d.logits = logits.output("logits");
  d.last_logits =
      shape.logits == Logits::Last ? logits : logits.slice(0, Expr::var("s") - 1, Expr::var("s"));
  return d;
}

void init_state(Runtime& rt, const Decoder& d) {
  rt.set("rope.inv_freq", d.rope_inv_freq);
  if (!d.rope_local_inv_freq.empty()) rt.set("rope.local_inv_freq", d.rope_local_inv_freq);
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
