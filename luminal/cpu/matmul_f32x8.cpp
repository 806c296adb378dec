// cpu.Matmul's f32 groups of 8 outputs on AVX2 (see matmul_f32x8.hpp). Each function is compiled
// for AVX2 by its target attribute and calls only intrinsics, so no inline function compiled for
// AVX2 can end up in code that runs without it; the caller checks the ISA first.
//
// Every output is the generic kernel's: each product rounded to f32 (vmulps), widened exactly
// (vcvtps2pd) and added in double in k order in its own lane, rounded once (vcvtpd2ps).
#include "luminal/cpu/matmul_f32x8.hpp"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace luminal::cpu::f32x8 {

#if defined(__x86_64__)

namespace {

#define LUMINAL_AVX2 __attribute__((target("avx2")))

LUMINAL_AVX2 inline void add_products(__m256 p, __m256d& lo, __m256d& hi) {
  lo = _mm256_add_pd(lo, _mm256_cvtps_pd(_mm256_castps256_ps128(p)));
  hi = _mm256_add_pd(hi, _mm256_cvtps_pd(_mm256_extractf128_ps(p, 1)));
}

LUMINAL_AVX2 inline void store8(float* out, __m256d lo, __m256d hi) {
  _mm_storeu_ps(out, _mm256_cvtpd_ps(lo));
  _mm_storeu_ps(out + 4, _mm256_cvtpd_ps(hi));
}

// G groups of 8 consecutive outputs: 2G independent sums per k, each operand line read once.
template <bool BcastA, bool BcastB, int G>
LUMINAL_AVX2 void outer_t(const float* a, const float* b, const int64_t* ka, const int64_t* kb,
                          int64_t k, float* out) {
  __m256d lo[G], hi[G];
  for (int g = 0; g < G; ++g)
    lo[g] = hi[g] = _mm256_setzero_pd();
  for (int64_t i = 0; i < k; ++i) {
    const float* pa = a + ka[i];
    const float* pb = b + kb[i];
    for (int g = 0; g < G; ++g) {
      const __m256 va = BcastA ? _mm256_broadcast_ss(pa) : _mm256_loadu_ps(pa + 8 * g);
      const __m256 vb = BcastB ? _mm256_broadcast_ss(pb) : _mm256_loadu_ps(pb + 8 * g);
      add_products(_mm256_mul_ps(va, vb), lo[g], hi[g]);
    }
  }
  for (int g = 0; g < G; ++g)
    store8(out + 8 * g, lo[g], hi[g]);
}

template <int G>
void outer_g(const float* a, bool bcast_a, const float* b, bool bcast_b, const int64_t* ka,
             const int64_t* kb, int64_t k, float* out) {
  if (bcast_a)
    outer_t<true, false, G>(a, b, ka, kb, k, out);
  else if (bcast_b)
    outer_t<false, true, G>(a, b, ka, kb, k, out);
  else
    outer_t<false, false, G>(a, b, ka, kb, k, out);
}

}  // namespace

void outer(int groups, const float* a, bool bcast_a, const float* b, bool bcast_b,
           const int64_t* ka, const int64_t* kb, int64_t k, float* out) {
  if (groups == 4)
    outer_g<4>(a, bcast_a, b, bcast_b, ka, kb, k, out);
  else if (groups == 2)
    outer_g<2>(a, bcast_a, b, bcast_b, ka, kb, k, out);
  else
    outer_g<1>(a, bcast_a, b, bcast_b, ka, kb, k, out);
}

LUMINAL_AVX2 void dot(const float* const* a, const float* const* b, int64_t k, float* out,
                      const float* const* next_a, const float* const* next_b) {
  if (next_a)
    for (int j = 0; j < 8; ++j)
      for (int64_t i = 0; i < k; i += 16) {
        _mm_prefetch(reinterpret_cast<const char*>(next_a[j] + i), _MM_HINT_T0);
        _mm_prefetch(reinterpret_cast<const char*>(next_b[j] + i), _MM_HINT_T0);
      }
  __m256d lo = _mm256_setzero_pd(), hi = _mm256_setzero_pd();
  int64_t i = 0;
  for (; i + 8 <= k; i += 8) {
    __m256 r[8];
    for (int j = 0; j < 8; ++j)
      r[j] = _mm256_mul_ps(_mm256_loadu_ps(a[j] + i), _mm256_loadu_ps(b[j] + i));
    // Transpose: c[t] holds product t of each of the 8 outputs.
    const __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
    const __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
    const __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
    const __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
    const __m256 s0 = _mm256_shuffle_ps(t0, t2, 0x44), s1 = _mm256_shuffle_ps(t0, t2, 0xEE);
    const __m256 s2 = _mm256_shuffle_ps(t1, t3, 0x44), s3 = _mm256_shuffle_ps(t1, t3, 0xEE);
    const __m256 s4 = _mm256_shuffle_ps(t4, t6, 0x44), s5 = _mm256_shuffle_ps(t4, t6, 0xEE);
    const __m256 s6 = _mm256_shuffle_ps(t5, t7, 0x44), s7 = _mm256_shuffle_ps(t5, t7, 0xEE);
    add_products(_mm256_permute2f128_ps(s0, s4, 0x20), lo, hi);
    add_products(_mm256_permute2f128_ps(s1, s5, 0x20), lo, hi);
    add_products(_mm256_permute2f128_ps(s2, s6, 0x20), lo, hi);
    add_products(_mm256_permute2f128_ps(s3, s7, 0x20), lo, hi);
    add_products(_mm256_permute2f128_ps(s0, s4, 0x31), lo, hi);
    add_products(_mm256_permute2f128_ps(s1, s5, 0x31), lo, hi);
    add_products(_mm256_permute2f128_ps(s2, s6, 0x31), lo, hi);
    add_products(_mm256_permute2f128_ps(s3, s7, 0x31), lo, hi);
  }
  for (; i < k; ++i) {
    alignas(32) float p[8];
    for (int j = 0; j < 8; ++j)
      p[j] = a[j][i] * b[j][i];
    add_products(_mm256_load_ps(p), lo, hi);
  }
  store8(out, lo, hi);
}

#else

void outer(int, const float*, bool, const float*, bool, const int64_t*, const int64_t*, int64_t,
           float*) {}
void dot(const float* const*, const float* const*, int64_t, float*, const float* const*,
         const float* const*) {}

#endif

}  // namespace luminal::cpu::f32x8
