#pragma once
// The dot products of cpu.MatmulW16 (internal; matmul_w16.cpp): f32 activation rows against
// bf16 or f16 weight rows, each weight element widened to f32 exactly as it is loaded.
//
// Every output is the same sum on every ISA: 8 float lanes, lane l taking elements k = 8j + l in
// order with one fused multiply-add each (so a lane's value is exact but for one rounding per
// step), the lanes added as (0+4, 1+5, 2+6, 3+7), then (0+2, 1+3), then the two; the K % 8 tail
// elements follow one fused multiply-add at a time. The AVX2 + FMA + F16C form is picked at run
// time; the portable form computes the same bits with std::fma.
#include <cstdint>

#include "luminal/core/dtype.hpp"

namespace luminal::cpu::w16 {

/// out[m * m_step + r * n_step] = sum over k < K of x[m][k] * widen(w[r][k]) for r < R and
/// m < M (both 1 to 4).
using DotFn = void (*)(int64_t K, const uint16_t* const* w, int R, const float* const* x, int M,
                       float* out, int64_t n_step, int64_t m_step);

/// dst[r * K + k] = widen(w[r][k]) for r < R: weight rows widened to f32 (exactly), for a
/// prefill panel that sgemm then reads.
using WidenFn = void (*)(int64_t K, const uint16_t* const* w, int R, float* dst);
WidenFn widen_fn(DType t, bool avx2);

/// The kernel for weights of `t` (bf16 or f16): the AVX2 one when `avx2` (the caller checked
/// that the CPU has AVX2, FMA and F16C: quant::active() is not portable), else the portable one.
DotFn dot_fn(DType t, bool avx2);

}  // namespace luminal::cpu::w16
