#include "luminal/io/hf_config.hpp"

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <utility>

#include "luminal/core/error.hpp"
#include "luminal/io/config_fields.hpp"

namespace luminal::io {

std::string_view family_name(ModelFamily f) {
  switch (f) {
    case ModelFamily::Llama: return "llama";
    case ModelFamily::Mistral: return "mistral";
    case ModelFamily::Qwen2: return "qwen2";
    case ModelFamily::Qwen3: return "qwen3";
    case ModelFamily::Qwen3Moe: return "qwen3_moe";
    case ModelFamily::Gemma3: return "gemma3";
    case ModelFamily::Mixtral: return "mixtral";
  }
  return "?";
}

std::string_view rope_type_name(RopeType t) {
  switch (t) {
    case RopeType::None: return "none";
    case RopeType::Linear: return "linear";
    case RopeType::Dynamic: return "dynamic";
    case RopeType::Yarn: return "yarn";
    case RopeType::Llama3: return "llama3";
    case RopeType::LongRope: return "longrope";
  }
  return "?";
}

bool ModelConfig::is_sliding_layer(int64_t layer) const {
  if (layer < 0 || layer >= static_cast<int64_t>(layer_types.size())) return false;
  return layer_types[static_cast<size_t>(layer)] == "sliding_attention";
}

bool ModelConfig::is_moe_layer(int64_t layer) const {
  if (family == ModelFamily::Mixtral) return num_experts > 0;
  if (family != ModelFamily::Qwen3Moe || num_experts <= 0) return false;
  for (int64_t l : mlp_only_layers)
    if (l == layer) return false;
  return decoder_sparse_step > 0 && (layer + 1) % decoder_sparse_step == 0;
}

namespace {

using nlohmann::json;

const char* kSupported = "llama, mistral, qwen2, qwen3, qwen3_moe, gemma3, gemma3_text, mixtral";

// The text model's fields (the top level, or Gemma 3's "text_config") and the top level's, with
// Gemma3TextConfig's defaults for what Gemma 3 configs leave out.
struct TextFields {
  const ConfigFields& f;    // the text model's
  const ConfigFields& top;  // the top level's
  bool gemma;

