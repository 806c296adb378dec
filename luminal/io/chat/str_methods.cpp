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

std::string format_field(const Value& v, const std::string& spec) {
  if (spec.empty()) return to_str(v);
  size_t k = 0;
  auto is_align = [](char c) { return c == '<' || c == '>' || c == '^' || c == '='; };
  std::string fill = " ";
  char align = 0;
  {
    auto chars = utf8_chars(spec);
    if (chars.size() >= 2 && chars[1].size() == 1 && is_align(chars[1][0])) {
      fill = std::string(chars[0]);
      align = chars[1][0];
      k = chars[0].size() + 1;
    } else if (is_align(spec[0])) {
      align = spec[0];
      k = 1;
    }
  }
  char sign = 0;
  if (k < spec.size() && (spec[k] == '+' || spec[k] == '-' || spec[k] == ' ')) sign = spec[k++];
  bool alt = false;
  if (k < spec.size() && spec[k] == '#') alt = true, ++k;
  if (k < spec.size() && spec[k] == '0') {
    if (!align) fill = "0", align = '=';
    ++k;
  }
  size_t width = 0;
  while (k < spec.size() && std::isdigit(static_cast<unsigned char>(spec[k])))
    width = width * 10 + static_cast<size_t>(spec[k++] - '0');
  char grouping = 0;
  if (k < spec.size() && (spec[k] == ',' || spec[k] == '_')) grouping = spec[k++];
  int precision = -1;
  if (k < spec.size() && spec[k] == '.') {
    ++k;
    if (k >= spec.size() || !std::isdigit(static_cast<unsigned char>(spec[k])))
      fail("Format specifier missing precision");
    precision = 0;
    while (k < spec.size() && std::isdigit(static_cast<unsigned char>(spec[k])))
      precision = precision * 10 + (spec[k++] - '0');
  }
  char type = 0;
  if (k < spec.size()) type = spec[k++];
  if (k != spec.size())
    fail("Invalid format specifier '" + spec + "' for object of type '" +
         std::string(v.type_name()) + "'");
  auto unknown = [&]() {
    fail(std::string("Unknown format code '") + type + "' for object of type '" +
         std::string(v.is_markup ? "str" : v.type_name()) + "'");
  };
  std::string prefix, body;  // sign/base prefix, then the digits or text
  auto group = [&](std::string digits) {
    if (!grouping) return digits;
    size_t end = digits.find_first_not_of("0123456789");
    if (end == std::string::npos) end = digits.size();
    std::string out;
    for (size_t j = 0; j < end; ++j) {
      if (j && (end - j) % 3 == 0) out += grouping;
      out += digits[j];
    }
    return out + digits.substr(end);
  };
  if (v.kind == K::String) {
    if (type && type != 's') unknown();
    if (sign || alt || grouping || align == '=')
      fail("unsupported format spec '" + spec + "' for a string");
    auto chars = utf8_chars(v.s);
    if (precision >= 0 && chars.size() > static_cast<size_t>(precision))
      chars.resize(static_cast<size_t>(precision));
    for (auto ch : chars)
      body += ch;
    if (!align) align = '<';
  } else if (v.is_integral() &&
             (!type || std::string_view("dxXobn").find(type) != std::string_view::npos)) {
    if (precision >= 0) fail("Precision not allowed in integer format specifier");
    int64_t x = v.as_int();
    uint64_t mag = x < 0 ? 0 - static_cast<uint64_t>(x) : static_cast<uint64_t>(x);
    if (x < 0) {
      prefix = "-";
    } else if (sign == '+' || sign == ' ') {
      prefix = std::string(1, sign);
    }
    if (type == 'x' || type == 'X' || type == 'o' || type == 'b') {
      unsigned base = type == 'o' ? 8 : type == 'b' ? 2 : 16;
      const char* digs = type == 'X' ? "0123456789ABCDEF" : "0123456789abcdef";
      do {
        body.insert(body.begin(), digs[mag % base]);
        mag /= base;
      } while (mag);
      if (alt) prefix += std::string("0") + type;
      if (grouping) fail("grouping is not supported with base " + std::to_string(base));
    } else {
      body = group(std::to_string(mag));
    }
    if (!align) align = '>';
  } else if (v.is_number()) {
    if (type && std::string_view("eEfFgG%").find(type) == std::string_view::npos) unknown();
    double x = v.as_double();
    std::string fmt = "%";
    if (sign == '+' || sign == ' ') fmt += sign;
    if (alt) fmt += '#';
    char t = type == '%' ? 'f' : type ? type : 'g';
    if (type == '%') x *= 100;
    int prec = precision >= 0 ? precision : 6;
    char buf[512];
    if (!type && precision < 0) {
      body = to_str(v.kind == K::Float ? v : Value::floating(x));
      if (x >= 0 && (sign == '+' || sign == ' ')) body.insert(body.begin(), sign);
    } else {
      if (!type && prec == 0) prec = 1;
      std::snprintf(buf, sizeof buf, (fmt + ".*" + t).c_str(), prec, x);
      body = buf;
      if (!type && body.find_first_of(".en") == std::string::npos) body += ".0";
    }
    if (type == '%') body += '%';
    if (!body.empty() && (body[0] == '-' || body[0] == '+' || body[0] == ' ')) {
      prefix = body.substr(0, 1);
      body = body.substr(1);
    }
    body = group(body);
    if (!align) align = '>';
  } else if (v.is_integral()) {
    unknown();
  } else {
    fail("unsupported format string passed to " + std::string(v.type_name()) + ".__format__");
  }
  size_t len = utf8_length(prefix) + utf8_length(body);
  if (len >= width) return prefix + body;
  size_t pad = width - len;
  auto fills = [&](size_t n) {
    std::string out;
    for (size_t j = 0; j < n; ++j)
      out += fill;
    return out;
  };
  switch (align) {
    case '<': return prefix + body + fills(pad);
    case '^': return fills(pad / 2) + prefix + body + fills(pad - pad / 2);
    case '=': return prefix + fills(pad) + body;
    default: return fills(pad) + prefix + body;
  }
}

