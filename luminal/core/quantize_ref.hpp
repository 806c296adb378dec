#pragma once
// Reference quantizers of activations to the 8-bit block formats the integer dot products read
// (Q8_0, Q8_1, Q8_K; layouts in blocks.hpp). Every CPU kernel (cpu/quant/) and every GPU kernel
// must match them bit for bit. They follow ggml's x86 quantizers (not its `_ref` ones, which round
// halves away from zero), with the edge cases ggml leaves open defined:
//
//   Q8_0, Q8_1  amax = max |x|; d = amax / 127; id = 127 / amax; q = rne(x * id) (the product
//               rounded to f32, then to the nearest integer, ties to even); stored d = f16(d).
//               Q8_1 also stores s = f16(d * sum q), with the f32 d.
//   Q8_K        max = the first value of largest magnitude; iscale = -127 / max;
//               q = min(127, rne(iscale * x)); d = 1 / iscale, stored as f32;
//               bsums[g] = the exact sum of q[16g .. 16g + 15].
//
//   A block holding NaN or +-Inf gets d = NaN (and s = NaN), q = 0, bsums = 0, so every dot
//   product reading it is NaN, as in f32. A block whose amax is 0, or so small that 127 / amax
//   (-127 / max) overflows (below about 2^-120), gets q = 0 and d = s = 0.
//
// Note: d = f16(amax / 127) overflows to Inf beyond amax = 65504 * 127, and s = f16(d * sum q)
// beyond |sum q| * amax / 127 = 65504 (amax about 2048 at worst): as in ggml, the dot products
// reading such a block are then Inf or NaN. Q8_K keeps d in f32 and has no such limit.
#include <cstdint>

#include "luminal/core/dtype.hpp"

namespace luminal::blocks {

/// Quantizes `k` floats (a multiple of 32) to k / 32 Q8_0 blocks at `out`.
void quantize_q8_0(const float* x, uint8_t* out, int64_t k);
/// Quantizes `k` floats (a multiple of 32) to k / 32 Q8_1 blocks at `out`.
void quantize_q8_1(const float* x, uint8_t* out, int64_t k);
/// Quantizes `k` floats (a multiple of 256) to k / 256 Q8_K blocks at `out`.
void quantize_q8_k(const float* x, uint8_t* out, int64_t k);
/// One of the three by format (Q8_0, Q8_1 or Q8_K; asserts on any other dtype).
void quantize_reference(DType fmt, const float* x, uint8_t* out, int64_t k);

}  // namespace luminal::blocks