  int64_t pos_int_or(const char* key, int64_t gemma_default) const {
    if (gemma && !f.has(key)) return gemma_default;
    return f.req_pos_int(key);
  }
  double double_or(const char* key, double gemma_default) const {
    if (gemma && !f.has(key)) return gemma_default;
    return f.req_double(key);
  }
};

// model_type and the family it names.
void read_model_type(const ConfigFields& top, const std::string& source, ModelConfig& c) {
  std::optional<std::string> mt = top.opt_string("model_type");
  if (!mt) {
    throw Error(source + ": missing field 'model_type'; supported: " + std::string(kSupported));
  }
  c.model_type = *mt;
  static constexpr std::pair<const char*, ModelFamily> kFamilies[] = {
      {"llama", ModelFamily::Llama},        {"mistral", ModelFamily::Mistral},
      {"qwen2", ModelFamily::Qwen2},        {"qwen3", ModelFamily::Qwen3},
      {"qwen3_moe", ModelFamily::Qwen3Moe}, {"gemma3", ModelFamily::Gemma3},
      {"gemma3_text", ModelFamily::Gemma3}, {"mixtral", ModelFamily::Mixtral}};
  for (const auto& [type, family] : kFamilies) {
    if (c.model_type == type) {
      c.family = family;
      return;
    }
  }
  throw Error(source + ": unknown model_type '" + c.model_type +
              "'; supported: " + std::string(kSupported));
}

// Widths, depth, heads, vocabulary and context; rms_norm_eps.
void read_sizes(const TextFields& t, ModelConfig& c) {
  const ConfigFields& f = t.f;
  c.hidden_size = f.req_pos_int("hidden_size");
  c.intermediate_size = f.req_pos_int("intermediate_size");
  c.num_hidden_layers = f.req_pos_int("num_hidden_layers");
  c.num_attention_heads = t.pos_int_or("num_attention_heads", 8);
  c.vocab_size = t.pos_int_or("vocab_size", 262208);
  c.max_position_embeddings = t.pos_int_or("max_position_embeddings", 131072);
  c.rms_norm_eps = t.double_or("rms_norm_eps", 1e-6);
  if (!(c.rms_norm_eps > 0.0)) f.fail("field '" + f.name("rms_norm_eps") + "' must be positive");
}

// KV heads (grouped-query attention) and the head width.
void read_heads(const TextFields& t, ModelConfig& c) {
  const ConfigFields& f = t.f;
  if (f.has("num_key_value_heads")) {
    c.num_key_value_heads = f.req_pos_int("num_key_value_heads");
  } else {
    c.num_key_value_heads = t.gemma ? 4 : c.num_attention_heads;
  }
  if (c.num_attention_heads % c.num_key_value_heads != 0) {
    f.fail("num_attention_heads (" + std::to_string(c.num_attention_heads) +
           ") is not a multiple of num_key_value_heads (" + std::to_string(c.num_key_value_heads) +
           ")");
  }
  if (f.has("head_dim")) {
    c.head_dim = f.req_pos_int("head_dim");
  } else if (t.gemma) {
    c.head_dim = 256;
  } else {
    if (c.hidden_size % c.num_attention_heads != 0) {
      f.fail("missing field '" + f.name("head_dim") + "', and hidden_size (" +
             std::to_string(c.hidden_size) + ") is not a multiple of num_attention_heads (" +
             std::to_string(c.num_attention_heads) + ")");
    }
    c.head_dim = c.hidden_size / c.num_attention_heads;
  }
}

// Activation, projection biases and tied embeddings.
void read_layers(const TextFields& t, ModelConfig& c) {
  const ConfigFields& f = t.f;
  if (t.gemma) {
    c.hidden_act = f.opt_string("hidden_activation")
                       .value_or(f.opt_string("hidden_act").value_or("gelu_pytorch_tanh"));
  } else {
    c.hidden_act = f.opt_string("hidden_act").value_or("silu");
  }
  c.attention_bias =
      f.opt_bool("attention_bias").value_or(c.family == ModelFamily::Qwen2);  // Qwen2: q/k/v bias
  c.mlp_bias = f.opt_bool("mlp_bias").value_or(false);
  c.tie_word_embeddings = f.opt_bool("tie_word_embeddings")
                              .value_or(t.top.opt_bool("tie_word_embeddings").value_or(t.gemma));
}

DType read_dtype(const ConfigFields& f, const char* key) {
  std::optional<std::string> s = f.opt_string(key);
  try {
    return parse_dtype(*s);
  } catch (const Error& e) {
    f.fail("field '" + f.name(key) + "': " + e.what());
  }
}

// dtype: transformers 5 writes "dtype", earlier versions "torch_dtype"; the text config's wins.
void read_weights_dtype(const TextFields& t, ModelConfig& c) {
  for (const ConfigFields* src : {&t.f, &t.top}) {
    if (c.dtype) break;
    if (src->has("dtype")) {
      c.dtype = read_dtype(*src, "dtype");
    } else if (src->has("torch_dtype")) {
      c.dtype = read_dtype(*src, "torch_dtype");
    }
  }
}

// Special token ids: the top level's (gemma-3-4b-it lists eos there), else the text config's.
void read_special_tokens(const TextFields& t, ModelConfig& c) {
  c.bos_token_ids = t.top.int_or_list("bos_token_id");
  if (c.bos_token_ids.empty()) c.bos_token_ids = t.f.int_or_list("bos_token_id");
  c.eos_token_ids = t.top.int_or_list("eos_token_id");
  if (c.eos_token_ids.empty()) c.eos_token_ids = t.f.int_or_list("eos_token_id");
  c.pad_token_id = t.top.opt_int("pad_token_id");
  if (!c.pad_token_id) c.pad_token_id = t.f.opt_int("pad_token_id");
  if (t.gemma) {
    if (c.bos_token_ids.empty()) c.bos_token_ids = {2};
    if (c.eos_token_ids.empty()) c.eos_token_ids = {1};
    if (!c.pad_token_id) c.pad_token_id = 0;
  }
}

// rope_scaling (published) or one rope_parameters entry (transformers 5); returns the scaling
// and, for rope_parameters, its rope_theta.
RopeScaling read_rope_scaling(const ConfigFields& f, std::optional<double>* theta) {
  RopeScaling r;
  std::optional<std::string> type = f.opt_string("rope_type");
  const char* type_key = "rope_type";
  if (!type) {
    type = f.opt_string("type");  // older configs
    type_key = "type";
  }
  if (theta) *theta = f.opt_double("rope_theta");
  const std::string t = type.value_or("default");
  if (t == "default" || t == "none") {
    r.type = RopeType::None;
  } else if (t == "linear") {
    r.type = RopeType::Linear;
  } else if (t == "dynamic") {
    r.type = RopeType::Dynamic;
  } else if (t == "yarn") {
    r.type = RopeType::Yarn;
  } else if (t == "llama3") {
    r.type = RopeType::Llama3;
  } else if (t == "longrope") {
    r.type = RopeType::LongRope;
  } else {
    f.fail("field '" + f.name(type_key) + "' is '" + t +
           "'; supported: default, linear, dynamic, yarn, llama3, longrope");
  }
  if (r.type == RopeType::None) return r;
  if (r.type != RopeType::LongRope) r.factor = f.req_double("factor");
  if (auto v = f.opt_double("factor")) r.factor = *v;
  if (r.type == RopeType::Llama3) {
    r.low_freq_factor = f.req_double("low_freq_factor");
    r.high_freq_factor = f.req_double("high_freq_factor");
    r.original_max_position_embeddings = f.req_int("original_max_position_embeddings");
  } else if (auto v = f.opt_int("original_max_position_embeddings")) {
    r.original_max_position_embeddings = *v;
  }
  r.attention_factor = f.opt_double("attention_factor");
  r.beta_fast = f.opt_double("beta_fast");
  r.beta_slow = f.opt_double("beta_slow");
  return r;
}

// transformers 5's rope_parameters: one entry, or one per layer type (Gemma 3: the global layers
// scaled, the local ones plain).
void read_rope_parameters(const ConfigFields& rpf, const json& rp, ModelConfig& c) {
  if (!rp.contains("full_attention") && !rp.contains("sliding_attention")) {
    std::optional<double> theta;
    c.rope_scaling = read_rope_scaling(rpf, &theta);
    if (theta) c.rope_theta = *theta;
    return;
  }
  if (const json* full = rpf.opt_object("full_attention")) {
    std::optional<double> theta;
    c.rope_scaling = read_rope_scaling(rpf.sub("full_attention", *full), &theta);
    if (theta) c.rope_theta = *theta;
  }
  if (const json* sl = rpf.opt_object("sliding_attention")) {
    std::optional<double> theta;
    RopeScaling local = read_rope_scaling(rpf.sub("sliding_attention", *sl), &theta);
    if (local.type != RopeType::None) {
      rpf.fail("field 'rope_parameters.sliding_attention.rope_type' is '" +
               std::string(rope_type_name(local.type)) +
               "'; the sliding layers' RoPE must be unscaled ('default')");
    }
    if (theta) c.rope_local_base_freq = *theta;
  }
}

// RoPE base(s) and scaling.
void read_rope(const TextFields& t, ModelConfig& c) {
  const ConfigFields& f = t.f;
  c.rope_theta = t.gemma ? 1000000.0 : 10000.0;
  if (auto theta = f.opt_double("rope_theta")) c.rope_theta = *theta;
  if (t.gemma) c.rope_local_base_freq = f.opt_double("rope_local_base_freq").value_or(10000.0);
  if (const json* rs = f.opt_object("rope_scaling")) {
    c.rope_scaling = read_rope_scaling(f.sub("rope_scaling", *rs), nullptr);
  }
  if (const json* rp = f.opt_object("rope_parameters")) {
    read_rope_parameters(f.sub("rope_parameters", *rp), *rp, c);
  }
  if (!(c.rope_theta > 0.0)) f.fail("field '" + f.name("rope_theta") + "' must be positive");
}

// The listed layer types, checked against the depth.
void read_layer_types(const ConfigFields& f, ModelConfig& c) {
  c.layer_types = f.string_list("layer_types");
  if (c.layer_types.empty()) return;
  if (static_cast<int64_t>(c.layer_types.size()) != c.num_hidden_layers) {
    f.fail("field '" + f.name("layer_types") + "' has " + std::to_string(c.layer_types.size()) +
           " entries; num_hidden_layers is " + std::to_string(c.num_hidden_layers));
  }
  for (const std::string& type : c.layer_types) {
    if (type != "full_attention" && type != "sliding_attention") {
      f.fail("field '" + f.name("layer_types") + "' holds '" + type +
             "'; expected 'full_attention' or 'sliding_attention'");
    }
  }
}

// Sliding windows and each layer's attention type, by family (layer types derived from the
// family's pattern fields when the file does not list them), plus Gemma 3's attention scalars.
void read_attention_pattern(const ConfigFields& f, ModelConfig& c) {
  read_layer_types(f, c);
  std::optional<int64_t> window = f.opt_int("sliding_window");
  if (window && *window <= 0) window.reset();
  const auto n = static_cast<size_t>(c.num_hidden_layers);
  switch (c.family) {
    case ModelFamily::Gemma3: {
      c.sliding_window = window ? window : std::optional<int64_t>(4096);
      // transformers >= 4.53 (and 5) write '_sliding_window_pattern' next to layer_types.
      const char* pattern_key = f.alias("sliding_window_pattern", "_sliding_window_pattern");
      if (c.layer_types.empty()) {
        c.sliding_window_pattern = f.opt_int(pattern_key).value_or(6);
        if (*c.sliding_window_pattern <= 0) {
          f.fail("field '" + f.name(pattern_key) + "' must be positive");
        }
        for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
          c.layer_types.push_back((i + 1) % *c.sliding_window_pattern ? "sliding_attention"
                                                                      : "full_attention");
        }
      } else {
        c.sliding_window_pattern = f.opt_int(pattern_key);
      }
      c.query_pre_attn_scalar = f.opt_double("query_pre_attn_scalar").value_or(256.0);
      c.final_logit_softcapping = f.opt_double("final_logit_softcapping");
      c.attn_logit_softcapping = f.opt_double("attn_logit_softcapping");
      break;
    }
    case ModelFamily::Qwen2:
    case ModelFamily::Qwen3:
    case ModelFamily::Qwen3Moe: {
      c.max_window_layers = f.opt_int("max_window_layers");
      const bool use = f.opt_bool("use_sliding_window").value_or(false);
      if (use && window) c.sliding_window = window;
      if (c.layer_types.empty()) {
        const int64_t first = c.max_window_layers.value_or(c.num_hidden_layers);
        for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
          c.layer_types.push_back(c.sliding_window && i >= first ? "sliding_attention"
                                                                 : "full_attention");
        }
      }
      break;
    }
    case ModelFamily::Llama:
    case ModelFamily::Mistral:
    case ModelFamily::Mixtral: {
      c.sliding_window = window;
      if (c.layer_types.empty()) {
        c.layer_types.assign(n, c.sliding_window ? "sliding_attention" : "full_attention");
      }
      break;
    }
  }
  bool any_sliding = false;
  for (const std::string& type : c.layer_types)
    any_sliding |= type == "sliding_attention";
  if (any_sliding && !c.sliding_window) {
    f.fail("field '" + f.name("layer_types") +
           "' has sliding_attention layers but 'sliding_window' is not set");
  }
}

