// Builds Tokenizer::Impl from tokenizer.json and tokenizer_config.json.
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "luminal/core/error.hpp"
#include "luminal/io/tokenizer/impl.hpp"
#include "luminal/io/tokenizer/json_at.hpp"

namespace luminal::io {

namespace {

using nlohmann::json;
using tok::JsonAt;

// `text` parsed; `what` and `name` ("tokenizer", its file or source) name it in errors.
json parse_json(std::string_view text, const std::string& what, const std::string& name) {
  try {
    return json::parse(text);
  } catch (const json::exception& e) {
    throw Error(what + " '" + name + "': invalid JSON: " + e.what());
  }
}

json read_json(const std::filesystem::path& path, const std::string& what) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error(what + " '" + path.string() + "': cannot open the file");
  std::stringstream ss;
  ss << f.rdbuf();
  return parse_json(ss.str(), what, path.string());
}

// What tokenizer_config.json says about special tokens.
struct ConfigTokens {
  std::optional<std::string> bos, eos;
  bool add_bos = false, add_eos = false;
};

ConfigTokens read_config(const json& j) {
  const JsonAt config(j, "");
  config.expect_object("the tokenizer's settings");
  auto token = [&](const char* key) -> std::optional<std::string> {
    auto v = config.opt(key);
    if (!v) return std::nullopt;
    if (v->json().is_object()) return v->req("content", "the token's text").str("the token's text");
    if (!v->json().is_string())
      v->wrong_type("a string or an object with \"content\"", "the token's text, or null");
    return v->str("");
  };
  ConfigTokens c;
  c.bos = token("bos_token");
  c.eos = token("eos_token");
  c.add_bos = config.bool_or("add_bos_token", false, "whether encode adds the BOS token");
  c.add_eos = config.bool_or("add_eos_token", false, "whether encode adds the EOS token");
  return c;
}

// Appends the post-processor's fixed ids around a single sequence ($A); returns false for none.
bool read_post_processor(const JsonAt& j, Tokenizer::Impl& t) {
  const std::string type = j.type("a post-processor");
  if (type == "Sequence") {
    bool any = false;
    for (const JsonAt& p : j.req("processors", "a Sequence lists its post-processors")
                               .elements("a Sequence lists its post-processors"))
      any = read_post_processor(p, t) || any;
    return any;
  }
  if (type == "ByteLevel") return false;  // offsets only
  if (type == "TemplateProcessing") {
    const JsonAt specials =
        j.req("special_tokens", "the ids of the special tokens the template uses");
    specials.expect_object("special token name -> {\"ids\": [...]}");
    bool after = false;
    for (const JsonAt& item : j.req("single", "the template for one sequence")
                                  .elements("the template for one sequence")) {
      item.expect_object("{\"Sequence\": ...} or {\"SpecialToken\": ...}");
      if (item.has("Sequence")) {
        after = true;
        continue;
      }
      const std::string id =
          item.req("SpecialToken", "a template item is a Sequence or a SpecialToken")
              .req("id", "the special token's name")
              .str("the special token's name");
      auto entry = specials.opt(id);
      if (!entry)
        item.fail("special token \"" + id + "\" is not in '" + specials.path() +
                  "' (add it there with its ids)");
      for (const JsonAt& x : entry->req("ids", "the special token's ids").elements("token ids"))
        (after ? t.suffix : t.prefix).push_back(x.id(""));
    }
    return true;
  }
  if (type == "BertProcessing" || type == "RobertaProcessing") {
    const char* pair = "[token, id]";
    t.prefix.push_back(j.req("cls", "the CLS token: [token, id]").element(1, pair).id(""));
    t.suffix.push_back(j.req("sep", "the SEP token: [token, id]").element(1, pair).id(""));
    return true;
  }
  j.fail("unsupported post_processor type \"" + type +
         "\" (supported: TemplateProcessing, Sequence, ByteLevel, BertProcessing, "
         "RobertaProcessing)");
}

void build(const json& file, const ConfigTokens& config, Tokenizer::Impl& t) {
  const JsonAt j(file, "");
  j.expect_object("a Hugging Face tokenizer.json");
  const JsonAt model = j.req("model", "the tokenizer's model: its type, vocab and merges");
  model.expect_object("the tokenizer's model: its type, vocab and merges");
  std::string type;
  if (auto ty = model.opt("type")) {
    type = ty->str("the model's kind, e.g. \"BPE\"");
  } else if (model.has("merges")) {
    type = "BPE";  // older files have no type
  } else {
    model.req("type", "the model's kind; supported: BPE");
  }
  if (type != "BPE")
    model.req("type", "").fail("unsupported model type \"" + type + "\" (supported: BPE)");
  t.model = std::make_unique<tok::Bpe>(model);
  if (auto n = j.opt("normalizer")) t.normalizer = tok::make_normalizer(*n);
  if (auto p = j.opt("pre_tokenizer")) tok::make_pre_tokenizers(*p, t.pre_tokenizers);
  bool byte_level = tok::defer_byte_level_mapping(t.pre_tokenizers);
  t.model->set_byte_level_input(byte_level);
  bool byte_level_decoder = false;
  if (auto d = j.opt("decoder")) {
    tok::make_decoders(*d, t.decoders);
    byte_level_decoder = d->json().dump().find("\"ByteLevel\"") != std::string::npos;
  }
  t.kind = byte_level || byte_level_decoder ? "byte-level BPE" : "SentencePiece BPE";

  int32_t size = 0;
  for (const auto& [s, id] : t.model->vocab())
    size = std::max(size, id + 1);
  std::vector<tok::AddedTokenSpec> raw, normalized;
  std::vector<JsonAt> added;
  if (auto a = j.opt("added_tokens")) added = a->elements("the added tokens");
  for (const JsonAt& a : added) {
    a.expect_object("an added token: {\"id\": ..., \"content\": ...}");
    const bool special = a.bool_or("special", false, "");
    tok::AddedTokenSpec spec{a.req("content", "an added token's text").str("the token's text"),
                             a.req("id", "an added token's id").id(""),
                             special,
                             a.bool_or("lstrip", false, ""),
                             a.bool_or("rstrip", false, ""),
                             a.bool_or("single_word", false, ""),
                             a.bool_or("normalized", !special, "")};
    size = std::max(size, spec.id + 1);
    t.added.push_back({spec.content, spec.id, spec.special});
    t.added_by_content.emplace(spec.content, spec.id);
    if (spec.normalized) {
      if (t.normalizer) t.normalizer->apply(spec.content);
      normalized.push_back(std::move(spec));
    } else {
      raw.push_back(std::move(spec));
    }
  }
  t.raw_tokens = std::make_unique<tok::AddedTokenMatcher>(std::move(raw));
  t.normalized_tokens = std::make_unique<tok::AddedTokenMatcher>(std::move(normalized));
  t.model_tokens.assign(size_t(size), std::string());
  for (const auto& [s, id] : t.model->vocab())
    if (id >= 0) t.model_tokens[size_t(id)] = s;
  t.added_index.assign(size_t(size), -1);
  for (size_t k = 0; k < t.added.size(); ++k)
    if (t.added[k].id >= 0) t.added_index[size_t(t.added[k].id)] = int32_t(k);

  auto id_of = [&](const std::string& s) -> std::optional<int32_t> {
    if (auto it = t.added_by_content.find(s); it != t.added_by_content.end()) return it->second;
    if (auto it = t.model->vocab().find(s); it != t.model->vocab().end()) return it->second;
    return std::nullopt;
  };
  if (config.bos) t.bos = id_of(*config.bos);
  if (config.eos) t.eos = id_of(*config.eos);
  auto post = j.opt("post_processor");
  if (!post || !read_post_processor(*post, t)) {
    if (config.add_bos && t.bos) t.prefix.push_back(*t.bos);
    if (config.add_eos && t.eos) t.suffix.push_back(*t.eos);
  }
}

}  // namespace

