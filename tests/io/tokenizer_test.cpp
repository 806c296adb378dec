// Parity with the Hugging Face `tokenizers` package on the fixtures that
// scripts/fixtures/gen_tokenizers.py trains and writes (ids, decoded text, streaming decode).
#include "luminal/io/tokenizer.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "luminal/core/error.hpp"

namespace {

using luminal::io::Tokenizer;
namespace fs = std::filesystem;

fs::path fixtures() {
  const char* dir = std::getenv("LUMINAL_FIXTURES");
  return dir != nullptr ? fs::path(dir) : fs::path("build/fixtures");
}

struct Case {
  std::string text;
  std::vector<int32_t> ids, ids_special;
  std::string decoded, decoded_skip;
};

std::vector<Case> read_cases(const fs::path& file) {
  std::ifstream f(file);
  EXPECT_TRUE(f) << "missing " << file << " (run scripts/fixtures/generate.sh)";
  std::vector<Case> cases;
  std::string line;
  while (std::getline(f, line)) {
    auto j = nlohmann::json::parse(line);
    cases.push_back({j.at("text").get<std::string>(), j.at("ids").get<std::vector<int32_t>>(),
                     j.at("ids_special").get<std::vector<int32_t>>(),
                     j.at("decoded").get<std::string>(), j.at("decoded_skip").get<std::string>()});
  }
  return cases;
}

bool valid_utf8(const std::string& s) {
  for (size_t i = 0; i < s.size();) {
    auto c = static_cast<unsigned char>(s[i]);
    size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (n == 0 || i + n > s.size()) return false;
    for (size_t k = 1; k < n; ++k)
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return false;
    i += n;
  }
  return true;
}

std::string show(const std::vector<int32_t>& v) {
  std::string s = "[";
  for (size_t k = 0; k < v.size(); ++k)
    s += (k ? "," : "") + std::to_string(v[k]);
  return s + "]";
}

class Parity : public ::testing::TestWithParam<std::string> {};

TEST_P(Parity, MatchesHuggingFace) {
  fs::path dir = fixtures() / "tokenizers" / GetParam();
  Tokenizer tok = Tokenizer::from_folder(dir);
  std::vector<Case> cases = read_cases(dir / "cases.jsonl");
  ASSERT_GE(cases.size(), 2000u);
  int failures = 0;
  auto fail = [&](const Case& c, const std::string& what) {
    if (++failures <= 10)
      ADD_FAILURE() << GetParam() << ": " << what << " for " << nlohmann::json(c.text).dump();
  };
  for (const Case& c : cases) {
    auto ids = tok.encode(c.text, false);
    if (ids != c.ids) fail(c, "ids " + show(ids) + " != " + show(c.ids));
    auto ids_special = tok.encode(c.text, true);
    if (ids_special != c.ids_special)
      fail(c, "ids_special " + show(ids_special) + " != " + show(c.ids_special));
    std::string decoded = tok.decode(c.ids_special, false);
    if (decoded != c.decoded) fail(c, "decoded " + nlohmann::json(decoded).dump());
    std::string decoded_skip = tok.decode(c.ids_special, true);
    if (decoded_skip != c.decoded_skip)
      fail(c, "decoded_skip " + nlohmann::json(decoded_skip).dump());
    for (bool skip : {false, true}) {
      auto stream = tok.stream_decoder(skip);
      std::string all;
      bool chunks_valid = true;
      for (int32_t id : c.ids_special) {
        std::string chunk = stream.push(id);
        chunks_valid = chunks_valid && valid_utf8(chunk);
        all += chunk;
      }
      std::string rest = stream.flush();
      chunks_valid = chunks_valid && valid_utf8(rest);
      all += rest;
      if (!chunks_valid) fail(c, "stream chunk is not valid UTF-8");
      if (all != (skip ? c.decoded_skip : c.decoded))
        fail(c, "stream " + nlohmann::json(all).dump());
    }
  }
  EXPECT_EQ(failures, 0) << GetParam() << ": " << failures << " mismatches in " << cases.size()
                         << " cases";
}

INSTANTIATE_TEST_SUITE_P(Tokenizer, Parity,
                         ::testing::Values("llama3", "gpt2", "llama2", "mistral", "qwen2"));

TEST(Tokenizer, Metadata) {
  Tokenizer l3 = Tokenizer::from_folder(fixtures() / "tokenizers" / "llama3");
  EXPECT_EQ(l3.kind(), "byte-level BPE");
  EXPECT_EQ(l3.bos_id(), l3.token_id("<|begin_of_text|>"));
  EXPECT_EQ(l3.eos_id(), l3.token_id("<|eot_id|>"));
  ASSERT_TRUE(l3.token_id("Ġthe"));
  EXPECT_EQ(l3.token(*l3.token_id("Ġthe")), "Ġthe");
  bool saw_non_special = false;
  for (const auto& a : l3.added_tokens()) {
    EXPECT_EQ(l3.token(a.id), a.content);
    if (a.content == "<tool_call>") saw_non_special = !a.special;
  }
  EXPECT_TRUE(saw_non_special);
  EXPECT_THROW((void)l3.token(l3.vocab_size()), luminal::Error);

  Tokenizer l2 = Tokenizer::from_folder(fixtures() / "tokenizers" / "llama2");
  EXPECT_EQ(l2.kind(), "SentencePiece BPE");
  EXPECT_EQ(l2.bos_id(), 1);
  EXPECT_EQ(l2.eos_id(), 2);
  EXPECT_EQ(l2.token_id("<0x0A>"), 3 + 0x0A);
  auto ids = l2.encode("hi", true);
  ASSERT_FALSE(ids.empty());
  EXPECT_EQ(ids.front(), 1);
}

TEST(Tokenizer, InvalidUtf8InputIsReplaced) {
  Tokenizer tok = Tokenizer::from_folder(fixtures() / "tokenizers" / "llama3");
  EXPECT_EQ(tok.encode("a\xff"
                       "b\xe2\x82"),
            tok.encode("a\xEF\xBF\xBD"
                       "b\xEF\xBF\xBD"));
}

TEST(Tokenizer, StreamNeverSplitsCharacters) {
  Tokenizer tok = Tokenizer::from_folder(fixtures() / "tokenizers" / "llama2");
  // Byte fallback: a CJK character of three <0xNN> tokens comes out whole.
  std::vector<int32_t> ids;
  for (unsigned char b : std::string("\xe9\xbe\x98"))
    ids.push_back(3 + b);
  auto stream = tok.stream_decoder();
  EXPECT_EQ(stream.push(ids[0]), "");
  EXPECT_EQ(stream.push(ids[1]), "");
  EXPECT_EQ(stream.push(ids[2]), "\xe9\xbe\x98");
  EXPECT_EQ(stream.flush(), "");
}

fs::path write_variant(const std::string& name, const std::function<void(nlohmann::json&)>& edit) {
  fs::path src = fixtures() / "tokenizers" / "llama3" / "tokenizer.json";
  std::ifstream f(src);
  nlohmann::json j = nlohmann::json::parse(f);
  edit(j);
  fs::path dir = fs::temp_directory_path() / ("luminal_tok_" + name);
  fs::create_directories(dir);
  std::ofstream(dir / "tokenizer.json") << j.dump();
  return dir / "tokenizer.json";
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const luminal::Error& e) {
    return e.what();
  }
  return "<no error>";
}

