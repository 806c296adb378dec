// Exact block decoders (see blocks.hpp): gguf-py's operations in its order, in f32.
// luminal/CMakeLists.txt compiles this file with -ffp-contract=off (no a * b + c becomes an FMA).
#include <cstring>
#include <random>
#include <string>

#include "luminal/core/blocks.hpp"
#include "luminal/core/error.hpp"

namespace luminal::blocks {

namespace {

float from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

float f16(const uint8_t* p) {
  return from_bits(f16_to_f32_bits(static_cast<uint16_t>(p[0] | (p[1] << 8))));
}

// ---- per-block kernels: one block of `in` to block_size floats of `out` ----

void block_q8_0(const uint8_t* in, float* out) {
  const float d = f16(in);
  for (int j = 0; j < 32; ++j)
    out[j] = static_cast<float>(static_cast<int8_t>(in[2 + j])) * d;
}

void block_q4_0(const uint8_t* in, float* out) {
  const float d = f16(in);
  const uint8_t* qs = in + 2;
  for (int j = 0; j < 16; ++j) {
    out[j] = d * static_cast<float>((qs[j] & 0x0f) - 8);
    out[j + 16] = d * static_cast<float>((qs[j] >> 4) - 8);
  }
}

void block_q4_1(const uint8_t* in, float* out) {
  const float d = f16(in);
  const float m = f16(in + 2);
  const uint8_t* qs = in + 4;
  for (int j = 0; j < 16; ++j) {
    const float lo = d * static_cast<float>(qs[j] & 0x0f);
    const float hi = d * static_cast<float>(qs[j] >> 4);
    out[j] = lo + m;
    out[j + 16] = hi + m;
  }
}

uint32_t u32le(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) |
         (static_cast<uint32_t>(p[2]) << 16) | (static_cast<uint32_t>(p[3]) << 24);
}

// The 5-bit quants of Q5_0 / Q5_1: low nibbles from qs, bit 4 from qh.
void q5_values(const uint8_t* qh_bytes, const uint8_t* qs, int* q) {
  const uint32_t qh = u32le(qh_bytes);
  for (int j = 0; j < 16; ++j) {
    q[j] = (qs[j] & 0x0f) | static_cast<int>(((qh >> j) & 1u) << 4);
    q[j + 16] = (qs[j] >> 4) | static_cast<int>(((qh >> (j + 16)) & 1u) << 4);
  }
}

void block_q5_0(const uint8_t* in, float* out) {
  const float d = f16(in);
  int q[32];
  q5_values(in + 2, in + 6, q);
  for (int j = 0; j < 32; ++j)
    out[j] = d * static_cast<float>(q[j] - 16);
}

void block_q5_1(const uint8_t* in, float* out) {
  const float d = f16(in);
  const float m = f16(in + 2);
  int q[32];
  q5_values(in + 4, in + 8, q);
  for (int j = 0; j < 32; ++j) {
    const float dq = d * static_cast<float>(q[j]);
    out[j] = dq + m;
  }
}

// Q4_K (qh == nullptr) and Q5_K.
void block_qk(const uint8_t* in, const uint8_t* qh, const uint8_t* qs, float* out) {
  const float d = f16(in);
  const float dmin = f16(in + 2);
  int sc[8], mn[8];
  k_scale_min(in + 4, sc, mn);
  for (int i = 0; i < 8; ++i) {
    const float dl = d * static_cast<float>(sc[i]);
    const float ml = dmin * static_cast<float>(mn[i]);
    const uint8_t* chunk = qs + (i / 2) * 32;
    const int shift = (i % 2) * 4;
    for (int l = 0; l < 32; ++l) {
      int q = (chunk[l] >> shift) & 0x0f;
      if (qh) q |= ((qh[l] >> i) & 1) << 4;
      const float dq = dl * static_cast<float>(q);
      out[i * 32 + l] = dq - ml;
    }
  }
}

void block_q4_k(const uint8_t* in, float* out) { block_qk(in, nullptr, in + 16, out); }
void block_q5_k(const uint8_t* in, float* out) { block_qk(in, in + 16, in + 48, out); }

void block_q6_k(const uint8_t* in, float* out) {
  const uint8_t* ql = in;
  const uint8_t* qh = in + 128;
  const int8_t* scales = reinterpret_cast<const int8_t*>(in + 192);
  const float d = f16(in + 208);
  float ds[16];
  for (int s = 0; s < 16; ++s)
    ds[s] = d * static_cast<float>(scales[s]);
  // Chunk c of 32 values (half h = c / 4, k = c % 4): low bits from nibble k / 2 of
  // ql[h * 64 + (k % 2) * 32 + l], high bits from bits 2k of qh[h * 32 + l].
  for (int c = 0; c < 8; ++c) {
    const int h = c / 4, k = c % 4;
    for (int l = 0; l < 32; ++l) {
      const int lo = (ql[h * 64 + (k % 2) * 32 + l] >> ((k / 2) * 4)) & 0x0f;
      const int hi = (qh[h * 32 + l] >> (2 * k)) & 0x03;
      const int q = (lo | (hi << 4)) - 32;
      const int e = c * 32 + l;
      out[e] = ds[e / 16] * static_cast<float>(q);
    }
  }
}

void block_q8_1(const uint8_t* in, float* out) {
  const float d = f16(in);
  for (int j = 0; j < 32; ++j)
    out[j] = static_cast<float>(static_cast<int8_t>(in[4 + j])) * d;
}

void block_q8_k(const uint8_t* in, float* out) {
  float d;
  std::memcpy(&d, in, 4);
  for (int j = 0; j < 256; ++j)
    out[j] = static_cast<float>(static_cast<int8_t>(in[4 + j])) * d;
}

using BlockFn = void (*)(const uint8_t*, float*);

BlockFn block_fn(DType t) {
  switch (t) {
    case DType::Q8_0: return block_q8_0;
    case DType::Q8_1: return block_q8_1;
    case DType::Q4_0: return block_q4_0;
    case DType::Q4_1: return block_q4_1;
    case DType::Q5_0: return block_q5_0;
    case DType::Q5_1: return block_q5_1;
    case DType::Q4_K: return block_q4_k;
    case DType::Q5_K: return block_q5_k;
    case DType::Q6_K: return block_q6_k;
    case DType::Q8_K: return block_q8_k;
    default: return nullptr;
  }
}

}  // namespace

