// GGUF models: ModelConfig from <arch>.* metadata, f32 weights under Hugging Face names (the
// llama converter's Q/K row permutation undone), and read_gguf_model tying them to the tokenizer
// (gguf_tokenizer.cpp). gemma3's keys and tensors: gguf_gemma3.cpp.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>
#include <set>

#include "luminal/core/error.hpp"
#include "luminal/io/error_text.hpp"
#include "luminal/io/gguf_dequant.hpp"
#include "luminal/io/gguf_model.hpp"
#include "luminal/io/gguf_model_detail.hpp"

namespace luminal::io {

namespace gguf_detail {

std::string where(const GgufFile& f) { return "gguf '" + f.source() + "': "; }

double float_value(const GgufFile& f, const std::string& key) {
  const GgufValue& v = f.get(key);
  const double d = f.get_float(key);
  if (v.type() != GgufValueType::F32 || !std::isfinite(d)) return d;
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, static_cast<float>(d));
  double out = d;
  std::from_chars(buf, r.ptr, out);
  return out;
}

std::optional<double> find_float_value(const GgufFile& f, const std::string& key) {
  if (!f.contains(key)) return std::nullopt;
  return float_value(f, key);
}

}  // namespace gguf_detail

namespace {

using gguf_detail::Expected;
using gguf_detail::find_float_value;
using gguf_detail::fit_llama3_rope;
using gguf_detail::float_value;
using gguf_detail::read_rope_scaling;
using gguf_detail::where;

std::string bytes_str(uint64_t b) {
  char buf[64];
  if (b >= (uint64_t(1) << 30))
    std::snprintf(buf, sizeof buf, "%llu bytes (%.2f GiB)", static_cast<unsigned long long>(b),
                  double(b) / double(uint64_t(1) << 30));
  else if (b >= (uint64_t(1) << 20))
    std::snprintf(buf, sizeof buf, "%llu bytes (%.2f MiB)", static_cast<unsigned long long>(b),
                  double(b) / double(uint64_t(1) << 20));
  else
    std::snprintf(buf, sizeof buf, "%llu bytes", static_cast<unsigned long long>(b));
  return buf;
}

const std::vector<std::string>& supported_archs() {
  static const std::vector<std::string> a = {"llama", "qwen2", "qwen3", "qwen3moe", "gemma3"};
  return a;
}

std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i)
    out += (i ? ", " : "") + v[i];
  return out;
}

std::map<std::string, Expected> expected_tensors(const ModelConfig& c, const std::string& arch) {
  if (arch == "gemma3") return gguf_detail::gemma3_tensors(c);
  std::map<std::string, Expected> e;
  const int64_t hidden = c.hidden_size, hd = c.head_dim, H = c.num_attention_heads,
                KV = c.num_key_value_heads, ffn = c.intermediate_size;
  auto add = [&](const std::string& g, std::vector<int64_t> shape, bool required = true,
                 int64_t permute = 0) {
    e[g] = Expected{gguf_to_hf_name(g), std::move(shape), required, permute};
  };
  const bool moe = c.num_experts > 0;
  const int64_t E = c.num_experts, F = c.moe_intermediate_size;
  const bool llama = arch == "llama";
  const bool qkv_bias = c.attention_bias;
  const bool o_bias = c.attention_bias && c.family != ModelFamily::Qwen2;
  add("token_embd.weight", {c.vocab_size, hidden});
  add("output_norm.weight", {hidden});
  if (!c.tie_word_embeddings) add("output.weight", {c.vocab_size, hidden});
  for (int64_t l = 0; l < c.num_hidden_layers; ++l) {
    const std::string p = "blk." + std::to_string(l) + ".";
    add(p + "attn_norm.weight", {hidden});
    add(p + "attn_q.weight", {H * hd, hidden}, true, llama ? H : 0);
    add(p + "attn_k.weight", {KV * hd, hidden}, true, llama ? KV : 0);
    add(p + "attn_v.weight", {KV * hd, hidden});
    add(p + "attn_output.weight", {hidden, H * hd});
    if (qkv_bias) {
      add(p + "attn_q.bias", {H * hd}, true, llama ? H : 0);
      add(p + "attn_k.bias", {KV * hd}, true, llama ? KV : 0);
      add(p + "attn_v.bias", {KV * hd});
    }
    if (o_bias) add(p + "attn_output.bias", {hidden});
    if (c.family == ModelFamily::Qwen3 || c.family == ModelFamily::Qwen3Moe) {
      add(p + "attn_q_norm.weight", {hd});
      add(p + "attn_k_norm.weight", {hd});
    }
    add(p + "ffn_norm.weight", {hidden});
    if (moe) {
      // The router and the stacked experts (models/experts.hpp stacks gate and up into the
      // gate_up_proj the decoder reads).
      const std::string b = "model.layers." + std::to_string(l) + "." +
                            (c.family == ModelFamily::Mixtral ? "block_sparse_moe." : "mlp.");
      e[p + "ffn_gate_inp.weight"] = Expected{b + "gate.weight", {E, hidden}};
      e[p + "ffn_gate_exps.weight"] = Expected{b + "experts.gate_proj", {E, F, hidden}};
      e[p + "ffn_up_exps.weight"] = Expected{b + "experts.up_proj", {E, F, hidden}};
      e[p + "ffn_down_exps.weight"] = Expected{b + "experts.down_proj", {E, hidden, F}};
      continue;
    }
    add(p + "ffn_gate.weight", {ffn, hidden});
    add(p + "ffn_up.weight", {ffn, hidden});
    add(p + "ffn_down.weight", {hidden, ffn});
  }
  return e;
}

}  // namespace

