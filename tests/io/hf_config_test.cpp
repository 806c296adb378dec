// Hugging Face config.json parsing: every family in both serializations (published models',
// transformers 5's) against the values scripts/fixtures/gen_configs.py expects, and every
// malformed config's error naming the file and the field.
#include "luminal/io/hf_config.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "luminal/core/error.hpp"

namespace fs = std::filesystem;
using luminal::io::ModelConfig;
using luminal::io::parse_config;
using luminal::io::parse_config_json;
using nlohmann::json;

namespace {

fs::path configs_dir() {
  const char* env = std::getenv("LUMINAL_FIXTURES");
  return fs::path(env ? env : "build/fixtures") / "configs";
}

json load_expected() {
  fs::path p = configs_dir() / "expected.json";
  std::ifstream in(p);
  if (!in) return json();
  return json::parse(in);
}

const json& expected() {
  static const json e = load_expected();
  return e;
}

std::string error_of(const fs::path& file) {
  try {
    parse_config(file);
  } catch (const luminal::Error& e) {
    return e.what();
  }
  return "<no error>";
}

void check_optional_double(const json& want, const std::optional<double>& got, const char* what) {
  if (want.is_null()) {
    EXPECT_FALSE(got.has_value()) << what;
  } else {
    ASSERT_TRUE(got.has_value()) << what;
    EXPECT_DOUBLE_EQ(*got, want.get<double>()) << what;
  }
}

void check(const std::string& name, const ModelConfig& c, const json& e) {
  SCOPED_TRACE(name);
  EXPECT_EQ(luminal::io::family_name(c.family), e["family"].get<std::string>());
  EXPECT_EQ(c.model_type, e["model_type"].get<std::string>());
  EXPECT_EQ(c.architectures, e["architectures"].get<std::vector<std::string>>());
  EXPECT_EQ(c.hidden_size, e["hidden_size"].get<int64_t>());
  EXPECT_EQ(c.intermediate_size, e["intermediate_size"].get<int64_t>());
  EXPECT_EQ(c.num_hidden_layers, e["num_hidden_layers"].get<int64_t>());
  EXPECT_EQ(c.num_attention_heads, e["num_attention_heads"].get<int64_t>());
  EXPECT_EQ(c.num_key_value_heads, e["num_key_value_heads"].get<int64_t>());
  EXPECT_EQ(c.head_dim, e["head_dim"].get<int64_t>());
  EXPECT_EQ(c.vocab_size, e["vocab_size"].get<int64_t>());
  EXPECT_EQ(c.max_position_embeddings, e["max_position_embeddings"].get<int64_t>());
  EXPECT_DOUBLE_EQ(c.rms_norm_eps, e["rms_norm_eps"].get<double>());
  EXPECT_DOUBLE_EQ(c.rope_theta, e["rope_theta"].get<double>());
  const json& rs = e["rope_scaling"];
  EXPECT_EQ(luminal::io::rope_type_name(c.rope_scaling.type), rs["type"].get<std::string>());
  if (rs.contains("factor")) {
    EXPECT_DOUBLE_EQ(c.rope_scaling.factor, rs["factor"].get<double>());
  }
  if (rs.contains("low_freq_factor")) {
    EXPECT_DOUBLE_EQ(c.rope_scaling.low_freq_factor, rs["low_freq_factor"].get<double>());
    EXPECT_DOUBLE_EQ(c.rope_scaling.high_freq_factor, rs["high_freq_factor"].get<double>());
    EXPECT_EQ(c.rope_scaling.original_max_position_embeddings,
              rs["original_max_position_embeddings"].get<int64_t>());
  }
  EXPECT_EQ(c.tie_word_embeddings, e["tie_word_embeddings"].get<bool>());
  ASSERT_TRUE(c.dtype.has_value());
  EXPECT_EQ(luminal::name(*c.dtype), e["dtype"].get<std::string>());
  EXPECT_EQ(c.bos_token_ids, e["bos_token_ids"].get<std::vector<int64_t>>());
  EXPECT_EQ(c.eos_token_ids, e["eos_token_ids"].get<std::vector<int64_t>>());
  if (e.contains("pad_token_id")) {
    ASSERT_TRUE(c.pad_token_id.has_value());
    EXPECT_EQ(*c.pad_token_id, e["pad_token_id"].get<int64_t>());
  }
  if (e["sliding_window"].is_null()) {
    EXPECT_FALSE(c.sliding_window.has_value());
  } else {
    ASSERT_TRUE(c.sliding_window.has_value());
    EXPECT_EQ(*c.sliding_window, e["sliding_window"].get<int64_t>());
  }
  if (e.contains("sliding_window_pattern")) {
    if (e["sliding_window_pattern"].is_null()) {
      EXPECT_FALSE(c.sliding_window_pattern.has_value());
    } else {
      ASSERT_TRUE(c.sliding_window_pattern.has_value());
      EXPECT_EQ(*c.sliding_window_pattern, e["sliding_window_pattern"].get<int64_t>());
    }
  }
  if (e.contains("max_window_layers")) {
    ASSERT_TRUE(c.max_window_layers.has_value());
    EXPECT_EQ(*c.max_window_layers, e["max_window_layers"].get<int64_t>());
  }
  EXPECT_EQ(c.hidden_act, e["hidden_act"].get<std::string>());
  EXPECT_EQ(c.attention_bias, e["attention_bias"].get<bool>());
  // Layer types: exactly the listed layers are global.
  ASSERT_EQ(static_cast<int64_t>(c.layer_types.size()), c.num_hidden_layers);
  std::vector<int64_t> full;
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    if (!c.is_sliding_layer(i)) full.push_back(i);
  }
  EXPECT_EQ(full, e["full_layers"].get<std::vector<int64_t>>());
  if (e["family"] == "gemma3") {
    check_optional_double(e["rope_local_base_freq"], c.rope_local_base_freq,
                          "rope_local_base_freq");
    check_optional_double(e["query_pre_attn_scalar"], c.query_pre_attn_scalar,
                          "query_pre_attn_scalar");
    check_optional_double(e["final_logit_softcapping"], c.final_logit_softcapping,
                          "final_logit_softcapping");
    check_optional_double(e["attn_logit_softcapping"], c.attn_logit_softcapping,
                          "attn_logit_softcapping");
  }
  if (e["family"] == "qwen3_moe") {
    EXPECT_EQ(c.num_experts, e["num_experts"].get<int64_t>());
    EXPECT_EQ(c.num_experts_per_tok, e["num_experts_per_tok"].get<int64_t>());
    EXPECT_EQ(c.moe_intermediate_size, e["moe_intermediate_size"].get<int64_t>());
    EXPECT_EQ(c.norm_topk_prob, e["norm_topk_prob"].get<bool>());
    EXPECT_EQ(c.decoder_sparse_step, e["decoder_sparse_step"].get<int64_t>());
    EXPECT_EQ(c.mlp_only_layers, e["mlp_only_layers"].get<std::vector<int64_t>>());
    for (int64_t i = 0; i < c.num_hidden_layers; ++i)
      EXPECT_TRUE(c.is_moe_layer(i));
  } else {
    EXPECT_FALSE(c.is_moe_layer(0));
  }
}

}  // namespace

