// gemma3 GGUF files (llama.cpp's convert_hf_to_gguf.py, Gemma3Model): the keys llama.cpp's
// gemma3 loader reads, as the Gemma 3 config transformers runs, and the tensor names.
//
// What llama.cpp fixes rather than stores, we fix the same way: the attention scale is
// head_dim^-0.5 (hidden / heads for 62 layers, Gemma 3 27B), the local RoPE is unscaled, and,
// without attention.sliding_window_pattern, every 6th layer is global. The converter stores each
// RMSNorm weight as 1 + w (Gemma's norm scales by 1 + w); the offset -1 gives back w, exactly when
// the stored value is in [0.5, 2^24) (Sterbenz), so the decoder's w + 1 is the stored value again.
#include <cmath>
#include <string>

#include "luminal/core/error.hpp"
#include "luminal/io/gguf_model_detail.hpp"

namespace luminal::io::gguf_detail {

namespace {

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

// Sliding layers from attention.sliding_window_pattern: an array of bools (one per layer), or a
// period n (layer l slides unless l % n == n - 1; 0: every layer slides); absent: 6.
std::vector<std::string> layer_types(const GgufFile& f, const ModelConfig& c) {
  const std::string key = "gemma3.attention.sliding_window_pattern";
  const auto layers = static_cast<size_t>(c.num_hidden_layers);
  std::vector<std::string> types(layers, "full_attention");
  const GgufValue* v = f.find(key);
  if (v != nullptr && v->type() == GgufValueType::Array) {
    const GgufArray& a = v->as_array();
    if (a.element_type != GgufValueType::Bool || a.items.size() != layers)
      throw Error(where(f) + "key '" + key + "': " + v->describe() + ", expected " +
                  std::to_string(layers) + " bools (one per layer, block_count " +
                  std::to_string(layers) + ") or a period");
    for (size_t l = 0; l < layers; ++l)
      if (a.items[l].as_bool()) types[l] = "sliding_attention";
    return types;
  }
  const uint64_t n = v == nullptr ? 6 : f.get_uint(key);
  for (size_t l = 0; l < layers; ++l)
    if (n == 0 || l % n < n - 1) types[l] = "sliding_attention";
  return types;
}

}  // namespace

void read_gemma3_config(const GgufFile& f, ModelConfig& c) {
  const std::string a = "gemma3.";
  c.family = ModelFamily::Gemma3;
  c.model_type = "gemma3_text";
  c.architectures = {"Gemma3ForCausalLM"};
  c.hidden_act = "gelu_pytorch_tanh";
  if (f.contains(a + "attention.causal") && !f.get_bool(a + "attention.causal"))
    throw Error(where(f) + "key '" + a +
                "attention.causal': false (bidirectional attention, as EmbeddingGemma's files "
                "have, is not supported: only causal language models run)");
  if (f.contains_tensor("rope_freqs.weight"))
    throw Error(where(f) +
                "tensor 'rope_freqs.weight': per-dimension RoPE factors are not supported for "
                "gemma3 (llama.cpp's gemma3 does not read them either)");

  // llama.cpp: 1 / sqrt(head_dim), or 1 / sqrt(hidden / heads) for the 62-layer model (27B),
  // which is what query_pre_attn_scalar says in each published config.
  c.query_pre_attn_scalar = c.num_hidden_layers == 62
                                ? static_cast<double>(c.hidden_size / c.num_attention_heads)
                                : static_cast<double>(c.head_dim);

  c.rope_local_base_freq = find_float_value(f, a + "rope.freq_base_swa").value_or(10000.0);
  for (const auto& [key, v] : {std::pair{a + "rope.freq_base", c.rope_theta},
                               std::pair{a + "rope.freq_base_swa", *c.rope_local_base_freq}})
    if (!(v > 0) || !std::isfinite(v))
      throw Error(where(f) + "key '" + key + "': " + num(v) + " (a RoPE base must be positive)");

  if (auto v = find_float_value(f, a + "final_logit_softcapping")) {
    if (!(*v >= 0) || !std::isfinite(*v))
      throw Error(where(f) + "key '" + a + "final_logit_softcapping': " + num(*v) +
                  " (must be positive, or 0 for none)");
    if (*v > 0) c.final_logit_softcapping = *v;
  }
  if (auto v = find_float_value(f, a + "attn_logit_softcapping"); v && *v != 0)
    throw Error(where(f) + "key '" + a + "attn_logit_softcapping': " + num(*v) +
                " (attention soft-capping is not supported for gemma3: Gemma 3 has none, and "
                "llama.cpp's gemma3 ignores the key)");

  const std::optional<int64_t> window = f.find_int(a + "attention.sliding_window");
  if (window && *window < 0)
    throw Error(where(f) + "key '" + a + "attention.sliding_window': " + std::to_string(*window) +
                " (must be positive, or 0 for none)");
  if (!window || *window == 0) {
    // llama.cpp: no window, no sliding layers (whatever the pattern says).
    c.sliding_window.reset();
    c.layer_types.assign(static_cast<size_t>(c.num_hidden_layers), "full_attention");
    return;
  }
  c.sliding_window = *window;
  c.layer_types = layer_types(f, c);
  if (const GgufValue* p = f.find(a + "attention.sliding_window_pattern");
      p == nullptr || p->type() != GgufValueType::Array)
    c.sliding_window_pattern =
        p == nullptr ? 6 : static_cast<int64_t>(f.get_uint(a + "attention.sliding_window_pattern"));
}

std::map<std::string, Expected> gemma3_tensors(const ModelConfig& c) {
  std::map<std::string, Expected> e;
  const int64_t hidden = c.hidden_size, hd = c.head_dim, H = c.num_attention_heads,
                KV = c.num_key_value_heads, ffn = c.intermediate_size;
  auto add = [&](const std::string& g, const std::string& hf, std::vector<int64_t> shape,
                 float offset = 0) {
    e[g] = Expected{hf, std::move(shape), true, 0, offset};
  };
  add("token_embd.weight", "model.embed_tokens.weight", {c.vocab_size, hidden});
  add("output_norm.weight", "model.norm.weight", {hidden}, -1);
  if (!c.tie_word_embeddings) add("output.weight", "lm_head.weight", {c.vocab_size, hidden});
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
    const std::string g = "blk." + std::to_string(l) + ".";
    const std::string h = "model.layers." + std::to_string(l) + ".";
    add(g + "attn_norm.weight", h + "input_layernorm.weight", {hidden}, -1);
    add(g + "attn_q.weight", h + "self_attn.q_proj.weight", {H * hd, hidden});
    add(g + "attn_k.weight", h + "self_attn.k_proj.weight", {KV * hd, hidden});
    add(g + "attn_v.weight", h + "self_attn.v_proj.weight", {KV * hd, hidden});
    add(g + "attn_output.weight", h + "self_attn.o_proj.weight", {hidden, H * hd});
    if (c.attention_bias) {
      add(g + "attn_q.bias", h + "self_attn.q_proj.bias", {H * hd});
      add(g + "attn_k.bias", h + "self_attn.k_proj.bias", {KV * hd});
      add(g + "attn_v.bias", h + "self_attn.v_proj.bias", {KV * hd});
      add(g + "attn_output.bias", h + "self_attn.o_proj.bias", {hidden});
    }
    add(g + "attn_q_norm.weight", h + "self_attn.q_norm.weight", {hd}, -1);
    add(g + "attn_k_norm.weight", h + "self_attn.k_norm.weight", {hd}, -1);
    add(g + "post_attention_norm.weight", h + "post_attention_layernorm.weight", {hidden}, -1);
    add(g + "ffn_norm.weight", h + "pre_feedforward_layernorm.weight", {hidden}, -1);
    add(g + "post_ffw_norm.weight", h + "post_feedforward_layernorm.weight", {hidden}, -1);
    add(g + "ffn_gate.weight", h + "mlp.gate_proj.weight", {ffn, hidden});
    add(g + "ffn_up.weight", h + "mlp.up_proj.weight", {ffn, hidden});
    add(g + "ffn_down.weight", h + "mlp.down_proj.weight", {hidden, ffn});
  }
  return e;
}

}  // namespace luminal::io::gguf_detail