std::string gguf_to_hf_name(std::string_view g) {
  static const std::map<std::string, std::string, std::less<>> global = {
      {"token_embd", "model.embed_tokens"}, {"output_norm", "model.norm"}, {"output", "lm_head"}};
  static const std::map<std::string, std::string, std::less<>> block = {
      {"attn_norm", "input_layernorm"},    {"ffn_norm", "post_attention_layernorm"},
      {"attn_q", "self_attn.q_proj"},      {"attn_k", "self_attn.k_proj"},
      {"attn_v", "self_attn.v_proj"},      {"attn_output", "self_attn.o_proj"},
      {"attn_q_norm", "self_attn.q_norm"}, {"attn_k_norm", "self_attn.k_norm"},
      {"ffn_gate", "mlp.gate_proj"},       {"ffn_up", "mlp.up_proj"},
      {"ffn_down", "mlp.down_proj"}};
  const size_t dot = g.rfind('.');
  if (dot == std::string_view::npos) return "";
  const std::string_view suffix = g.substr(dot);  // ".weight" / ".bias"
  if (suffix != ".weight" && suffix != ".bias") return "";
  std::string_view stem = g.substr(0, dot);
  if (auto it = global.find(stem); it != global.end()) return it->second + std::string(suffix);
  if (stem.substr(0, 4) != "blk.") return "";
  stem.remove_prefix(4);
  const size_t d2 = stem.find('.');
  if (d2 == std::string_view::npos || d2 == 0) return "";
  const std::string_view layer = stem.substr(0, d2);
  if (!std::all_of(layer.begin(), layer.end(), [](char ch) { return ch >= '0' && ch <= '9'; }) ||
      (layer.size() > 1 && layer[0] == '0'))
    return "";
  auto it = block.find(stem.substr(d2 + 1));
  if (it == block.end()) return "";
  return "model.layers." + std::string(layer) + "." + it->second + std::string(suffix);
}

namespace {

// The dtype the model computes in: a file whose matrices (tensors of two or more dims) are all
// BF16, or all F16, runs in that type as transformers runs a 16-bit checkpoint (its 1-D norms
// are converted when bound); anything else (block-quantized or f32 matrices, or a mix) in f32.
// Gemma runs an F16 file in f32: its activations overflow f16's range (transformers warns the
// same), and bf16 would round the stored weights.
DType stored_float_dtype(const GgufFile& f, const std::string& arch) {
  std::optional<GgmlType> all;
  for (const GgufTensor& t : f.tensors()) {
    if (t.shape.size() < 2) continue;
    if (all && *all != t.type) return DType::F32;
    all = t.type;
  }
  if (all == GgmlType::BF16) return DType::BF16;
  if (all == GgmlType::F16 && arch != "gemma3") return DType::F16;
  return DType::F32;
}

}  // namespace