// Qwen3-MoE's and Mixtral's experts.
void read_experts(const ConfigFields& f, ModelConfig& c) {
  // transformers 5 writes Qwen3MoeConfig.num_experts as 'num_local_experts' (attribute_map).
  const char* experts_key = f.alias("num_experts", "num_local_experts");
  if (!f.has(experts_key)) {
    f.fail("missing field '" + f.name("num_experts") + "' (required for model_type '" +
           c.model_type + "'; transformers 5 writes it as '" + f.name("num_local_experts") + "')");
  }
  c.num_experts = f.req_pos_int(experts_key);
  c.num_experts_per_tok = f.req_pos_int("num_experts_per_tok");
  if (c.family == ModelFamily::Mixtral) {  // experts as wide as the dense MLP, weights renormalised
    c.moe_intermediate_size = c.intermediate_size;
    c.norm_topk_prob = true;
    if (c.num_experts_per_tok > c.num_experts) {
      f.fail("num_experts_per_tok (" + std::to_string(c.num_experts_per_tok) +
             ") exceeds num_local_experts (" + std::to_string(c.num_experts) + ")");
    }
    return;
  }
  c.moe_intermediate_size = f.req_pos_int("moe_intermediate_size");
  if (c.num_experts_per_tok > c.num_experts) {
    f.fail("num_experts_per_tok (" + std::to_string(c.num_experts_per_tok) +
           ") exceeds num_experts (" + std::to_string(c.num_experts) + ")");
  }
  c.norm_topk_prob = f.opt_bool("norm_topk_prob").value_or(false);
  c.decoder_sparse_step = f.opt_int("decoder_sparse_step").value_or(1);
  if (c.decoder_sparse_step <= 0) {
    f.fail("field '" + f.name("decoder_sparse_step") + "' must be positive");
  }
  c.mlp_only_layers = f.int_list("mlp_only_layers");
}

}  // namespace