// NFC is covered by the qwen2 parity fixture; the other forms and Lowercase against texts
// normalized by hand (as the `tokenizers` package normalizes them).
TEST(Tokenizer, UnicodeNormalizersAndLowercase) {
  auto with = [](const std::string& type) {
    return Tokenizer::from_files(write_variant(type, [&](auto& j) {
      j["normalizer"] = {{"type", type}};
    }));
  };
  Tokenizer nfd = with("NFD"), nfkc = with("NFKC"), nfkd = with("NFKD"), lower = with("Lowercase");
  EXPECT_EQ(nfd.encode("caf\u00e9 \uac01"), nfd.encode("cafe\u0301 \u1100\u1161\u11a8"));
  EXPECT_EQ(nfkc.encode("\ufb01 e\u0301 \u2460"), nfkc.encode("fi \u00e9 1"));
  EXPECT_EQ(nfkd.encode("\ufb01 \u00e9"), nfkd.encode("fi e\u0301"));
  Tokenizer plain = Tokenizer::from_folder(fixtures() / "tokenizers" / "llama3");
  EXPECT_EQ(nfkc.encode("plain ASCII"), plain.encode("plain ASCII"));
  EXPECT_NE(nfkc.encode("\ufb01"), plain.encode("\ufb01"));
  // Unicode 9.0 tables, as HF: U+0D3C has combining class 9 only since 10.0, U+32FF is 12.1.
  EXPECT_EQ(nfd.encode("\u0301\u0d3c \u32ff"), plain.encode("\u0301\u0d3c \u32ff"));
  EXPECT_EQ(nfkc.encode("\u0301\u0d3c \u32ff"), plain.encode("\u0301\u0d3c \u32ff"));
  // Per character, as char::to_lowercase: final sigma stays U+03C3, U+0130 -> "i\u0307".
  EXPECT_EQ(lower.encode("HeLLo \u03a3\u0391\u03a3 \u0130 \u1e9e"),
            lower.encode("hello \u03c3\u03b1\u03c3 i\u0307 \u00df"));
}

TEST(Tokenizer, ErrorsNameTheFileAndTheThing) {
  std::string missing = error_of([] { (void)Tokenizer::from_folder("/nonexistent/model"); });
  EXPECT_NE(missing.find("/nonexistent/model/tokenizer.json"), std::string::npos) << missing;

  fs::path unigram = write_variant("unigram", [](auto& j) { j["model"]["type"] = "Unigram"; });
  std::string e1 = error_of([&] { (void)Tokenizer::from_files(unigram); });
  EXPECT_NE(e1.find("Unigram"), std::string::npos) << e1;
  EXPECT_NE(e1.find(unigram.string()), std::string::npos) << e1;

  fs::path precompiled = write_variant("precompiled", [](auto& j) {
    j["normalizer"] = {{"type", "Precompiled"}};
  });
  std::string e2 = error_of([&] { (void)Tokenizer::from_files(precompiled); });
  EXPECT_NE(e2.find("Precompiled"), std::string::npos) << e2;

  fs::path bad_regex = write_variant("regex", [](auto& j) {
    j["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "(unclosed";
  });
  std::string e3 = error_of([&] { (void)Tokenizer::from_files(bad_regex); });
  EXPECT_NE(e3.find("(unclosed"), std::string::npos) << e3;
}

}  // namespace
