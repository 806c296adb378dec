// Gemma 3 from GGUF. llama.cpp's convert_hf_to_gguf.py wrote tests/data/gguf/models/gemma3-f32.gguf
// and gemma3-q8_0.gguf from tests/data/models/gemma3-6l (scripts/models/make_gemma3_gguf.py: 6
// layers, 5 sliding then 1 global, linear RoPE scaling on the global layer, final soft-capping, a
// Gemma-style SentencePiece tokenizer and Gemma 3's chat template). The config, weights, logits,
// greedy tokens, tokenizer ids and rendered chat equal the folder's and transformers' goldens
// (and llama.cpp's top-1 and greedy tokens on the same file); metadata the decoder cannot run is
// an error naming the key and its value.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "luminal/cpu/cpu_backend.hpp"
#include "luminal/io/chat_template.hpp"
#include "luminal/io/gguf_model.hpp"
#include "luminal/models/causal_lm.hpp"
#include "support/expect_error.hpp"
#include "support/logits_check.hpp"
#include "support/tiny_models.hpp"

namespace luminal {
namespace {

namespace fs = std::filesystem;
using testing::expect_close;
using testing::row;

fs::path folder() { return testing::tiny_models_dir() / "gemma3-6l"; }
fs::path gguf(const std::string& type) {
  return fs::path(LUMINAL_SOURCE_DIR) / "tests" / "data" / "gguf" / "models" /
         ("gemma3-" + type + ".gguf");
}

TEST(Gemma3Gguf, ConfigEqualsTheFolders) {
  const io::GgufFile f = io::GgufFile::open(gguf("f32"));
  const io::ModelConfig g = io::gguf_model_config(f);
  const io::ModelConfig h = io::parse_config(folder() / "config.json");
  EXPECT_EQ(g.family, io::ModelFamily::Gemma3);
  EXPECT_EQ(g.family, h.family);
  EXPECT_EQ(g.hidden_size, h.hidden_size);
  EXPECT_EQ(g.intermediate_size, h.intermediate_size);
  EXPECT_EQ(g.num_hidden_layers, h.num_hidden_layers);
  EXPECT_EQ(g.num_attention_heads, h.num_attention_heads);
  EXPECT_EQ(g.num_key_value_heads, h.num_key_value_heads);
  EXPECT_EQ(g.head_dim, h.head_dim);
  EXPECT_EQ(g.vocab_size, h.vocab_size);
  EXPECT_EQ(g.max_position_embeddings, h.max_position_embeddings);
  EXPECT_EQ(g.rms_norm_eps, h.rms_norm_eps);
  EXPECT_EQ(g.hidden_act, h.hidden_act);
  EXPECT_EQ(g.tie_word_embeddings, h.tie_word_embeddings);
  EXPECT_TRUE(g.tie_word_embeddings);
  EXPECT_EQ(g.rope_theta, h.rope_theta);
  EXPECT_EQ(g.rope_local_base_freq, h.rope_local_base_freq);
  EXPECT_EQ(g.rope_scaling.type, io::RopeType::Linear);
  EXPECT_EQ(g.rope_scaling.type, h.rope_scaling.type);
  EXPECT_EQ(g.rope_scaling.factor, h.rope_scaling.factor);
  EXPECT_EQ(g.sliding_window, h.sliding_window);
  EXPECT_EQ(g.sliding_window_pattern, std::optional<int64_t>(6));
  EXPECT_EQ(g.layer_types, h.layer_types);
  EXPECT_EQ(g.query_pre_attn_scalar, h.query_pre_attn_scalar);
  EXPECT_EQ(g.final_logit_softcapping, h.final_logit_softcapping);
  EXPECT_FALSE(g.attn_logit_softcapping);
  EXPECT_EQ(g.bos_token_ids, h.bos_token_ids);
  EXPECT_EQ(g.eos_token_ids, h.eos_token_ids);
  EXPECT_EQ(g.pad_token_id, h.pad_token_id);
}

// f32: every weight bit for bit, except the norms, which the converter stored as 1 + w: there
// w + 1 (what the decoder computes) equals the folder's bit for bit.
TEST(Gemma3Gguf, WeightsEqualTheFolders) {
  const io::GgufFile f = io::GgufFile::open(gguf("f32"));
  const io::Weights g = io::gguf_weights(f, io::gguf_model_config(f));
  const io::Weights h = io::Weights::open(folder());
  EXPECT_EQ(g.names(), h.names());
  int norms = 0;
  for (const std::string& name : h.names()) {
    const io::TensorView &a = g.get(name), &b = h.get(name);
    ASSERT_EQ(a.shape, b.shape) << name;
    ASSERT_EQ(a.bytes.size(), b.bytes.size()) << name;
    if (name.find("norm") == std::string::npos) {
      EXPECT_EQ(std::memcmp(a.bytes.data(), b.bytes.data(), a.bytes.size()), 0) << name;
      continue;
    }
    ++norms;
    const auto* x = reinterpret_cast<const float*>(a.bytes.data());
    const auto* y = reinterpret_cast<const float*>(b.bytes.data());
    for (int64_t i = 0; i < a.numel(); ++i) {
      ASSERT_EQ(std::bit_cast<uint32_t>(x[i] + 1.0f), std::bit_cast<uint32_t>(y[i] + 1.0f))
          << name << "[" << i << "]";
      ASSERT_LE(std::fabs(x[i] - y[i]), 0x1p-22f) << name << "[" << i << "]";
    }
  }
  EXPECT_EQ(norms, 6 * 6 + 1);
}

TEST(Gemma3Gguf, LogitsAndGreedyTokensEqualTheFolderAndTransformers) {
  const nlohmann::json gold = testing::tiny_model_goldens("gemma3-6l");
  std::ifstream in(folder() / "goldens_q8_0.json");
  const nlohmann::json gold_q8 = nlohmann::json::parse(in);
  size_t k = 0;
  const double q8_tol = 1.2 * gold_q8.at("max_abs_diff_q8_0_activations").get<double>();
  models::DecoderShape shape;
  shape.slots = 64;
  shape.max_step = 16;
  cpu::CpuBackend cpu(2);
  const auto opts = CompileOptions().search_graph_limit(4).verbose(false);
  auto dir = models::CausalLM::load(folder(), cpu, shape, opts);
  auto f32 = models::CausalLM::load(gguf("f32"), cpu, shape, opts);
  auto q8 = models::CausalLM::load(gguf("q8_0"), cpu, shape, opts);
  // The Q8_0 file with its weights dequantised to f32 (LUMINAL_QUANT=off), and as stored.
  ASSERT_EQ(std::getenv("LUMINAL_QUANT"), nullptr);
  ::setenv("LUMINAL_QUANT", "off", 1);
  auto q8_f32 = models::CausalLM::load(gguf("q8_0"), cpu, shape, opts);
  ::unsetenv("LUMINAL_QUANT");
  EXPECT_EQ(q8.decoder().shape.block_weights.count("model.layers.0.mlp.gate_proj.weight"), 1u);
  EXPECT_EQ(q8.decoder().shape.block_weights.count("model.embed_tokens.weight"), 1u);
  EXPECT_TRUE(q8_f32.decoder().shape.block_weights.empty());
  const int64_t V = f32.vocab_size();
  ASSERT_EQ(V, 512);
  for (const nlohmann::json& p : gold.at("prompts")) {
    const auto ids = p.at("input_ids").get<std::vector<int32_t>>();
    const auto n = static_cast<int64_t>(ids.size());
    ASSERT_GT(n, 4) << "a prompt longer than the window";
    for (auto* m : {&dir, &f32, &q8, &q8_f32})
      m->reset();
    const std::vector<float> a = dir.forward(ids), b = f32.forward(ids), c = q8.forward(ids),
                             d = q8_f32.forward(ids);
    // The same weights (norms: w + 1 bit for bit); the search may pick other kernels (summation
    // orders) for each load.
    expect_close(b, a, 1e-5, 1e-5, "f32 gguf vs folder logits");
    expect_close(row(b, 0, V), p.at("logits_first").get<std::vector<float>>(), 1e-5, 1e-5,
                 "f32 gguf vs transformers, first position");
    expect_close(row(b, n - 1, V), p.at("logits_last").get<std::vector<float>>(), 1e-5, 1e-5,
                 "f32 gguf vs transformers, last position");
    // Q8_0 against transformers running the file's dequantised weights: equal in f32. As stored,
    // where the search picks the quantized dot products, activations are rounded to 8 bits (as
    // llama.cpp does), which moves this model's logits (up to ~4) by up to 0.53 (transformers with
    // each linear's input rounded to Q8_0 blocks: the goldens' max_abs_diff_q8_0_activations);
    // the bound is 1.2 times that. The weights' own Q8_0 rounding moves the logits by up to 0.48
    // from the folder's.
    const nlohmann::json& q = gold_q8.at("prompts").at(k++);
    ASSERT_EQ(q.at("input_ids").get<std::vector<int32_t>>(), ids);
    const auto q_first = q.at("logits_first").get<std::vector<float>>();
    const auto q_last = q.at("logits_last").get<std::vector<float>>();
    expect_close(row(d, 0, V), q_first, 1e-5, 1e-5, "q8_0 gguf in f32, first position");
    expect_close(row(d, n - 1, V), q_last, 1e-5, 1e-5, "q8_0 gguf in f32, last position");
    expect_close(row(c, 0, V), q_first, q8_tol, 0, "q8_0 gguf as stored, first position");
    expect_close(row(c, n - 1, V), q_last, q8_tol, 0, "q8_0 gguf as stored, last position");
    // The last token as a decode step (sliding layers reading the cache; the quantized GEMV).
    for (auto* m : {&q8, &q8_f32}) {
      m->reset();
      m->forward(std::vector<int32_t>(ids.begin(), ids.end() - 1));
    }
    expect_close(q8_f32.forward({ids.back()}), q_last, 1e-5, 1e-5, "q8_0 gguf in f32, decode");
    expect_close(q8.forward({ids.back()}), q_last, q8_tol, 0, "q8_0 gguf as stored, decode");
    // Greedy (24 positions, past the window of 4) equals transformers' up to a near tie.
    const auto want = p.at("greedy").at("generated_ids").get<std::vector<int32_t>>();
    const auto margins = p.at("greedy").at("margins").get<std::vector<double>>();
    f32.reset();
    const std::vector<int32_t> got = f32.generate_greedy(ids, static_cast<int>(want.size()));
    for (size_t t = 0; t < want.size() && margins[t] >= 1e-4; ++t)
      ASSERT_EQ(got[t], want[t]) << "f32 gguf greedy step " << t;
  }
}

// llama.cpp reads the f32 file as transformers runs the folder (tests/data/gguf/
// gemma3_llamacpp.jsonl, scripts/models/llamacpp_reference.cpp): the same top-1 at every prompt
// position and the same 16 greedy tokens, so the file's conventions (attention scale, sliding
// pattern and window, RoPE bases and scaling, norms, soft-capping) mean the same to both; ours
// gives that top-1 at every position too.
TEST(Gemma3Gguf, LlamaCppReadsTheFileAsTransformersRunsTheFolder) {
  const nlohmann::json gold = testing::tiny_model_goldens("gemma3-6l");
  std::ifstream in(fs::path(LUMINAL_SOURCE_DIR) / "tests" / "data" / "gguf" /
                   "gemma3_llamacpp.jsonl");
  models::DecoderShape shape;
  shape.slots = 64;
  shape.max_step = 16;
  cpu::CpuBackend cpu(2);
  auto lm = models::CausalLM::load(gguf("f32"), cpu, shape,
                                   CompileOptions().search_graph_limit(4).verbose(false));
  const int64_t V = lm.vocab_size();
  size_t k = 0;
  for (std::string line; std::getline(in, line); ++k) {
    const nlohmann::json ref = nlohmann::json::parse(line);
    const nlohmann::json& p = gold.at("prompts").at(k);
    const auto argmax = ref.at("argmax").get<std::vector<int32_t>>();
    EXPECT_EQ(argmax, p.at("argmax").get<std::vector<int32_t>>()) << "prompt " << k;
    const auto want = p.at("greedy").at("generated_ids").get<std::vector<int32_t>>();
    auto greedy = ref.at("greedy").get<std::vector<int32_t>>();
    greedy.resize(want.size());
    EXPECT_EQ(greedy, want) << "prompt " << k;
    lm.reset();
    const std::vector<float> logits = lm.forward(p.at("input_ids").get<std::vector<int32_t>>());
    for (size_t i = 0; i < argmax.size(); ++i) {
      const std::vector<float> r = row(logits, static_cast<int64_t>(i), V);
      EXPECT_EQ(std::max_element(r.begin(), r.end()) - r.begin(), argmax[i])
          << "prompt " << k << " position " << i;
    }
  }
  EXPECT_EQ(k, gold.at("prompts").size());
}

TEST(Gemma3Gguf, TokenizerAndChatEqualTheFolders) {
  std::ifstream in(folder() / "tokenizer_goldens.json");
  const nlohmann::json gold = nlohmann::json::parse(in);
  const io::GgufModel m = io::read_gguf_model(gguf("q8_0"), {.weights = false});
  ASSERT_TRUE(m.tokenizer);
  const io::Tokenizer hf = io::Tokenizer::from_folder(folder());
  EXPECT_EQ(m.tokenizer->kind(), "SentencePiece BPE");
  EXPECT_TRUE(m.add_bos);
  EXPECT_FALSE(m.add_eos);
  for (const nlohmann::json& t : gold.at("texts")) {
    const std::string text = t.at("text");
    const auto want = t.at("ids").get<std::vector<int32_t>>();
    EXPECT_EQ(m.tokenizer->encode(text, true), want) << "gguf: '" << text << "'";
    EXPECT_EQ(hf.encode(text, true), want) << "folder: '" << text << "'";
    EXPECT_EQ(m.tokenizer->decode(want), "<bos>" + text);
  }
  // The template the converter copied renders as transformers rendered it; its ids too.
  const io::ChatTemplate folder_tmpl = io::ChatTemplate::from_folder(folder());
  ASSERT_TRUE(m.chat_template);
  EXPECT_EQ(*m.chat_template, folder_tmpl.source());
  const io::ChatTemplate tmpl = io::ChatTemplate::from_string(*m.chat_template);
  std::vector<io::ChatMessage> messages;
  for (const nlohmann::json& msg : gold.at("chat").at("messages"))
    messages.push_back({msg.at("role"), msg.at("content")});
  const std::string text = tmpl.render(messages, true, m.special_tokens);
  EXPECT_EQ(text, gold.at("chat").at("text").get<std::string>());
  EXPECT_EQ(m.tokenizer->encode(text), gold.at("chat").at("ids").get<std::vector<int32_t>>());
  // Generation stops at <eos> and, as llama.cpp takes it, at <end_of_turn>.
  const int64_t eot = *m.tokenizer->token_id("<end_of_turn>");
  EXPECT_EQ(m.stop_ids, (std::vector<int64_t>{1, eot}));
}

// A gemma3 file holding metadata and a token embedding (enough for gguf_model_config).
class MiniGemma3 {
 public:
  MiniGemma3() {
    str("general.architecture", "gemma3");
    u32("gemma3.embedding_length", 32);
    u32("gemma3.feed_forward_length", 64);
    u32("gemma3.block_count", 6);
    u32("gemma3.attention.head_count", 2);
    u32("gemma3.attention.head_count_kv", 1);
    u32("gemma3.attention.key_length", 16);
    u32("gemma3.attention.value_length", 16);
    u32("gemma3.context_length", 256);
    f32("gemma3.attention.layer_norm_rms_epsilon", 1e-6f);
    f32("gemma3.rope.freq_base", 1e6f);
    f32("gemma3.rope.freq_base_swa", 1e4f);
    u32("gemma3.attention.sliding_window", 4);
  }
  MiniGemma3& u32(const std::string& k, uint32_t v) { return put(k, 4, &v, 4); }
  MiniGemma3& f32(const std::string& k, float v) { return put(k, 6, &v, 4); }
  MiniGemma3& boolean(const std::string& k, bool v) {
    const uint8_t b = v;
    return put(k, 7, &b, 1);
  }
  MiniGemma3& str(const std::string& k, const std::string& v) {
    std::vector<uint8_t> b = bytes(v);
    return put(k, 8, b.data(), b.size());
  }
  MiniGemma3& bools(const std::string& k, const std::vector<bool>& v) {
    std::vector<uint8_t> b = num(uint32_t{7});
    append(b, num(uint64_t{v.size()}));
    for (bool x : v)
      b.push_back(x);
    return put(k, 9, b.data(), b.size());
  }
  io::ModelConfig config() const {
    std::vector<uint8_t> out = {'G', 'G', 'U', 'F'};
    append(out, num(uint32_t{3}));
    append(out, num(uint64_t{1}));
    append(out, num(uint64_t{kv_.size()}));
    for (const auto& [k, v] : kv_) {
      append(out, bytes(k));
      append(out, v);
    }
    append(out, bytes("token_embd.weight"));
    append(out, num(uint32_t{2}));
    append(out, num(uint64_t{32}));
    append(out, num(uint64_t{8}));
    append(out, num(uint32_t{0}));  // F32
    append(out, num(uint64_t{0}));
    out.resize((out.size() + 31) / 32 * 32 + 32 * 8 * 4, 0);
    return io::gguf_model_config(io::GgufFile::from_bytes(std::move(out), "mini.gguf"));
  }