uint32_t f16_to_f32_bits(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  if (exp == 0x1f) return sign | 0x7f800000u | (mant << 13);
  if (exp != 0) return sign | ((exp + 112) << 23) | (mant << 13);
  if (mant == 0) return sign;
  // Subnormal half: normalise (every one is a normal single).
  uint32_t e = 113;
  while ((mant & 0x400u) == 0) {
    mant <<= 1;
    --e;
  }
  return sign | (e << 23) | ((mant & 0x3ffu) << 13);
}

void k_scale_min(const uint8_t s[12], int sc[8], int mn[8]) {
  for (int i = 0; i < 4; ++i) {
    sc[i] = s[i] & 0x3f;
    mn[i] = s[i + 4] & 0x3f;
    sc[i + 4] = (s[i + 8] & 0x0f) | ((s[i] >> 2) & 0x30);
    mn[i + 4] = (s[i + 8] >> 4) | ((s[i + 4] >> 2) & 0x30);
  }
}

void dequantize(DType t, const uint8_t* in, float* out, int64_t n) {
  const BlockFn fn = block_fn(t);
  LUMINAL_ASSERT(fn != nullptr,
                 "blocks::dequantize: " + std::string(name(t)) + " is not a block type");
  const int64_t bs = block_size(t), bb = block_bytes(t);
  LUMINAL_ASSERT(n % bs == 0, "blocks::dequantize: not a whole number of blocks");
  for (int64_t b = 0; b < n / bs; ++b)
    fn(in + b * bb, out + b * bs);
}

uint64_t block_byte_offset(DType t, int64_t element, int64_t row) {
  LUMINAL_ASSERT(row > 0 && element % row == 0 && row % block_size(t) == 0,
                 "block_byte_offset: " + std::to_string(element) + " does not start a row of " +
                     std::to_string(row) + " " + std::string(name(t)) + " values");
  return storage_bytes(t, element);
}

void fill_valid_blocks(DType t, std::span<uint8_t> bytes, uint64_t seed) {
  const int64_t bb = block_bytes(t);
  LUMINAL_ASSERT(is_block(t) && bytes.size() % static_cast<size_t>(bb) == 0,
                 "fill_valid_blocks: not a whole number of blocks");
  std::mt19937_64 rng(seed);
  for (uint8_t& b : bytes)
    b = static_cast<uint8_t>(rng());
  const uint16_t scale = f32_to_f16_bits(1.0f / 256.0f), minv = f32_to_f16_bits(-1.0f / 16.0f);
  auto put16 = [](uint8_t* p, uint16_t v) { std::memcpy(p, &v, 2); };
  for (size_t o = 0; o < bytes.size(); o += static_cast<size_t>(bb)) {
    uint8_t* p = bytes.data() + o;
    switch (t) {
      case DType::Q4_0:
      case DType::Q5_0:
      case DType::Q8_0: put16(p, scale); break;
      case DType::Q4_1:
      case DType::Q5_1:
      case DType::Q4_K:
      case DType::Q5_K: put16(p, scale), put16(p + 2, minv); break;
      case DType::Q8_1: {  // s = f16(d * sum q)
        int sum = 0;
        for (int j = 0; j < 32; ++j)
          sum += static_cast<int8_t>(p[4 + j]);
        put16(p, scale);
        put16(p + 2, f32_to_f16_bits(f16_bits_to_f32(scale) * static_cast<float>(sum)));
        break;
      }
      case DType::Q6_K: put16(p + 208, scale); break;
      case DType::Q8_K: {
        const float d = 1.0f / 256.0f;
        std::memcpy(p, &d, 4);
        for (int g = 0; g < 16; ++g) {
          int16_t sum = 0;
          for (int j = 0; j < 16; ++j)
            sum = static_cast<int16_t>(sum + static_cast<int8_t>(p[4 + 16 * g + j]));
          std::memcpy(p + 260 + 2 * g, &sum, 2);
        }
        break;
      }
      default: break;
    }
  }
}

DType activation_format(DType t) {
  switch (t) {
    case DType::Q4_0:
    case DType::Q5_0:
    case DType::Q8_0: return DType::Q8_0;
    case DType::Q4_1:
    case DType::Q5_1: return DType::Q8_1;
    case DType::Q4_K:
    case DType::Q5_K:
    case DType::Q6_K: return DType::Q8_K;
    default:
      LUMINAL_ASSERT(false,
                     "activation_format: " + std::string(name(t)) + " is not a weight block type");
      return t;
  }
}

}  // namespace luminal::blocks
