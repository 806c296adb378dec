// Filters, tests, attribute/item access and the Python str/dict methods templates call, with the
// semantics of jinja2 3.1 (jinja2/filters.py, jinja2/tests.py) and CPython. tojson is
// transformers' override: json.dumps(x, ensure_ascii=False, indent=None, separators=None,
// sort_keys=False), which does not HTML-escape like jinja2's own.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <set>

#include "luminal/io/chat/interp.hpp"

namespace luminal::io::chat {
namespace {

using K = Value::Kind;

const std::set<std::string, std::less<>>& filter_names() {
  static const std::set<std::string, std::less<>> names{
      "abs",        "attr",       "capitalize", "count",   "d",     "default", "e",
      "escape",     "first",      "float",      "indent",  "int",   "items",   "join",
      "last",       "length",     "list",       "lower",   "map",   "max",     "min",
      "reject",     "rejectattr", "replace",    "reverse", "round", "safe",    "select",
      "selectattr", "sort",       "string",     "sum",     "title", "tojson",  "trim",
      "unique",     "upper",      "wordcount"};
  return names;
}

const std::set<std::string, std::less<>>& test_names() {
  static const std::set<std::string, std::less<>> names{
      "defined",  "undefined", "none",    "boolean",     "false",    "true",        "integer",
      "float",    "number",    "string",  "mapping",     "iterable", "sequence",    "callable",
      "sameas",   "eq",        "equalto", "==",          "ne",       "!=",          "lt",
      "lessthan", "<",         "le",      "<=",          "gt",       "greaterthan", ">",
      "ge",       ">=",        "in",      "divisibleby", "even",     "odd",         "lower",
      "upper",    "escaped",   "filter",  "test"};
  return names;
}

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

bool is_cased(std::string_view ch) { return py_upper(ch) != ch || py_lower(ch) != ch; }

// Python's \w beyond ASCII, approximately: cased letters and the main uncased scripts (Hebrew,
// Arabic, Indic, Thai, kana, CJK, Hangul); punctuation, symbols and emoji are not word characters.
bool is_word_char(std::string_view ch) {
  if (is_cased(ch)) return true;
  auto lead = static_cast<unsigned char>(ch[0]);
  uint32_t cp = ch.size() == 2 ? (lead & 0x1F) : ch.size() == 3 ? (lead & 0x0F) : (lead & 0x07);
  for (size_t k = 1; k < ch.size(); ++k)
    cp = (cp << 6) | (static_cast<unsigned char>(ch[k]) & 0x3F);
  return (cp >= 0x5D0 && cp <= 0x5EA) || (cp >= 0x620 && cp <= 0x64A) ||
         (cp >= 0x660 && cp <= 0x669) || (cp >= 0x900 && cp <= 0xDFF) ||
         (cp >= 0xE01 && cp <= 0xE30) || (cp >= 0x3041 && cp <= 0x30FF && cp != 0x30FB) ||
         (cp >= 0x3400 && cp <= 0x9FFF) || (cp >= 0xAC00 && cp <= 0xD7A3);
}

std::string capitalize(std::string_view s) {
  auto chars = utf8_chars(s);
  std::string out;
  for (size_t k = 0; k < chars.size(); ++k)
    out += k == 0 ? py_upper(chars[k]) : py_lower(chars[k]);
  return out;
}

std::string py_title(std::string_view s) {
  std::string out;
  bool prev_cased = false;
  for (auto ch : utf8_chars(s)) {
    out += prev_cased ? py_lower(ch) : py_upper(ch);
    prev_cased = is_cased(ch);
  }
  return out;
}

// jinja2's title filter: capitalize each piece of re.split(r"([-\s({\[<]+)", s).
std::string jinja_title(std::string_view s) {
  std::string out;
  bool word_start = true;
  for (auto ch : utf8_chars(s)) {
    size_t k = 0;
    (void)k;
    bool sep = ch.size() == 1 ? (std::string_view("-({[<").find(ch[0]) != std::string_view::npos ||
                                 is_py_space(static_cast<unsigned char>(ch[0])))
                              : false;
    if (!sep && ch.size() > 1) sep = py_strip(ch, true, true).empty();
    if (sep) {
      out += ch;
      word_start = true;
    } else {
      out += word_start ? py_upper(ch) : py_lower(ch);
      word_start = false;
    }
  }
  return out;
}

std::vector<std::string> split_ws(std::string_view s, int64_t maxsplit) {
  std::vector<std::string> out;
  std::string cur;
  bool in_word = false;
  auto chars = utf8_chars(s);
  for (size_t k = 0; k < chars.size(); ++k) {
    bool space = py_strip(chars[k], true, true).empty();
    if (space) {
      if (in_word) {
        out.push_back(cur);
        cur.clear();
        in_word = false;
      }
    } else {
      if (!in_word && maxsplit >= 0 && static_cast<int64_t>(out.size()) == maxsplit) {
        std::string rest;
        for (size_t j = k; j < chars.size(); ++j)
          rest += chars[j];
        out.push_back(py_strip(rest, false, true));
        return out;
      }
      cur += chars[k];
      in_word = true;
    }
  }
  if (in_word) out.push_back(cur);
  return out;
}

std::vector<std::string> split_sep(const std::string& s, const std::string& sep, int64_t maxsplit) {
  if (sep.empty()) fail("empty separator");
  std::vector<std::string> out;
  size_t start = 0;
  while (maxsplit < 0 || static_cast<int64_t>(out.size()) < maxsplit) {
    size_t at = s.find(sep, start);
    if (at == std::string::npos) break;
    out.push_back(s.substr(start, at - start));
    start = at + sep.size();
  }
  out.push_back(s.substr(start));
  return out;
}

std::string replace_all(const std::string& s, const std::string& old, const std::string& repl,
                        int64_t count) {
  std::string out;
  if (old.empty()) {
    // Python inserts `repl` between every character (and at both ends).
    auto chars = utf8_chars(s);
    int64_t done = 0;
    for (auto ch : chars) {
      if (count < 0 || done < count) {
        out += repl;
        ++done;
      }
      out += ch;
    }
    if (count < 0 || done < count) out += repl;
    return out;
  }
  size_t start = 0;
  int64_t done = 0;
  while (count < 0 || done < count) {
    size_t at = s.find(old, start);
    if (at == std::string::npos) break;
    out += s.substr(start, at - start) + repl;
    start = at + old.size();
    ++done;
  }
  return out + s.substr(start);
}

Value string_list(const std::vector<std::string>& parts) {
  List items;
  for (const auto& p : parts)
    items.push_back(Value::string(p));
  return Value::make_list(std::move(items));
}

bool starts_or_ends(const std::string& s, const Value& what, bool start) {
  auto one = [&](const std::string& p) {
    if (p.size() > s.size()) return false;
    return start ? s.compare(0, p.size(), p) == 0
                 : s.compare(s.size() - p.size(), p.size(), p) == 0;
  };
  if (what.kind == K::List) {
    for (const auto& p : *what.list)
      if (one(need_str(p, start ? "startswith first arg" : "endswith first arg"))) return true;
    return false;
  }
  return one(need_str(what, start ? "startswith first arg" : "endswith first arg"));
}

Value string_method(const Value& self, const std::string& name) {
  static const std::set<std::string, std::less<>> names{
      "strip",   "lstrip",     "rstrip",  "startswith", "endswith",   "split",   "rsplit",
      "replace", "upper",      "lower",   "title",      "capitalize", "join",    "find",
      "count",   "splitlines", "isdigit", "isalpha",    "isspace",    "islower", "isupper"};
  if (!names.count(name)) return Value::undefined("'str object' has no attribute '" + name + "'");
  std::string s = self.s;
  return Value::callable([s, name](Args& args, Kwargs& kwargs) -> Value {
    if (name == "strip" || name == "lstrip" || name == "rstrip") {
      const Value* chars = arg(args, kwargs, 0, "chars");
      return Value::string(py_strip(s, name != "rstrip", name != "lstrip", chars));
    }
    if (name == "startswith" || name == "endswith") {
      const Value* p = arg(args, kwargs, 0, "prefix");
      if (!p) fail(name + "() takes at least 1 argument (0 given)");
      return Value::boolean(starts_or_ends(s, *p, name == "startswith"));
    }
    if (name == "split" || name == "rsplit") {
      Value sep = arg_or(args, kwargs, 0, "sep", Value::none());
      int64_t maxsplit = arg_or(args, kwargs, 1, "maxsplit", Value::integer(-1)).as_int();
      if (name == "rsplit" && maxsplit >= 0) {
        // Split from the right: reverse, split, reverse (separators are exact strings).
        if (sep.is_none()) fail("rsplit() with maxsplit and no separator is not supported");
        std::vector<std::string> parts;
        std::string rest = s;
        std::string sp = need_str(sep, "sep");
        while (static_cast<int64_t>(parts.size()) < maxsplit) {
          size_t at = rest.rfind(sp);
          if (at == std::string::npos) break;
          parts.insert(parts.begin(), rest.substr(at + sp.size()));
          rest = rest.substr(0, at);
        }
        parts.insert(parts.begin(), rest);
        return string_list(parts);
      }
      if (sep.is_none()) return string_list(split_ws(s, maxsplit));
      return string_list(split_sep(s, need_str(sep, "sep"), maxsplit));
    }
    if (name == "replace") {
      const Value* a = arg(args, kwargs, 0, "old");
      const Value* b = arg(args, kwargs, 1, "new");
      if (!a || !b) fail("replace() takes at least 2 arguments");
      int64_t count = arg_or(args, kwargs, 2, "count", Value::integer(-1)).as_int();
      return Value::string(replace_all(s, need_str(*a, "replace() argument 1"),
                                       need_str(*b, "replace() argument 2"), count));
    }
    if (name == "upper") return Value::string(py_upper(s));
    if (name == "lower") return Value::string(py_lower(s));
    if (name == "title") return Value::string(py_title(s));
    if (name == "capitalize") return Value::string(capitalize(s));
    if (name == "join") {
      if (args.empty()) fail("join() takes exactly one argument (0 given)");
      std::string out;
      bool first = true;
      for (const auto& v : iterate(args[0])) {
        if (!first) out += s;
        first = false;
        out += need_str(v, "sequence item");
      }
      return Value::string(out);
    }
    if (name == "find" || name == "count") {
      if (args.empty()) fail(name + "() takes at least 1 argument (0 given)");
      std::string sub = need_str(args[0], "argument");
      if (name == "find") {
        size_t at = s.find(sub);
        return Value::integer(at == std::string::npos ? -1
                                                      : static_cast<int64_t>(utf8_length(
                                                            std::string_view(s).substr(0, at))));
      }
      if (sub.empty()) return Value::integer(static_cast<int64_t>(utf8_length(s)) + 1);
      int64_t n = 0;
      for (size_t at = s.find(sub); at != std::string::npos; at = s.find(sub, at + sub.size()))
        ++n;
      return Value::integer(n);
    }
    if (name == "splitlines") {
      std::vector<std::string> lines;
      std::string cur;
      for (size_t k = 0; k < s.size(); ++k) {
        if (s[k] == '\n' || s[k] == '\r') {
          lines.push_back(cur);
          cur.clear();
          if (s[k] == '\r' && k + 1 < s.size() && s[k + 1] == '\n') ++k;
        } else {
          cur += s[k];
        }
      }
      if (!cur.empty()) lines.push_back(cur);
      return string_list(lines);
    }
    if (s.empty()) return Value::boolean(false);
    if (name == "isdigit")
      return Value::boolean(
          std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; }));
    if (name == "isalpha") {
      for (auto ch : utf8_chars(s))
        if (!is_cased(ch)) return Value::boolean(false);
      return Value::boolean(true);
    }
    if (name == "isspace") return Value::boolean(py_strip(s, true, true).empty());
    bool cased = false;
    for (auto ch : utf8_chars(s))
      cased = cased || is_cased(ch);
    if (name == "islower") return Value::boolean(cased && py_lower(s) == s);
    return Value::boolean(cased && py_upper(s) == s);  // isupper
  });
}

