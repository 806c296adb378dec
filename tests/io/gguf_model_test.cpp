// Models and tokenizers from GGUF files. tests/data/gguf/models is written by
// scripts/gguf/make_model_fixtures.py from the tiny Hugging Face models in tests/data/models
// (llama3 as F32 and F16 with llama.cpp's Q/K permutation, qwen2 as Q8_0), tokenizer-only files
// for each supported tokenizer.ggml.pre and a SentencePiece one, the ids each should give
// (expected.json: the `tokenizers` package, or llama.cpp's SPM algorithm transcribed), and broken
// files for the error tests (errors/).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>

#include "luminal/core/dtype.hpp"
#include "luminal/core/error.hpp"
#include "luminal/io/gguf_model.hpp"

namespace {

namespace fs = std::filesystem;
using luminal::Error;
using namespace luminal::io;

// tests/data: from this file's path (absolute, or relative to an ancestor of the working
// directory or of the executable under ccache's base_dir).
fs::path data_dir() {
  const fs::path self(__FILE__);
  if (self.is_absolute()) return self.parent_path().parent_path() / "data";
  std::vector<fs::path> starts = {fs::current_path()};
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) starts.push_back(exe.parent_path());
  for (fs::path p : starts)
    for (; !p.empty(); p = p.parent_path()) {
      if (fs::exists(p / self)) return (p / self).parent_path().parent_path() / "data";
      if (p == p.parent_path()) break;
    }
  return fs::current_path() / "tests" / "data";
}
fs::path models_dir() { return data_dir() / "gguf" / "models"; }

void expect_error(const std::function<void()>& f, std::initializer_list<std::string> parts) {
  try {
    f();
  } catch (const Error& e) {
    const std::string msg = e.what();
    for (const auto& p : parts)
      EXPECT_NE(msg.find(p), std::string::npos) << "message: " << msg << "\nmissing: " << p;
    return;
  }
  ADD_FAILURE() << "no luminal::Error thrown";
}

const nlohmann::json& expected() {
  static const nlohmann::json j = [] {
    std::ifstream in(models_dir() / "expected.json");
    return nlohmann::json::parse(in);
  }();
  return j;
}

void expect_same_config(const ModelConfig& g, const ModelConfig& h) {
  EXPECT_EQ(g.family, h.family);
  EXPECT_EQ(g.model_type, h.model_type);
  EXPECT_EQ(g.architectures, h.architectures);
  EXPECT_EQ(g.hidden_size, h.hidden_size);
  EXPECT_EQ(g.intermediate_size, h.intermediate_size);
  EXPECT_EQ(g.num_hidden_layers, h.num_hidden_layers);
  EXPECT_EQ(g.num_attention_heads, h.num_attention_heads);
  EXPECT_EQ(g.num_key_value_heads, h.num_key_value_heads);
  EXPECT_EQ(g.head_dim, h.head_dim);
  EXPECT_EQ(g.vocab_size, h.vocab_size);
  EXPECT_EQ(g.max_position_embeddings, h.max_position_embeddings);
  EXPECT_EQ(g.rms_norm_eps, h.rms_norm_eps);
  EXPECT_EQ(g.rope_theta, h.rope_theta);
  EXPECT_EQ(g.rope_scaling.type, h.rope_scaling.type);
  EXPECT_EQ(g.rope_scaling.factor, h.rope_scaling.factor);
  EXPECT_EQ(g.rope_scaling.low_freq_factor, h.rope_scaling.low_freq_factor);
  EXPECT_EQ(g.rope_scaling.high_freq_factor, h.rope_scaling.high_freq_factor);
  EXPECT_EQ(g.rope_scaling.original_max_position_embeddings,
            h.rope_scaling.original_max_position_embeddings);
  EXPECT_EQ(g.tie_word_embeddings, h.tie_word_embeddings);
  EXPECT_EQ(g.hidden_act, h.hidden_act);
  EXPECT_EQ(g.attention_bias, h.attention_bias);
  EXPECT_EQ(g.mlp_bias, h.mlp_bias);
  EXPECT_EQ(g.bos_token_ids, h.bos_token_ids);
  EXPECT_EQ(g.eos_token_ids, h.eos_token_ids);
  EXPECT_EQ(g.sliding_window, h.sliding_window);
  EXPECT_EQ(g.layer_types, h.layer_types);
}

