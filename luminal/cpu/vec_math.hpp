#pragma once
// Array math over f32 for the CPU kernels (internal): a row's maximum and sum (below), and exp2:
// the primitive Exp2, cpu.Fused and cpu.Row call it, 8 lanes at a time on AVX2
// (vec_math_avx2.cpp, chosen at run time as the quantized kernels are: not under
// LUMINAL_CPU_ISA=portable), else one element at a time. Either
// way the bits of luminal::exp2_f32 (core/exp2.hpp), the reference's Exp2: about 10x faster than
// a loop over glibc's exp2f on AVX2.
#include <cstdint>

namespace luminal::cpu::vec {

/// y[i] = exp2_f32(x[i]) for i < n; x and y may be the same array.
void exp2(const float* x, float* y, int64_t n);

/// The maximum of p[0, n) as a sequential max gives it (the first element equal to the maximum,
/// NaN when one is NaN, -inf when n is 0), in f32 lanes: NaN is tracked apart so the loop
/// vectorises, and since equal floats differ only as zeros of two signs, a zero maximum is the
/// first zero. MaxReduce's f32 rows and cpu.Row's row max.
double max_f32(const float* p, int64_t n);

/// The sum of p[0, n) in double, added in the vector lanes `#pragma omp simd` gives this build.
/// One compiled loop, not inlined, so every caller adds in the same order (the rounding to f32
/// hides the order unless the terms cancel; an inlined copy could come out sequential, and
/// slower: cpu.Row's blocks of several rows did). SumReduce's f32 rows and cpu.Row's row sum.
double sum_f32(const float* p, int64_t n);

namespace detail {
/// The AVX2 form (vec_math_avx2.cpp); null where this build has none.
using Exp2Array = void (*)(const float*, float*, int64_t);
Exp2Array exp2_avx2();
}  // namespace detail

}  // namespace luminal::cpu::vec