ModelConfig gguf_model_config(const GgufFile& f) {
  const std::string arch = f.get_string("general.architecture");
  if (std::find(supported_archs().begin(), supported_archs().end(), arch) ==
      supported_archs().end())
    throw Error(where(f) + "unsupported architecture '" + arch +
                "' (general.architecture; supported: " + join(supported_archs()) + ")");
  const std::string a = arch + ".";
  auto count = [&](const std::string& key) {
    const int64_t v = f.get_int(a + key);
    if (v <= 0)
      throw Error(where(f) + "key '" + a + key + "': must be positive, got " + std::to_string(v));
    return v;
  };
  ModelConfig c;
  c.model_type = arch;
  if (arch == "llama") {
    c.family = ModelFamily::Llama;
    c.architectures = {"LlamaForCausalLM"};
  } else if (arch == "qwen2") {
    c.family = ModelFamily::Qwen2;
    c.architectures = {"Qwen2ForCausalLM"};
  } else if (arch == "qwen3moe") {
    c.family = ModelFamily::Qwen3Moe;
    c.architectures = {"Qwen3MoeForCausalLM"};
  } else {
    c.family = ModelFamily::Qwen3;
    c.architectures = {"Qwen3ForCausalLM"};
  }
  c.hidden_size = count("embedding_length");
  c.intermediate_size = count("feed_forward_length");
  c.num_hidden_layers = count("block_count");
  c.num_attention_heads = count("attention.head_count");
  c.num_key_value_heads = f.contains(a + "attention.head_count_kv")
                              ? count("attention.head_count_kv")
                              : c.num_attention_heads;
  if (c.num_attention_heads % c.num_key_value_heads != 0)
    throw Error(where(f) + "key '" + a + "attention.head_count_kv': " +
                std::to_string(c.num_key_value_heads) + " does not divide the " +
                std::to_string(c.num_attention_heads) + " attention heads");
  if (f.contains(a + "attention.key_length")) {
    c.head_dim = count("attention.key_length");
  } else {
    if (c.hidden_size % c.num_attention_heads != 0)
      throw Error(where(f) + "no key '" + a + "attention.key_length' and " + a +
                  "embedding_length " + std::to_string(c.hidden_size) +
                  " is not a multiple of the " + std::to_string(c.num_attention_heads) + " heads");
    c.head_dim = c.hidden_size / c.num_attention_heads;
  }
  if (f.contains(a + "attention.value_length") && count("attention.value_length") != c.head_dim)
    throw Error(where(f) + "key '" + a +
                "attention.value_length': " + std::to_string(count("attention.value_length")) +
                " differs from the key length " + std::to_string(c.head_dim) + " (not supported)");
  if (f.contains(a + "rope.dimension_count") && count("rope.dimension_count") != c.head_dim)
    throw Error(where(f) + "key '" + a + "rope.dimension_count': " +
                std::to_string(count("rope.dimension_count")) + " rotary dims of " +
                std::to_string(c.head_dim) + " (partial rotary embeddings are not supported)");
  // Mixtures of experts: qwen3moe, and llama with experts (Mixtral). llama.cpp renormalises the
  // chosen experts' weights for both (norm_topk_prob true).
  if (f.contains(a + "expert_count") && f.get_int(a + "expert_count") > 0) {
    if (arch != "llama" && arch != "qwen3moe")
      throw Error(where(f) + "key '" + a + "expert_count': " +
                  std::to_string(f.get_int(a + "expert_count")) + " experts (" + arch +
                  " has a dense feed-forward; experts are supported for llama and qwen3moe)");
    if (arch == "llama") {
      c.family = ModelFamily::Mixtral;
      c.model_type = "mixtral";
      c.architectures = {"MixtralForCausalLM"};
    }
    c.num_experts = count("expert_count");
    c.num_experts_per_tok = count("expert_used_count");
    if (c.num_experts_per_tok > c.num_experts)
      throw Error(where(f) + "key '" + a +
                  "expert_used_count': " + std::to_string(c.num_experts_per_tok) + " exceeds the " +
                  std::to_string(c.num_experts) + " experts");
    c.moe_intermediate_size =
        arch == "llama" ? c.intermediate_size : count("expert_feed_forward_length");
    c.norm_topk_prob = true;
  } else if (arch == "qwen3moe") {
    throw Error(where(f) + "missing key '" + a + "expert_count' (a qwen3moe model has experts)");
  }
  c.max_position_embeddings = count("context_length");
  c.rms_norm_eps = float_value(f, a + "attention.layer_norm_rms_epsilon");
  c.rope_theta = find_float_value(f, a + "rope.freq_base").value_or(10000.0);
  c.hidden_act = "silu";
  c.dtype = DType::F32;  // set from the tensors' types below (stored_float_dtype)
  c.layer_types.assign(static_cast<size_t>(c.num_hidden_layers), "full_attention");

  // The tensors decide the vocabulary, the biases and tied embeddings.
  const GgufTensor& embd = f.tensor("token_embd.weight");
  if (embd.shape.size() != 2 || embd.shape[1] != c.hidden_size)
    throw Error(where(f) + "tensor 'token_embd.weight' has shape " + shape_str(embd.shape) +
                ", expected [vocab, " + std::to_string(c.hidden_size) + "] (" + a +
                "embedding_length = " + std::to_string(c.hidden_size) + ")");
  c.vocab_size = embd.shape[0];
  if (auto v = f.find_int(a + "vocab_size"); v && *v != c.vocab_size)
    throw Error(where(f) + "key '" + a + "vocab_size' is " + std::to_string(*v) +
                ", but tensor 'token_embd.weight' has " + std::to_string(c.vocab_size) + " rows");
  c.tie_word_embeddings = !f.contains_tensor("output.weight");
  c.attention_bias = c.family == ModelFamily::Qwen2 || f.contains_tensor("blk.0.attn_q.bias");
  c.mlp_bias = false;

  if (auto v = f.find_int("tokenizer.ggml.bos_token_id")) c.bos_token_ids = {*v};
  if (auto v = f.find_int("tokenizer.ggml.eos_token_id")) c.eos_token_ids = {*v};
  if (auto v = f.find_int("tokenizer.ggml.padding_token_id")) c.pad_token_id = *v;

  read_rope_scaling(f, arch, c);
  if (arch == "gemma3") gguf_detail::read_gemma3_config(f, c);
  if (f.contains_tensor("rope_freqs.weight")) {
    const GgufTensor& t = f.tensor("rope_freqs.weight");
    if (t.shape != std::vector<int64_t>{c.head_dim / 2})
      throw Error(where(f) + "tensor 'rope_freqs.weight' has shape " + shape_str(t.shape) +
                  ", expected [" + std::to_string(c.head_dim / 2) + "] (head_dim / 2)");
    if (c.rope_scaling.type != RopeType::None)
      throw Error(where(f) + "tensor 'rope_freqs.weight' and RoPE scaling '" +
                  std::string(rope_type_name(c.rope_scaling.type)) +
                  "' are both given (not supported)");
    fit_llama3_rope(f, c, dequantize(t));
  }
  c.dtype = stored_float_dtype(f, arch);
  return c;
}