TEST(HfConfig, EveryFamilyInBothStyles) {
  ASSERT_TRUE(expected().is_object())
      << "no " << (configs_dir() / "expected.json")
      << "; run scripts/fixtures/generate.sh OUT and set LUMINAL_FIXTURES=OUT";
  const json& configs = expected()["configs"];
  // Seven published models, each also in the transformers 5 form.
  EXPECT_EQ(configs.size(), 14u);
  for (const auto& [name, want] : configs.items()) {
    const fs::path file = configs_dir() / name / "config.json";
    ModelConfig c;
    try {
      c = parse_config(file);
    } catch (const luminal::Error& e) {
      ADD_FAILURE() << name << ": " << e.what();
      continue;
    }
    check(name, c, want);
    // A folder works as well as its config.json.
    EXPECT_EQ(parse_config(configs_dir() / name).hidden_size, c.hidden_size);
  }
}

TEST(HfConfig, EveryMalformedConfigNamesTheField) {
  ASSERT_TRUE(expected().is_object()) << "no fixtures in " << configs_dir();
  const json& errors = expected()["errors"];
  EXPECT_GE(errors.size(), 15u);
  for (const auto& [name, substrings] : errors.items()) {
    const fs::path file = configs_dir() / name / "config.json";
    const std::string msg = error_of(file);
    // Every message starts with the file's path.
    EXPECT_EQ(msg.rfind(file.string() + ": ", 0), 0u) << name << ": " << msg;
    for (const auto& s : substrings) {
      EXPECT_NE(msg.find(s.get<std::string>()), std::string::npos)
          << name << ": '" << msg << "' lacks '" << s.get<std::string>() << "'";
    }
  }
}

