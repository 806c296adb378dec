// Tokenizers from GGUF metadata (tokenizer.ggml.*), as the Hugging Face tokenizer.json the model
// ships (or its equivalent), loaded by io::Tokenizer.
//
// gpt2 (byte-level BPE): vocab = tokens, merges = tokenizer.ggml.merges; the pre-tokenizer by
//   tokenizer.ggml.pre, with the regexes llama.cpp's llama-vocab.cpp uses for it (written as the
//   models' tokenizer.json writes them):
//     default          llama.cpp's fallback: Split by [\p{P}\$\+<=>\^~\|]+, GPT-2's regex, \p{N}+,
//                      [0-9][0-9][0-9], then ByteLevel
//     gpt2, gpt-2      ByteLevel with GPT-2's regex
//     llama3, llama-v3, llama-bpe
//                      Split by Llama 3's regex (digits in runs of up to 3), ByteLevel;
//                      ignore_merges (a whole word in the vocabulary is one token)
//     qwen2, deepseek-r1-qwen
//                      NFC, Split by Qwen2's regex (single digits), ByteLevel
//     smollm           Split by \p{N} (SmolLM2's Digits(individual_digits)), ByteLevel with
//                      GPT-2's regex
// llama (SentencePiece-style BPE): a BPE whose merges are every split of a normal token into two
//   tokens, ranked by the merged token's score (highest first; then its id, then the split):
//   llama.cpp's SPM tokenizer merges the adjacent pair whose result has the highest score, which
//   this reproduces. Byte fallback to <0xNN>, unknown token fused; spaces become "▁" and, with
//   tokenizer.ggml.add_space_prefix (default true), every text segment gets a leading "▁" (as
//   llama.cpp, and Llama 2's legacy tokenizer.json, do).
#include <algorithm>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "luminal/core/error.hpp"
#include "luminal/io/gguf_model.hpp"

