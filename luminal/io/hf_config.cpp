#include "luminal/io/hf_config.hpp"

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "luminal/core/error.hpp"

namespace luminal::io {

using nlohmann::json;

std::string_view family_name(ModelFamily f) {
  switch (f) {
    case ModelFamily::Llama: return "llama";
    case ModelFamily::Mistral: return "mistral";
    case ModelFamily::Qwen2: return "qwen2";
    case ModelFamily::Qwen3: return "qwen3";
    case ModelFamily::Qwen3Moe: return "qwen3_moe";
    case ModelFamily::Gemma3: return "gemma3";
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
  if (family != ModelFamily::Qwen3Moe || num_experts <= 0) return false;
  for (int64_t l : mlp_only_layers)
    if (l == layer) return false;
  return decoder_sparse_step > 0 && (layer + 1) % decoder_sparse_step == 0;
}

namespace {

const char* kSupported = "llama, mistral, qwen2, qwen3, qwen3_moe, gemma3, gemma3_text";

std::string type_of(const json& v) {
  if (v.is_null()) return "null";
  if (v.is_boolean()) return "a boolean";
  if (v.is_number_integer()) return "an integer";
  if (v.is_number()) return "a number";
  if (v.is_string()) return "a string";
  if (v.is_array()) return "a list";
  return "an object";
}

std::string shown(const json& v) {
  std::string s = v.dump();
  if (s.size() > 40) s = s.substr(0, 37) + "...";
  return s;
}

// Reads fields of one JSON object; every error names the source, the field (with its path, e.g.
// "text_config.hidden_size") and, for missing ones, the model_type that requires it.
class Fields {
 public:
  Fields(const json& obj, std::string source, std::string prefix, std::string model_type)
      : obj_(obj),
        source_(std::move(source)),
        prefix_(std::move(prefix)),
        model_type_(std::move(model_type)) {}

  // A present, non-null value, or nullptr.
  const json* get(const char* key) const {
    auto it = obj_.find(key);
    if (it == obj_.end() || it->is_null()) return nullptr;
    return &*it;
  }
  bool has(const char* key) const { return get(key) != nullptr; }
  // A field transformers 5 writes under another name: whichever of the two is present (`key`
  // when neither is); both present with different values is an error naming both.
  const char* alias(const char* key, const char* other) const {
    const json* a = get(key);
    const json* b = get(other);
    if (a && b && *a != *b) {
      fail("fields '" + name(key) + "' (" + shown(*a) + ") and '" + name(other) + "' (" +
           shown(*b) + ") disagree; they name the same setting");
    }
    return a || !b ? key : other;
  }

  [[noreturn]] void fail(const std::string& msg) const { throw Error(source_ + ": " + msg); }
  std::string name(const char* key) const { return prefix_ + key; }

  [[noreturn]] void missing(const char* key) const {
    fail("missing field '" + name(key) + "' (required for model_type '" + model_type_ + "')");
  }
  [[noreturn]] void wrong(const char* key, const json& v, const char* want) const {
    fail("field '" + name(key) + "' must be " + want + ", got " + type_of(v) + " " + shown(v));
  }

  int64_t to_int(const char* key, const json& v) const {
    if (v.is_number_integer()) return v.get<int64_t>();
    if (v.is_number_float()) {
      double d = v.get<double>();
      if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9.0e15)
        return static_cast<int64_t>(d);
    }
    wrong(key, v, "an integer");
  }
  double to_double(const char* key, const json& v) const {
    if (v.is_number()) return v.get<double>();
    wrong(key, v, "a number");
  }

  int64_t req_int(const char* key) const {
    const json* v = get(key);
    if (!v) missing(key);
    return to_int(key, *v);
  }
  int64_t req_pos_int(const char* key) const {
    int64_t x = req_int(key);
    if (x <= 0) fail("field '" + name(key) + "' must be positive, got " + std::to_string(x));
    return x;
  }
  double req_double(const char* key) const {
    const json* v = get(key);
    if (!v) missing(key);
    return to_double(key, *v);
  }
  std::optional<int64_t> opt_int(const char* key) const {
    const json* v = get(key);
    if (!v) return std::nullopt;
    return to_int(key, *v);
  }
  std::optional<double> opt_double(const char* key) const {
    const json* v = get(key);
    if (!v) return std::nullopt;
    return to_double(key, *v);
  }
  std::optional<bool> opt_bool(const char* key) const {
    const json* v = get(key);
    if (!v) return std::nullopt;
    if (!v->is_boolean()) wrong(key, *v, "true or false");
    return v->get<bool>();
  }
  std::optional<std::string> opt_string(const char* key) const {
    const json* v = get(key);
    if (!v) return std::nullopt;
    if (!v->is_string()) wrong(key, *v, "a string");
    return v->get<std::string>();
  }
  // An int or a list of ints (bos/eos ids); empty when absent.
  std::vector<int64_t> int_or_list(const char* key) const {
    const json* v = get(key);
    if (!v) return {};
    if (!v->is_array()) return {to_int(key, *v)};
    std::vector<int64_t> out;
    for (const json& e : *v) {
      if (!e.is_number_integer()) wrong(key, *v, "an integer or a list of integers");
      out.push_back(e.get<int64_t>());
    }
    return out;
  }
  std::vector<int64_t> int_list(const char* key) const {
    const json* v = get(key);
    if (!v) return {};
    if (!v->is_array()) wrong(key, *v, "a list of integers");
    std::vector<int64_t> out;
    for (const json& e : *v) {
      if (!e.is_number_integer()) wrong(key, *v, "a list of integers");
      out.push_back(e.get<int64_t>());
    }
    return out;
  }
  std::vector<std::string> string_list(const char* key) const {
    const json* v = get(key);
    if (!v) return {};
    if (!v->is_array()) wrong(key, *v, "a list of strings");
    std::vector<std::string> out;
    for (const json& e : *v) {
      if (!e.is_string()) wrong(key, *v, "a list of strings");
      out.push_back(e.get<std::string>());
    }
    return out;
  }
  const json* opt_object(const char* key) const {
    const json* v = get(key);
    if (v && !v->is_object()) wrong(key, *v, "an object");
    return v;
  }
  Fields sub(const char* key, const json& obj) const {
    return Fields(obj, source_, prefix_ + key + ".", model_type_);
  }
  const std::string& source() const { return source_; }

 private:
  const json& obj_;
  std::string source_;
  std::string prefix_;
  std::string model_type_;
};

// rope_scaling (published) or one rope_parameters entry (transformers 5); returns the scaling
// and, for rope_parameters, its rope_theta.
RopeScaling read_rope(const Fields& f, std::optional<double>* theta) {
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

DType read_dtype(const Fields& f, const char* key) {
  std::optional<std::string> s = f.opt_string(key);
  try {
    return parse_dtype(*s);
  } catch (const Error& e) {
    f.fail("field '" + f.name(key) + "': " + e.what());
  }
}

}  // namespace

ModelConfig parse_config_json(std::string_view text, std::string_view source_name) {
  const std::string source(source_name);
  json root;
  try {
    root = json::parse(text.begin(), text.end());
  } catch (const json::parse_error& e) {
    throw Error(source + ": not valid JSON (" + e.what() + ")");
  }
  if (!root.is_object()) throw Error(source + ": expected a JSON object at the top level");

  ModelConfig c;
  Fields top(root, source, "", "?");
  std::optional<std::string> mt = top.opt_string("model_type");
  if (!mt) {
    throw Error(source + ": missing field 'model_type'; supported: " + std::string(kSupported));
  }
  c.model_type = *mt;
  if (c.model_type == "llama") {
    c.family = ModelFamily::Llama;
  } else if (c.model_type == "mistral") {
    c.family = ModelFamily::Mistral;
  } else if (c.model_type == "qwen2") {
    c.family = ModelFamily::Qwen2;
  } else if (c.model_type == "qwen3") {
    c.family = ModelFamily::Qwen3;
  } else if (c.model_type == "qwen3_moe") {
    c.family = ModelFamily::Qwen3Moe;
  } else if (c.model_type == "gemma3" || c.model_type == "gemma3_text") {
    c.family = ModelFamily::Gemma3;
  } else {
    throw Error(source + ": unknown model_type '" + c.model_type +
                "'; supported: " + std::string(kSupported));
  }
  Fields root_f(root, source, "", c.model_type);
  c.architectures = root_f.string_list("architectures");

  // Gemma3ForConditionalGeneration: the language model's fields sit under "text_config".
  const json* text_obj = &root;
  std::string prefix;
  if (c.model_type == "gemma3") {
    const json* tc = root_f.opt_object("text_config");
    if (!tc) root_f.missing("text_config");
    text_obj = tc;
    prefix = "text_config.";
  }
  Fields f(*text_obj, source, prefix, c.model_type);
  const bool gemma = c.family == ModelFamily::Gemma3;

  // Required everywhere.
  c.hidden_size = f.req_pos_int("hidden_size");
  c.intermediate_size = f.req_pos_int("intermediate_size");
  c.num_hidden_layers = f.req_pos_int("num_hidden_layers");

  // Gemma 3: Gemma3TextConfig's defaults for what its configs leave out.
  auto int_or = [&](const char* key, int64_t gemma_default) {
    if (gemma && !f.has(key)) return gemma_default;
    return f.req_pos_int(key);
  };
  auto double_or = [&](const char* key, double gemma_default) {
    if (gemma && !f.has(key)) return gemma_default;
    return f.req_double(key);
  };
  c.num_attention_heads = int_or("num_attention_heads", 8);
  c.vocab_size = int_or("vocab_size", 262208);
  c.max_position_embeddings = int_or("max_position_embeddings", 131072);
  c.rms_norm_eps = double_or("rms_norm_eps", 1e-6);
  if (!(c.rms_norm_eps > 0.0)) f.fail("field '" + f.name("rms_norm_eps") + "' must be positive");

  if (f.has("num_key_value_heads")) {
    c.num_key_value_heads = f.req_pos_int("num_key_value_heads");
  } else {
    c.num_key_value_heads = gemma ? 4 : c.num_attention_heads;
  }
  if (c.num_attention_heads % c.num_key_value_heads != 0) {
    f.fail("num_attention_heads (" + std::to_string(c.num_attention_heads) +
           ") is not a multiple of num_key_value_heads (" + std::to_string(c.num_key_value_heads) +
           ")");
  }
  if (f.has("head_dim")) {
    c.head_dim = f.req_pos_int("head_dim");
  } else if (gemma) {
    c.head_dim = 256;
  } else {
    if (c.hidden_size % c.num_attention_heads != 0) {
      f.fail("missing field '" + f.name("head_dim") + "', and hidden_size (" +
             std::to_string(c.hidden_size) + ") is not a multiple of num_attention_heads (" +
             std::to_string(c.num_attention_heads) + ")");
    }
    c.head_dim = c.hidden_size / c.num_attention_heads;
  }

  // Activation.
  if (gemma) {
    c.hidden_act = f.opt_string("hidden_activation")
                       .value_or(f.opt_string("hidden_act").value_or("gelu_pytorch_tanh"));
  } else {
    c.hidden_act = f.opt_string("hidden_act").value_or("silu");
  }
  c.attention_bias =
      f.opt_bool("attention_bias").value_or(c.family == ModelFamily::Qwen2);  // Qwen2: q/k/v bias
  c.mlp_bias = f.opt_bool("mlp_bias").value_or(false);
  c.tie_word_embeddings = f.opt_bool("tie_word_embeddings")
                              .value_or(root_f.opt_bool("tie_word_embeddings").value_or(gemma));

  // dtype: transformers 5 writes "dtype", earlier versions "torch_dtype"; the text config's wins.
  for (const Fields* src : {&f, &root_f}) {
    if (c.dtype) break;
    if (src->has("dtype")) {
      c.dtype = read_dtype(*src, "dtype");
    } else if (src->has("torch_dtype")) {
      c.dtype = read_dtype(*src, "torch_dtype");
    }
  }

  // Special token ids: the top level's (gemma-3-4b-it lists eos there), else the text config's.
  c.bos_token_ids = root_f.int_or_list("bos_token_id");
  if (c.bos_token_ids.empty()) c.bos_token_ids = f.int_or_list("bos_token_id");
  c.eos_token_ids = root_f.int_or_list("eos_token_id");
  if (c.eos_token_ids.empty()) c.eos_token_ids = f.int_or_list("eos_token_id");
  c.pad_token_id = root_f.opt_int("pad_token_id");
  if (!c.pad_token_id) c.pad_token_id = f.opt_int("pad_token_id");
  if (gemma) {
    if (c.bos_token_ids.empty()) c.bos_token_ids = {2};
    if (c.eos_token_ids.empty()) c.eos_token_ids = {1};
    if (!c.pad_token_id) c.pad_token_id = 0;
  }

  // RoPE.
  c.rope_theta = gemma ? 1000000.0 : 10000.0;
  if (auto t = f.opt_double("rope_theta")) c.rope_theta = *t;
  if (gemma) c.rope_local_base_freq = f.opt_double("rope_local_base_freq").value_or(10000.0);
  if (const json* rs = f.opt_object("rope_scaling")) {
    c.rope_scaling = read_rope(f.sub("rope_scaling", *rs), nullptr);
  }
  if (const json* rp = f.opt_object("rope_parameters")) {
    Fields rpf = f.sub("rope_parameters", *rp);
    if (rp->contains("full_attention") || rp->contains("sliding_attention")) {
      // transformers 5, per layer type (Gemma 3): global layers scaled, local ones plain.
      if (const json* full = rpf.opt_object("full_attention")) {
        std::optional<double> theta;
        c.rope_scaling = read_rope(rpf.sub("full_attention", *full), &theta);
        if (theta) c.rope_theta = *theta;
      }
      if (const json* sl = rpf.opt_object("sliding_attention")) {
        std::optional<double> theta;
        RopeScaling local = read_rope(rpf.sub("sliding_attention", *sl), &theta);
        if (local.type != RopeType::None) {
          rpf.fail("field 'rope_parameters.sliding_attention.rope_type' is '" +
                   std::string(rope_type_name(local.type)) +
                   "'; the sliding layers' RoPE must be unscaled ('default')");
        }
        if (theta) c.rope_local_base_freq = *theta;
      }
    } else {
      std::optional<double> theta;
      c.rope_scaling = read_rope(rpf, &theta);
      if (theta) c.rope_theta = *theta;
    }
  }
  if (!(c.rope_theta > 0.0)) f.fail("field '" + f.name("rope_theta") + "' must be positive");

  // Sliding windows and layer types.
  c.layer_types = f.string_list("layer_types");
  if (!c.layer_types.empty()) {
    if (static_cast<int64_t>(c.layer_types.size()) != c.num_hidden_layers) {
      f.fail("field '" + f.name("layer_types") + "' has " + std::to_string(c.layer_types.size()) +
             " entries; num_hidden_layers is " + std::to_string(c.num_hidden_layers));
    }
    for (const std::string& t : c.layer_types) {
      if (t != "full_attention" && t != "sliding_attention") {
        f.fail("field '" + f.name("layer_types") + "' holds '" + t +
               "'; expected 'full_attention' or 'sliding_attention'");
      }
    }
  }
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
    case ModelFamily::Mistral: {
      c.sliding_window = window;
      if (c.layer_types.empty()) {
        c.layer_types.assign(n, c.sliding_window ? "sliding_attention" : "full_attention");
      }
      break;
    }
  }
  bool any_sliding = false;
  for (const std::string& t : c.layer_types)
    any_sliding |= t == "sliding_attention";
  if (any_sliding && !c.sliding_window) {
    f.fail("field '" + f.name("layer_types") +
           "' has sliding_attention layers but 'sliding_window' is not set");
  }

  if (c.family == ModelFamily::Qwen3Moe) {
    // transformers 5 writes Qwen3MoeConfig.num_experts as 'num_local_experts' (attribute_map).
    const char* experts_key = f.alias("num_experts", "num_local_experts");
    if (!f.has(experts_key)) {
      f.fail("missing field '" + f.name("num_experts") + "' (required for model_type '" +
             c.model_type + "'; transformers 5 writes it as '" + f.name("num_local_experts") +
             "')");
    }
    c.num_experts = f.req_pos_int(experts_key);
    c.num_experts_per_tok = f.req_pos_int("num_experts_per_tok");
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
