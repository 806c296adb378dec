#include "luminal/io/chat/value.hpp"
#include "luminal/io/unicode.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>

namespace luminal::io::chat {

void fail(std::string message) { throw RenderError{std::move(message), 0}; }

Value Value::undefined(std::string message) {
  Value v;
  v.s = std::move(message);
  return v;
}
namespace {

// A Value of kind `k` whose payload `fill` sets.
template <class Fill>
Value of_kind(Value::Kind k, Fill&& fill) {
  Value v;
  v.kind = k;
  fill(v);
  return v;
}

}  // namespace

Value Value::none() {
  return of_kind(Kind::None, [](Value&) {});
}
Value Value::boolean(bool x) {
  return of_kind(Kind::Bool, [&](Value& v) { v.b = x; });
}
Value Value::integer(int64_t x) {
  return of_kind(Kind::Int, [&](Value& v) { v.i = x; });
}
Value Value::floating(double x) {
  return of_kind(Kind::Float, [&](Value& v) { v.f = x; });
}
Value Value::string(std::string x) {
  return of_kind(Kind::String, [&](Value& v) { v.s = std::move(x); });
}
Value Value::make_list(List items) {
  return of_kind(Kind::List, [&](Value& v) { v.list = std::make_shared<List>(std::move(items)); });
}
Value Value::tuple(List items) {
  Value v = make_list(std::move(items));
  v.is_tuple = true;
  return v;
}
Value Value::make_dict() {
  return of_kind(Kind::Dict, [](Value& v) { v.dict = std::make_shared<Dict>(); });
}
Value Value::make_namespace() {
  Value v = make_dict();
  v.kind = Kind::Namespace;
  return v;
}
Value Value::callable(Function f) {
  return of_kind(Kind::Callable,
                 [&](Value& v) { v.fn = std::make_shared<Function>(std::move(f)); });
}
Value Value::generator(List items) {
  Value v = make_list(std::move(items));
  v.is_generator = true;
  return v;
}
Value Value::markup(std::string v) {
  Value r = string(std::move(v));
  r.is_markup = true;
  return r;
}

bool Value::truthy() const {
  switch (kind) {
    case Kind::Undefined:
    case Kind::None: return false;
    case Kind::Bool: return b;
    case Kind::Int: return i != 0;
    case Kind::Float: return f != 0;
    case Kind::String: return !s.empty();
    case Kind::List: return is_generator || !list->empty();
    case Kind::Dict: return !dict->items.empty();
    case Kind::Namespace:
    case Kind::Callable: return true;
  }
  return false;
}

double Value::as_double() const {
  if (kind == Kind::Float) return f;
  if (kind == Kind::Int) return static_cast<double>(i);
  if (kind == Kind::Bool) return b ? 1 : 0;
  fail("expected a number, got " + std::string(type_name()));
}
int64_t Value::as_int() const {
  if (kind == Kind::Int) return i;
  if (kind == Kind::Bool) return b ? 1 : 0;
  fail("'" + std::string(type_name()) + "' object cannot be interpreted as an integer");
}

std::string_view Value::type_name() const {
  switch (kind) {
    case Kind::Undefined: return "Undefined";
    case Kind::None: return "NoneType";
    case Kind::Bool: return "bool";
    case Kind::Int: return "int";
    case Kind::Float: return "float";
    case Kind::String: return is_markup ? "Markup" : "str";
    case Kind::List: return is_generator ? "generator" : is_tuple ? "tuple" : "list";
    case Kind::Dict: return "dict";
    case Kind::Namespace: return "Namespace";
    case Kind::Callable: return "function";
  }
  return "?";
}

const Value* Dict::find(const Value& key) const {
  for (const auto& [k, v] : items)
    if (equals(k, key)) return &v;
  return nullptr;
}
const Value* Dict::find(std::string_view key) const {
  for (const auto& [k, v] : items)
    if (k.kind == Value::Kind::String && k.s == key) return &v;
  return nullptr;
}
void Dict::set(Value key, Value value) {
  for (auto& [k, v] : items)
    if (equals(k, key)) {
      v = std::move(value);
      return;
    }
  items.emplace_back(std::move(key), std::move(value));
}

bool equals(const Value& a, const Value& b) {
  using K = Value::Kind;
  if (a.is_number() && b.is_number()) {
    if (a.kind == K::Float || b.kind == K::Float) return a.as_double() == b.as_double();
    return a.as_int() == b.as_int();
  }
  if (a.kind != b.kind) return false;
  switch (a.kind) {
    case K::Undefined:
    case K::None: return true;
    case K::String: return a.s == b.s;
    case K::List:
      if (a.list->size() != b.list->size()) return false;
      for (size_t i = 0; i < a.list->size(); ++i)
        if (!equals((*a.list)[i], (*b.list)[i])) return false;
      return true;
    case K::Dict:
      if (a.dict->items.size() != b.dict->items.size()) return false;
      for (const auto& [k, v] : a.dict->items) {
        const Value* o = b.dict->find(k);
        if (!o || !equals(v, *o)) return false;
      }
      return true;
    case K::Namespace:
    case K::Callable: return a.dict == b.dict && a.fn == b.fn;
    default: return false;
  }
}

bool less(const Value& a, const Value& b) {
  using K = Value::Kind;
  if (a.is_number() && b.is_number()) {
    if (a.kind == K::Float || b.kind == K::Float) return a.as_double() < b.as_double();
    return a.as_int() < b.as_int();
  }
  if (a.kind == K::String && b.kind == K::String) return a.s < b.s;  // UTF-8 order = code points
  if (a.kind == K::List && b.kind == K::List) {
    size_t n = std::min(a.list->size(), b.list->size());
    for (size_t i = 0; i < n; ++i) {
      if (!equals((*a.list)[i], (*b.list)[i])) return less((*a.list)[i], (*b.list)[i]);
    }
    return a.list->size() < b.list->size();
  }
  fail("'<' not supported between instances of '" + std::string(a.type_name()) + "' and '" +
       std::string(b.type_name()) + "'");
}

std::string py_float_repr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d < 0 ? "-inf" : "inf";
  if (d == 0) return std::signbit(d) ? "-0.0" : "0.0";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
  std::string sci(buf, res.ptr);  // [-]d[.ddd]e[+-]XX
  bool neg = sci[0] == '-';
  if (neg) sci.erase(0, 1);
  size_t e = sci.find('e');
  int exp = std::stoi(sci.substr(e + 1));
  std::string digits;
  for (size_t k = 0; k < e; ++k)
    if (sci[k] != '.') digits += sci[k];
  std::string out;
  if (exp < -4 || exp >= 16) {
    out = digits.substr(0, 1);
    if (digits.size() > 1) out += "." + digits.substr(1);
    char eb[16];
    std::snprintf(eb, sizeof eb, "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
    out += eb;
  } else if (exp < 0) {
    out = "0." + std::string(static_cast<size_t>(-exp - 1), '0') + digits;
  } else {
    size_t point = static_cast<size_t>(exp) + 1;
    if (digits.size() <= point) {
      out = digits + std::string(point - digits.size(), '0') + ".0";
    } else {
      out = digits.substr(0, point) + "." + digits.substr(point);
    }
  }
  return neg ? "-" + out : out;
}

namespace {
uint32_t decode(std::string_view s, size_t& i) {
  auto c = static_cast<unsigned char>(s[i]);
  int n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 1;
  if (i + static_cast<size_t>(n) > s.size()) n = 1;
  uint32_t cp = n == 1 ? c : n == 2 ? (c & 0x1F) : n == 3 ? (c & 0x0F) : (c & 0x07);
  for (int k = 1; k < n; ++k)
    cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
  i += static_cast<size_t>(n);
  return cp;
}
void encode(uint32_t cp, std::string& out) { tok::append_utf8(out, static_cast<char32_t>(cp)); }

std::string repr_string(const std::string& s) {
  bool has_single = s.find('\'') != std::string::npos;
  bool has_double = s.find('"') != std::string::npos;
  char q = has_single && !has_double ? '"' : '\'';
  std::string out(1, q);
  for (char c : s) {
    auto u = static_cast<unsigned char>(c);
    if (c == q || c == '\\') {
      out += '\\';
      out += c;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (u < 0x20 || u == 0x7F) {
      char b[8];
      std::snprintf(b, sizeof b, "\\x%02x", u);
      out += b;
    } else {
      out += c;
    }
  }
  return out + q;
}

// Simple case mappings: ASCII, Latin-1, Greek and Cyrillic basic ranges.
uint32_t upper_cp(uint32_t c) {
  if (c >= 'a' && c <= 'z') return c - 32;
  if (c < 0x80) return c;
  if (c >= 0xE0 && c <= 0xFE && c != 0xF7) return c - 32;
  if (c == 0xFF) return 0x178;
  if (c == 0xB5) return 0x39C;
  if (c >= 0x3B1 && c <= 0x3CB && c != 0x3C2) return c - 32;
  if (c == 0x3C2) return 0x3A3;
  if (c == 0x3AC) return 0x386;
  if (c >= 0x3AD && c <= 0x3AF) return c - 37;
  if (c == 0x3CC) return 0x38C;
  if (c == 0x3CD || c == 0x3CE) return c - 63;
  if (c >= 0x100 && c <= 0x17F && c != 0x130 && c != 0x131 && c != 0x138 && c != 0x149 &&
      c != 0x17F) {
    bool odd_upper = (c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E);
    bool is_lower = (c % 2 == 1) != odd_upper;
    return is_lower ? c - 1 : c;
  }
  if (c >= 0x430 && c <= 0x44F) return c - 32;
  if (c >= 0x450 && c <= 0x45F) return c - 80;
  return c;
}
uint32_t lower_cp(uint32_t c) {
  if (c >= 'A' && c <= 'Z') return c + 32;
  if (c < 0x80) return c;
  if (c >= 0xC0 && c <= 0xDE && c != 0xD7) return c + 32;
  if (c == 0x178) return 0xFF;
  if (c >= 0x391 && c <= 0x3AB && c != 0x3A2) return c + 32;
  if (c == 0x386) return 0x3AC;
  if (c >= 0x388 && c <= 0x38A) return c + 37;
  if (c == 0x38C) return 0x3CC;
  if (c == 0x38E || c == 0x38F) return c + 63;
  if (c >= 0x100 && c <= 0x17F && c != 0x130 && c != 0x131 && c != 0x138 && c != 0x149 &&
      c != 0x17F) {
    bool odd_upper = (c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E);
    bool is_lower = (c % 2 == 1) != odd_upper;
    return is_lower ? c : c + 1;
  }
  if (c >= 0x410 && c <= 0x42F) return c + 32;
  if (c >= 0x400 && c <= 0x40F) return c + 80;
  return c;
}
}  // namespace

std::string py_upper(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size();) {
    uint32_t c = decode(s, i);
    if (c == 0xDF) {
      out += "SS";  // Python's full mapping of sharp s
    } else {
      encode(upper_cp(c), out);
    }
  }
  return out;
}
std::string py_lower(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size();)
    encode(lower_cp(decode(s, i)), out);
  return out;
}

