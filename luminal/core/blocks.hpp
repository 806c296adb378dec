#pragma once
// Block-quantized layouts (GGUF's, byte for byte) and their exact decoders.
//
// A tensor of a block dtype (Q4_0 .. Q8_K, core/dtype.hpp) is stored row by row, each row a run
// of blocks; a block holds block_size() consecutive values of a row. Every f16 field is an IEEE
// half, little-endian, kept as raw bits. One struct per layout, fields in file order:
//
//   type  values bytes  fields                                  value x of element j
//   Q4_0    32    18    d; qs[16]                               d * (q - 8)
//   Q4_1    32    20    d, m; qs[16]                            d * q + m
//   Q5_0    32    22    d; qh[4]; qs[16]                        d * (q - 16)
//   Q5_1    32    24    d, m; qh[4]; qs[16]                     d * q + m
//   Q8_0    32    34    d; qs i8[32]                            d * q
//   Q8_1    32    36    d, s (= f16(d * sum q)); qs i8[32]      d * q       (activations)
//   Q4_K   256   144    d, dmin; scales[12]; qs[128]            (d * sc[i]) * q - dmin * mn[i]
//   Q5_K   256   176    d, dmin; scales[12]; qh[32]; qs[128]    as Q4_K, 5-bit q
//   Q6_K   256   210    ql[128]; qh[64]; scales i8[16]; d       (d * scales[j / 16]) * (q - 32)
//   Q8_K   256   292    d f32; qs i8[256]; bsums i16[16]        d * q       (activations)
//
// 4-bit quants of the 32-blocks: value j < 16 is the low nibble of qs[j], value j + 16 its high
// nibble; Q5's fifth bit of value j is bit j of qh (a little-endian u32). In Q4_K/Q5_K, sub-block
// i (32 values) reads qs[(i / 2) * 32 ..], low nibbles for even i, high for odd; its fifth bit
// (Q5_K) is bit i of qh[l]. The K scales: for i < 4, sc[i] = scales[i] & 63 and mn[i] =
// scales[i + 4] & 63; for i >= 4, sc[i] = (scales[i + 4] & 15) | (scales[i - 4] >> 6) << 4 and
// mn[i] = (scales[i + 4] >> 4) | (scales[i] >> 6) << 4. Q6_K element e = 128h + 32k + l: low bits
// are nibble k / 2 of ql[64h + 32(k % 2) + l], high bits (qh[32h + l] >> 2k) & 3.
//
// dequantize() is bit-exact with gguf-py's gguf.quants.dequantize (the same f32 operations in the
// same order; core/dequant.cpp is compiled without FMA contraction).
// Example: examples/snippets/core/blocks.cpp.
#include <cstdint>
#include <span>

#include "luminal/core/dtype.hpp"

namespace luminal::blocks {

struct Q4_0 {
  uint16_t d;
  uint8_t qs[16];
};
struct Q4_1 {
  uint16_t d, m;
  uint8_t qs[16];
};
struct Q5_0 {
  uint16_t d;
  uint8_t qh[4];
  uint8_t qs[16];
};
struct Q5_1 {
  uint16_t d, m;
  uint8_t qh[4];
  uint8_t qs[16];
};
struct Q8_0 {
  uint16_t d;
  int8_t qs[32];
};
struct Q8_1 {
  uint16_t d, s;
  int8_t qs[32];
};
struct Q4_K {
  uint16_t d, dmin;
  uint8_t scales[12];
  uint8_t qs[128];
};
struct Q5_K {
  uint16_t d, dmin;
  uint8_t scales[12];
  uint8_t qh[32];
  uint8_t qs[128];
};
struct Q6_K {
  uint8_t ql[128];
  uint8_t qh[64];
  int8_t scales[16];
  uint16_t d;
};
struct Q8_K {
  float d;
  int8_t qs[256];
  int16_t bsums[16];
};

static_assert(sizeof(Q4_0) == 18 && sizeof(Q4_1) == 20 && sizeof(Q5_0) == 22 &&
              sizeof(Q5_1) == 24 && sizeof(Q8_0) == 34 && sizeof(Q8_1) == 36);
static_assert(sizeof(Q4_K) == 144 && sizeof(Q5_K) == 176 && sizeof(Q6_K) == 210 &&
              sizeof(Q8_K) == 292);

/// IEEE half -> single bits, exactly (NaN payloads move into the top of the f32 mantissa, as
/// numpy's conversion does; no arithmetic, so signalling NaNs stay signalling).
uint32_t f16_to_f32_bits(uint16_t h);
/// Decodes `n` values (a whole number of blocks of `t`, a block dtype) from `in` into `out`.
void dequantize(DType t, const uint8_t* in, float* out, int64_t n);
/// The eight 6-bit scales and mins of a Q4_K / Q5_K block (see above).
void k_scale_min(const uint8_t scales[12], int sc[8], int mn[8]);
/// Byte offset of value `element` of a row-major tensor of `t` whose rows hold `row` values:
/// element must start a row (asserted).
uint64_t block_byte_offset(DType t, int64_t element, int64_t row);
/// Fills `bytes` (a whole number of blocks of `t`) with valid random blocks from `seed`: random
/// quants, every scale f16(1/256) and every min f16(-1/16), so values stay within about +-1.
void fill_valid_blocks(DType t, std::span<uint8_t> bytes, uint64_t seed);
/// The 8-bit format a weight of block type `t` is dotted with: Q8_0 for Q4_0, Q5_0 and Q8_0;
/// Q8_1 for Q4_1 and Q5_1; Q8_K for the K types. Asserts on other dtypes.
DType activation_format(DType t);

}  // namespace luminal::blocks
