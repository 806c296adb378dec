#pragma once
// A value of a tokenizer's JSON file together with its path in the file (internal), so that
// every error names where the problem is and what was expected there:
//   missing 'model.merges' (a BPE model needs its merges)
//   'model.merges' is a string, expected an array (the BPE merges, ...)
// Example: examples/snippets/io/json_at.cpp (members read by path, and each error).
//
// Errors are luminal::Error without the file name; the loader adds it. A member that is null
// counts as absent (Hugging Face writes null for options that are not set).
#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace luminal::io::tok {

class JsonAt {
 public:
  /// `path`: where `j` is in the file ("" for the top level).
  JsonAt(const nlohmann::json& j, std::string path) : j_(&j), path_(std::move(path)) {}

  const nlohmann::json& json() const { return *j_; }
  /// The path as errors print it: 'model.merges', 'added_tokens[3].id', 'the top level'.
  std::string where() const;
  const std::string& path() const { return path_; }

  /// A member that must be present and not null; `why` says what it is for (in the error).
  /// Throws when this value is not an object.
  JsonAt req(std::string_view key, std::string_view why) const;
  /// A member that may be absent or null.
  std::optional<JsonAt> opt(std::string_view key) const;
  bool has(std::string_view key) const { return opt(key).has_value(); }

  /// The elements of an array (throws naming `what` when this is not an array).
  std::vector<JsonAt> elements(std::string_view what) const;
  /// Element i of an array of at least i + 1 elements.
  JsonAt element(size_t i, std::string_view what) const;

  /// Typed reads; a wrong type throws "'path' is a number, expected a string (what)".
  std::string str(std::string_view what) const;
  bool boolean(std::string_view what) const;
  double number(std::string_view what) const;
  /// A token id: an integer in [0, 2^31 - 1].
  int32_t id(std::string_view what) const;
  /// A non-negative integer.
  uint64_t count(std::string_view what) const;
  /// Checks that this is an object.
  void expect_object(std::string_view what) const;

  /// Optional members with defaults (absent or null: the default).
  std::string str_or(std::string_view key, std::string fallback, std::string_view what) const;
  bool bool_or(std::string_view key, bool fallback, std::string_view what) const;
  /// The "type" member of a pipeline stage (normalizer, pre_tokenizer, decoder, ...).
  std::string type(std::string_view what) const;

  /// Throws "'path' is <actual>, expected <expected> (what)".
  [[noreturn]] void wrong_type(std::string_view expected, std::string_view what) const;
  /// Throws "'path': message".
  [[noreturn]] void fail(std::string_view message) const;
  /// Throws "'path' <rest>", e.g. rest = "is \"ab\", expected one character".
  [[noreturn]] void bad(std::string_view rest) const;

 private:
  const nlohmann::json* j_;
  std::string path_;
};

/// The path of member `key` of the value at `parent` (quoted when it is not a plain name).
std::string member_path(const std::string& parent, std::string_view key);
/// The path of element i of the array at `parent`.
std::string element_path(const std::string& parent, size_t i);
/// "a string", "an array", "null", ... (the JSON type of j, for errors).
std::string json_type_name(const nlohmann::json& j);
/// Throws the wrong-type error for the value `j` at `path` (for loops over large arrays that do
/// not make a JsonAt per element).
[[noreturn]] void wrong_type_at(const std::string& path, const nlohmann::json& j,
                                std::string_view expected, std::string_view what);

}  // namespace luminal::io::tok