namespace {

struct Item {
  const GgufTensor* t;
  const Expected* e;
};

// The file's tensors checked against the config (names, shapes, types), and their sizes as f32
// and in the file.
std::vector<Item> checked_items(const GgufFile& f, const ModelConfig& c,
                                const std::map<std::string, Expected>& expected,
                                uint64_t* f32_bytes, uint64_t* file_bytes) {
  const std::string arch = f.get_string("general.architecture");
  std::vector<Item> items;
  *f32_bytes = *file_bytes = 0;
  for (const GgufTensor& t : f.tensors()) {
    if (t.name == "rope_freqs.weight") continue;  // read by gguf_model_config
    auto it = expected.find(t.name);
    if (it == expected.end()) {
      const std::string hf = gguf_to_hf_name(t.name);
      throw Error(
          where(f) + "unexpected tensor '" + t.name + "'" + (hf.empty() ? "" : " (" + hf + ")") +
          " for a " + arch + " model with " + std::to_string(c.num_hidden_layers) + " layers" +
          (t.name.find("bias") != std::string::npos ? " (this bias is not supported)" : ""));
    }
    if (t.shape != it->second.shape)
      throw Error(where(f) + "tensor '" + t.name + "' (" + it->second.hf + ") has shape " +
                  shape_str(t.shape) + ", expected " + shape_str(it->second.shape) +
                  " from the metadata (hidden " + std::to_string(c.hidden_size) + ", heads " +
                  std::to_string(c.num_attention_heads) + ", kv heads " +
                  std::to_string(c.num_key_value_heads) + ", head_dim " +
                  std::to_string(c.head_dim) + ", ffn " + std::to_string(c.intermediate_size) +
                  ", vocab " + std::to_string(c.vocab_size) + ")");
    if (!can_dequantize(t.type))
      throw Error(where(f) + "tensor '" + t.name + "': type " +
                  std::string(ggml_type_name(t.type)) +
                  " cannot be dequantised (supported: " + dequantizable_types() + ")");
    items.push_back({&t, &it->second});
    *f32_bytes += static_cast<uint64_t>(t.numel()) * 4;
    *file_bytes += t.size_bytes;
  }
  for (const auto& [name, e] : expected)
    if (e.required && !f.contains_tensor(name))
      throw Error(where(f) + "missing tensor '" + name + "' (" + e.hf + ", shape " +
                  shape_str(e.shape) + ")");
  return items;
}

// Rows of `heads` heads as the converter stored them (HF row (h, j, i) at h * hd + 2i + j), put
// back in HF order; each row is `row_bytes` bytes (f32 values or whole blocks).
void unpermute_rows(const GgufFile& f, const GgufTensor& t, int64_t heads, const uint8_t* src,
                    uint8_t* dst, size_t row_bytes) {
  const size_t rows = static_cast<size_t>(t.shape[0]);
  const size_t h_count = static_cast<size_t>(heads);
  if (rows % (2 * h_count) != 0)
    throw Error(where(f) + "tensor '" + t.name + "': " + std::to_string(rows) +
                " rows cannot be split into " + std::to_string(heads) +
                " heads of an even size (to undo the rotary permutation)");
  const size_t hd = rows / h_count, half = hd / 2;
  for (size_t h = 0; h < h_count; ++h)
    for (size_t j = 0; j < 2; ++j)
      for (size_t i = 0; i < half; ++i)
        std::memcpy(dst + (h * hd + j * half + i) * row_bytes,
                    src + (h * hd + 2 * i + j) * row_bytes, row_bytes);
}

}  // namespace

