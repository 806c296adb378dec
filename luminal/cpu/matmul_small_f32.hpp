#pragma once
// cpu.BlasMatmul's products of 2 to 4 rows in AVX2 + FMA (internal; matmul_blas.cpp calls them
// where quant::active() is not portable): a decode step's grouped-query attention, per KV head
// the scores [groups, hd] x [hd, c] and the values [groups, c] x [c, hd]. OpenBLAS packs both
// operands of such a product first, which costs more than the product (40-50 us a layer at
// c = 192 on two cores, against 5-10 us here). f32 accumulation in FMA lanes, as BLAS: the
// result is within BLAS's tolerance of the exact product, not bitwise OpenBLAS's. The scores'
// form prefetches K's rows ahead and reads two at a time: a decode step's caches come from L3 or
// DRAM.
#include <cstdint>

namespace luminal::cpu::small_f32 {

/// c[m * ldc + n] = sum over k < K of a[m * am + k * ak] * b[k * bk + n * bn] for m < M (1..4),
/// n < N. Handles a and b both contiguous along k (ak == bk == 1: a dot per output) and b
/// contiguous along n (bn == 1: rows of b scaled and added); returns false for any other layout
/// (the caller calls BLAS).
bool gemm(int M, int64_t N, int64_t K, const float* a, int64_t am, int64_t ak, const float* b,
          int64_t bk, int64_t bn, float* c, int64_t ldc);

}  // namespace luminal::cpu::small_f32