Value dict_method(const Value& self, const std::string& name) {
  if (name != "items" && name != "keys" && name != "values" && name != "get") return {};
  Value d = self;
  return Value::callable([d, name](Args& args, Kwargs& kwargs) -> Value {
    if (name == "get") {
      const Value* key = arg(args, kwargs, 0, "key");
      if (!key) fail("get expected at least 1 argument, got 0");
      const Value* v = d.dict->find(*key);
      return v ? *v : arg_or(args, kwargs, 1, "default", Value::none());
    }
    List items;
    for (const auto& [k, v] : d.dict->items) {
      if (name == "items") {
        items.push_back(Value::tuple({k, v}));
      } else {
        items.push_back(name == "keys" ? k : v);
      }
    }
    return Value::make_list(std::move(items));
  });
}

Value attribute_path(const Value& item, const Value& attribute) {
  if (attribute.kind != K::String) return get_item(item, attribute);
  Value cur = item;
  size_t start = 0;
  const std::string& path = attribute.s;
  while (true) {
    size_t dot = path.find('.', start);
    std::string part =
        path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    bool digits = !part.empty() && std::all_of(part.begin(), part.end(),
                                               [](char c) { return c >= '0' && c <= '9'; });
    if (cur.is_undefined()) fail(cur.s);
    cur = get_item(cur, digits ? Value::integer(std::stoll(part)) : Value::string(part));
    if (dot == std::string::npos) return cur;
    start = dot + 1;
  }
}