std::unique_ptr<Tokenizer::Impl> Tokenizer::Impl::load(
    const std::filesystem::path& tokenizer_json,
    const std::optional<std::filesystem::path>& config_path) {
  json j = read_json(tokenizer_json, "tokenizer");
  std::optional<json> c;
  if (config_path) c = read_json(*config_path, "tokenizer config");
  return load_parsed(j, c, tokenizer_json.string(), config_path ? config_path->string() : "");
}

std::unique_ptr<Tokenizer::Impl> Tokenizer::Impl::load_text(std::string_view tokenizer_json,
                                                            std::string_view config_json,
                                                            const std::string& source) {
  json j = parse_json(tokenizer_json, "tokenizer", source);
  std::optional<json> c;
  if (!config_json.empty()) c = parse_json(config_json, "tokenizer config", source);
  return load_parsed(j, c, source, source);
}

std::unique_ptr<Tokenizer::Impl> Tokenizer::Impl::load_parsed(
    const nlohmann::json& j, const std::optional<nlohmann::json>& c, const std::string& name,
    const std::string& config_name) {
  // Errors: "tokenizer 'DIR/tokenizer.json': missing 'model.merges' (...)".
  const std::string file = "tokenizer '" + name + "': ";
  ConfigTokens config;
  if (c) {
    const std::string cfile = "tokenizer config '" + config_name + "': ";
    try {
      config = read_config(*c);
    } catch (const Error& e) {
      throw Error(cfile + e.what());
    } catch (const json::exception& e) {  // not expected: every read above checks its type
      throw Error(cfile + "unexpected structure: " + e.what());
    }
  }
  auto t = std::make_unique<Impl>();
  try {
    build(j, config, *t);
  } catch (const Error& e) {
    throw Error(file + e.what());
  } catch (const json::exception& e) {  // not expected: every read above checks its type
    throw Error(file + "unexpected structure: " + e.what());
  }
  return t;
}

}  // namespace luminal::io