namespace luminal::io {

namespace {

using Json = nlohmann::ordered_json;

std::string where(const GgufFile& f) { return "gguf '" + f.source() + "': "; }

// llama.cpp's token types (tokenizer.ggml.token_type).
enum TokenType : int64_t {
  Normal = 1,
  Unknown = 2,
  Control = 3,
  UserDefined = 4,
  Unused = 5,
  Byte = 6
};

// GPT-2's regex as llama.cpp writes it (for `default`): without the final "|\\s+", which only
// matches what a Split keeps as an unmatched piece anyway.
const char* kGpt2RegexLlamaCpp =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)";
const char* kLlama3Regex =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| "
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const char* kQwen2Regex =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| "
    "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

struct PreSpec {
  std::vector<std::string> names;
  bool llama3 = false;  // ignore_merges, BOS added by default
};
const std::vector<PreSpec>& pre_specs() {
  static const std::vector<PreSpec> s = {{{"default"}},
                                         {{"gpt2", "gpt-2"}},
                                         {{"llama3", "llama-v3", "llama-bpe"}, true},
                                         {{"qwen2", "deepseek-r1-qwen"}},
                                         {{"smollm"}}};
  return s;
}

Json split(const std::string& regex) {
  return Json{{"type", "Split"},
              {"pattern", {{"Regex", regex}}},
              {"behavior", "Isolated"},
              {"invert", false}};
}
Json byte_level(bool use_regex) {
  return Json{{"type", "ByteLevel"},
              {"add_prefix_space", false},
              {"trim_offsets", true},
              {"use_regex", use_regex}};
}
Json sequence(std::vector<Json> steps) {
  return Json{{"type", "Sequence"}, {"pretokenizers", std::move(steps)}};
}

std::string pre_name(const GgufFile& f) {
  return f.find_string("tokenizer.ggml.pre").value_or("default");
}

const PreSpec* find_pre(const std::string& pre) {
  for (const PreSpec& s : pre_specs())
    if (std::find(s.names.begin(), s.names.end(), pre) != s.names.end()) return &s;
  return nullptr;
}

std::optional<bool> find_bool(const GgufFile& f, const std::string& key) {
  if (!f.contains(key)) return std::nullopt;
  return f.get_bool(key);
}

struct Built {
  std::string json, config;
};

Built build(const GgufFile& f) {
  const std::string model = f.get_string("tokenizer.ggml.model");
  if (model != "gpt2" && model != "llama")
    throw Error(where(f) + "key 'tokenizer.ggml.model': tokenizer '" + model +
                "' is not supported (supported: gpt2, llama)");
  const std::vector<std::string> tokens = f.get_string_array("tokenizer.ggml.tokens");
  std::vector<int64_t> types(tokens.size(), Normal);
  if (f.contains("tokenizer.ggml.token_type")) {
    types = f.get_int_array("tokenizer.ggml.token_type");
    if (types.size() != tokens.size())
      throw Error(where(f) + "key 'tokenizer.ggml.token_type' has " + std::to_string(types.size()) +
                  " entries for " + std::to_string(tokens.size()) + " tokens");
  }
  auto token_of = [&](const char* key) -> std::optional<std::string> {
    auto v = f.find_int(std::string("tokenizer.ggml.") + key);
    if (!v) return std::nullopt;
    if (*v < 0 || *v >= static_cast<int64_t>(tokens.size()))
      throw Error(where(f) + "key 'tokenizer.ggml." + key + "': id " + std::to_string(*v) +
                  " is not a token (the vocabulary has " + std::to_string(tokens.size()) + ")");
    return tokens[static_cast<size_t>(*v)];
  };

  Json j = Json::object();
  j["version"] = "1.0";
  j["truncation"] = nullptr;
  j["padding"] = nullptr;
  Json added = Json::array();
  for (size_t i = 0; i < tokens.size(); ++i) {
    const int64_t t = types[i];
    if (t != Unknown && t != Control && t != UserDefined) continue;
    added.push_back({{"id", i},
                     {"content", tokens[i]},
                     {"single_word", false},
                     {"lstrip", false},
                     {"rstrip", false},
                     {"normalized", false},
                     {"special", t != UserDefined}});
  }
  j["added_tokens"] = added;

  Json bpe = Json::object();
  bpe["type"] = "BPE";
  bpe["dropout"] = nullptr;
  bpe["continuing_subword_prefix"] = nullptr;
  bpe["end_of_word_suffix"] = nullptr;
  // ordered_json looks keys up linearly: append to its vector directly (duplicates are skipped
  // through `index`), or 49k tokens take seconds.
  Json vocab = Json::object();
  std::unordered_map<std::string, size_t> index;
  auto& entries = static_cast<std::vector<std::pair<const std::string, Json>>&>(
      vocab.get_ref<Json::object_t&>());
  entries.reserve(tokens.size());
  for (size_t i = 0; i < tokens.size(); ++i)
    if (index.emplace(tokens[i], i).second) entries.emplace_back(tokens[i], Json(i));

  if (model == "gpt2") {
    const std::string pre = pre_name(f);
    const PreSpec* spec = find_pre(pre);
    if (spec == nullptr)
      throw Error(where(f) + "key 'tokenizer.ggml.pre': pre-tokenizer '" + pre +
                  "' is not supported (supported: " +
                  [] {
                    std::string s;
                    for (const std::string& n : gguf_supported_pre_tokenizers())
                      s += (s.empty() ? "" : ", ") + n;
                    return s;
                  }() +
                  ")");
    const std::string& p = spec->names[0];
    j["normalizer"] = nullptr;
    if (p == "default") {
      j["pre_tokenizer"] =
          sequence({split("[\\p{P}\\$\\+<=>\\^~\\|]+"), split(kGpt2RegexLlamaCpp), split("\\p{N}+"),
                    split("[0-9][0-9][0-9]"), byte_level(false)});
    } else if (p == "gpt2") {
      j["pre_tokenizer"] = byte_level(true);
    } else if (p == "llama3") {
      j["pre_tokenizer"] = sequence({split(kLlama3Regex), byte_level(false)});
    } else if (p == "qwen2") {
      j["normalizer"] = Json{{"type", "NFC"}};
      j["pre_tokenizer"] = sequence({split(kQwen2Regex), byte_level(false)});
    } else {  // smollm
      j["pre_tokenizer"] = sequence({split("\\p{N}"), byte_level(true)});
    }
    j["decoder"] = Json{{"type", "ByteLevel"},
                        {"add_prefix_space", true},
                        {"trim_offsets", true},
                        {"use_regex", true}};
    bpe["unk_token"] = nullptr;
    bpe["fuse_unk"] = false;
    bpe["byte_fallback"] = false;
    bpe["ignore_merges"] = spec->llama3;
    bpe["vocab"] = std::move(vocab);
    bpe["merges"] = f.get_string_array("tokenizer.ggml.merges");
  } else {  // llama: SentencePiece
    const std::vector<double> scores = f.get_float_array("tokenizer.ggml.scores");
    if (scores.size() != tokens.size())
      throw Error(where(f) + "key 'tokenizer.ggml.scores' has " + std::to_string(scores.size()) +
                  " entries for " + std::to_string(tokens.size()) + " tokens");
    const bool space_prefix = find_bool(f, "tokenizer.ggml.add_space_prefix").value_or(true);
    Json replace{{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", "\u2581"}};
    j["normalizer"] =
        space_prefix
            ? Json{{"type", "Sequence"},
                   {"normalizers", {Json{{"type", "Prepend"}, {"prepend", "\u2581"}}, replace}}}
            : replace;
    j["pre_tokenizer"] = nullptr;
    Json decoders = Json::array();
    decoders.push_back(
        {{"type", "Replace"}, {"pattern", {{"String", "\u2581"}}}, {"content", " "}});
    decoders.push_back({{"type", "ByteFallback"}});
    decoders.push_back({{"type", "Fuse"}});
    if (space_prefix)
      decoders.push_back({{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}});
    j["decoder"] = Json{{"type", "Sequence"}, {"decoders", decoders}};

    // Merges: every split of a normal token into two normal (or byte) tokens.
    struct Merge {
      double score;
      size_t id;
      size_t split;
      size_t left, right;
    };
    std::vector<Merge> merges;
    auto usable = [&](size_t i) { return types[i] == Normal || types[i] == Byte; };
    for (size_t i = 0; i < tokens.size(); ++i) {
      if (types[i] != Normal || index.at(tokens[i]) != i) continue;
      const std::string& t = tokens[i];
      for (size_t k = 1; k < t.size(); ++k) {
        if ((static_cast<unsigned char>(t[k]) & 0xC0) == 0x80) continue;  // inside a character
        auto a = index.find(t.substr(0, k));
        auto b = index.find(t.substr(k));
        if (a == index.end() || b == index.end() || !usable(a->second) || !usable(b->second))
          continue;
        merges.push_back({scores[i], i, k, a->second, b->second});
      }
    }
    std::stable_sort(merges.begin(), merges.end(), [](const Merge& x, const Merge& y) {
      if (x.score != y.score) return x.score > y.score;
      if (x.id != y.id) return x.id < y.id;
      return x.split < y.split;
    });
    Json mj = Json::array();
    for (const Merge& m : merges)
      mj.push_back(Json::array({tokens[m.left], tokens[m.right]}));
    std::optional<std::string> unk = token_of("unknown_token_id");
    if (!unk && index.contains("<unk>")) unk = "<unk>";
    if (unk)
      bpe["unk_token"] = *unk;
    else
      bpe["unk_token"] = nullptr;
    bpe["fuse_unk"] = true;
    bpe["byte_fallback"] = true;
    bpe["ignore_merges"] = false;
    bpe["vocab"] = std::move(vocab);
    bpe["merges"] = std::move(mj);
  }
  j["model"] = std::move(bpe);

  // BOS / EOS: the post-processor adds them; tokenizer_config.json names them.
  const std::optional<std::string> bos = token_of("bos_token_id"), eos = token_of("eos_token_id");
  const bool add_bos = bos && gguf_add_bos(f), add_eos = eos && gguf_add_eos(f);
  if (add_bos || add_eos) {
    Json single = Json::array(), pair = Json::array(), specials = Json::object();
    auto special = [&](const std::string& tok) {
      single.push_back({{"SpecialToken", {{"id", tok}, {"type_id", 0}}}});
      specials[tok] = {{"id", tok}, {"ids", {index.at(tok)}}, {"tokens", {tok}}};
    };
    if (add_bos) special(*bos);
    single.push_back({{"Sequence", {{"id", "A"}, {"type_id", 0}}}});
    if (add_eos) special(*eos);
    pair = single;
    if (add_bos) pair.push_back({{"SpecialToken", {{"id", *bos}, {"type_id", 1}}}});
    pair.push_back({{"Sequence", {{"id", "B"}, {"type_id", 1}}}});
    if (add_eos) pair.push_back({{"SpecialToken", {{"id", *eos}, {"type_id", 1}}}});
    j["post_processor"] = Json{{"type", "TemplateProcessing"},
                               {"single", single},
                               {"pair", pair},
                               {"special_tokens", specials}};
  } else {
    j["post_processor"] = nullptr;
  }
  Json config = Json::object();
  if (bos) config["bos_token"] = *bos;
  if (eos) config["eos_token"] = *eos;
  config["add_bos_token"] = add_bos;
  config["add_eos_token"] = add_eos;
  return {j.dump(), config.dump()};
}

}  // namespace

std::vector<std::string> gguf_supported_pre_tokenizers() {
  std::vector<std::string> out;
  for (const PreSpec& s : pre_specs())
    out.insert(out.end(), s.names.begin(), s.names.end());
  return out;
}

bool gguf_add_bos(const GgufFile& f) {
  if (auto v = find_bool(f, "tokenizer.ggml.add_bos_token")) return *v;
  const std::optional<std::string> model = f.find_string("tokenizer.ggml.model");
  if (model == "llama") return true;
  if (model == "gpt2") {
    const PreSpec* s = find_pre(pre_name(f));
    return s != nullptr && s->llama3;
  }
  return false;
}

bool gguf_add_eos(const GgufFile& f) {
  return find_bool(f, "tokenizer.ggml.add_eos_token").value_or(false);
}

std::string gguf_tokenizer_json(const GgufFile& f) { return build(f).json; }

Tokenizer gguf_tokenizer(const GgufFile& f) {
  const Built b = build(f);
  return Tokenizer::from_json(b.json, b.config, f.source());
}

}  // namespace luminal::io
