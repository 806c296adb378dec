// Python's printf-style `fmt % values` (jinja2's format filter: soft_str(value) % (kwargs or
// args)): %[(name)][flags][width][.precision][length]type with types s r a d i u o x X e E f F g
// G c %. Numbers are rendered through format_field (str.format's mini-language), which agrees
// with %-formatting for these types once the flags are translated.
#include <cmath>
#include <cstdint>
#include <string>

#include "luminal/io/chat/builtin_util.hpp"
#include "luminal/io/unicode.hpp"

namespace luminal::io::chat {

namespace {

using K = Value::Kind;

struct Spec {
  std::string key;  // %(key)s
  bool left = false, zero = false, alt = false;
  char sign = 0;  // '+' or ' '
  int64_t width = -1, precision = -1;
  char type = 0;
};

// Python's ascii() of a repr: every non-ASCII code point escaped as \xhh, \uhhhh or \Uhhhhhhhh.
std::string ascii_repr(const std::string& r) {
  std::string out;
  for (size_t i = 0; i < r.size();) {
    const size_t start = i;
    const char32_t cp = tok::next_code_point(r, i);
    if (cp < 0x80) {
      out += r[start];
      continue;
    }
    char buf[16];
    const auto c = static_cast<unsigned>(cp);
    if (cp <= 0xff)
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
    else if (cp <= 0xffff)
      std::snprintf(buf, sizeof buf, "\\u%04x", c);
    else
      std::snprintf(buf, sizeof buf, "\\U%08x", c);
    out += buf;
  }
  return out;
}

// The format_field spec of a numeric conversion.
std::string number_spec(const Spec& s, char type) {
  std::string spec;
  if (s.left) spec += '<';
  if (s.sign) spec += s.sign;
  if (s.alt) spec += '#';
  if (s.zero && !s.left) spec += '0';
  if (s.width >= 0) spec += std::to_string(s.width);
  if (s.precision >= 0 && type != 'd') spec += "." + std::to_string(s.precision);
  if (type) spec += type;
  return spec;
}

// A text conversion (%s %r %a %c): precision truncates, width pads (right-aligned unless '-'),
// as str.format's field does with the same spec.
std::string pad_text(const Spec& s, const std::string& text) {
  std::string spec = s.left ? "<" : ">";
  if (s.width >= 0) spec += std::to_string(s.width);
  if (s.precision >= 0) spec += "." + std::to_string(s.precision);
  return format_field(Value::string(text), spec);
}

std::string convert(const Spec& s, const Value& v, bool markup) {
  const char t = s.type;
  if (t == 's' || t == 'r' || t == 'a') {
    std::string text = t == 's' ? to_str(v) : t == 'r' ? repr(v) : ascii_repr(repr(v));
    if (markup && !(v.kind == K::String && v.is_markup)) text = html_escape(text);
    return pad_text(s, text);
  }
  if (t == 'c') {
    std::string ch;
    if (v.kind == K::String) {
      if (utf8_length(v.s) != 1)
        fail("%c requires an int or a unicode character, not a string of length " +
             std::to_string(utf8_length(v.s)));
      ch = v.s;
    } else if (v.is_integral()) {
      const int64_t cp = v.as_int();
      if (cp < 0 || cp > 0x10ffff) fail("%c arg not in range(0x110000)");
      tok::append_utf8(ch, static_cast<char32_t>(cp));
    } else {
      fail("%c requires an int or a unicode character, not " + std::string(v.type_name()));
    }
    Spec plain = s;
    plain.precision = -1;
    return pad_text(plain, ch);
  }
  if (t == 'd' || t == 'i' || t == 'u') {
    if (!v.is_number())
      fail(std::string("%") + t + " format: a real number is required, not " +
           std::string(v.type_name()));
    Value i = v;
    if (v.kind == K::Float) {
      if (!std::isfinite(v.f)) fail("cannot convert float " + to_str(v) + " to integer");
      i = Value::integer(static_cast<int64_t>(std::trunc(v.f)));
    } else if (v.kind == K::Bool) {
      i = Value::integer(v.as_int());
    }
    Spec n = s;
    if (n.precision >= 0) {  // %.3d pads the digits with zeros
      const int64_t x = i.as_int();
      std::string digits = std::to_string(x < 0 ? -x : x);
      if (static_cast<int64_t>(digits.size()) < n.precision)
        digits.insert(0, static_cast<size_t>(n.precision) - digits.size(), '0');
      std::string sign = x < 0 ? "-" : n.sign ? std::string(1, n.sign) : "";
      n.precision = -1;
      return pad_text(n, sign + digits);
    }
    return format_field(i, number_spec(n, 'd'));
  }
  if (t == 'o' || t == 'x' || t == 'X') {
    if (!v.is_integral())
      fail(std::string("%") + t + " format: an integer is required, not " +
           std::string(v.type_name()));
    return format_field(Value::integer(v.as_int()), number_spec(s, t));
  }
  // e E f F g G
  if (!v.is_number()) fail("must be real number, not " + std::string(v.type_name()));
  Spec f = s;
  if (f.precision < 0) f.precision = 6;
  return format_field(Value::floating(v.as_double()), number_spec(f, t));
}

}  // namespace

Value percent_format(const Value& fmt, const Args& args, const Kwargs& kwargs) {
  if (!args.empty() && !kwargs.empty())
    fail("can't handle positional and keyword arguments at the same time");
  const std::string text = to_str(fmt);
  const bool markup = fmt.kind == K::String && fmt.is_markup;
  const bool mapping = !kwargs.empty();
  size_t next = 0;  // next positional argument
  auto next_arg = [&]() -> const Value& {
    if (mapping) fail("format requires a mapping");  // an unnamed field with keyword values
    if (next >= args.size()) fail("not enough arguments for format string");
    return args[next++];
  };
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out += text[i];
      continue;
    }
    if (++i >= text.size()) fail("incomplete format");
    Spec s;
    if (text[i] == '(') {
      int depth = 1;
      size_t start = ++i;
      while (i < text.size() && depth > 0) {
        depth += text[i] == '(' ? 1 : text[i] == ')' ? -1 : 0;
        if (depth > 0) ++i;
      }
      if (i >= text.size()) fail("incomplete format key");
      s.key = text.substr(start, i - start);
      ++i;
      if (!mapping) fail("format requires a mapping");
    }
    for (; i < text.size(); ++i) {
      const char c = text[i];
      if (c == '-')
        s.left = true;
      else if (c == '0')
        s.zero = true;
      else if (c == '#')
        s.alt = true;
      else if (c == '+')
        s.sign = '+';
      else if (c == ' ') {
        if (s.sign != '+') s.sign = ' ';
      } else
        break;
    }
    auto number = [&](int64_t& field) {
      if (i < text.size() && text[i] == '*') {
        const Value& w = next_arg();
        if (!w.is_integral()) fail("* wants int");
        field = w.as_int();
        if (&field == &s.width && field < 0) {
          s.left = true;
          field = -field;
        }
        ++i;
        return;
      }
      if (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
        field = 0;
        while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])))
          field = field * 10 + (text[i++] - '0');
      }
    };
    number(s.width);
    if (i < text.size() && text[i] == '.') {
      ++i;
      s.precision = 0;
      number(s.precision);
    }
    while (i < text.size() && (text[i] == 'h' || text[i] == 'l' || text[i] == 'L'))
      ++i;
    if (i >= text.size()) fail("incomplete format");
    s.type = text[i];
    if (s.type == '%') {
      out += '%';
      continue;
    }
    if (std::string_view("sradiuoxXeEfFgGc").find(s.type) == std::string_view::npos) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "%x",
                    static_cast<unsigned>(static_cast<unsigned char>(s.type)));
      fail("unsupported format character '" + std::string(1, s.type) + "' (0x" + hex +
           ") at index " + std::to_string(i));
    }
    if (!s.key.empty()) {
      const Value* v = nullptr;
      for (const auto& kw : kwargs)
        if (kw.name == s.key) v = &kw.value;
      if (!v) fail("'" + s.key + "'");  // Python's KeyError message
      out += convert(s, *v, markup);
    } else {
      out += convert(s, next_arg(), markup);
    }
  }
  if (!mapping && next < args.size()) fail("not all arguments converted during string formatting");
  return markup ? Value::markup(out) : Value::string(out);
}

}  // namespace luminal::io::chat