// Inline cases (no fixtures needed): defaults and the exact message formats of the issue.
TEST(HfConfig, DefaultsAndExactMessages) {
  const std::string base = R"({"model_type": "llama", "hidden_size": 64, "intermediate_size": 128,
      "num_hidden_layers": 2, "num_attention_heads": 4, "vocab_size": 100,
      "max_position_embeddings": 512, "rms_norm_eps": 1e-5, "torch_dtype": "float16")";
  ModelConfig c = parse_config_json(base + "}", "config.json");
  EXPECT_EQ(c.num_key_value_heads, 4);
  EXPECT_EQ(c.head_dim, 16);
  EXPECT_DOUBLE_EQ(c.rope_theta, 10000.0);
  EXPECT_EQ(c.rope_scaling.type, luminal::io::RopeType::None);
  EXPECT_EQ(c.dtype, luminal::DType::F16);
  EXPECT_TRUE(c.bos_token_ids.empty());
  EXPECT_EQ(c.hidden_act, "silu");

  // Older rope_scaling spelling: "type".
  c = parse_config_json(base + R"(, "rope_scaling": {"type": "linear", "factor": 2.0}})");
  EXPECT_EQ(c.rope_scaling.type, luminal::io::RopeType::Linear);
  EXPECT_DOUBLE_EQ(c.rope_scaling.factor, 2.0);
  // yarn with its extra fields.
  c = parse_config_json(base + R"(, "rope_parameters": {"rope_type": "yarn", "factor": 4.0,
      "original_max_position_embeddings": 32768, "beta_fast": 32, "rope_theta": 1e6}})");
  EXPECT_EQ(c.rope_scaling.type, luminal::io::RopeType::Yarn);
  EXPECT_EQ(c.rope_scaling.original_max_position_embeddings, 32768);
  EXPECT_DOUBLE_EQ(c.rope_scaling.beta_fast.value_or(0), 32.0);
  EXPECT_DOUBLE_EQ(c.rope_theta, 1e6);
  // Qwen2 with sliding on: layers from max_window_layers slide.
  c = parse_config_json(
      R"({"model_type": "qwen2", "hidden_size": 64, "intermediate_size": 128,
      "num_hidden_layers": 4, "num_attention_heads": 4, "vocab_size": 100,
      "max_position_embeddings": 512, "rms_norm_eps": 1e-6, "use_sliding_window": true,
      "sliding_window": 256, "max_window_layers": 2})");
  EXPECT_EQ(c.sliding_window, 256);
  EXPECT_FALSE(c.is_sliding_layer(1));
  EXPECT_TRUE(c.is_sliding_layer(2));
  EXPECT_TRUE(c.attention_bias);

  auto err = [](std::string_view text) {
    try {
      parse_config_json(text, "config.json");
    } catch (const luminal::Error& e) {
      return std::string(e.what());
    }
    return std::string("<no error>");
  };
  EXPECT_EQ(err(R"({"model_type": "llama", "hidden_size": 64, "intermediate_size": 128,
      "num_hidden_layers": 2})"),
            "config.json: missing field 'num_attention_heads' (required for model_type 'llama')");
  EXPECT_EQ(err(R"({"model_type": "foo"})"),
            "config.json: unknown model_type 'foo'; supported: llama, mistral, qwen2, qwen3, "
            "qwen3_moe, gemma3, gemma3_text, mixtral");
  EXPECT_NE(err("[1, 2]").find("config.json: expected a JSON object"), std::string::npos);
  EXPECT_NE(err(base + R"(, "head_dim": 3.5})").find("field 'head_dim' must be an integer"),
            std::string::npos);
  EXPECT_NE(error_of("/nonexistent/model/config.json").find("/nonexistent/model/config.json"),
            std::string::npos);
}

