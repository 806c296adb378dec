#pragma once
// How io's file readers write names and shapes into errors (internal to luminal/io; header-only,
// so the fuzz targets that compile a parser on its own need nothing more).
// printable() quotes a name from a file, its control bytes escaped, cut after 200 characters;
// shape_str() writes a shape as "[2, 3]".
// Example: examples/snippets/io/error_text.cpp (each on a name and a shape).
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace luminal::io {

/// A name from an untrusted file, quoted, kept printable and short.
inline std::string printable(std::string_view s) {
  std::string out = "'";
  size_t n = 0;
  for (char c : s) {
    if (++n > 200) {
      out += "...";
      break;
    }
    const auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) {
      static constexpr char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[u >> 4];
      out += kHex[u & 15];
    } else {
      out += c;
    }
  }
  return out + "'";
}

inline std::string shape_str(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i)
    out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

}  // namespace luminal::io