std::vector<std::string_view> utf8_chars(std::string_view s) {
  std::vector<std::string_view> out;
  for (size_t i = 0; i < s.size();) {
    size_t start = i;
    decode(s, i);
    out.push_back(s.substr(start, i - start));
  }
  return out;
}
size_t utf8_length(std::string_view s) {
  size_t n = 0;
  for (char c : s)
    n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

bool is_py_space(uint32_t c) {
  return (c >= 9 && c <= 13) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F ||
         c == 0x3000;
}

std::string py_strip(std::string_view s, bool left, bool right, const Value* chars) {
  auto chs = utf8_chars(s);
  std::vector<std::string_view> set;
  bool custom = chars && chars->kind == Value::Kind::String;
  if (custom) set = utf8_chars(chars->s);
  auto strip_it = [&](std::string_view ch) {
    if (custom) {
      for (auto c : set)
        if (c == ch) return true;
      return false;
    }
    size_t k = 0;
    return is_py_space(decode(ch, k));
  };
  size_t a = 0, b = chs.size();
  if (left)
    while (a < b && strip_it(chs[a]))
      ++a;
  if (right)
    while (b > a && strip_it(chs[b - 1]))
      --b;
  std::string out;
  for (size_t k = a; k < b; ++k)
    out += chs[k];
  return out;
}

std::string to_str(const Value& v) {
  using K = Value::Kind;
  switch (v.kind) {
    case K::Undefined: return "";
    case K::String: return v.s;
    default: return repr(v);
  }
}

std::string repr(const Value& v) {
  using K = Value::Kind;
  switch (v.kind) {
    case K::Undefined: return "Undefined";
    case K::None: return "None";
    case K::Bool: return v.b ? "True" : "False";
    case K::Int: return std::to_string(v.i);
    case K::Float: return py_float_repr(v.f);
    case K::String: return repr_string(v.s);
    case K::List: {
      std::string out = v.is_tuple ? "(" : "[";
      for (size_t k = 0; k < v.list->size(); ++k) {
        if (k) out += ", ";
        out += repr((*v.list)[k]);
      }
      if (v.is_tuple && v.list->size() == 1) out += ",";
      return out + (v.is_tuple ? ")" : "]");
    }
    case K::Dict:
    case K::Namespace: {
      std::string out = v.kind == K::Namespace ? "<Namespace {" : "{";
      bool first = true;
      for (const auto& [k, x] : v.dict->items) {
        if (!first) out += ", ";
        first = false;
        out += repr(k) + ": " + repr(x);
      }
      return out + (v.kind == K::Namespace ? "}>" : "}");
    }
    case K::Callable: return "<function>";
  }
  return "";
}

}  // namespace luminal::io::chat