Weights gguf_weights(const GgufFile& f, const ModelConfig& c, uint64_t max_bytes,
                     const LoadProgress& progress) {
  const std::string arch = f.get_string("general.architecture");
  const std::map<std::string, Expected> expected = expected_tensors(c, arch);
  uint64_t f32_bytes = 0, file_bytes = 0;
  std::vector<Item> items = checked_items(f, c, expected, &f32_bytes, &file_bytes);
  if (max_bytes != 0 && f32_bytes > max_bytes)
    throw Error(where(f) + "the weights take " + bytes_str(f32_bytes) + " as f32 (" +
                bytes_str(file_bytes) + " in the file), over the limit of " + bytes_str(max_bytes));

  // One safetensors file in memory: the header, then each tensor's f32 values in name order.
  std::sort(items.begin(), items.end(),
            [](const Item& x, const Item& y) { return x.e->hf < y.e->hf; });
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  uint64_t offset = 0;
  for (const Item& it : items) {
    const uint64_t n = static_cast<uint64_t>(it.t->numel()) * 4;
    header[it.e->hf] = {
        {"dtype", "F32"}, {"shape", it.t->shape}, {"data_offsets", {offset, offset + n}}};
    offset += n;
  }
  std::string text = header.dump();
  while (text.size() % 8 != 0)
    text.push_back(' ');
  std::vector<uint8_t> bytes(8 + text.size() + offset);
  for (int i = 0; i < 8; ++i)
    bytes[static_cast<size_t>(i)] = static_cast<uint8_t>(uint64_t(text.size()) >> (8 * i));
  std::memcpy(bytes.data() + 8, text.data(), text.size());
  uint8_t* out = bytes.data() + 8 + text.size();
  std::vector<float> values;
  ProgressMeter meter(progress, "dequantising", offset);
  for (const Item& it : items) {
    const GgufTensor& t = *it.t;
    values.resize(static_cast<size_t>(t.numel()));
    dequantize_into(t, values, &meter);
    const size_t n = values.size();
    if (it.e->offset != 0)
      for (float& x : values)
        x += it.e->offset;
    if (it.e->permute_heads > 0) {
      const size_t row_bytes = n / static_cast<size_t>(t.shape[0]) * sizeof(float);
      unpermute_rows(f, t, it.e->permute_heads, reinterpret_cast<const uint8_t*>(values.data()),
                     out, row_bytes);
    } else {
      std::memcpy(out, values.data(), n * sizeof(float));
    }
    out += n * sizeof(float);
  }
  meter.finish();
  return Weights(SafeTensors::from_bytes(std::move(bytes), f.source()));
}

