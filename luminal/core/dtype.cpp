#include "luminal/core/dtype.hpp"

#include <algorithm>
#include <bit>
#include <cctype>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>

#include "luminal/core/error.hpp"

namespace luminal {

// ---------------------------------------------------------------------------------------------
// Properties
// ---------------------------------------------------------------------------------------------

int bit_width(DType t) {
  switch (t) {
    case DType::F32: return 32;
    case DType::F64: return 64;
    case DType::F16: return 16;
    case DType::BF16: return 16;
    case DType::TF32: return 19;
    case DType::I8: return 8;
    case DType::U8: return 8;
    case DType::I16: return 16;
    case DType::U16: return 16;
    case DType::I32: return 32;
    case DType::I64: return 64;
    case DType::Bool: return 1;
    case DType::F8E4M3: return 8;
    case DType::F8E5M2: return 8;
    case DType::Q4_0:
    case DType::Q4_1:
    case DType::Q5_0:
    case DType::Q5_1:
    case DType::Q8_0:
    case DType::Q8_1:
    case DType::Q4_K:
    case DType::Q5_K:
    case DType::Q6_K:
    case DType::Q8_K:
      internal_error(__FILE__, __LINE__,
                     "bit_width/size_bytes: " + std::string(name(t)) +
                         " is a block-quantized type (its values have no size of their own: use "
                         "storage_bytes)");
  }
  internal_error(__FILE__, __LINE__, "bit_width: invalid DType");
}

int size_bytes(DType t) {
  switch (t) {
    case DType::TF32: return 4;
    case DType::Bool: return 1;
    default: return bit_width(t) / 8;
  }
}

bool is_block(DType t) { return t >= DType::Q4_0 && t <= DType::Q8_K; }

int block_size(DType t) {
  switch (t) {
    case DType::Q4_K:
    case DType::Q5_K:
    case DType::Q6_K:
    case DType::Q8_K: return 256;
    default: return is_block(t) ? 32 : 1;
  }
}

int block_bytes(DType t) {
  switch (t) {
    case DType::Q4_0: return 18;
    case DType::Q4_1: return 20;
    case DType::Q5_0: return 22;
    case DType::Q5_1: return 24;
    case DType::Q8_0: return 34;
    case DType::Q8_1: return 36;
    case DType::Q4_K: return 144;
    case DType::Q5_K: return 176;
    case DType::Q6_K: return 210;
    case DType::Q8_K: return 292;
    default: return size_bytes(t);
  }
}

uint64_t storage_bytes(DType t, int64_t numel) {
  LUMINAL_ASSERT(numel >= 0, "storage_bytes: negative element count");
  if (!is_block(t)) return static_cast<uint64_t>(numel) * static_cast<uint64_t>(size_bytes(t));
  const int bs = block_size(t);
  if (numel % bs != 0)
    throw Error(std::string(name(t)) + " holds values in blocks of " + std::to_string(bs) + ": " +
                std::to_string(numel) + " values are not a whole number of blocks");
  return static_cast<uint64_t>(numel / bs) * static_cast<uint64_t>(block_bytes(t));
}

std::string_view name(DType t) {
  switch (t) {
    case DType::F32: return "f32";
    case DType::F64: return "f64";
    case DType::F16: return "f16";
    case DType::BF16: return "bf16";
    case DType::TF32: return "tf32";
    case DType::I8: return "i8";
    case DType::U8: return "u8";
    case DType::I16: return "i16";
    case DType::U16: return "u16";
    case DType::I32: return "i32";
    case DType::I64: return "i64";
    case DType::Bool: return "bool";
    case DType::F8E4M3: return "f8e4m3";
    case DType::F8E5M2: return "f8e5m2";
    case DType::Q4_0: return "q4_0";
    case DType::Q4_1: return "q4_1";
    case DType::Q5_0: return "q5_0";
    case DType::Q5_1: return "q5_1";
    case DType::Q8_0: return "q8_0";
    case DType::Q8_1: return "q8_1";
    case DType::Q4_K: return "q4_k";
    case DType::Q5_K: return "q5_k";
    case DType::Q6_K: return "q6_k";
    case DType::Q8_K: return "q8_k";
  }
  internal_error(__FILE__, __LINE__, "name: invalid DType");
}

namespace {

struct Alias {
  std::string_view text;  // lower case
  DType type;
};

// Accepted spellings besides name(); matched case-insensitively. Safetensors names (F32, BF16,
// F8_E4M3, BOOL, ...) are covered once lower-cased.
constexpr Alias kAliases[] = {
    {"float32", DType::F32},
    {"float", DType::F32},
    {"float64", DType::F64},
    {"double", DType::F64},
    {"float16", DType::F16},
    {"half", DType::F16},
    {"bfloat16", DType::BF16},
    {"tensorfloat32", DType::TF32},
    {"int8", DType::I8},
    {"uint8", DType::U8},
    {"int16", DType::I16},
    {"uint16", DType::U16},
    {"int32", DType::I32},
    {"int", DType::I32},
    {"int64", DType::I64},
    {"long", DType::I64},
    {"float8_e4m3fn", DType::F8E4M3},
    {"f8_e4m3", DType::F8E4M3},
    {"float8_e5m2", DType::F8E5M2},
    {"f8_e5m2", DType::F8E5M2},
};

std::string to_lower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

DType parse_dtype(std::string_view s) {
  const std::string lower = to_lower(s);
  for (DType t : kAllDTypes) {
    if (name(t) == lower) return t;
  }
  for (DType t : kBlockDTypes) {
    if (name(t) == lower) return t;
  }
  for (const Alias& a : kAliases) {
    if (a.text == lower) return a.type;
  }
  std::string msg = "unknown dtype '" + std::string(s) + "'; valid names:";
  for (DType t : kAllDTypes)
    msg += " " + std::string(name(t));
  for (DType t : kBlockDTypes)
    msg += " " + std::string(name(t));
  msg += " (also accepted: float32, float16, bfloat16, int32, float8_e4m3fn, ... and the";
  msg += " safetensors names F32, BF16, I64, F8_E4M3, ...)";
  throw Error(msg);
}

bool is_float(DType t) {
  switch (t) {
    case DType::F32:
    case DType::F64:
    case DType::F16:
    case DType::BF16:
    case DType::TF32:
    case DType::F8E4M3:
    case DType::F8E5M2: return true;
    default: return false;
  }
}

bool is_integer(DType t) {
  switch (t) {
    case DType::I8:
    case DType::U8:
    case DType::I16:
    case DType::U16:
    case DType::I32:
    case DType::I64: return true;
    default: return false;
  }
}

bool is_signed(DType t) {
  switch (t) {
    case DType::I8:
    case DType::I16:
    case DType::I32:
    case DType::I64: return true;
    default: return is_float(t);
  }
}

double max_value(DType t) {
  switch (t) {
    case DType::F32: return std::numeric_limits<float>::max();
    case DType::F64: return std::numeric_limits<double>::max();
    case DType::F16: return 65504.0;
    case DType::BF16: return std::ldexp(2.0 - std::ldexp(1.0, -7), 127);
    case DType::TF32: return std::ldexp(2.0 - std::ldexp(1.0, -10), 127);
    case DType::I8: return INT8_MAX;
    case DType::U8: return UINT8_MAX;
    case DType::I16: return INT16_MAX;
    case DType::U16: return UINT16_MAX;
    case DType::I32: return INT32_MAX;
    case DType::I64: return static_cast<double>(INT64_MAX);  // rounds to 2^63
    case DType::Bool: return 1.0;
    case DType::F8E4M3: return 448.0;
    case DType::F8E5M2: return 57344.0;
    default: break;
  }
  internal_error(__FILE__, __LINE__,
                 "max_value: " + std::string(name(t)) + " is a block-quantized type");
}

double min_value(DType t) {
  LUMINAL_ASSERT(!is_block(t), "min_value: " + std::string(name(t)) + " is a block-quantized type");
  if (is_float(t)) return -max_value(t);
  switch (t) {
    case DType::I8: return INT8_MIN;
    case DType::I16: return INT16_MIN;
    case DType::I32: return INT32_MIN;
    case DType::I64: return static_cast<double>(INT64_MIN);
    default: return 0.0;  // unsigned and Bool
  }
}

bool in_range(DType t, double v) {
  return v >= min_value(t) && v <= max_value(t) && (t != DType::I64 || v < 0x1p63);
}

double epsilon(DType t) {
  switch (t) {
    case DType::F32: return std::ldexp(1.0, -23);
    case DType::F64: return std::ldexp(1.0, -52);
    case DType::F16: return std::ldexp(1.0, -10);
    case DType::BF16: return std::ldexp(1.0, -7);
    case DType::TF32: return std::ldexp(1.0, -10);
    case DType::F8E4M3: return std::ldexp(1.0, -3);
    case DType::F8E5M2: return std::ldexp(1.0, -2);
    default: return 0.0;
  }
}

// ---------------------------------------------------------------------------------------------
// Bit-level conversions
// ---------------------------------------------------------------------------------------------

namespace {

constexpr uint32_t kF32SignMask = 0x80000000u;
constexpr uint32_t kF32AbsMask = 0x7FFFFFFFu;
constexpr uint32_t kF32Inf = 0x7F800000u;
constexpr uint32_t kF32Quiet = 0x00400000u;
constexpr int kF32ManBits = 23;

// A small binary float format: 1 sign bit, exp_bits exponent bits, man_bits mantissa bits.
struct Format {
  int exp_bits;
  int man_bits;
  int bias;
};

constexpr Format kF16{5, 10, 15};
constexpr Format kBF16{8, 7, 127};
constexpr Format kE4M3{4, 3, 7};
constexpr Format kE5M2{5, 2, 15};

uint32_t f32_bits(float f) { return std::bit_cast<uint32_t>(f); }
float bits_f32(uint32_t b) { return std::bit_cast<float>(b); }

// x / 2^s rounded to nearest, ties to even. Only called with x < 2^32 and s >= 0.
uint32_t rne_shift(uint32_t x, int s) {
  if (s == 0) return x;
  if (s >= 32) return 0;  // callers pass x < 2^31 <= 2^(s-1): below half, rounds to 0
  const uint32_t q = x >> s;
  const uint32_t rem = x & ((1u << s) - 1);
  const uint32_t half = 1u << (s - 1);
  const bool round_up = rem > half || (rem == half && (q & 1u) != 0);
  return q + (round_up ? 1u : 0u);
}

// Rounds the finite, non-negative f32 with bits `abs` into `fmt` and returns the unsigned bit
// pattern (exponent and mantissa fields). A result at or beyond the all-ones exponent means the
// value overflowed; the caller decides between Inf and saturation.
uint32_t round_magnitude(uint32_t abs, Format fmt) {
  const uint32_t exp32 = abs >> kF32ManBits;
  const uint32_t man32 = abs & ((1u << kF32ManBits) - 1);
  const int drop = kF32ManBits - fmt.man_bits;
  if (exp32 != 0) {
    const int e = static_cast<int>(exp32) - 127 + fmt.bias;
    if (e >= 1) {
      // Normal in the target: a mantissa carry ripples into the exponent, which is what we want.
      return rne_shift((static_cast<uint32_t>(e) << kF32ManBits) | man32, drop);
    }
    // Subnormal in the target: shift the significand (implicit bit included) further right.
    return rne_shift(man32 | (1u << kF32ManBits), drop + 1 - e);
  }
  // f32 subnormal: value = man32 * 2^-149.
  const int e = 1 - 127 + fmt.bias;
  return rne_shift(man32, drop + 1 - e);
}

// Decodes the finite non-negative pattern `mag` of `fmt` (exponent field not all ones, except for
// E4M3 whose top binade is finite). Requires 1 - bias - man_bits >= -126.
float decode_magnitude(uint32_t mag, Format fmt) {
  const uint32_t exp = mag >> fmt.man_bits;
  const uint32_t man = mag & ((1u << fmt.man_bits) - 1);
  if (exp == 0) {
    // Subnormal: man * 2^(1 - bias - man_bits), an exact product.
    const int scale = 1 - fmt.bias - fmt.man_bits;
    return static_cast<float>(man) * bits_f32(static_cast<uint32_t>(127 + scale) << kF32ManBits);
  }
  const uint32_t exp32 = exp - static_cast<uint32_t>(fmt.bias) + 127;
  return bits_f32((exp32 << kF32ManBits) | (man << (kF32ManBits - fmt.man_bits)));
}

float quiet_nan(bool negative) {
  return bits_f32((negative ? kF32SignMask : 0u) | kF32Inf | kF32Quiet);
}

// Decodes a format with IEEE specials (all-ones exponent = Inf/NaN): f16 and E5M2.
float decode_ieee(uint32_t bits, Format fmt) {
  const int width = 1 + fmt.exp_bits + fmt.man_bits;
  const bool negative = ((bits >> (width - 1)) & 1u) != 0;
  const uint32_t mag = bits & ((1u << (width - 1)) - 1);
  const uint32_t inf = ((1u << fmt.exp_bits) - 1) << fmt.man_bits;
  const uint32_t sign32 = negative ? kF32SignMask : 0u;
  if (mag > inf) {
    // Keep the payload, set the quiet bit.
    const uint32_t payload = (mag & ((1u << fmt.man_bits) - 1)) << (kF32ManBits - fmt.man_bits);
    return bits_f32(sign32 | kF32Inf | kF32Quiet | payload);
  }
  if (mag == inf) return bits_f32(sign32 | kF32Inf);
  return bits_f32(sign32 | f32_bits(decode_magnitude(mag, fmt)));
}

}  // namespace

uint16_t f32_to_f16_bits(float f) {
  const uint32_t bits = f32_bits(f);
  const uint32_t sign = (bits >> 16) & 0x8000u;
  const uint32_t abs = bits & kF32AbsMask;
  constexpr uint32_t kInf = 0x7C00u;
  if (abs > kF32Inf) {  // NaN: keep the top payload bits, set the quiet bit
    return static_cast<uint16_t>(sign | kInf | 0x0200u | ((abs >> 13) & 0x03FFu));
  }
  if (abs == kF32Inf) return static_cast<uint16_t>(sign | kInf);
  return static_cast<uint16_t>(sign | std::min(round_magnitude(abs, kF16), kInf));
}

float f16_bits_to_f32(uint16_t h) { return decode_ieee(h, kF16); }

uint16_t f32_to_bf16_bits(float f) {
  const uint32_t bits = f32_bits(f);
  const uint32_t sign = (bits >> 16) & 0x8000u;
  const uint32_t abs = bits & kF32AbsMask;
  constexpr uint32_t kInf = 0x7F80u;
  if (abs > kF32Inf) return static_cast<uint16_t>(sign | 0x0040u | (abs >> 16));
  if (abs == kF32Inf) return static_cast<uint16_t>(sign | kInf);
  return static_cast<uint16_t>(sign | std::min(round_magnitude(abs, kBF16), kInf));
}

float bf16_bits_to_f32(uint16_t h) {
  const float f = bits_f32(static_cast<uint32_t>(h) << 16);
  return std::isnan(f) ? bits_f32(f32_bits(f) | kF32Quiet) : f;
}

float round_to_tf32(float f) {
  constexpr int kDrop = 13;
  constexpr uint32_t kLowMask = (1u << kDrop) - 1;
  const uint32_t bits = f32_bits(f);
  const uint32_t sign = bits & kF32SignMask;
  const uint32_t abs = bits & kF32AbsMask;
  if (abs > kF32Inf) return bits_f32((bits & ~kLowMask) | kF32Quiet);  // NaN stays NaN
  // Exponent and mantissa round as one integer: a carry overflows to Inf, and Inf stays Inf.
  return bits_f32(sign | (rne_shift(abs, kDrop) << kDrop));
}

namespace {

// FP8 encoding with SATFINITE saturation: +-Inf and overflow give +-max_finite, NaN gives nan.
uint8_t f32_to_f8_saturating(float f, Format fmt, uint32_t max_finite, uint32_t nan) {
  const uint32_t bits = f32_bits(f);
  const uint32_t sign = (bits >> 24) & 0x80u;
  const uint32_t abs = bits & kF32AbsMask;
  if (abs > kF32Inf) return static_cast<uint8_t>(sign | nan);
  if (abs == kF32Inf) return static_cast<uint8_t>(sign | max_finite);
  return static_cast<uint8_t>(sign | std::min(round_magnitude(abs, fmt), max_finite));
}

}  // namespace

uint8_t f32_to_f8e4m3_bits(float f) {
  return f32_to_f8_saturating(f, kE4M3, 0x7Eu /* 448 */, 0x7Fu);
}

float f8e4m3_bits_to_f32(uint8_t b) {
  const bool negative = (b & 0x80u) != 0;
  const uint32_t mag = b & 0x7Fu;
  if (mag == 0x7Fu) return quiet_nan(negative);
  const float v = decode_magnitude(mag, kE4M3);
  return negative ? -v : v;
}

uint8_t f32_to_f8e5m2_bits(float f) {
  return f32_to_f8_saturating(f, kE5M2, 0x7Bu /* 57344 */, 0x7Eu);
}

float f8e5m2_bits_to_f32(uint8_t b) { return decode_ieee(b, kE5M2); }

// ---------------------------------------------------------------------------------------------
// Buffer access
// ---------------------------------------------------------------------------------------------

namespace {

template <typename T>
T read_elem(const void* data, int64_t i) {
  T v;
  std::memcpy(&v, static_cast<const unsigned char*>(data) + i * static_cast<int64_t>(sizeof(T)),
              sizeof(T));
  return v;
}

template <typename T>
void write_elem(void* data, int64_t i, T v) {
  std::memcpy(static_cast<unsigned char*>(data) + i * static_cast<int64_t>(sizeof(T)), &v,
              sizeof(T));
}

// Truncates toward zero, NaN -> 0, saturating at the int64 range.
int64_t double_to_int64_sat(double v) {
  constexpr double kTwo63 = 9223372036854775808.0;
  if (std::isnan(v)) return 0;
  if (v >= kTwo63) return INT64_MAX;
  if (v < -kTwo63) return INT64_MIN;
  return static_cast<int64_t>(v);  // truncates toward zero
}

// Writes an integer-typed element, wrapping modulo 2^bits (two's complement).
void store_wrapped(DType t, void* data, int64_t i, int64_t v) {
  const auto u = static_cast<uint64_t>(v);
  switch (t) {
    case DType::I8: write_elem(data, i, static_cast<int8_t>(u)); break;
    case DType::U8: write_elem(data, i, static_cast<uint8_t>(u)); break;
    case DType::I16: write_elem(data, i, static_cast<int16_t>(u)); break;
    case DType::U16: write_elem(data, i, static_cast<uint16_t>(u)); break;
    case DType::I32: write_elem(data, i, static_cast<int32_t>(u)); break;
    case DType::I64: write_elem(data, i, v); break;
    default: LUMINAL_ASSERT(false, "store_wrapped: not an integer dtype");
  }
}

// Writes a float-typed element from an f32 value (F64 is handled by the callers).
void store_float_from_f32(DType t, void* data, int64_t i, float f) {
  switch (t) {
    case DType::F32: write_elem(data, i, f); break;
    case DType::TF32: write_elem(data, i, round_to_tf32(f)); break;
    case DType::F16: write_elem(data, i, f32_to_f16_bits(f)); break;
    case DType::BF16: write_elem(data, i, f32_to_bf16_bits(f)); break;
    case DType::F8E4M3: write_elem(data, i, f32_to_f8e4m3_bits(f)); break;
    case DType::F8E5M2: write_elem(data, i, f32_to_f8e5m2_bits(f)); break;
    default: LUMINAL_ASSERT(false, "store_float_from_f32: not a sub-64-bit float dtype");
  }
}

}  // namespace

double load_as_double(DType t, const void* data, int64_t i) {
  switch (t) {
    case DType::F32: return read_elem<float>(data, i);
    case DType::F64: return read_elem<double>(data, i);
    case DType::F16: return f16_bits_to_f32(read_elem<uint16_t>(data, i));
    case DType::BF16: return bf16_bits_to_f32(read_elem<uint16_t>(data, i));
    case DType::TF32: return read_elem<float>(data, i);
    case DType::F8E4M3: return f8e4m3_bits_to_f32(read_elem<uint8_t>(data, i));
    case DType::F8E5M2: return f8e5m2_bits_to_f32(read_elem<uint8_t>(data, i));
    case DType::I8:
    case DType::U8:
    case DType::I16:
    case DType::U16:
    case DType::I32:
    case DType::I64:
    case DType::Bool: return static_cast<double>(load_as_int64(t, data, i));
    default: break;
  }
  internal_error(__FILE__, __LINE__,
                 "load_as_double: " + std::string(name(t)) +
                     " is a block-quantized type (dequantize it first)");
}

int64_t load_as_int64(DType t, const void* data, int64_t i) {
  switch (t) {
    case DType::I8: return read_elem<int8_t>(data, i);
    case DType::U8: return read_elem<uint8_t>(data, i);
    case DType::I16: return read_elem<int16_t>(data, i);
    case DType::U16: return read_elem<uint16_t>(data, i);
    case DType::I32: return read_elem<int32_t>(data, i);
    case DType::I64: return read_elem<int64_t>(data, i);
    case DType::Bool: return read_elem<uint8_t>(data, i) != 0 ? 1 : 0;
    default: return double_to_int64_sat(load_as_double(t, data, i));
  }
}

void store_from_double(DType t, void* data, int64_t i, double v) {
  if (t == DType::F64) {
    write_elem(data, i, v);
  } else if (t == DType::Bool) {
    write_elem<uint8_t>(data, i, v != 0 ? 1 : 0);
  } else if (is_integer(t)) {
    store_wrapped(t, data, i, double_to_int64_sat(v));
  } else {
    store_float_from_f32(t, data, i, static_cast<float>(v));
  }
}

void store_from_int64(DType t, void* data, int64_t i, int64_t v) {
  if (t == DType::F64) {
    write_elem(data, i, static_cast<double>(v));
  } else if (t == DType::Bool) {
    write_elem<uint8_t>(data, i, v != 0 ? 1 : 0);
  } else if (is_integer(t)) {
    store_wrapped(t, data, i, v);
  } else {
    store_float_from_f32(t, data, i, static_cast<float>(v));
  }
}

}  // namespace luminal