namespace {

// str.format(*args, **kwargs) as Python's string.Formatter (the sandbox's) does it; a Markup
// format string escapes the fields (markupsafe's EscapeFormatter).
Value py_format(const std::string& fmt, bool markup, const Args& args, const Kwargs& kwargs) {
  std::string out;
  int auto_index = 0;  // >= 0: automatic numbering allowed; -1: manual numbering seen
  bool used_auto = false;
  for (size_t k = 0; k < fmt.size(); ++k) {
    char c = fmt[k];
    if (c == '}') {
      if (k + 1 < fmt.size() && fmt[k + 1] == '}') {
        out += '}';
        ++k;
        continue;
      }
      fail("Single '}' encountered in format string");
    }
    if (c != '{') {
      out += c;
      continue;
    }
    if (k + 1 < fmt.size() && fmt[k + 1] == '{') {
      out += '{';
      ++k;
      continue;
    }
    size_t close = fmt.find('}', k + 1);
    if (close == std::string::npos) fail("Single '{' encountered in format string");
    std::string field = fmt.substr(k + 1, close - k - 1);
    if (field.find('{') != std::string::npos)
      fail("str.format: nested replacement fields are not supported");
    k = close;
    std::string spec, conv;
    size_t colon = field.find(':');
    if (colon != std::string::npos) spec = field.substr(colon + 1), field.resize(colon);
    size_t bang = field.find('!');
    if (bang != std::string::npos) {
      conv = field.substr(bang + 1);
      field.resize(bang);
      if (conv != "r" && conv != "s" && conv != "a") fail("Unknown conversion specifier " + conv);
    }
    size_t head_end = field.find_first_of(".[");
    std::string head = field.substr(0, head_end);
    Value v;
    if (head.empty() ||
        std::all_of(head.begin(), head.end(), [](char ch) { return ch >= '0' && ch <= '9'; })) {
      size_t index = 0;
      if (head.empty()) {
        if (auto_index < 0)
          fail("cannot switch from manual field specification to automatic field numbering");
        used_auto = true;
        index = static_cast<size_t>(auto_index++);
      } else {
        if (used_auto)
          fail("cannot switch from manual field specification to automatic field numbering");
        auto_index = -1;
        index = std::stoul(head);
      }
      if (index >= args.size())
        fail("Replacement index " + std::to_string(index) +
             " out of range for positional args tuple");
      v = args[index];
    } else {
      const Value* found = nullptr;
      for (const auto& kw : kwargs)
        if (kw.name == head) found = &kw.value;
      if (!found) fail("'" + head + "'");
      v = *found;
    }
    for (size_t j = head_end; j != std::string::npos && j < field.size();) {
      if (field[j] == '.') {
        size_t e = field.find_first_of(".[", j + 1);
        std::string a = field.substr(j + 1, e == std::string::npos ? e : e - j - 1);
        v = get_attr(v, a);
        j = e;
      } else {
        size_t e = field.find(']', j);
        if (e == std::string::npos) fail("Missing ']' in format string");
        std::string key = field.substr(j + 1, e - j - 1);
        bool digits = !key.empty() && std::all_of(key.begin(), key.end(),
                                                  [](char ch) { return ch >= '0' && ch <= '9'; });
        v = get_item(v, digits ? Value::integer(std::stoll(key)) : Value::string(key));
        j = e + 1;
        if (j < field.size() && field[j] != '.' && field[j] != '[')
          fail("Only '.' or '[' may follow ']' in format field specifier");
      }
      if (v.is_undefined()) fail(v.s);
    }
    if (conv == "r" || conv == "a") v = Value::string(repr(v));
    if (conv == "s") v = Value::string(to_str(v));
    std::string text = format_field(v, spec);
    out += markup && !v.is_markup ? html_escape(text) : text;
  }
  return markup ? Value::markup(out) : Value::string(out);
}

}  // namespace

Value string_method(const Value& self, const std::string& name) {
  static const std::set<std::string, std::less<>> names{
      "strip",   "lstrip",  "rstrip",  "startswith", "endswith", "split", "rsplit", "replace",
      "upper",   "lower",   "title",   "capitalize", "join",     "find",  "count",  "splitlines",
      "isdigit", "isalpha", "isspace", "islower",    "isupper",  "format"};
  if (!names.count(name)) return Value::undefined("'str object' has no attribute '" + name + "'");
  std::string s = self.s;
  if (name == "format") {
    bool markup = self.is_markup;
    return Value::callable([s, markup](Args& args, Kwargs& kwargs) -> Value {
      return py_format(s, markup, args, kwargs);
    });
  }
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