// Compares every weight of the GGUF model with the Hugging Face one; `expect(name, hf, gguf)`
// returns whether a value matches.
void expect_weights(const GgufModel& m, const std::string& folder,
                    const std::function<void(const std::string&, std::span<const float>,
                                             std::span<const float>)>& check) {
  const Weights hf = Weights::open(data_dir() / "models" / folder / "model.safetensors");
  EXPECT_EQ(m.weights->names(), hf.names());
  for (const std::string& name : hf.names()) {
    const TensorView& h = hf.get(name);
    ASSERT_TRUE(m.weights->contains(name)) << name;
    const TensorView& g = m.weights->get(name);
    EXPECT_EQ(g.dtype, luminal::DType::F32) << name;
    ASSERT_EQ(g.shape, h.shape) << name;
    const std::vector<float> hv = to_vector<float>(h), gv = to_vector<float>(g);
    check(name, hv, gv);
  }
}

TEST(GgufModel, Llama3F32MatchesTheHuggingFaceModel) {
  const GgufModel m = read_gguf_model(models_dir() / "llama3-f32.gguf");
  EXPECT_EQ(m.architecture, "llama");
  EXPECT_EQ(m.name, "tiny-llama3");
  const ModelConfig hf = parse_config(data_dir() / "models" / "llama3" / "config.json");
  expect_same_config(m.config, hf);
  EXPECT_EQ(m.config.rope_scaling.type, RopeType::Llama3);
  EXPECT_EQ(m.rope_freq_factors.size(), 8u);
  expect_weights(m, "llama3", [](const std::string& name, auto hv, auto gv) {
    size_t bad = 0;
    for (size_t i = 0; i < hv.size(); ++i)
      bad += std::memcmp(&hv[i], &gv[i], 4) != 0;
    EXPECT_EQ(bad, 0u) << name << " (q_proj/k_proj: is the permutation undone?)";
  });
  // Tokenizer metadata, chat template.
  EXPECT_EQ(m.bos_id, 1);
  EXPECT_EQ(m.eos_id, 2);
  EXPECT_TRUE(m.add_bos);
  EXPECT_FALSE(m.add_eos);
  EXPECT_EQ(m.stop_ids, std::vector<int64_t>{2});
  EXPECT_EQ(m.special_tokens.at("bos_token"), "<|begin_of_text|>");
  EXPECT_EQ(m.special_tokens.at("eos_token"), "<|end_of_text|>");
  ASSERT_TRUE(m.chat_template.has_value());
  EXPECT_NE(m.chat_template->find("<|start_header_id|>"), std::string::npos);
  ASSERT_TRUE(m.tokenizer.has_value());
  EXPECT_EQ(m.tokenizer->vocab_size(), 256);
  EXPECT_EQ(m.tokenizer->bos_id(), 1);
  EXPECT_EQ(m.tokenizer->eos_id(), 2);
}

TEST(GgufModel, Llama3F16IsTheModelRoundedToF16) {
  const GgufModel m = read_gguf_model(models_dir() / "llama3-f16.gguf");
  expect_same_config(m.config, parse_config(data_dir() / "models" / "llama3" / "config.json"));
  expect_weights(m, "llama3", [](const std::string& name, auto hv, auto gv) {
    const bool vector = name.find("norm") != std::string::npos;  // 1-D tensors stay F32
    size_t bad = 0;
    for (size_t i = 0; i < hv.size(); ++i) {
      const float want = vector ? hv[i] : luminal::f16_bits_to_f32(luminal::f32_to_f16_bits(hv[i]));
      bad += std::memcmp(&want, &gv[i], 4) != 0;
    }
    EXPECT_EQ(bad, 0u) << name;
  });
}

TEST(GgufModel, A16BitFileComputesInItsDtypeWithItsMatricesAsStored) {
  auto file = std::make_shared<const GgufFile>(GgufFile::open(models_dir() / "llama3-f16.gguf"));
  const ModelConfig c = gguf_model_config(*file);
  EXPECT_EQ(c.dtype, luminal::DType::F16);  // every matrix is F16 (the norms are F32)
  const Weights w = gguf_block_weights(file, c, [](luminal::DType) { return true; }, 0, {});
  size_t matrices = 0;
  for (const std::string& name : w.names()) {
    const TensorView& t = w.get(name);
    const bool vector = t.shape.size() < 2;
    EXPECT_EQ(t.dtype, vector ? luminal::DType::F32 : luminal::DType::F16) << name;
    matrices += !vector;
  }
  EXPECT_GT(matrices, 0u);
  // f32 matrices, or block-quantized ones, compute in f32.
  EXPECT_EQ(gguf_model_config(GgufFile::open(models_dir() / "llama3-f32.gguf")).dtype,
            luminal::DType::F32);
  EXPECT_EQ(gguf_model_config(GgufFile::open(models_dir() / "qwen2-q8_0.gguf")).dtype,
            luminal::DType::F32);
}