// Fields transformers 5 renames: both spellings read, disagreement and absence name the field.
TEST(HfConfig, Transformers5Renames) {
  const std::string moe = R"({"model_type": "qwen3_moe", "hidden_size": 64,
      "intermediate_size": 128, "num_hidden_layers": 2, "num_attention_heads": 4,
      "vocab_size": 100, "max_position_embeddings": 512, "rms_norm_eps": 1e-6,
      "num_experts_per_tok": 2, "moe_intermediate_size": 32)";
  auto err = [](std::string_view text) {
    try {
      parse_config_json(text, "config.json");
    } catch (const luminal::Error& e) {
      return std::string(e.what());
    }
    return std::string("<no error>");
  };
  EXPECT_EQ(parse_config_json(moe + R"(, "num_local_experts": 8})").num_experts, 8);
  EXPECT_EQ(parse_config_json(moe + R"(, "num_experts": 8})").num_experts, 8);
  EXPECT_EQ(parse_config_json(moe + R"(, "num_experts": 8, "num_local_experts": 8})").num_experts,
            8);
  EXPECT_EQ(err(moe + R"(, "num_experts": 8, "num_local_experts": 4})"),
            "config.json: fields 'num_experts' (8) and 'num_local_experts' (4) disagree; they "
            "name the same setting");
  EXPECT_EQ(err(moe + "}"),
            "config.json: missing field 'num_experts' (required for model_type 'qwen3_moe'; "
            "transformers 5 writes it as 'num_local_experts')");
  EXPECT_NE(err(moe + R"(, "num_local_experts": "8"})")
                .find("field 'num_local_experts' must be an integer"),
            std::string::npos);
  EXPECT_NE(err(moe + R"(, "num_local_experts": 1})")
                .find("num_experts_per_tok (2) exceeds num_experts (1)"),
            std::string::npos);

  const std::string gemma = R"({"model_type": "gemma3_text", "hidden_size": 64,
      "intermediate_size": 128, "num_hidden_layers": 4, "sliding_window": 16)";
  ModelConfig c = parse_config_json(gemma + R"(, "_sliding_window_pattern": 2})");
  EXPECT_EQ(c.sliding_window_pattern, 2);
  EXPECT_TRUE(c.is_sliding_layer(0));
  EXPECT_FALSE(c.is_sliding_layer(1));
  c = parse_config_json(gemma + R"(, "_sliding_window_pattern": 2, "layer_types":
      ["sliding_attention", "full_attention", "sliding_attention", "full_attention"]})");
  EXPECT_EQ(c.sliding_window_pattern, 2);
  EXPECT_FALSE(c.is_sliding_layer(3));
  EXPECT_NE(err(gemma + R"(, "sliding_window_pattern": 6, "_sliding_window_pattern": 2})")
                .find("fields 'sliding_window_pattern' (6) and '_sliding_window_pattern' (2) "
                      "disagree"),
            std::string::npos);
}
