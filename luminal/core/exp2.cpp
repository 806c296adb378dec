// exp2_f32 (core/exp2.hpp): the formula of exp2_formula.inc over one float. Compiled with
// -ffp-contract=off (luminal/CMakeLists.txt), as cpu/vec_math_avx2.cpp.
#include "luminal/core/exp2.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

namespace luminal {

namespace {

using V = float;
inline V splat(float v) { return v; }
inline V add(V a, V b) { return a + b; }
inline V sub(V a, V b) { return a - b; }
inline V mul(V a, V b) { return a * b; }
// As vec_math_avx2.cpp's: x >= -150 clamped to 128 above, anything else (x < -150, NaN) 0.
inline V clamp_range(V x) { return x >= -150.0f ? (x < 128.0f ? x : 128.0f) : 0.0f; }
inline V round_even(V x) { return std::nearbyint(x); }  // the current rounding mode, as AVX2's
inline V pow2(int e) {
  const uint32_t bits = static_cast<uint32_t>(e + 127) << 23;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}
inline V pow2_half(V n) { return pow2(static_cast<int>(n) >> 1); }
inline V pow2_rest(V n) {
  const int ni = static_cast<int>(n);
  return pow2(ni - (ni >> 1));
}
inline V select_special(V x, V r) {
  if (x != x) return x;
  if (x >= 128.0f) return std::numeric_limits<float>::infinity();
  if (x < -150.0f) return 0.0f;
  return r;
}

#include "luminal/core/exp2_formula.inc"

}  // namespace

float exp2_f32(float x) { return exp2_formula(x); }

}  // namespace luminal
