#pragma once
// cpu.Matmul's f32 groups of 8 outputs in AVX2 (internal; matmul_generic.cpp calls them where
// quant::active() is not portable). Each output is the generic kernel's bit for bit: every
// product rounded to f32, the products summed in double in k order, the sum rounded once.
#include <cstdint>

namespace luminal::cpu::f32x8 {

/// out[j] = sum over i of a[ka[i] + (bcast_a ? 0 : j)] * b[kb[i] + (bcast_b ? 0 : j)] for j in
/// [0, 8 groups), groups 1, 2 or 4: outputs whose operands are consecutive (or one of them the
/// same) along j. At most one of bcast_a, bcast_b.
void outer(int groups, const float* a, bool bcast_a, const float* b, bool bcast_b,
           const int64_t* ka, const int64_t* kb, int64_t k, float* out);

/// out[j] = sum over i of a[j][i] * b[j][i] for j in [0, 8): rows contiguous along k. Prefetches
/// the rows of `next` (8 more of a and of b, or null) meanwhile.
void dot(const float* const* a, const float* const* b, int64_t k, float* out,
         const float* const* next_a, const float* const* next_b);

}  // namespace luminal::cpu::f32x8
