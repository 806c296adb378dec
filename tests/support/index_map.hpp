#pragma once
// Test helpers for byte-exact references of ops that move data: row-major index arithmetic on
// static shapes, and a reference that names, for every output element, the input element it copies.
#include <gtest/gtest.h>

#include <cstring>
#include <sstream>
#include <string>
#include <vector>

#include "luminal/luminal.hpp"

namespace luminal::testing {

using Ints = std::vector<int64_t>;

/// Number of elements of a static shape.
inline int64_t prod(const Ints& s) {
  int64_t n = 1;
  for (int64_t d : s)
    n *= d;
  return n;
}

/// Row-major flat index -> multi-index (all zeros for an empty shape).
inline Ints unravel(int64_t f, const Ints& s) {
  Ints i(s.size(), 0);
  for (size_t k = s.size(); k-- > 0;) {
    if (s[k] == 0) return i;
    i[k] = f % s[k];
    f /= s[k];
  }
  return i;
}

/// Multi-index -> row-major flat index.
inline int64_t ravel(const Ints& i, const Ints& s) {
  int64_t f = 0;
  for (size_t k = 0; k < s.size(); ++k)
    f = f * s[k] + i[k];
  return f;
}

inline std::string str(const Ints& v) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < v.size(); ++i)
    os << (i ? ", " : "") << v[i];
  os << "]";
  return os.str();
}

inline std::vector<Dim> dims(const Ints& s) { return std::vector<Dim>(s.begin(), s.end()); }

struct Ref {
  Ints shape;
  Ints src;  // per output element: flat index into the concatenated inputs, or -1 (fill)
};

/// The reference of an input of `shape` whose elements start at flat index `offset`.
inline Ref input(const Ints& shape, int64_t offset = 0) {
  Ref r{shape, {}};
  for (int64_t i = 0; i < prod(shape); ++i)
    r.src.push_back(offset + i);
  return r;
}

/// The n bytes at p as one little-endian hex number.
inline std::string hex(const uint8_t* p, int n) {
  std::ostringstream os;
  os << "0x";
  for (int i = n; i-- > 0;)
    os << "0123456789abcdef"[p[i] >> 4] << "0123456789abcdef"[p[i] & 15];
  return os.str();
}

/// `what`, the dtype and the dynamic dimensions of a run, for failure messages.
inline std::string run_context(const std::string& what, DType t, const DynMap& dyn) {
  std::string ctx = what + " " + std::string(name(t));
  for (const auto& [k, v] : dyn)
    ctx += " " + k + "=" + std::to_string(v);
  return ctx;
}

/// Compares `got` (elements of sz bytes) byte for byte with the elements `want` names in `inputs`
/// (the inputs' bytes one after another), or with `fill` where want names -1; reports the first
/// few mismatches. `source` names the inputs in the messages ("input", "data").
inline void expect_bytes(const std::vector<uint8_t>& got, const std::vector<uint8_t>& inputs,
                         const Ref& want, int sz, const uint8_t* fill, const std::string& source,
                         const std::string& ctx) {
  int bad = 0;
  for (size_t i = 0; i < want.src.size(); ++i) {
    const int64_t s = want.src[i];
    const uint8_t* w = s < 0 && fill ? fill : inputs.data() + s * sz;
    if (std::memcmp(got.data() + i * sz, w, sz) != 0 && bad++ < 4) {
      ADD_FAILURE() << ctx << ": element " << str(unravel(static_cast<int64_t>(i), want.shape))
                    << " got " << hex(got.data() + i * sz, sz) << ", want " << hex(w, sz) << " ("
                    << source << " element " << s << ")";
    }
  }
  EXPECT_EQ(bad, 0) << ctx;
}

}  // namespace luminal::testing