Weights gguf_block_weights(std::shared_ptr<const GgufFile> file, const ModelConfig& c,
                           const std::function<bool(DType)>& keep, uint64_t max_bytes,
                           const LoadProgress& progress) {
  const GgufFile& f = *file;
  const std::string arch = f.get_string("general.architecture");
  const std::map<std::string, Expected> expected = expected_tensors(c, arch);
  uint64_t f32_bytes = 0, file_bytes = 0;
  std::vector<Item> items = checked_items(f, c, expected, &f32_bytes, &file_bytes);
  // Used as stored: kept block types and f32, unless the values change (an offset).
  auto as_stored = [&](const Item& it) {
    if (it.e->offset != 0) return false;
    const std::optional<DType> d = dtype_of(it.t->type);
    return it.t->type == GgmlType::F32 || it.t->type == GgmlType::F16 ||
           it.t->type == GgmlType::BF16 || (d && is_block(*d) && keep(*d));
  };
  uint64_t resident = 0, widened = 0;  // stored bytes kept; f32 bytes of the widened tensors
  for (const Item& it : items) {
    if (as_stored(it))
      resident += it.t->size_bytes;
    else
      widened += static_cast<uint64_t>(it.t->numel()) * 4;
  }
  if (max_bytes != 0 && resident + widened > max_bytes)
    throw Error(where(f) + "the weights take " + bytes_str(resident + widened) + " (" +
                bytes_str(resident) + " as stored blocks, " + bytes_str(widened) +
                " widened to f32), over the limit of " + bytes_str(max_bytes));
  // Copies (un-permuted rows, widened tensors) live beside the mapping, owned with it.
  struct Owner {
    std::shared_ptr<const GgufFile> file;
    std::vector<std::vector<uint8_t>> copies;
  };
  auto owner = std::make_shared<Owner>();
  owner->file = file;
  std::vector<TensorView> views;
  ProgressMeter meter(progress, "dequantising", widened);
  for (const Item& it : items) {
    const GgufTensor& t = *it.t;
    TensorView v;
    v.name = it.e->hf;
    v.shape = t.shape;
    v.file = f.source();
    const size_t rows = t.shape.empty() ? 1 : static_cast<size_t>(t.shape[0]);
    if (as_stored(it)) {
      v.dtype = *dtype_of(t.type);
      v.bytes = t.data;
      if (it.e->permute_heads > 0) {
        std::vector<uint8_t>& copy = owner->copies.emplace_back(t.data.size());
        unpermute_rows(f, t, it.e->permute_heads, t.data.data(), copy.data(), t.data.size() / rows);
        v.bytes = copy;
      }
    } else {
      std::vector<float> values(static_cast<size_t>(t.numel()));
      dequantize_into(t, values, &meter);
      if (it.e->offset != 0)
        for (float& x : values)
          x += it.e->offset;
      std::vector<uint8_t>& copy = owner->copies.emplace_back(values.size() * sizeof(float));
      const auto* src = reinterpret_cast<const uint8_t*>(values.data());
      if (it.e->permute_heads > 0)
        unpermute_rows(f, t, it.e->permute_heads, src, copy.data(), copy.size() / rows);
      else
        std::memcpy(copy.data(), src, copy.size());
      v.dtype = DType::F32;
      v.bytes = copy;
    }
    views.push_back(std::move(v));
  }
  meter.finish();
  Weights w;
  w.add_views(std::move(views), owner);
  return w;
}

