#pragma once
// Typed reads of one object of a JSON config file (internal to io: config.json,
// generation_config.json): required and optional fields by type, and the fields of a member
// object (sub). Every error is luminal::Error naming the source, the field with its path and
// what was expected:
//   config.json: missing field 'num_hidden_layers' (required for model_type 'llama')
//   config.json: field 'rope_theta' must be a number, got a string "big"
// Example: examples/snippets/io/config_fields.cpp (a config's fields read, and each error).
//
// A member that is null counts as absent.
#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace luminal::io {

class ConfigFields {
 public:
  /// `prefix`: the object's path in the file ("" at the top, "text_config." below it);
  /// `model_type`: named by missing() ("?" before it is known).
  ConfigFields(const nlohmann::json& obj, std::string source, std::string prefix,
               std::string model_type);

  /// A present, non-null value, or nullptr.
  const nlohmann::json* get(const char* key) const;
  bool has(const char* key) const { return get(key) != nullptr; }
  /// A field transformers 5 writes under another name: whichever of the two is present (`key`
  /// when neither is); both present with different values is an error naming both.
  const char* alias(const char* key, const char* other) const;

  /// Throws "source: msg".
  [[noreturn]] void fail(const std::string& msg) const;
  /// The field's path: prefix + key.
  std::string name(const char* key) const { return prefix_ + key; }
  [[noreturn]] void missing(const char* key) const;
  /// Throws "field 'k' must be <want>, got <type> <value>".
  [[noreturn]] void wrong(const char* key, const nlohmann::json& v, const char* want) const;

  /// An integer (a float with an integral value counts).
  int64_t to_int(const char* key, const nlohmann::json& v) const;
  double to_double(const char* key, const nlohmann::json& v) const;

  int64_t req_int(const char* key) const;
  int64_t req_pos_int(const char* key) const;
  double req_double(const char* key) const;
  std::optional<int64_t> opt_int(const char* key) const;
  std::optional<double> opt_double(const char* key) const;
  std::optional<bool> opt_bool(const char* key) const;
  std::optional<std::string> opt_string(const char* key) const;
  /// An int or a list of ints (bos/eos ids); empty when absent.
  std::vector<int64_t> int_or_list(const char* key) const;
  std::vector<int64_t> int_list(const char* key) const;
  std::vector<std::string> string_list(const char* key) const;
  /// An object or nullptr when absent.
  const nlohmann::json* opt_object(const char* key) const;
  /// The fields of the object `obj` at member `key` (errors name 'key.field').
  ConfigFields sub(const char* key, const nlohmann::json& obj) const;
  const std::string& source() const { return source_; }

 private:
  const nlohmann::json& obj_;
  std::string source_;
  std::string prefix_;
  std::string model_type_;
};

/// Parses JSON text that must be an object: "source: not valid JSON (...)" or
/// "source: expected a JSON object<where>" (`where`, e.g. " at the top level", ends the message).
nlohmann::json parse_json_object(std::string_view text, const std::string& source,
                                 std::string_view where = "");

}  // namespace luminal::io
