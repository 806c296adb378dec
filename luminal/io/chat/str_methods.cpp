// The Python str and dict methods chat templates call (strip, startswith, split, items, get, ...),
// with CPython's semantics.
#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <set>

#include "luminal/io/chat/builtin_util.hpp"
#include "luminal/io/chat/interp.hpp"

namespace luminal::io::chat {

using K = Value::Kind;

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

static std::string py_title(std::string_view s) {
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

static std::vector<std::string> split_ws(std::string_view s, int64_t maxsplit) {
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

static std::vector<std::string> split_sep(const std::string& s, const std::string& sep,
                                          int64_t maxsplit) {
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

std::vector<std::string> split_lines(const std::string& s) {
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
  return lines;
}

static Value string_list(const std::vector<std::string>& parts) {
  List items;
  for (const auto& p : parts)
    items.push_back(Value::string(p));
  return Value::make_list(std::move(items));
}

static bool starts_or_ends(const std::string& s, const Value& what, bool start) {
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
    if (name == "splitlines") return string_list(split_lines(s));
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

}  // namespace luminal::io::chat
