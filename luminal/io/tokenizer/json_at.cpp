#include "luminal/io/tokenizer/json_at.hpp"

#include <limits>
#include <nlohmann/json.hpp>

#include "luminal/core/error.hpp"

namespace luminal::io::tok {

namespace {

bool plain_name(std::string_view key) {
  if (key.empty() || (key[0] >= '0' && key[0] <= '9')) return false;
  for (char c : key)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_'))
      return false;
  return true;
}

std::string with_what(std::string_view what) {
  return what.empty() ? std::string() : " (" + std::string(what) + ")";
}

}  // namespace

std::string member_path(const std::string& parent, std::string_view key) {
  if (plain_name(key)) return parent.empty() ? std::string(key) : parent + "." + std::string(key);
  return parent + "[" + nlohmann::json(std::string(key)).dump() + "]";
}

std::string element_path(const std::string& parent, size_t i) {
  return parent + "[" + std::to_string(i) + "]";
}

std::string json_type_name(const nlohmann::json& j) {
  switch (j.type()) {
    case nlohmann::json::value_t::null: return "null";
    case nlohmann::json::value_t::object: return "an object";
    case nlohmann::json::value_t::array: return "an array";
    case nlohmann::json::value_t::string: return "a string";
    case nlohmann::json::value_t::boolean: return "a boolean";
    case nlohmann::json::value_t::number_integer:
    case nlohmann::json::value_t::number_unsigned: return "the integer " + j.dump();
    case nlohmann::json::value_t::number_float: return "the number " + j.dump();
    default: return "a " + std::string(j.type_name());
  }
}

void wrong_type_at(const std::string& path, const nlohmann::json& j, std::string_view expected,
                   std::string_view what) {
  throw Error((path.empty() ? std::string("the top level") : "'" + path + "'") + " is " +
              json_type_name(j) + ", expected " + std::string(expected) + with_what(what));
}

std::string JsonAt::where() const { return path_.empty() ? "the top level" : "'" + path_ + "'"; }

void JsonAt::wrong_type(std::string_view expected, std::string_view what) const {
  wrong_type_at(path_, *j_, expected, what);
}

void JsonAt::fail(std::string_view message) const {
  throw Error(where() + ": " + std::string(message));
}

void JsonAt::bad(std::string_view rest) const { throw Error(where() + " " + std::string(rest)); }

void JsonAt::expect_object(std::string_view what) const {
  if (!j_->is_object()) wrong_type("an object", what);
}

JsonAt JsonAt::req(std::string_view key, std::string_view why) const {
  if (!j_->is_object()) wrong_type("an object", "");
  auto it = j_->find(key);
  if (it == j_->end() || it->is_null())
    throw Error("missing '" + member_path(path_, key) + "'" + with_what(why));
  return JsonAt(*it, member_path(path_, key));
}

std::optional<JsonAt> JsonAt::opt(std::string_view key) const {
  if (!j_->is_object()) wrong_type("an object", "");
  auto it = j_->find(key);
  if (it == j_->end() || it->is_null()) return std::nullopt;
  return JsonAt(*it, member_path(path_, key));
}

std::vector<JsonAt> JsonAt::elements(std::string_view what) const {
  if (!j_->is_array()) wrong_type("an array", what);
  std::vector<JsonAt> out;
  out.reserve(j_->size());
  for (size_t i = 0; i < j_->size(); ++i)
    out.emplace_back((*j_)[i], element_path(path_, i));
  return out;
}

JsonAt JsonAt::element(size_t i, std::string_view what) const {
  if (!j_->is_array()) wrong_type("an array", what);
  if (i >= j_->size())
    bad("has " + std::to_string(j_->size()) + (j_->size() == 1 ? " element" : " elements") +
        ", expected at least " + std::to_string(i + 1) + with_what(what));
  return JsonAt((*j_)[i], element_path(path_, i));
}

std::string JsonAt::str(std::string_view what) const {
  if (!j_->is_string()) wrong_type("a string", what);
  return j_->get<std::string>();
}

bool JsonAt::boolean(std::string_view what) const {
  if (!j_->is_boolean()) wrong_type("true or false", what);
  return j_->get<bool>();
}

double JsonAt::number(std::string_view what) const {
  if (!j_->is_number()) wrong_type("a number", what);
  return j_->get<double>();
}

int32_t JsonAt::id(std::string_view what) const {
  if (j_->is_number_unsigned() &&
      j_->get<uint64_t>() <= uint64_t(std::numeric_limits<int32_t>::max()))
    return int32_t(j_->get<uint64_t>());
  if (j_->is_number_integer() && j_->get<int64_t>() >= 0 &&
      j_->get<int64_t>() <= std::numeric_limits<int32_t>::max())
    return int32_t(j_->get<int64_t>());
  wrong_type("a token id: an integer from 0 to 2147483647", what);
}

uint64_t JsonAt::count(std::string_view what) const {
  if (j_->is_number_unsigned()) return j_->get<uint64_t>();
  if (j_->is_number_integer() && j_->get<int64_t>() >= 0) return uint64_t(j_->get<int64_t>());
  wrong_type("a non-negative integer", what);
}

std::string JsonAt::str_or(std::string_view key, std::string fallback,
                           std::string_view what) const {
  auto v = opt(key);
  return v ? v->str(what) : fallback;
}

bool JsonAt::bool_or(std::string_view key, bool fallback, std::string_view what) const {
  auto v = opt(key);
  return v ? v->boolean(what) : fallback;
}

std::string JsonAt::type(std::string_view what) const {
  if (!j_->is_object()) wrong_type("an object with a \"type\"", what);
  return req("type", what).str(what);
}

}  // namespace luminal::io::tok