ModelConfig parse_config_json(std::string_view text, std::string_view source_name) {
  const std::string source(source_name);
  const json root = parse_json_object(text, source, " at the top level");
  ModelConfig c;
  read_model_type(ConfigFields(root, source, "", "?"), source, c);
  const ConfigFields top(root, source, "", c.model_type);
  c.architectures = top.string_list("architectures");
  // Gemma3ForConditionalGeneration: the language model's fields sit under "text_config".
  const json* text_obj = &root;
  std::string prefix;
  if (c.model_type == "gemma3") {
    text_obj = top.opt_object("text_config");
    if (!text_obj) top.missing("text_config");
    prefix = "text_config.";
  }
  const ConfigFields f(*text_obj, source, prefix, c.model_type);
  const TextFields t{f, top, c.family == ModelFamily::Gemma3};
  read_sizes(t, c);
  read_heads(t, c);
  read_layers(t, c);
  read_weights_dtype(t, c);
  read_special_tokens(t, c);
  read_rope(t, c);
  read_attention_pattern(f, c);
  if (c.family == ModelFamily::Qwen3Moe || c.family == ModelFamily::Mixtral) read_experts(f, c);
  return c;
}

ModelConfig parse_config(const std::filesystem::path& config_json) {
  std::error_code ec;
  if (std::filesystem::is_directory(config_json, ec)) {
    return parse_config(config_json / "config.json");
  }
  std::ifstream in(config_json, std::ios::binary);
  if (!in) {
    throw Error(config_json.string() +
                ": cannot open the model config (a Hugging Face model folder has a config.json "
                "next to its *.safetensors)");
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  return parse_config_json(ss.str(), config_json.string());
}

}  // namespace luminal::io
