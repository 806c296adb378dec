#pragma once
// Tokenizer::Impl: the loaded pipeline (internal). load.cpp builds it from the JSON files;
// tokenizer.cpp runs it.
#include <cstdint>
#include <filesystem>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "luminal/io/tokenizer.hpp"
#include "luminal/io/tokenizer/added_tokens.hpp"
#include "luminal/io/tokenizer/bpe.hpp"
#include "luminal/io/tokenizer/components.hpp"

namespace luminal::io {

struct Tokenizer::Impl {
  std::string kind;
  std::unique_ptr<tok::Normalizer> normalizer;
  std::vector<std::unique_ptr<tok::PreTokenizer>> pre_tokenizers;  // a Sequence, flattened
  std::unique_ptr<tok::Bpe> model;
  std::vector<std::unique_ptr<tok::Decoder>> decoders;  // a Sequence, flattened
  // Added tokens matched on the raw text (normalized == false) and, after the normalizer, on
  // the normalized text (normalized == true).
  std::unique_ptr<tok::AddedTokenMatcher> raw_tokens;
  std::unique_ptr<tok::AddedTokenMatcher> normalized_tokens;
  std::vector<AddedToken> added;
  std::vector<int32_t> added_index;       // by id: index into `added`, or -1
  std::vector<std::string> model_tokens;  // by id: the model vocabulary's string
  tok::StringMap added_by_content;
  // Post-processing of a single sequence: prefix + ids + suffix.
  std::vector<int32_t> prefix, suffix;
  std::optional<int32_t> bos, eos;

  static std::unique_ptr<Impl> load(const std::filesystem::path& tokenizer_json,
                                    const std::optional<std::filesystem::path>& config);
  /// The same from the files' texts (`config_json` may be empty); errors name `source`.
  static std::unique_ptr<Impl> load_text(std::string_view tokenizer_json,
                                         std::string_view config_json, const std::string& source);
  /// The same from parsed JSON; errors name `name` (and `config_name` for the config).
  static std::unique_ptr<Impl> load_parsed(const nlohmann::json& tokenizer,
                                           const std::optional<nlohmann::json>& config,
                                           const std::string& name, const std::string& config_name);
  void encode(std::string_view text, std::vector<int32_t>& out) const;
  std::string decode(std::span<const int32_t> ids, bool skip_special) const;
};

}  // namespace luminal::io
