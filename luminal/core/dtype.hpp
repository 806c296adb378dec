#pragma once
// Element types and host-side numeric conversions.
//
// Every tensor has one DType. 16-bit and 8-bit float formats are stored as their raw bits
// (uint16_t / uint8_t); TF32 is stored as an f32 whose low 13 mantissa bits are zero.
//
// Conversions from f32 round to nearest, ties to even. Saturation rules for the 8-bit formats
// (OCP FP8, the same as CUDA's __NV_SATFINITE mode):
//   - NaN stays NaN (canonical NaN: E4M3 0x7F/0xFF, E5M2 0x7E/0xFE).
//   - Finite values beyond the largest finite value, and +-Inf, saturate to +-max
//     (E4M3: 448, E5M2: 57344). E4M3 has no infinity; E5M2's infinities decode as +-Inf.
//   - f16 and bf16 keep IEEE behaviour: overflow rounds to +-Inf.
#include <cstdint>
#include <string>
#include <string_view>

namespace luminal {

enum class DType : uint8_t {
  F32,
  F64,
  F16,
  BF16,
  TF32,
  I8,
  U8,
  I16,
  U16,
  I32,
  I64,
  Bool,
  F8E4M3,
  F8E5M2,
  // Block-quantized types (GGUF's layouts, core/blocks.hpp): a tensor of these is stored as rows of
  // blocks, each holding block_size() values in block_bytes() bytes. Weights use Q4_0 .. Q6_K;
  // Q8_1 and Q8_K hold quantized activations for the integer dot products.
  Q4_0,
  Q4_1,
  Q5_0,
  Q5_1,
  Q8_0,
  Q8_1,
  Q4_K,
  Q5_K,
  Q6_K,
  Q8_K,
};

inline constexpr DType kAllDTypes[] = {
    DType::F32, DType::F64, DType::F16, DType::BF16, DType::TF32, DType::I8,     DType::U8,
    DType::I16, DType::U16, DType::I32, DType::I64,  DType::Bool, DType::F8E4M3, DType::F8E5M2};
/// Every block-quantized dtype (kAllDTypes holds the element dtypes only).
inline constexpr DType kBlockDTypes[] = {DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1,
                                         DType::Q8_0, DType::Q8_1, DType::Q4_K, DType::Q5_K,
                                         DType::Q6_K, DType::Q8_K};
/// The block types a weight may have (the others hold quantized activations).
inline constexpr DType kWeightBlockDTypes[] = {DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1,
                                               DType::Q8_0, DType::Q4_K, DType::Q5_K, DType::Q6_K};

/// Bits of one element as computed on (TF32: 19 significant bits, stored in 32). Element dtypes
/// only: asserts on a block type.
int bit_width(DType t);
/// Bytes one element occupies in memory (TF32: 4). Element dtypes only: asserts on a block type
/// (use storage_bytes).
int size_bytes(DType t);

/// True for the block-quantized types (Q4_0 .. Q8_K).
bool is_block(DType t);
/// Values per block: 32 (Q4_0 .. Q8_1) or 256 (the K types); 1 for element dtypes.
int block_size(DType t);
/// Bytes per block; size_bytes(t) for element dtypes.
int block_bytes(DType t);
/// Bytes `numel` values of `t` occupy. For a block type, numel must be a whole number of blocks
/// (else throws luminal::Error naming the type and the count).
uint64_t storage_bytes(DType t, int64_t numel);
/// Lower-case name: "f32", "bf16", "i64", "bool", "f8e4m3", ...
std::string_view name(DType t);
/// Parses a name() string (also accepts "float32", "bfloat16", "int32", "float8_e4m3fn", ...).
/// Throws luminal::Error naming the unknown string and listing the valid ones.
DType parse_dtype(std::string_view s);

bool is_float(DType t);    // F32 F64 F16 BF16 TF32 F8E4M3 F8E5M2 (not the block types)
bool is_integer(DType t);  // I8..I64 (not Bool)
bool is_signed(DType t);   // floats and signed integers
/// Largest / smallest finite value representable (as double; exact for all but I64's extremes,
/// which are exact too since they are powers of two). Element dtypes only.
double max_value(DType t);
double min_value(DType t);
/// True when v lies in [min_value(t), max_value(t)] (for I64: below 2^63, which a double can hold
/// but an int64 cannot). Integrality is not checked.
bool in_range(DType t, double v);
/// Machine epsilon: the gap between 1 and the next representable value (integers: 0).
double epsilon(DType t);

// ---- bit-level conversions (all round-to-nearest-even) ----
uint16_t f32_to_f16_bits(float f);
float f16_bits_to_f32(uint16_t h);
uint16_t f32_to_bf16_bits(float f);
float bf16_bits_to_f32(uint16_t h);
float round_to_tf32(float f);
uint8_t f32_to_f8e4m3_bits(float f);
float f8e4m3_bits_to_f32(uint8_t b);
uint8_t f32_to_f8e5m2_bits(float f);
float f8e5m2_bits_to_f32(uint8_t b);

/// Reads element `i` of a buffer of dtype `t` as double (integers exact up to 2^53; Bool 0/1).
double load_as_double(DType t, const void* data, int64_t i);
/// Reads element `i` as int64 (floats truncate toward zero; NaN gives 0).
int64_t load_as_int64(DType t, const void* data, int64_t i);
/// Stores a double into element `i`: floats round (via f32 for the sub-32-bit formats, so a value
/// rounds once from f32), integers are converted by truncation then wrapped modulo 2^bits,
/// Bool stores v != 0.
void store_from_double(DType t, void* data, int64_t i, double v);
/// Stores an int64 into element `i`: integers wrap modulo 2^bits (two's complement), floats round.
void store_from_int64(DType t, void* data, int64_t i, int64_t v);

}  // namespace luminal
