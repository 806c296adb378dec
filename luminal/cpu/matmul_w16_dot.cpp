// The dot products of cpu.MatmulW16 (see matmul_w16_dot.hpp). The AVX2 functions are compiled
// for AVX2 + FMA + F16C by their target attribute and call only intrinsics, so nothing compiled
// for AVX2 can run on a CPU without it; the caller checks the ISA first.
#include "luminal/cpu/matmul_w16_dot.hpp"

#include <cmath>
#include <cstring>

#include "luminal/core/blocks.hpp"
#include "luminal/core/error.hpp"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace luminal::cpu::w16 {

namespace {

inline float widen(uint16_t h, bool bf16) {
  const uint32_t bits = bf16 ? static_cast<uint32_t>(h) << 16 : blocks::f16_to_f32_bits(h);
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

// The lanes' sum in the order the header gives.
inline float lane_sum(const float l[8]) {
  const float s0 = l[0] + l[4], s1 = l[1] + l[5], s2 = l[2] + l[6], s3 = l[3] + l[7];
  return (s0 + s2) + (s1 + s3);
}

template <bool BF16>
void dot_portable(int64_t K, const uint16_t* const* w, int R, const float* const* x, int M,
                  float* out, int64_t n_step, int64_t m_step) {
  const int64_t k8 = K / 8 * 8;
  for (int r = 0; r < R; ++r)
    for (int m = 0; m < M; ++m) {
      float lane[8] = {0, 0, 0, 0, 0, 0, 0, 0};
      for (int64_t k = 0; k < k8; k += 8)
        for (int l = 0; l < 8; ++l)
          lane[l] = std::fma(x[m][k + l], widen(w[r][k + l], BF16), lane[l]);
      float s = lane_sum(lane);
      for (int64_t k = k8; k < K; ++k)
        s = std::fma(x[m][k], widen(w[r][k], BF16), s);
      out[m * m_step + r * n_step] = s;
    }
}

template <bool BF16>
void widen_portable(int64_t K, const uint16_t* const* w, int R, float* dst) {
  for (int r = 0; r < R; ++r)
    for (int64_t k = 0; k < K; ++k)
      dst[r * K + k] = widen(w[r][k], BF16);
}

#if defined(__x86_64__)

#define LUMINAL_W16_AVX2 __attribute__((target("avx2,fma,f16c")))

constexpr int kPrefetch = 4096;

LUMINAL_W16_AVX2 inline float hsum(__m256 v) {
  // (0+4, 1+5, 2+6, 3+7), then (0+2, 1+3), then the two: lane_sum's order.
  const __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 t = _mm_add_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_add_ss(t, _mm_movehdup_ps(t)));
}

template <bool BF16>
LUMINAL_W16_AVX2 inline __m256 load8(const uint16_t* p) {
  const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  if constexpr (BF16)
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  else
    return _mm256_cvtph_ps(h);
}

template <bool BF16>
LUMINAL_W16_AVX2 inline float widen1(uint16_t h) {
  if constexpr (BF16) {
    return _mm_cvtss_f32(_mm_castsi128_ps(_mm_cvtsi32_si128(static_cast<int>(h) << 16)));
  } else {
    return _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(h)));
  }
}

