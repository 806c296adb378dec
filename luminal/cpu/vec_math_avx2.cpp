// The AVX2 exp2 of vec_math.hpp: core/exp2_formula.inc over 8 lanes, the tail through masked
// loads and stores. luminal/CMakeLists.txt gives this unit -mavx2 -mfma, -ffp-contract=off (so
// the formula's multiplies and adds stay separate, as in core/exp2.cpp) and LUMINAL_VEC_AVX2;
// without them (not x86-64) the getter returns null.
#include "luminal/cpu/vec_math.hpp"

#if defined(LUMINAL_VEC_AVX2)
#include <immintrin.h>

#include <limits>

namespace luminal::cpu::vec::detail {

namespace {

using V = __m256;
inline V splat(float v) { return _mm256_set1_ps(v); }
inline V add(V a, V b) { return _mm256_add_ps(a, b); }
inline V sub(V a, V b) { return _mm256_sub_ps(a, b); }
inline V mul(V a, V b) { return _mm256_mul_ps(a, b); }
inline V clamp_range(V x) {
  return _mm256_and_ps(_mm256_min_ps(x, splat(128.0f)),
                       _mm256_cmp_ps(x, splat(-150.0f), _CMP_GE_OQ));
}
inline V round_even(V x) { return _mm256_round_ps(x, _MM_FROUND_CUR_DIRECTION); }
inline V pow2(__m256i e) {
  return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_add_epi32(e, _mm256_set1_epi32(127)), 23));
}
inline V pow2_half(V n) { return pow2(_mm256_srai_epi32(_mm256_cvtps_epi32(n), 1)); }
inline V pow2_rest(V n) {
  const __m256i ni = _mm256_cvtps_epi32(n);
  return pow2(_mm256_sub_epi32(ni, _mm256_srai_epi32(ni, 1)));
}
inline V select_special(V x, V r) {
  r = _mm256_blendv_ps(r, splat(std::numeric_limits<float>::infinity()),
                       _mm256_cmp_ps(x, splat(128.0f), _CMP_GE_OQ));
  r = _mm256_blendv_ps(r, _mm256_setzero_ps(), _mm256_cmp_ps(x, splat(-150.0f), _CMP_LT_OQ));
  return _mm256_blendv_ps(r, x, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
}

#include "luminal/core/exp2_formula.inc"

void exp2_array(const float* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(y + i, exp2_formula(_mm256_loadu_ps(x + i)));
  if (i < n) {
    const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n - i)), lanes);
    _mm256_maskstore_ps(y + i, mask, exp2_formula(_mm256_maskload_ps(x + i, mask)));
  }
}

}  // namespace

Exp2Array exp2_avx2() { return exp2_array; }

}  // namespace luminal::cpu::vec::detail
#else
namespace luminal::cpu::vec::detail {
Exp2Array exp2_avx2() { return nullptr; }
}  // namespace luminal::cpu::vec::detail
#endif