TEST(GgufModel, Qwen2Q8IsTheModelWithinQ8Error) {
  const GgufModel m = read_gguf_model(models_dir() / "qwen2-q8_0.gguf");
  EXPECT_EQ(m.architecture, "qwen2");
  const ModelConfig hf = parse_config(data_dir() / "models" / "qwen2" / "config.json");
  expect_same_config(m.config, hf);
  EXPECT_TRUE(m.config.tie_word_embeddings);
  EXPECT_TRUE(m.config.attention_bias);
  EXPECT_TRUE(m.rope_freq_factors.empty());
  EXPECT_FALSE(m.bos_id.has_value());
  EXPECT_FALSE(m.add_bos);
  expect_weights(m, "qwen2", [](const std::string& name, auto hv, auto gv) {
    const bool vector = name.find("norm") != std::string::npos || name.ends_with(".bias");
    size_t bad = 0;
    for (size_t b = 0; b < hv.size(); b += 32) {  // Q8_0 blocks: |error| <= d / 2 (+ d's f16)
      float amax = 0;
      for (size_t i = b; i < b + 32 && i < hv.size(); ++i)
        amax = std::max(amax, std::abs(hv[i]));
      const float tol = vector ? 0.f : 0.6f * amax / 127.f;
      for (size_t i = b; i < b + 32 && i < hv.size(); ++i)
        bad += !(std::abs(hv[i] - gv[i]) <= tol);
    }
    EXPECT_EQ(bad, 0u) << name;
  });
}

TEST(GgufModel, HfNames) {
  EXPECT_EQ(gguf_to_hf_name("token_embd.weight"), "model.embed_tokens.weight");
  EXPECT_EQ(gguf_to_hf_name("output.weight"), "lm_head.weight");
  EXPECT_EQ(gguf_to_hf_name("output_norm.weight"), "model.norm.weight");
  EXPECT_EQ(gguf_to_hf_name("blk.12.attn_q.bias"), "model.layers.12.self_attn.q_proj.bias");
  EXPECT_EQ(gguf_to_hf_name("blk.0.attn_output.weight"), "model.layers.0.self_attn.o_proj.weight");
  EXPECT_EQ(gguf_to_hf_name("blk.3.attn_k_norm.weight"), "model.layers.3.self_attn.k_norm.weight");
  EXPECT_EQ(gguf_to_hf_name("blk.1.ffn_down.weight"), "model.layers.1.mlp.down_proj.weight");
  EXPECT_EQ(gguf_to_hf_name("blk.1.ffn_norm.weight"),
            "model.layers.1.post_attention_layernorm.weight");
  EXPECT_EQ(gguf_to_hf_name("rope_freqs.weight"), "");
  EXPECT_EQ(gguf_to_hf_name("blk.x.attn_q.weight"), "");
  EXPECT_EQ(gguf_to_hf_name("blk.01.attn_q.weight"), "");
}

// ---- tokenizers ----

std::vector<std::vector<int32_t>> ids_of(const nlohmann::json& j) {
  return j.get<std::vector<std::vector<int32_t>>>();
}

void expect_tokenizer(const std::string& fixture, const Tokenizer& tok) {
  const auto& strings = expected()["strings"];
  const auto& e = expected()["fixtures"][fixture];
  const auto plain = ids_of(e["plain"]), special = ids_of(e["special"]);
  ASSERT_EQ(plain.size(), strings.size());
  for (size_t i = 0; i < strings.size(); ++i) {
    const std::string s = strings[i].get<std::string>();
    EXPECT_EQ(tok.encode(s), plain[i]) << fixture << ": '" << s << "'";
    EXPECT_EQ(tok.encode(s, true), special[i]) << fixture << ": '" << s << "' (special)";
  }
  if (e.contains("extra")) {
    const auto extra = ids_of(e["extra"]);
    for (size_t i = 0; i < extra.size(); ++i) {
      const std::string s = e["extra_strings"][i].get<std::string>();
      EXPECT_EQ(tok.encode(s), extra[i]) << fixture << ": '" << s << "'";
    }
  }
}

class GgufTokenizer : public ::testing::TestWithParam<std::string> {};

