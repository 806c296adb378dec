#include "luminal/io/unicode.hpp"

namespace luminal::io::tok {

char32_t next_code_point(std::string_view s, size_t& i) {
  auto b = [&](size_t k) { return static_cast<unsigned char>(s[i + k]); };
  unsigned char c = b(0);
  char32_t cp;
  size_t n = utf8_len(c);
  if (n == 1) {
    cp = c;
  } else if (n == 2) {
    cp = (char32_t(c & 0x1F) << 6) | (b(1) & 0x3F);
  } else if (n == 3) {
    cp = (char32_t(c & 0x0F) << 12) | (char32_t(b(1) & 0x3F) << 6) | (b(2) & 0x3F);
  } else {
    cp = (char32_t(c & 0x07) << 18) | (char32_t(b(1) & 0x3F) << 12) | (char32_t(b(2) & 0x3F) << 6) |
         (b(3) & 0x3F);
  }
  i += n;
  return cp;
}

void append_utf8(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

namespace {

// How many bytes of s[i..] form a valid prefix of a UTF-8 sequence, and the full length that
// sequence needs (Unicode's "maximal subpart" rules, as Rust's Utf8Chunks applies them).
struct Prefix {
  size_t valid;
  size_t need;
};

Prefix sequence_prefix(std::string_view s, size_t i) {
  auto at = [&](size_t k) -> int {
    return i + k < s.size() ? static_cast<unsigned char>(s[i + k]) : -1;
  };
  int c = at(0);
  if (c < 0x80) return {1, 1};
  int lo = 0x80, hi = 0xBF;
  size_t need;
  if (c >= 0xC2 && c <= 0xDF) {
    need = 2;
  } else if (c >= 0xE0 && c <= 0xEF) {
    need = 3;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    need = 4;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  } else {
    return {0, 1};
  }
  size_t k = 1;
  int d = at(1);
  if (d < lo || d > hi) return {1, need};
  for (k = 2; k < need; ++k) {
    d = at(k);
    if (d < 0x80 || d > 0xBF) return {k, need};
  }
  return {need, need};
}

}  // namespace

size_t valid_sequence_length(std::string_view s, size_t i) {
  Prefix p = sequence_prefix(s, i);
  return p.valid == p.need ? p.need : 0;
}

bool is_valid_utf8(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    if (static_cast<unsigned char>(s[i]) < 0x80) {
      ++i;
      continue;
    }
    size_t n = valid_sequence_length(s, i);
    if (n == 0) return false;
    i += n;
  }
  return true;
}

std::string utf8_lossy(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    size_t start = i;
    while (i < s.size() && static_cast<unsigned char>(s[i]) < 0x80)
      ++i;
    out.append(s.substr(start, i - start));
    if (i == s.size()) break;
    Prefix p = sequence_prefix(s, i);
    if (p.valid == p.need) {
      out.append(s.substr(i, p.need));
      i += p.need;
    } else {
      out.append("\xEF\xBF\xBD");
      i += p.valid == 0 ? 1 : p.valid;
    }
  }
  return out;
}

bool is_whitespace(char32_t c) {
  if (c <= 0x20) return c == 0x20 || (c >= 0x09 && c <= 0x0D);
  if (c < 0x85) return false;
  return c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 ||
         c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

}  // namespace luminal::io::tok
