// cpu.BlasMatmul's products of 2 to 4 rows in AVX2 + FMA (see matmul_small_f32.hpp). Each
// function is compiled for AVX2 + FMA by its target attribute and calls only intrinsics, so no
// inline function compiled for AVX2 can end up in code that runs without it; the caller checks
// the ISA first.
#include "luminal/cpu/matmul_small_f32.hpp"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace luminal::cpu::small_f32 {

#if defined(__x86_64__)

namespace {

#define LUMINAL_AVX2_FMA __attribute__((target("avx2,fma")))

LUMINAL_AVX2_FMA inline float hsum(__m256 v) {
  const __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  const __m128 t = _mm_add_ps(s, _mm_movehl_ps(s, s));
  return _mm_cvtss_f32(_mm_add_ss(t, _mm_movehdup_ps(t)));
}

// How many rows of K ahead of the ones it multiplies `dots` prefetches. A decode step's K and V
// caches come from L3 or DRAM (each layer's cache is read once a step, between the weights); a
// row at a time, the loads waited on memory latency: SmolLM2's scores at c = 192 took 32 us a
// layer from a cold cache against 12 us from L2 (one thread, 2-core AMD EPYC).
constexpr int64_t kAhead = 16;

// Prefetches the bytes [p, p + bytes) into the caches.
LUMINAL_AVX2_FMA inline void prefetch_bytes(const float* p, int64_t bytes) {
  const char* c = reinterpret_cast<const char*>(p);
  for (int64_t o = 0; o < bytes; o += 64)
    _mm_prefetch(c + o, _MM_HINT_T0);
}

// The M dot products of row br of b with a's rows, from 8-lane partial sums `acc`.
template <int M>
LUMINAL_AVX2_FMA inline void finish_dots(const __m256* acc, int64_t k8, int64_t K, const float* a,
                                         int64_t am, const float* br, float* c, int64_t ldc) {
  for (int m = 0; m < M; ++m) {
    float s = hsum(acc[m]);
    for (int64_t k = k8; k < K; ++k)
      s += a[m * am + k] * br[k];
    c[m * ldc] = s;
  }
}

// a and b contiguous along k: per output n, M dot products of length K sharing b's row n. Two
// rows of b at a time (two streams of loads in flight), row n + kAhead prefetched; each output's
// arithmetic is the same as one row at a time.
template <int M>
LUMINAL_AVX2_FMA void dots(int64_t N, int64_t K, const float* a, int64_t am, const float* b,
                           int64_t bn, float* c, int64_t ldc) {
  const int64_t k8 = K / 8 * 8;
  int64_t n = 0;
  for (; n + 2 <= N; n += 2) {
    if (n + kAhead + 1 < N) {
      prefetch_bytes(b + (n + kAhead) * bn, K * 4);
      prefetch_bytes(b + (n + kAhead + 1) * bn, K * 4);
    }
    const float* b0 = b + n * bn;
    const float* b1 = b0 + bn;
    __m256 acc0[M], acc1[M];
    for (int m = 0; m < M; ++m)
      acc0[m] = acc1[m] = _mm256_setzero_ps();
    for (int64_t k = 0; k < k8; k += 8) {
      const __m256 v0 = _mm256_loadu_ps(b0 + k);
      const __m256 v1 = _mm256_loadu_ps(b1 + k);
      for (int m = 0; m < M; ++m) {
        const __m256 av = _mm256_loadu_ps(a + m * am + k);
        acc0[m] = _mm256_fmadd_ps(av, v0, acc0[m]);
        acc1[m] = _mm256_fmadd_ps(av, v1, acc1[m]);
      }
    }
    finish_dots<M>(acc0, k8, K, a, am, b0, c + n, ldc);
    finish_dots<M>(acc1, k8, K, a, am, b1, c + n + 1, ldc);
  }
  for (; n < N; ++n) {
    const float* br = b + n * bn;
    __m256 acc[M];
    for (int m = 0; m < M; ++m)
      acc[m] = _mm256_setzero_ps();
    for (int64_t k = 0; k < k8; k += 8) {
      const __m256 bv = _mm256_loadu_ps(br + k);
      for (int m = 0; m < M; ++m)
        acc[m] = _mm256_fmadd_ps(_mm256_loadu_ps(a + m * am + k), bv, acc[m]);
    }
    finish_dots<M>(acc, k8, K, a, am, br, c + n, ldc);
  }
}

// b contiguous along n: per group of V * 8 outputs of each row, rows of b scaled by a's
// elements and added; with `more`, onto the outputs' values (a later run of k).
template <int M, int V>
LUMINAL_AVX2_FMA void axpy_block(int64_t K, const float* a, int64_t am, int64_t ak, const float* b,
                                 int64_t bk, float* c, int64_t ldc, bool more) {
  __m256 acc[M][V];
  for (int m = 0; m < M; ++m)
    for (int v = 0; v < V; ++v)
      acc[m][v] = more ? _mm256_loadu_ps(c + m * ldc + 8 * v) : _mm256_setzero_ps();
  for (int64_t k = 0; k < K; ++k) {
    __m256 bv[V];
    for (int v = 0; v < V; ++v)
      bv[v] = _mm256_loadu_ps(b + k * bk + 8 * v);
    for (int m = 0; m < M; ++m) {
      const __m256 av = _mm256_broadcast_ss(a + m * am + k * ak);
      for (int v = 0; v < V; ++v)
        acc[m][v] = _mm256_fmadd_ps(av, bv[v], acc[m][v]);
    }
  }
  for (int m = 0; m < M; ++m)
    for (int v = 0; v < V; ++v)
      _mm256_storeu_ps(c + m * ldc + 8 * v, acc[m][v]);
}

// Rows of b a run of k takes before the next run: every group of outputs sweeps the run's rows
// (a decode step's P @ V: 64 values of a V row, four groups of 16) while they are in L1, and the
// next run's rows are prefetched meanwhile. One sweep over all of k per group read a V row from
// memory once per group: 18 GB/s on two cores where they stream 53 (SmolLM2, context 1450). The
// runs keep each output's additions in the same order: the same bits.
constexpr int64_t kAxpyRun = 64;

template <int M>
LUMINAL_AVX2_FMA void axpys(int64_t N, int64_t K, const float* a, int64_t am, int64_t ak,
                            const float* b, int64_t bk, float* c, int64_t ldc) {
  const int64_t runs = K > 0 ? (K + kAxpyRun - 1) / kAxpyRun : 1;  // (K = 0: zeros stored)
  for (int64_t run = 0; run < runs; ++run) {
    const int64_t k0 = run * kAxpyRun;
    const int64_t kn = K - k0 < kAxpyRun ? K - k0 : kAxpyRun;
    const int64_t ahead = K < k0 + 2 * kAxpyRun ? K : k0 + 2 * kAxpyRun;
    const bool more = k0 > 0;
    for (int64_t k = k0 + kn; k < ahead; ++k)
      prefetch_bytes(b + k * bk, N * 4);
    const float* ak0 = a + k0 * ak;
    const float* bk0 = b + k0 * bk;
    int64_t n = 0;
    for (; n + 16 <= N; n += 16)
      axpy_block<M, 2>(kn, ak0, am, ak, bk0 + n, bk, c + n, ldc, more);
    for (; n + 8 <= N; n += 8)
      axpy_block<M, 1>(kn, ak0, am, ak, bk0 + n, bk, c + n, ldc, more);
    for (; n < N; ++n)
      for (int m = 0; m < M; ++m) {
        float s = more ? c[m * ldc + n] : 0.0f;
        for (int64_t k = 0; k < kn; ++k)
          s += ak0[m * am + k * ak] * bk0[k * bk + n];
        c[m * ldc + n] = s;
      }
  }
}

template <int M>
LUMINAL_AVX2_FMA bool gemm_m(int64_t N, int64_t K, const float* a, int64_t am, int64_t ak,
                             const float* b, int64_t bk, int64_t bn, float* c, int64_t ldc) {
  if (ak == 1 && bk == 1) {
    dots<M>(N, K, a, am, b, bn, c, ldc);
    return true;
  }
  if (bn == 1) {
    axpys<M>(N, K, a, am, ak, b, bk, c, ldc);
    return true;
  }
  return false;
}

}  // namespace

bool gemm(int M, int64_t N, int64_t K, const float* a, int64_t am, int64_t ak, const float* b,
          int64_t bk, int64_t bn, float* c, int64_t ldc) {
  switch (M) {
    case 1: return gemm_m<1>(N, K, a, am, ak, b, bk, bn, c, ldc);
    case 2: return gemm_m<2>(N, K, a, am, ak, b, bk, bn, c, ldc);
    case 3: return gemm_m<3>(N, K, a, am, ak, b, bk, bn, c, ldc);
    case 4: return gemm_m<4>(N, K, a, am, ak, b, bk, bn, c, ldc);
    default: return false;
  }
}

#else

bool gemm(int, int64_t, int64_t, const float*, int64_t, int64_t, const float*, int64_t, int64_t,
          float*, int64_t) {
  return false;
}

#endif

}  // namespace luminal::cpu::small_f32