TEST_P(GgufTokenizer, GivesTheHuggingFaceIds) {
  const std::string name = GetParam();
  const GgufFile f = GgufFile::open(models_dir() / (name + ".gguf"));
  const Tokenizer tok = gguf_tokenizer(f);
  expect_tokenizer(name, tok);
  // tok-smollm.tokenizer.json is SmolLM2's pipeline (a Digits pre-tokenizer), which io::Tokenizer
  // does not read; its ids come from the tokenizers package only.
  if (fs::exists(models_dir() / (name + ".tokenizer.json")) && name != "tok-smollm") {
    // The model's own tokenizer.json through io::Tokenizer agrees too, and text round-trips.
    const Tokenizer ref = Tokenizer::from_files(models_dir() / (name + ".tokenizer.json"));
    EXPECT_EQ(tok.vocab_size(), ref.vocab_size());
    for (const auto& s : expected()["strings"]) {
      const std::string text = s.get<std::string>();
      const auto ids = tok.encode(text);
      EXPECT_EQ(ids, ref.encode(text)) << name << ": '" << text << "'";
      if (name.find("qwen2") == std::string::npos) {  // NFC changes "e\u0301"
        EXPECT_EQ(tok.decode(ids), text) << name;
      }
    }
  } else if (name == "tok-llama-spm") {
    // SentencePiece: decoding gives the text back (the leading "▁" is stripped).
    for (const char* text : {"Hello world", "caf\u00e9 \U0001F600", "a  b"})
      EXPECT_EQ(tok.decode(tok.encode(text)), text) << name;
    EXPECT_EQ(tok.decode(tok.encode("<s>hi</s>", true), true), "hi");
  }
}

INSTANTIATE_TEST_SUITE_P(Fixtures, GgufTokenizer,
                         ::testing::Values("llama3-f32", "qwen2-q8_0", "tok-gpt2", "tok-llama-bpe",
                                           "tok-qwen2", "tok-smollm", "tok-default",
                                           "tok-llama-spm"),
                         [](const auto& info) {
                           std::string s = info.param;
                           for (char& c : s)
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           return s;
                         });

TEST(GgufTokenizer, SupportedPreTokenizers) {
  const auto pre = gguf_supported_pre_tokenizers();
  for (const char* p : {"default", "gpt2", "gpt-2", "llama3", "llama-bpe", "qwen2", "smollm"})
    EXPECT_NE(std::find(pre.begin(), pre.end(), p), pre.end()) << p;
  const std::string json = gguf_tokenizer_json(GgufFile::open(models_dir() / "tok-qwen2.gguf"));
  EXPECT_NE(json.find("\"NFC\""), std::string::npos);
}

// ---- errors ----

fs::path broken(const char* name) {
  return models_dir() / "errors" / (std::string(name) + ".gguf");
}

TEST(GgufModelErrors, TheBaseOfTheBrokenFilesLoads) {
  const GgufModel m = read_gguf_model(broken("ok"));
  EXPECT_EQ(m.config.head_dim, 4);
  EXPECT_EQ(m.config.num_key_value_heads, 1);
  EXPECT_TRUE(m.config.tie_word_embeddings);
  EXPECT_EQ(m.weights->size(), 11u);
}

TEST(GgufModelErrors, NameTheFileAndTheProblem) {
  expect_error([] { read_gguf_model(broken("unknown-arch")); },
               {"unknown-arch.gguf", "unsupported architecture 'gpt2'", "llama, qwen2, qwen3"});
  expect_error([] { read_gguf_model(broken("missing-tensor")); },
               {"missing-tensor.gguf", "missing tensor 'blk.0.ffn_up.weight'",
                "model.layers.0.mlp.up_proj.weight"});
  expect_error(
      [] { read_gguf_model(broken("bad-shape")); },
      {"bad-shape.gguf", "tensor 'blk.0.attn_k.weight'", "has shape [8, 8]", "expected [4, 8]"});
  expect_error([] { read_gguf_model(broken("bad-pre")); },
               {"bad-pre.gguf", "pre-tokenizer 'tekken' is not supported", "llama-bpe", "smollm"});
  // The size limit is checked before dequantising and gives both sizes.
  expect_error([] { read_gguf_model(models_dir() / "qwen2-q8_0.gguf", {.max_bytes = 100000}); },
               {"qwen2-q8_0.gguf", "as f32", "in the file", "over the limit of 100000 bytes"});
  // Without the tokenizer, an unsupported pre-tokenizer does not matter.
  EXPECT_NO_THROW(read_gguf_model(broken("bad-pre"), {.tokenizer = false}));
}

}  // namespace
