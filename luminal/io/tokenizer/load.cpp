// Builds Tokenizer::Impl from tokenizer.json and tokenizer_config.json.
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "luminal/core/error.hpp"
#include "luminal/io/tokenizer/impl.hpp"

namespace luminal::io {

namespace {

using nlohmann::json;

json read_json(const std::filesystem::path& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error("tokenizer: cannot open " + path.string());
  std::stringstream ss;
  ss << f.rdbuf();
  try {
    return json::parse(ss.str());
  } catch (const json::exception& e) {
    throw Error(path.string() + ": invalid JSON: " + e.what());
  }
}

std::optional<std::string> token_content(const json& config, const char* key) {
  auto it = config.find(key);
  if (it == config.end() || it->is_null()) return std::nullopt;
  if (it->is_string()) return it->get<std::string>();
  if (it->is_object() && it->contains("content")) return it->at("content").get<std::string>();
  return std::nullopt;
}

// Appends the post-processor's fixed ids around a single sequence ($A); returns false for none.
bool read_post_processor(const json& j, Tokenizer::Impl& t) {
  if (j.is_null()) return false;
  std::string type = j.at("type").get<std::string>();
  if (type == "Sequence") {
    bool any = false;
    for (const auto& p : j.at("processors"))
      any = read_post_processor(p, t) || any;
    return any;
  }
  if (type == "ByteLevel") return false;  // offsets only
  if (type == "TemplateProcessing") {
    const json& specials = j.at("special_tokens");
    bool after = false;
    for (const auto& item : j.at("single")) {
      if (item.contains("Sequence")) {
        after = true;
        continue;
      }
      std::string id = item.at("SpecialToken").at("id").get<std::string>();
      if (!specials.contains(id))
        throw Error("TemplateProcessing: special token \"" + id + "\" has no ids");
      for (const auto& x : specials.at(id).at("ids"))
        (after ? t.suffix : t.prefix).push_back(x.get<int32_t>());
    }
    return true;
  }
  if (type == "BertProcessing" || type == "RobertaProcessing") {
    t.prefix.push_back(j.at("cls").at(1).get<int32_t>());
    t.suffix.push_back(j.at("sep").at(1).get<int32_t>());
    return true;
  }
  throw Error("tokenizer: unsupported post_processor type \"" + type +
              "\" (supported: TemplateProcessing, Sequence, ByteLevel, BertProcessing, "
              "RobertaProcessing)");
}

void build(const json& j, const json& config, Tokenizer::Impl& t) {
  const json& model = j.at("model");
  std::string type = model.value("type", std::string(model.contains("merges") ? "BPE" : ""));
  if (type != "BPE")
    throw Error("tokenizer: unsupported model type \"" + type + "\" (supported: BPE)");
  t.model = std::make_unique<tok::Bpe>(model);
  t.normalizer = tok::make_normalizer(j.value("normalizer", json()));
  tok::make_pre_tokenizers(j.value("pre_tokenizer", json()), t.pre_tokenizers);
  bool byte_level = tok::defer_byte_level_mapping(t.pre_tokenizers);
  t.model->set_byte_level_input(byte_level);
  tok::make_decoders(j.value("decoder", json()), t.decoders);
  bool byte_level_decoder = false;
  if (const json& d = j.value("decoder", json()); !d.is_null())
    byte_level_decoder = d.dump().find("\"ByteLevel\"") != std::string::npos;
  t.kind = byte_level || byte_level_decoder ? "byte-level BPE" : "SentencePiece BPE";

  int32_t size = 0;
  for (const auto& [s, id] : t.model->vocab())
    size = std::max(size, id + 1);
  std::vector<tok::AddedTokenSpec> raw, normalized;
  for (const auto& a : j.value("added_tokens", json::array())) {
    tok::AddedTokenSpec spec{a.at("content").get<std::string>(),
                             a.at("id").get<int32_t>(),
                             a.value("special", false),
                             a.value("lstrip", false),
                             a.value("rstrip", false),
                             a.value("single_word", false),
                             a.value("normalized", !a.value("special", false))};
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
  if (auto b = token_content(config, "bos_token")) t.bos = id_of(*b);
  if (auto e = token_content(config, "eos_token")) t.eos = id_of(*e);
  if (!read_post_processor(j.value("post_processor", json()), t)) {
    if (config.value("add_bos_token", false) && t.bos) t.prefix.push_back(*t.bos);
    if (config.value("add_eos_token", false) && t.eos) t.suffix.push_back(*t.eos);
  }
}

}  // namespace

std::unique_ptr<Tokenizer::Impl> Tokenizer::Impl::load(
    const std::filesystem::path& tokenizer_json,
    const std::optional<std::filesystem::path>& config_path) {
  json j = read_json(tokenizer_json);
  json config = config_path ? read_json(*config_path) : json::object();
  auto t = std::make_unique<Impl>();
  try {
    build(j, config, *t);
  } catch (const json::exception& e) {
    throw Error(tokenizer_json.string() + ": unexpected tokenizer.json structure: " + e.what());
  } catch (const Error& e) {
    throw Error(tokenizer_json.string() + ": " + e.what());
  }
  return t;
}

}  // namespace luminal::io
