#pragma once
// Dequantisation of GGUF tensor data to f32: dequantize(tensor) gives one float per element.
// Example: examples/snippets/io/gguf_dequant.cpp (a Q8_0 projection dequantised).
//
// Supported types: F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, Q4_K, Q5_K, Q6_K. The results
// are bit-exact with the `gguf` Python package's gguf.quants.dequantize (the same operations in
// the same order, in f32, never fused into FMAs: the source is compiled with -ffp-contract=off).
// NaN and Inf values of F32, F16 and BF16 tensors keep their bits (F16 NaN payloads are shifted
// into the f32 mantissa, signalling NaNs stay signalling). A NaN or Inf block scale gives NaN/Inf
// values whose NaN bits are the hardware's.
//
// Layouts (one block; f16 values are IEEE half, little-endian):
//   Q8_0 (32 values, 34 bytes):  d f16, q i8[32];                  x = q * d
//   Q4_0 (32, 18):   d, qs[16] (value j: low nibble of qs[j], j+16: high nibble); x = d * (q - 8)
//   Q4_1 (32, 20):   d, m, qs[16];                                    x = d * q + m
//   Q5_0 (32, 22):   d, qh u32 (bit j: bit 4 of value j), qs[16];    x = d * (q - 16)
//   Q5_1 (32, 24):   d, m, qh, qs[16];                                x = d * q + m
//   Q4_K (256, 144): d, dmin, scales[12] (eight 6-bit scales and mins), qs[128]; sub-block i of
//                    32 values: x = (d * sc[i]) * q - (dmin * m[i])
//   Q5_K (256, 176): d, dmin, scales[12], qh[32] (bit i of qh[l]: bit 4 of sub-block i's value
//                    l), qs[128]; as Q4_K
//   Q6_K (256, 210): ql[128], qh[64], scales i8[16], d; sixteen sub-blocks of 16:
//                    x = (d * scales[s]) * (q - 32)
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "luminal/io/gguf.hpp"
#include "luminal/io/progress.hpp"

namespace luminal::io {

/// Whether dequantize() handles `t`.
bool can_dequantize(GgmlType t);
/// "F32, F16, BF16, Q8_0, ..." (for messages).
std::string dequantizable_types();

/// Dequantises whole blocks: `bytes` must hold exactly out.size() / block_size blocks of `type`
/// (out.size() a multiple of the block size). Errors name the type and the sizes.
void dequantize_blocks(GgmlType type, std::span<const uint8_t> bytes, std::span<float> out);

/// A tensor's values as f32, in row-major order of its shape (outermost first). Errors name the
/// file, the tensor and the problem (an unsupported type, a buffer of the wrong size).
std::vector<float> dequantize(const GgufTensor& t);
/// dequantize() into a caller buffer of exactly t.numel() floats. With a `meter`, the work goes
/// in chunks of about 2^20 values (whole blocks), each advancing it by its f32 bytes.
void dequantize_into(const GgufTensor& t, std::span<float> out, ProgressMeter* meter = nullptr);

}  // namespace luminal::io