 private:
  template <class T>
  static std::vector<uint8_t> num(T v) {
    std::vector<uint8_t> b(sizeof v);
    std::memcpy(b.data(), &v, sizeof v);
    return b;
  }
  static std::vector<uint8_t> bytes(const std::string& s) {  // a GGUF string: u64 length, bytes
    std::vector<uint8_t> b = num(uint64_t{s.size()});
    b.insert(b.end(), s.begin(), s.end());
    return b;
  }
  static void append(std::vector<uint8_t>& out, const std::vector<uint8_t>& b) {
    out.insert(out.end(), b.begin(), b.end());
  }
  // Sets (or replaces) a key: its type, then its value.
  MiniGemma3& put(const std::string& k, uint32_t type, const void* v, size_t n) {
    std::vector<uint8_t> b = num(type);
    const auto* p = static_cast<const uint8_t*>(v);
    b.insert(b.end(), p, p + n);
    kv_[k] = std::move(b);
    return *this;
  }
  std::map<std::string, std::vector<uint8_t>> kv_;
};

std::vector<std::string> types(const std::string& pattern) {
  std::vector<std::string> out;
  for (char c : pattern)
    out.push_back(c == 'S' ? "sliding_attention" : "full_attention");
  return out;
}

TEST(Gemma3Gguf, SlidingLayersAndScaleFromTheMetadata) {
  io::ModelConfig c = MiniGemma3().config();
  EXPECT_EQ(c.layer_types, types("SSSSSF"));  // llama.cpp's default period of 6
  EXPECT_EQ(c.sliding_window, std::optional<int64_t>(4));
  EXPECT_EQ(c.query_pre_attn_scalar, std::optional<double>(16));
  EXPECT_EQ(c.rope_local_base_freq, std::optional<double>(10000));
  EXPECT_EQ(c.rope_theta, 1e6);
  EXPECT_FALSE(c.final_logit_softcapping);
  c = MiniGemma3().u32("gemma3.attention.sliding_window_pattern", 3).config();
  EXPECT_EQ(c.layer_types, types("SSFSSF"));
  EXPECT_EQ(c.sliding_window_pattern, std::optional<int64_t>(3));
  c = MiniGemma3().u32("gemma3.attention.sliding_window_pattern", 0).config();
  EXPECT_EQ(c.layer_types, types("SSSSSS"));
  c = MiniGemma3()
          .bools("gemma3.attention.sliding_window_pattern", {true, false, true, true, false, true})
          .config();
  EXPECT_EQ(c.layer_types, types("SFSSFS"));
  // No window: every layer global, whatever the pattern.
  c = MiniGemma3().u32("gemma3.attention.sliding_window", 0).config();
  EXPECT_EQ(c.layer_types, types("FFFFFF"));
  EXPECT_FALSE(c.sliding_window);
  c = MiniGemma3().f32("gemma3.final_logit_softcapping", 30).config();
  EXPECT_EQ(c.final_logit_softcapping, std::optional<double>(30));
  // 62 layers (Gemma 3 27B): llama.cpp scales by (hidden / heads)^-0.5, else head_dim^-0.5.
  c = MiniGemma3()
          .u32("gemma3.block_count", 62)
          .u32("gemma3.attention.key_length", 8)
          .u32("gemma3.attention.value_length", 8)
          .config();
  EXPECT_EQ(c.head_dim, 8);
  EXPECT_EQ(c.query_pre_attn_scalar, std::optional<double>(16));
  c = MiniGemma3()
          .u32("gemma3.attention.key_length", 8)
          .u32("gemma3.attention.value_length", 8)
          .config();
  EXPECT_EQ(c.query_pre_attn_scalar, std::optional<double>(8));
}

TEST(Gemma3Gguf, UnsupportedValuesNameTheKeyAndTheValue) {
  using testing::expect_error;
  expect_error([] { MiniGemma3().f32("gemma3.attn_logit_softcapping", 50).config(); },
               {"mini.gguf", "key 'gemma3.attn_logit_softcapping': 50",
                "attention soft-capping is not supported"});
  expect_error([] { MiniGemma3().f32("gemma3.final_logit_softcapping", -1).config(); },
               {"key 'gemma3.final_logit_softcapping': -1", "must be positive"});
  expect_error(
      [] {
        MiniGemma3().bools("gemma3.attention.sliding_window_pattern", {true, false}).config();
      },
      {"key 'gemma3.attention.sliding_window_pattern'", "array of 2 bool", "expected 6 bools"});
  expect_error([] { MiniGemma3().boolean("gemma3.attention.causal", false).config(); },
               {"key 'gemma3.attention.causal': false", "bidirectional attention"});
  expect_error(
      [] {
        MiniGemma3().u32("gemma3.expert_count", 4).u32("gemma3.expert_used_count", 2).config();
      },
      {"key 'gemma3.expert_count': 4 experts", "dense feed-forward"});
  expect_error([] { MiniGemma3().f32("gemma3.rope.freq_base_swa", 0).config(); },
               {"key 'gemma3.rope.freq_base_swa': 0", "must be positive"});
  expect_error([] { MiniGemma3().str("gemma3.rope.scaling.type", "longrope").config(); },
               {"key 'gemma3.rope.scaling.type'", "'longrope'", "supported: none, linear"});
}

}  // namespace
}  // namespace luminal
