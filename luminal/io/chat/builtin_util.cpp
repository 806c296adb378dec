// The argument and escaping helpers of builtin_util.hpp, shared by the filters, the str/dict
// methods and tojson.
#include <string>
#include <string_view>

#include "luminal/io/chat/builtin_util.hpp"

namespace luminal::io::chat {

using K = Value::Kind;

// Positional-or-keyword argument `index`/`name` of a filter or method (after the value).
const Value* arg(const Args& args, const Kwargs& kwargs, size_t index, std::string_view name) {
  for (const auto& kw : kwargs)
    if (kw.name == name) return &kw.value;
  return index < args.size() ? &args[index] : nullptr;
}
Value arg_or(const Args& args, const Kwargs& kwargs, size_t index, std::string_view name, Value d) {
  const Value* v = arg(args, kwargs, index, name);
  return v ? *v : d;
}

std::string need_str(const Value& v, const char* what) {
  if (v.kind != K::String)
    fail(std::string(what) + " must be str, not " + std::string(v.type_name()));
  return v.s;
}

std::string html_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&#34;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

}  // namespace luminal::io::chat
