// tojson's encoder: transformers' override of jinja2's filter, json.dumps(x, ensure_ascii=False,
// indent=None, separators=None, sort_keys=False), which does not HTML-escape like jinja2's own.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <set>

#include "luminal/io/chat/builtin_util.hpp"
#include "luminal/io/chat/interp.hpp"

namespace luminal::io::chat {

using K = Value::Kind;

static std::string json_string(const std::string& s, bool ensure_ascii) {
  std::string out = "\"";
  for (size_t i = 0; i < s.size(); ++i) {
    auto c = static_cast<unsigned char>(s[i]);
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (c < 0x20) {
          char b[8];
          std::snprintf(b, sizeof b, "\\u%04x", c);
          out += b;
        } else if (c >= 0x80 && ensure_ascii) {
          auto ch = utf8_chars(std::string_view(s).substr(i, 4)).front();
          auto lead = static_cast<unsigned char>(ch[0]);
          uint32_t cp = ch.size() == 2   ? (lead & 0x1F)
                        : ch.size() == 3 ? (lead & 0x0F)
                                         : (lead & 0x07);
          for (size_t k = 1; k < ch.size(); ++k)
            cp = (cp << 6) | (static_cast<unsigned char>(ch[k]) & 0x3F);
          char b[16];
          if (cp >= 0x10000) {
            uint32_t v = cp - 0x10000;
            std::snprintf(b, sizeof b, "\\u%04x\\u%04x", 0xD800 + (v >> 10), 0xDC00 + (v & 0x3FF));
          } else {
            std::snprintf(b, sizeof b, "\\u%04x", cp);
          }
          out += b;
          i += ch.size() - 1;
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out + "\"";
}

static std::string json_float(double d) {
  if (std::isnan(d)) return "NaN";
  if (std::isinf(d)) return d < 0 ? "-Infinity" : "Infinity";
  return py_float_repr(d);
}

void json_encode(const Value& v, const std::string* indent, int level, const std::string& item_sep,
                 const std::string& key_sep, bool sort_keys, bool ensure_ascii, std::string& out) {
  switch (v.kind) {
    case K::None: out += "null"; return;
    case K::Bool: out += v.b ? "true" : "false"; return;
    case K::Int: out += std::to_string(v.i); return;
    case K::Float: out += json_float(v.f); return;
    case K::String: out += json_string(v.s, ensure_ascii); return;
    case K::List:
    case K::Dict: {
      bool is_list = v.kind == K::List;
      size_t n = is_list ? v.list->size() : v.dict->items.size();
      if (n == 0) {
        out += is_list ? "[]" : "{}";
        return;
      }
      out += is_list ? '[' : '{';
      std::string newline_indent;
      if (indent) {
        newline_indent = "\n";
        for (int k = 0; k <= level; ++k)
          newline_indent += *indent;
        out += newline_indent;
      }
      std::string sep = item_sep + newline_indent;
      if (is_list) {
        for (size_t k = 0; k < n; ++k) {
          if (k) out += sep;
          json_encode((*v.list)[k], indent, level + 1, item_sep, key_sep, sort_keys, ensure_ascii,
                      out);
        }
      } else {
        std::vector<std::pair<std::string, const Value*>> items;
        for (const auto& [key, x] : v.dict->items) {
          std::string ks;
          switch (key.kind) {
            case K::String: ks = key.s; break;
            case K::Int: ks = std::to_string(key.i); break;
            case K::Float: ks = json_float(key.f); break;
            case K::Bool: ks = key.b ? "true" : "false"; break;
            case K::None: ks = "null"; break;
            default:
              fail("keys must be str, int, float, bool or None, not " +
                   std::string(key.type_name()));
          }
          items.emplace_back(ks, &x);
        }
        if (sort_keys)
          std::stable_sort(items.begin(), items.end(),
                           [](const auto& a, const auto& b) { return a.first < b.first; });
        for (size_t k = 0; k < items.size(); ++k) {
          if (k) out += sep;
          out += json_string(items[k].first, ensure_ascii) + key_sep;
          json_encode(*items[k].second, indent, level + 1, item_sep, key_sep, sort_keys,
                      ensure_ascii, out);
        }
      }
      if (indent) {
        out += "\n";
        for (int k = 0; k < level; ++k)
          out += *indent;
      }
      out += is_list ? ']' : '}';
      return;
    }
    default: fail("Object of type " + std::string(v.type_name()) + " is not JSON serializable");
  }
}

std::string to_json(const Value& v, const Value& indent, const std::string& item_sep,
                    const std::string& key_sep, bool sort_keys, bool ensure_ascii) {
  std::string ind;
  const std::string* ip = nullptr;
  if (indent.is_integral()) {
    ind = std::string(static_cast<size_t>(std::max<int64_t>(0, indent.as_int())), ' ');
    ip = &ind;
  } else if (indent.kind == K::String) {
    ind = indent.s;
    ip = &ind;
  }
  std::string out;
  json_encode(v, ip, 0, item_sep, key_sep, sort_keys, ensure_ascii, out);
  return out;
}

}  // namespace luminal::io::chat
