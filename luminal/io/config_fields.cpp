#include "luminal/io/config_fields.hpp"

#include <cmath>
#include <nlohmann/json.hpp>

#include "luminal/core/error.hpp"

namespace luminal::io {

using nlohmann::json;

namespace {

std::string type_of(const json& v) {
  if (v.is_null()) return "null";
  if (v.is_boolean()) return "a boolean";
  if (v.is_number_integer()) return "an integer";
  if (v.is_number()) return "a number";
  if (v.is_string()) return "a string";
  if (v.is_array()) return "a list";
  return "an object";
}

std::string shown(const json& v) {
  std::string s = v.dump();
  if (s.size() > 40) s = s.substr(0, 37) + "...";
  return s;
}

}  // namespace

ConfigFields::ConfigFields(const json& obj, std::string source, std::string prefix,
                           std::string model_type)
    : obj_(obj),
      source_(std::move(source)),
      prefix_(std::move(prefix)),
      model_type_(std::move(model_type)) {}

const json* ConfigFields::get(const char* key) const {
  auto it = obj_.find(key);
  if (it == obj_.end() || it->is_null()) return nullptr;
  return &*it;
}

const char* ConfigFields::alias(const char* key, const char* other) const {
  const json* a = get(key);
  const json* b = get(other);
  if (a && b && *a != *b) {
    fail("fields '" + name(key) + "' (" + shown(*a) + ") and '" + name(other) + "' (" + shown(*b) +
         ") disagree; they name the same setting");
  }
  return a || !b ? key : other;
}

void ConfigFields::fail(const std::string& msg) const { throw Error(source_ + ": " + msg); }

void ConfigFields::missing(const char* key) const {
  fail("missing field '" + name(key) + "' (required for model_type '" + model_type_ + "')");
}

void ConfigFields::wrong(const char* key, const json& v, const char* want) const {
  fail("field '" + name(key) + "' must be " + want + ", got " + type_of(v) + " " + shown(v));
}

int64_t ConfigFields::to_int(const char* key, const json& v) const {
  if (v.is_number_integer()) return v.get<int64_t>();
  if (v.is_number_float()) {
    double d = v.get<double>();
    if (std::isfinite(d) && d == std::floor(d) && std::fabs(d) < 9.0e15)
      return static_cast<int64_t>(d);
  }
  wrong(key, v, "an integer");
}

double ConfigFields::to_double(const char* key, const json& v) const {
  if (v.is_number()) return v.get<double>();
  wrong(key, v, "a number");
}

int64_t ConfigFields::req_int(const char* key) const {
  const json* v = get(key);
  if (!v) missing(key);
  return to_int(key, *v);
}

int64_t ConfigFields::req_pos_int(const char* key) const {
  int64_t x = req_int(key);
  if (x <= 0) fail("field '" + name(key) + "' must be positive, got " + std::to_string(x));
  return x;
}

double ConfigFields::req_double(const char* key) const {
  const json* v = get(key);
  if (!v) missing(key);
  return to_double(key, *v);
}

std::optional<int64_t> ConfigFields::opt_int(const char* key) const {
  const json* v = get(key);
  if (!v) return std::nullopt;
  return to_int(key, *v);
}

std::optional<double> ConfigFields::opt_double(const char* key) const {
  const json* v = get(key);
  if (!v) return std::nullopt;
  return to_double(key, *v);
}

std::optional<bool> ConfigFields::opt_bool(const char* key) const {
  const json* v = get(key);
  if (!v) return std::nullopt;
  if (!v->is_boolean()) wrong(key, *v, "true or false");
  return v->get<bool>();
}

std::optional<std::string> ConfigFields::opt_string(const char* key) const {
  const json* v = get(key);
  if (!v) return std::nullopt;
  if (!v->is_string()) wrong(key, *v, "a string");
  return v->get<std::string>();
}

std::vector<int64_t> ConfigFields::int_or_list(const char* key) const {
  const json* v = get(key);
  if (!v) return {};
  if (!v->is_array()) return {to_int(key, *v)};
  std::vector<int64_t> out;
  for (const json& e : *v) {
    if (!e.is_number_integer()) wrong(key, *v, "an integer or a list of integers");
    out.push_back(e.get<int64_t>());
  }
  return out;
}

std::vector<int64_t> ConfigFields::int_list(const char* key) const {
  const json* v = get(key);
  if (!v) return {};
  if (!v->is_array()) wrong(key, *v, "a list of integers");
  std::vector<int64_t> out;
  for (const json& e : *v) {
    if (!e.is_number_integer()) wrong(key, *v, "a list of integers");
    out.push_back(e.get<int64_t>());
  }
  return out;
}

std::vector<std::string> ConfigFields::string_list(const char* key) const {
  const json* v = get(key);
  if (!v) return {};
  if (!v->is_array()) wrong(key, *v, "a list of strings");
  std::vector<std::string> out;
  for (const json& e : *v) {
    if (!e.is_string()) wrong(key, *v, "a list of strings");
    out.push_back(e.get<std::string>());
  }
  return out;
}

const json* ConfigFields::opt_object(const char* key) const {
  const json* v = get(key);
  if (v && !v->is_object()) wrong(key, *v, "an object");
  return v;
}

ConfigFields ConfigFields::sub(const char* key, const json& obj) const {
  return ConfigFields(obj, source_, prefix_ + key + ".", model_type_);
}

json parse_json_object(std::string_view text, const std::string& source, std::string_view where) {
  json root;
  try {
    root = json::parse(text.begin(), text.end());
  } catch (const json::parse_error& e) {
    throw Error(source + ": not valid JSON (" + e.what() + ")");
  }
  if (!root.is_object()) throw Error(source + ": expected a JSON object" + std::string(where));
  return root;
}

}  // namespace luminal::io
