#pragma once
// Exp2 on f32: what the reference runtime and the CPU backend compute for the Exp2 primitive over
// f32 (and over f16, bf16, tf32 and fp8, which compute in f32 and round), bit for bit on every
// machine, whatever its libm: the CPU's 8-lane form (cpu/vec_math.hpp) evaluates the same formula.
//
// n = x rounded to the nearest integer (in the current rounding mode: ties to even), f = x - n
// (exact, |f| <= 1/2), 2^f = 1 + f q(f) with q a degree-5 least-squares fit of (2^f - 1) / f on
// [-1/2, 1/2] by Horner's rule, then two exact power-of-two scalings (2^floor(n / 2), then the
// rest) so that a result below 2^-126 is rounded once, as a subnormal. Plain f32 multiplies and
// adds in a fixed order, never contracted into FMAs (the units are compiled with
// -ffp-contract=off, luminal/CMakeLists.txt).
//
// Error: at most 1.2 ulp of the exact 2^x (glibc's exp2f, which the reference used before, is
// within 0.5 ulp; CUDA's exp2f within 2); tests/cpu/vec_math_test.cpp sweeps every range. NaN
// gives NaN, x >= 128 gives +inf (2^128 overflows), x < -150 gives +0 (-inf too), x = -150 gives
// +0 (half the least subnormal, ties to even), integers give their exact power of two.
// f64 keeps std::exp2.

namespace luminal {

/// 2^x in f32 by the formula above.
float exp2_f32(float x);

}  // namespace luminal