// R weight rows against M activation rows: R * M accumulators of 8 lanes.
template <bool BF16, int R, int M>
LUMINAL_W16_AVX2 void block(int64_t K, const uint16_t* const* w, const float* const* x, float* out,
                            int64_t n_step, int64_t m_step) {
  const int64_t k8 = K / 8 * 8;
  __m256 acc[R][M];
  for (int r = 0; r < R; ++r)
    for (int m = 0; m < M; ++m)
      acc[r][m] = _mm256_setzero_ps();
  for (int64_t k = 0; k < k8; k += 8) {
    // R short rows read side by side defeat the hardware prefetcher (7.5 GB/s from DRAM on one
    // core of the AMD EPYC dev box, against 17 for one sequential stream; 10-11 with this): each
    // row's line kPrefetch bytes ahead is requested once per 64 bytes (past a row's end: the
    // rows after it, usually the next ones).
    if (k % 32 == 0)
      for (int r = 0; r < R; ++r)
        _mm_prefetch(reinterpret_cast<const char*>(w[r] + k) + kPrefetch, _MM_HINT_T0);
    __m256 xv[M];
    for (int m = 0; m < M; ++m)
      xv[m] = _mm256_loadu_ps(x[m] + k);
    for (int r = 0; r < R; ++r) {
      const __m256 wv = load8<BF16>(w[r] + k);
      for (int m = 0; m < M; ++m)
        acc[r][m] = _mm256_fmadd_ps(xv[m], wv, acc[r][m]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int m = 0; m < M; ++m) {
      float s = hsum(acc[r][m]);
      for (int64_t k = k8; k < K; ++k) {
        const __m128 p =
            _mm_fmadd_ss(_mm_set_ss(x[m][k]), _mm_set_ss(widen1<BF16>(w[r][k])), _mm_set_ss(s));
        s = _mm_cvtss_f32(p);
      }
      out[m * m_step + r * n_step] = s;
    }
}

template <bool BF16, int M>
LUMINAL_W16_AVX2 void rows(int64_t K, const uint16_t* const* w, int R, const float* const* x,
                           float* out, int64_t n_step, int64_t m_step) {
  // Up to 8 accumulators: 4 rows for one or two activation rows, 2 for three or four.
  constexpr int kR = M <= 2 ? 4 : 2;
  int r = 0;
  for (; r + kR <= R; r += kR)
    block<BF16, kR, M>(K, w + r, x, out + r * n_step, n_step, m_step);
  for (; r < R; ++r)
    block<BF16, 1, M>(K, w + r, x, out + r * n_step, n_step, m_step);
}

template <bool BF16>
LUMINAL_W16_AVX2 void widen_avx2(int64_t K, const uint16_t* const* w, int R, float* dst) {
  const int64_t k8 = K / 8 * 8;
  for (int r = 0; r < R; ++r) {
    for (int64_t k = 0; k < k8; k += 8)
      _mm256_storeu_ps(dst + r * K + k, load8<BF16>(w[r] + k));
    for (int64_t k = k8; k < K; ++k)
      dst[r * K + k] = widen1<BF16>(w[r][k]);
  }
}

template <bool BF16>
LUMINAL_W16_AVX2 void dot_avx2(int64_t K, const uint16_t* const* w, int R, const float* const* x,
                               int M, float* out, int64_t n_step, int64_t m_step) {
  switch (M) {
    case 1: rows<BF16, 1>(K, w, R, x, out, n_step, m_step); break;
    case 2: rows<BF16, 2>(K, w, R, x, out, n_step, m_step); break;
    case 3: rows<BF16, 3>(K, w, R, x, out, n_step, m_step); break;
    default: rows<BF16, 4>(K, w, R, x, out, n_step, m_step); break;
  }
}

#endif

}  // namespace

WidenFn widen_fn(DType t, bool avx2) {
  if (t != DType::BF16 && t != DType::F16)
    throw Error("cpu.MatmulW16: weights of " + std::string(name(t)) + " are not bf16 or f16");
  const bool bf16 = t == DType::BF16;
#if defined(__x86_64__)
  if (avx2) return bf16 ? &widen_avx2<true> : &widen_avx2<false>;
#else
  (void)avx2;
#endif
  return bf16 ? &widen_portable<true> : &widen_portable<false>;
}

DotFn dot_fn(DType t, bool avx2) {
  if (t != DType::BF16 && t != DType::F16)
    throw Error("cpu.MatmulW16: weights of " + std::string(name(t)) + " are not bf16 or f16");
  const bool bf16 = t == DType::BF16;
#if defined(__x86_64__)
  if (avx2) return bf16 ? &dot_avx2<true> : &dot_avx2<false>;
#else
  (void)avx2;
#endif
  return bf16 ? &dot_portable<true> : &dot_portable<false>;
}

}  // namespace luminal::cpu::w16