std::string json_string(const std::string& s, bool ensure_ascii) {
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

std::string json_float(double d) {
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

double round_half_even_digits(double x, int64_t digits) {
  if (digits == 0) return std::nearbyint(x);
  char buf[512];
  std::snprintf(buf, sizeof buf, "%.*f", static_cast<int>(std::clamp<int64_t>(digits, -300, 300)),
                x);
  return std::stod(buf);
}

List select_items(Interp& in, const Value& seq, Args& args, bool by_attr, bool keep_matches) {
  List out;
  size_t first_arg = 0;
  Value attribute;
  if (by_attr) {
    if (args.empty()) fail("Missing parameter for attribute name");
    attribute = args[0];
    first_arg = 1;
  }
  std::string test;
  Args test_args;
  if (args.size() > first_arg) {
    test = need_str(args[first_arg], "test name");
    test_args.assign(args.begin() + static_cast<std::ptrdiff_t>(first_arg) + 1, args.end());
    if (!is_test(test)) fail("No test named '" + test + "'.");
  }
  for (const auto& item : iterate(seq)) {
    Value probe = by_attr ? attribute_path(item, attribute) : item;
    bool ok = test.empty() ? probe.truthy() : apply_test(in, test, probe, test_args);
    if (ok == keep_matches) out.push_back(item);
  }
  return out;
}

Value sort_key(const Value& v, bool case_sensitive, const Value* attribute) {
  Value k = attribute && !attribute->is_none() ? attribute_path(v, *attribute) : v;
  if (!case_sensitive && k.kind == K::String) return Value::string(py_lower(k.s));
  return k;
}

}  // namespace

bool is_filter(std::string_view name) { return filter_names().count(name) > 0; }
bool is_test(std::string_view name) { return test_names().count(name) > 0; }

List iterate(const Value& v) {
  switch (v.kind) {
    case K::Undefined: return {};
    case K::List: return *v.list;
    case K::String: {
      List out;
      for (auto ch : utf8_chars(v.s))
        out.push_back(Value::string(std::string(ch)));
      return out;
    }
    case K::Dict: {
      List out;
      for (const auto& [k, x] : v.dict->items)
        out.push_back(k);
      return out;
    }
    default: fail("'" + std::string(v.type_name()) + "' object is not iterable");
  }
}

Value method(const Value& self, const std::string& name) {
  if (self.kind == K::String) return string_method(self, name);
  if (self.kind == K::Dict) return dict_method(self, name);
  return {};
}

Value get_attr(const Value& obj, const std::string& name) {
  switch (obj.kind) {
    case K::String: return string_method(obj, name);
    case K::Dict: {
      Value m = dict_method(obj, name);
      if (!m.is_undefined()) return m;
      if (const Value* v = obj.dict->find(name)) return *v;
      return Value::undefined("'dict object' has no attribute '" + name + "'");
    }
    case K::Namespace: {
      if (const Value* v = obj.dict->find(name)) return *v;
      return Value::undefined("'Namespace' object has no attribute '" + name + "'");
    }
    case K::None: return Value::undefined("'None' has no attribute '" + name + "'");
    default:
      return Value::undefined("'" + std::string(obj.type_name()) + " object' has no attribute '" +
                              name + "'");
  }
}

Value get_item(const Value& obj, const Value& key) {
  if ((obj.kind == K::List || obj.kind == K::String) && key.is_integral()) {
    int64_t idx = key.as_int();
    if (obj.kind == K::List) {
      auto n = static_cast<int64_t>(obj.list->size());
      if (idx < 0) idx += n;
      if (idx >= 0 && idx < n) return (*obj.list)[static_cast<size_t>(idx)];
    } else {
      auto chars = utf8_chars(obj.s);
      auto n = static_cast<int64_t>(chars.size());
      if (idx < 0) idx += n;
      if (idx >= 0 && idx < n) return Value::string(std::string(chars[static_cast<size_t>(idx)]));
    }
    return Value::undefined("'" + std::string(obj.type_name()) + " object' has no element " +
                            std::to_string(key.as_int()));
  }
  if (obj.kind == K::Dict || obj.kind == K::Namespace) {
    if (const Value* v = obj.dict->find(key)) return *v;
  }
  if (key.kind == K::String) return get_attr(obj, key.s);
  return Value::undefined("'" + std::string(obj.type_name()) + " object' has no element " +
                          repr(key));
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

bool apply_test(Interp& in, const std::string& name, const Value& v, Args& args) {
  (void)in;
  auto need = [&](size_t n) {
    if (args.size() < n) fail("test '" + name + "' needs " + std::to_string(n) + " argument(s)");
  };
  if (name == "defined") return !v.is_undefined();
  if (name == "undefined") return v.is_undefined();
  if (name == "none") return v.is_none();
  if (name == "boolean") return v.kind == K::Bool;
  if (name == "false") return v.kind == K::Bool && !v.b;
  if (name == "true") return v.kind == K::Bool && v.b;
  if (name == "integer") return v.kind == K::Int;
  if (name == "float") return v.kind == K::Float;
  if (name == "number") return v.is_number();
  if (name == "string") return v.kind == K::String;
  if (name == "mapping") return v.kind == K::Dict;
  if (name == "iterable")
    return v.kind == K::String || v.kind == K::List || v.kind == K::Dict || v.is_undefined();
  if (name == "sequence")
    return v.kind == K::String || v.kind == K::List || v.kind == K::Dict || v.is_undefined();
  if (name == "callable") return v.kind == K::Callable;
  if (name == "escaped") return false;
  if (name == "filter") return v.kind == K::String && is_filter(v.s);
  if (name == "test") return v.kind == K::String && is_test(v.s);
  if (name == "sameas") {
    need(1);
    const Value& o = args[0];
    if (v.kind != o.kind) return false;
    if (v.kind == K::List) return v.list == o.list;
    if (v.kind == K::Dict || v.kind == K::Namespace) return v.dict == o.dict;
    return equals(v, o);
  }
  if (name == "eq" || name == "equalto" || name == "==") return need(1), equals(v, args[0]);
  if (name == "ne" || name == "!=") return need(1), !equals(v, args[0]);
  if (name == "lt" || name == "lessthan" || name == "<") return need(1), less(v, args[0]);
  if (name == "le" || name == "<=") return need(1), less(v, args[0]) || equals(v, args[0]);
  if (name == "gt" || name == "greaterthan" || name == ">") return need(1), less(args[0], v);
  if (name == "ge" || name == ">=") return need(1), less(args[0], v) || equals(v, args[0]);
  if (name == "in") {
    need(1);
    const Value& c = args[0];
    if (c.kind == K::String) return v.kind == K::String && c.s.find(v.s) != std::string::npos;
    for (const auto& x : iterate(c))
      if (equals(x, v)) return true;
    return false;
  }
  if (name == "divisibleby") {
    need(1);
    int64_t d = args[0].as_int();
    if (d == 0) fail("integer division or modulo by zero");
    return v.as_int() % d == 0;
  }
  if (name == "even") return v.as_int() % 2 == 0;
  if (name == "odd") return v.as_int() % 2 != 0;
  if (name == "lower" || name == "upper") {
    std::string s = to_str(v);
    bool cased = false;
    for (auto ch : utf8_chars(s))
      cased = cased || is_cased(ch);
    return cased && (name == "lower" ? py_lower(s) == s : py_upper(s) == s);
  }
  fail("No test named '" + name + "'.");
}

Value apply_filter(Interp& in, const std::string& name, Value v, Args& args, Kwargs& kwargs) {
  if (name == "safe") return v;
  if (name == "string") return Value::string(to_str(v));
  if (name == "tojson") {
    bool ensure_ascii = arg_or(args, kwargs, 0, "ensure_ascii", Value::boolean(false)).truthy();
    Value indent = arg_or(args, kwargs, 1, "indent", Value::none());
    Value seps = arg_or(args, kwargs, 2, "separators", Value::none());
    bool sort_keys = arg_or(args, kwargs, 3, "sort_keys", Value::boolean(false)).truthy();
    std::string item_sep = indent.is_none() ? ", " : ",", key_sep = ": ";
    if (!seps.is_none()) {
      List parts = iterate(seps);
      if (parts.size() != 2) fail("separators must be a pair of strings");
      item_sep = need_str(parts[0], "separator");
      key_sep = need_str(parts[1], "separator");
    }
    if (v.is_undefined()) fail("Object of type Undefined is not JSON serializable");
    return Value::string(to_json(v, indent, item_sep, key_sep, sort_keys, ensure_ascii));
  }
  if (name == "default" || name == "d") {
    Value dflt = arg_or(args, kwargs, 0, "default_value", Value::string(""));
    bool boolean = arg_or(args, kwargs, 1, "boolean", Value::boolean(false)).truthy();
    if (v.is_undefined() || (boolean && !v.truthy())) return dflt;
    return v;
  }
  if (name == "length" || name == "count") {
    switch (v.kind) {
      case K::Undefined: return Value::integer(0);
      case K::String: return Value::integer(static_cast<int64_t>(utf8_length(v.s)));
      case K::List: return Value::integer(static_cast<int64_t>(v.list->size()));
      case K::Dict:
      case K::Namespace: return Value::integer(static_cast<int64_t>(v.dict->items.size()));
      default: fail("object of type '" + std::string(v.type_name()) + "' has no len()");
    }
  }
  if (name == "trim") {
    return Value::string(py_strip(to_str(v), true, true, arg(args, kwargs, 0, "chars")));
  }
  if (name == "upper") return Value::string(py_upper(to_str(v)));
  if (name == "lower") return Value::string(py_lower(to_str(v)));
  if (name == "capitalize") return Value::string(capitalize(to_str(v)));
  if (name == "title") return Value::string(jinja_title(to_str(v)));
  if (name == "replace") {
    const Value* a = arg(args, kwargs, 0, "old");
    const Value* b = arg(args, kwargs, 1, "new");
    if (!a || !b) fail("replace filter needs old and new");
    Value count = arg_or(args, kwargs, 2, "count", Value::none());
    return Value::string(
        replace_all(to_str(v), to_str(*a), to_str(*b), count.is_none() ? -1 : count.as_int()));
  }
  if (name == "escape" || name == "e") {
    std::string out;
    for (char c : to_str(v)) {
      switch (c) {
        case '&': out += "&amp;"; break;
        case '<': out += "&lt;"; break;
        case '>': out += "&gt;"; break;
        case '"': out += "&#34;"; break;
        case '\'': out += "&#39;"; break;
        default: out += c;
      }
    }
    return Value::string(out);
  }
  if (name == "first" || name == "last") {
    List items = iterate(v);
    if (items.empty())
      return Value::undefined(std::string("No ") + name + " item, sequence was empty.");
    return name == "first" ? items.front() : items.back();
  }
  if (name == "list") return Value::make_list(iterate(v));
  if (name == "items") {
    if (v.is_undefined()) return Value::make_list();
    if (v.kind != K::Dict) fail("Can only get item pairs from a mapping.");
    List items;
    for (const auto& [k, x] : v.dict->items)
      items.push_back(Value::tuple({k, x}));
    return Value::make_list(std::move(items));
  }
  if (name == "join") {
    std::string sep = to_str(arg_or(args, kwargs, 0, "d", Value::string("")));
    const Value* attribute = arg(args, kwargs, 1, "attribute");
    std::string out;
    bool first = true;
    for (const auto& item : iterate(v)) {
      if (!first) out += sep;
      first = false;
      out += to_str(attribute && !attribute->is_none() ? attribute_path(item, *attribute) : item);
    }
    return Value::string(out);
  }
  if (name == "reverse") {
    if (v.kind == K::String) {
      auto chars = utf8_chars(v.s);
      std::string out;
      for (auto it = chars.rbegin(); it != chars.rend(); ++it)
        out += *it;
      return Value::string(out);
    }
    List items = iterate(v);
    std::reverse(items.begin(), items.end());
    return Value::make_list(std::move(items));
  }
  if (name == "abs") {
    if (v.kind == K::Float) return Value::floating(std::fabs(v.f));
    int64_t x = v.as_int();
    return Value::integer(x < 0 ? -x : x);
  }
  if (name == "int") {
    Value dflt = arg_or(args, kwargs, 0, "default", Value::integer(0));
    if (v.is_integral()) return Value::integer(v.as_int());
    if (v.kind == K::Float) {
      if (!std::isfinite(v.f)) return dflt;
      return Value::integer(static_cast<int64_t>(std::trunc(v.f)));
    }
    if (v.kind == K::String) {
      std::string s = py_strip(v.s, true, true);
      std::string digits = s;
      std::erase(digits, '_');
      try {
        size_t used = 0;
        int64_t x = std::stoll(digits, &used, 10);
        if (used == digits.size() && !s.empty() && s.front() != '_' && s.back() != '_')
          return Value::integer(x);
      } catch (...) {
      }
      try {
        size_t used = 0;
        double d = std::stod(s, &used);
        if (used == s.size() && std::isfinite(d))
          return Value::integer(static_cast<int64_t>(std::trunc(d)));
      } catch (...) {
      }
    }
    return dflt;
  }
  if (name == "float") {
    Value dflt = arg_or(args, kwargs, 0, "default", Value::floating(0.0));
    if (v.is_number()) return Value::floating(v.as_double());
    if (v.kind == K::String) {
      std::string s = py_strip(v.s, true, true);
      try {
        size_t used = 0;
        double d = std::stod(s, &used);
        if (used == s.size()) return Value::floating(d);
      } catch (...) {
      }
    }
    return dflt;
  }
  if (name == "round") {
    int64_t precision = arg_or(args, kwargs, 0, "precision", Value::integer(0)).as_int();
    std::string method = to_str(arg_or(args, kwargs, 1, "method", Value::string("common")));
    if (method != "common" && method != "ceil" && method != "floor")
      fail("method must be common, ceil or floor");
    if (method == "common") {
      if (v.is_integral()) return Value::integer(v.as_int());
      return Value::floating(round_half_even_digits(v.as_double(), precision));
    }
    double scale = std::pow(10.0, static_cast<double>(precision));
    double x = v.as_double() * scale;
    return Value::floating((method == "ceil" ? std::ceil(x) : std::floor(x)) / scale);
  }
  if (name == "attr") {
    if (args.empty()) fail("attr filter needs a name");
    // Python getattr only: a dict's keys are not attributes.
    std::string attr = to_str(args[0]);
    if (v.kind == K::Dict) {
      Value m = method(v, attr);
      return m.is_undefined() ? Value::undefined("'dict object' has no attribute '" + attr + "'")
                              : m;
    }
    if (v.is_undefined()) fail(v.s);
    return get_attr(v, attr);
  }
  if (name == "map") {
    List out;
    const Value* attribute = arg(args, kwargs, 99, "attribute");
    if (attribute) {
      const Value* dflt = arg(args, kwargs, 99, "default");
      for (const auto& item : iterate(v)) {
        Value x = attribute_path(item, *attribute);
        out.push_back(x.is_undefined() && dflt ? *dflt : x);
      }
      return Value::make_list(std::move(out));
    }
    if (args.empty()) return Value::make_list(iterate(v));
    std::string f = need_str(args[0], "filter name");
    if (!is_filter(f)) fail("No filter named '" + f + "'.");
    Args rest(args.begin() + 1, args.end());
    for (const auto& item : iterate(v)) {
      Args a = rest;
      Kwargs k = kwargs;
      out.push_back(apply_filter(in, f, item, a, k));
    }
    return Value::make_list(std::move(out));
  }
  if (name == "select" || name == "reject")
    return Value::make_list(select_items(in, v, args, false, name == "select"));
  if (name == "selectattr" || name == "rejectattr")
    return Value::make_list(select_items(in, v, args, true, name == "selectattr"));
  if (name == "sort" || name == "unique" || name == "min" || name == "max") {
    size_t base = name == "sort" ? 1 : 0;  // sort(reverse, case_sensitive, attribute)
    bool reverse =
        name == "sort" && arg_or(args, kwargs, 0, "reverse", Value::boolean(false)).truthy();
    bool cs = arg_or(args, kwargs, base, "case_sensitive", Value::boolean(false)).truthy();
    const Value* attribute = arg(args, kwargs, base + 1, "attribute");
    List items = iterate(v);
    if (name == "unique") {
      List out, seen;
      for (const auto& x : items) {
        Value k = sort_key(x, cs, attribute);
        bool dup = false;
        for (const auto& s : seen)
          dup = dup || equals(s, k);
        if (!dup) {
          seen.push_back(k);
          out.push_back(x);
        }
      }
      return Value::make_list(std::move(out));
    }
    auto cmp = [&](const Value& a, const Value& b) {
      return less(sort_key(a, cs, attribute), sort_key(b, cs, attribute));
    };
    if (name == "sort") {
      if (reverse) {
        std::stable_sort(items.begin(), items.end(),
                         [&](const Value& a, const Value& b) { return cmp(b, a); });
      } else {
        std::stable_sort(items.begin(), items.end(), cmp);
      }
      return Value::make_list(std::move(items));
    }
    if (items.empty()) return Value::undefined("No aggregated item, sequence was empty.");
    auto it = name == "min" ? std::min_element(items.begin(), items.end(), cmp)
                            : std::max_element(items.begin(), items.end(), cmp);
    if (name == "max") {
      // Python's max keeps the first of equal maxima.
      for (auto j = items.begin(); j != items.end(); ++j)
        if (!cmp(*j, *it) && !cmp(*it, *j)) {
          it = j;
          break;
        }
    }
    return *it;
  }
  if (name == "sum") {
    const Value* attribute = arg(args, kwargs, 0, "attribute");
    Value total = arg_or(args, kwargs, 1, "start", Value::integer(0));
    for (const auto& item : iterate(v)) {
      Value x = attribute && !attribute->is_none() ? attribute_path(item, *attribute) : item;
      if (!total.is_number() || !x.is_number())
        fail("unsupported operand type(s) for +: '" + std::string(total.type_name()) + "' and '" +
             std::string(x.type_name()) + "'");
      total = total.kind == K::Float || x.kind == K::Float
                  ? Value::floating(total.as_double() + x.as_double())
                  : Value::integer(total.as_int() + x.as_int());
    }
    return total;
  }
  if (name == "wordcount") {
    // jinja2 counts re.findall(r"\w+"); non-ASCII characters count as word characters
    // unless they are whitespace.
    int64_t words = 0;
    bool in_word = false;
    std::string text = to_str(v);
    for (auto ch : utf8_chars(text)) {
      auto c = static_cast<unsigned char>(ch[0]);
      bool w = c >= 0x80 ? is_word_char(ch) : (std::isalnum(c) || c == '_');
      if (w && !in_word) ++words;
      in_word = w;
    }
    return Value::integer(words);
  }
  if (name == "indent") {
    Value width = arg_or(args, kwargs, 0, "width", Value::integer(4));
    bool first = arg_or(args, kwargs, 1, "first", Value::boolean(false)).truthy();
    bool blank = arg_or(args, kwargs, 2, "blank", Value::boolean(false)).truthy();
    std::string ind =
        width.kind == K::String
            ? width.s
            : std::string(static_cast<size_t>(std::max<int64_t>(0, width.as_int())), ' ');
    std::string s = to_str(v) + "\n";
    std::vector<std::string> lines;
    {
      std::string cur;
      for (size_t k = 0; k < s.size(); ++k) {
        if (s[k] == '\n' || s[k] == '\r') {
          lines.push_back(cur);
          cur.clear();
          if (s[k] == '\r' && k + 1 < s.size() && s[k + 1] == '\n') ++k;
        } else {
          cur += s[k];
        }
      }
      if (!cur.empty()) lines.push_back(cur);
    }
    std::string rv;
    if (blank) {
      for (size_t k = 0; k < lines.size(); ++k)
        rv += (k ? "\n" + ind : "") + lines[k];
    } else {
      rv = lines.empty() ? "" : lines[0];
      for (size_t k = 1; k < lines.size(); ++k)
        rv += "\n" + (lines[k].empty() ? "" : ind + lines[k]);
    }
    return Value::string(first ? ind + rv : rv);
  }
  fail("No filter named '" + name + "'.");
}

}  // namespace luminal::io::chat
