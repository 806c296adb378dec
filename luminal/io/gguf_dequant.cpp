// GGUF dequantisation, bit-exact with gguf.quants.dequantize (gguf-py). Every formula below is
// the reference's, operation for operation, in f32; luminal/CMakeLists.txt compiles this file
// with -ffp-contract=off so that no a * b + c becomes an FMA.
#include "luminal/io/gguf_dequant.hpp"

#include <algorithm>
#include <cstring>

namespace luminal::io {

namespace {

constexpr GgmlType kSupported[] = {GgmlType::F32,  GgmlType::F16,  GgmlType::BF16, GgmlType::Q8_0,
                                   GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1,
                                   GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K};

float from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// IEEE half -> single, exactly, on the bits (NaN payloads move into the top of the f32 mantissa,
// as numpy's conversion does; no arithmetic, so signalling NaNs stay signalling).
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

float f16(const uint8_t* p) {
  return from_bits(f16_to_f32_bits(static_cast<uint16_t>(p[0] | (p[1] << 8))));
}

void put_bits(float* out, uint32_t u) { std::memcpy(out, &u, 4); }

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

// The eight 6-bit scales and mins of Q4_K / Q5_K, packed in 12 bytes.
void k_scale_min(const uint8_t* s, int* sc, int* mn) {
  for (int i = 0; i < 4; ++i) {
    sc[i] = s[i] & 0x3f;
    mn[i] = s[i + 4] & 0x3f;
    sc[i + 4] = (s[i + 8] & 0x0f) | ((s[i] >> 2) & 0x30);
    mn[i + 4] = (s[i + 8] >> 4) | ((s[i + 4] >> 2) & 0x30);
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

using BlockFn = void (*)(const uint8_t*, float*);

BlockFn block_fn(GgmlType t) {
  switch (t) {
    case GgmlType::Q8_0: return block_q8_0;
    case GgmlType::Q4_0: return block_q4_0;
    case GgmlType::Q4_1: return block_q4_1;
    case GgmlType::Q5_0: return block_q5_0;
    case GgmlType::Q5_1: return block_q5_1;
    case GgmlType::Q4_K: return block_q4_k;
    case GgmlType::Q5_K: return block_q5_k;
    case GgmlType::Q6_K: return block_q6_k;
    default: return nullptr;
  }
}

}  // namespace

bool can_dequantize(GgmlType t) {
  for (GgmlType s : kSupported)
    if (s == t) return true;
  return false;
}

std::string dequantizable_types() {
  std::string s;
  for (GgmlType t : kSupported)
    s += (s.empty() ? "" : ", ") + std::string(ggml_type_name(t));
  return s;
}

void dequantize_blocks(GgmlType type, std::span<const uint8_t> bytes, std::span<float> out) {
  const auto info = ggml_type_info(static_cast<uint32_t>(type));
  if (!info || !can_dequantize(type)) {
    throw Error("dequantising ggml type " +
                (info ? std::string(info->name) : std::to_string(static_cast<uint32_t>(type))) +
                " is not supported (supported: " + dequantizable_types() + ")");
  }
  const uint64_t n = out.size();
  const uint64_t bs = static_cast<uint64_t>(info->block_size);
  const uint64_t ts = static_cast<uint64_t>(info->type_size);
  if (n % bs != 0 || bytes.size() != n / bs * ts) {
    throw Error(
        "dequantising " + std::string(info->name) + ": " + std::to_string(n) + " values need " +
        (n % bs ? "a multiple of " + std::to_string(bs) : std::to_string(n / bs * ts) + " bytes") +
        ", got " + std::to_string(bytes.size()) + " bytes");
  }
  const uint8_t* in = bytes.data();
  float* o = out.data();
  switch (type) {
    case GgmlType::F32: {
      if (n) std::memcpy(o, in, n * 4);
      return;
    }
    case GgmlType::F16: {
      for (uint64_t i = 0; i < n; ++i)
        put_bits(o + i, f16_to_f32_bits(static_cast<uint16_t>(in[2 * i] | (in[2 * i + 1] << 8))));
      return;
    }
    case GgmlType::BF16: {
      for (uint64_t i = 0; i < n; ++i)
        put_bits(o + i,
                 (static_cast<uint32_t>(in[2 * i]) | (static_cast<uint32_t>(in[2 * i + 1]) << 8))
                     << 16);
      return;
    }
    default: break;
  }
  const BlockFn fn = block_fn(type);
  for (uint64_t b = 0; b < n / bs; ++b)
    fn(in + b * ts, o + b * bs);
}

void dequantize_into(const GgufTensor& t, std::span<float> out, ProgressMeter* meter) {
  const std::string where = "gguf '" + t.file + "': tensor '" + t.name + "': ";
  if (!can_dequantize(t.type)) {
    throw Error(where + "dequantising " + std::string(ggml_type_name(t.type)) +
                " is not supported (supported: " + dequantizable_types() + ")");
  }
  if (out.size() != static_cast<uint64_t>(t.numel())) {
    throw Error(where + "the output buffer has " + std::to_string(out.size()) +
                " floats, the tensor " + std::to_string(t.numel()) + " values");
  }
  try {
    const GgmlTypeInfo info = ggml_type_info(t.type);
    const uint64_t bs = static_cast<uint64_t>(info.block_size);
    const uint64_t ts = static_cast<uint64_t>(info.type_size);
    const uint64_t n = out.size();
    if (!meter || n % bs != 0 || t.data.size() != n / bs * ts) {
      dequantize_blocks(t.type, t.data, out);  // (its errors describe a bad size)
      if (meter) meter->advance(n * 4);
      return;
    }
    const uint64_t chunk = std::max<uint64_t>(1, (uint64_t(1) << 20) / bs) * bs;  // values
    for (uint64_t v = 0; v < n; v += chunk) {
      const uint64_t m = std::min(chunk, n - v);
      dequantize_blocks(t.type, t.data.subspan(v / bs * ts, m / bs * ts), out.subspan(v, m));
      meter->advance(m * 4);
    }
  } catch (const Error& e) {
    throw Error(where + e.what());
  }
}

std::vector<float> dequantize(const GgufTensor& t) {
  std::vector<float> out(static_cast<size_t>(t.numel()));
  dequantize_into(t, out);
  return out;
}

}  // namespace luminal::io