GgufModel read_gguf_model(const std::filesystem::path& file, const GgufModelOptions& options) {
  GgufFile f = GgufFile::open(file);
  GgufModel m;
  m.path = file;
  m.architecture = f.get_string("general.architecture");
  m.name = f.find_string("general.name").value_or("");
  m.config = gguf_model_config(f);
  if (f.contains_tensor("rope_freqs.weight"))
    m.rope_freq_factors = dequantize(f.tensor("rope_freqs.weight"));
  if (options.weights)
    m.weights = std::make_shared<const Weights>(
        gguf_weights(f, m.config, options.max_bytes, options.progress));

  m.chat_template = f.find_string("tokenizer.chat_template");
  if (f.contains("tokenizer.ggml.model")) {
    const std::vector<std::string> tokens = f.get_string_array("tokenizer.ggml.tokens");
    if (static_cast<int64_t>(tokens.size()) > m.config.vocab_size)
      throw Error(where(f) + "the tokenizer has " + std::to_string(tokens.size()) +
                  " tokens, but tensor 'token_embd.weight' only " +
                  std::to_string(m.config.vocab_size) + " rows");
    auto id = [&](const char* key) -> std::optional<int32_t> {
      auto v = f.find_int(std::string("tokenizer.ggml.") + key);
      if (!v) return std::nullopt;
      if (*v < 0 || *v >= static_cast<int64_t>(tokens.size()))
        throw Error(where(f) + "key 'tokenizer.ggml." + key + "': id " + std::to_string(*v) +
                    " is not a token (the vocabulary has " + std::to_string(tokens.size()) + ")");
      return static_cast<int32_t>(*v);
    };
    m.bos_id = id("bos_token_id");
    m.eos_id = id("eos_token_id");
    for (const char* key : {"eos_token_id", "eot_token_id", "eom_token_id"})
      if (auto v = id(key);
          v && std::find(m.stop_ids.begin(), m.stop_ids.end(), *v) == m.stop_ids.end())
        m.stop_ids.push_back(*v);
    // Gemma: llama.cpp takes <end_of_turn> as the end of a turn when no eot id is given.
    if (m.architecture == "gemma3" && !f.contains("tokenizer.ggml.eot_token_id"))
      if (auto it = std::find(tokens.begin(), tokens.end(), "<end_of_turn>"); it != tokens.end())
        if (const auto id = static_cast<int64_t>(it - tokens.begin());
            std::find(m.stop_ids.begin(), m.stop_ids.end(), id) == m.stop_ids.end())
          m.stop_ids.push_back(id);
    const std::pair<const char*, const char*> names[] = {{"bos_token", "bos_token_id"},
                                                         {"eos_token", "eos_token_id"},
                                                         {"unk_token", "unknown_token_id"},
                                                         {"pad_token", "padding_token_id"}};
    for (const auto& [var, key] : names)
      if (auto v = id(key)) m.special_tokens[var] = tokens[static_cast<size_t>(*v)];
    m.add_bos = m.bos_id && gguf_add_bos(f);
    m.add_eos = m.eos_id && gguf_add_eos(f);
    if (options.tokenizer) m.tokenizer.emplace(gguf_tokenizer(f));
  }
  return m;
}

}  // namespace luminal::io
