// The portable quantized kernels: plain C++, the reference of the canonical arithmetic every ISA
// unit reproduces bit for bit (kernels.hpp). Per output and per block (32 values, or a K type's
// super-block of 256):
//
//   int32 lane l (0..7) = sum of w(v) * a(v) over the block's values v with (v % 32) / 4 == l,
//                         where a is the activation's int8 quant and w the weight's integer
//                         factor: q - 8 (Q4_0), q (Q4_1), q - 16 (Q5_0), q (Q5_1), q (Q8_0),
//                         scale_i * q (Q4_K, Q5_K), scale_s * (q - 32) (Q6_K)
//   lane[l] = fma(float(int32 lane l), d_w * d_a, lane[l])      (d_w * d_a rounded to f32)
//   scalar  = fma(m_w, s_a, scalar)                              (Q4_1, Q5_1)
//   scalar  = fma(-(dmin_w * d_a), float(sum_i mn_i * (bsums[2i] + bsums[2i+1])), scalar)
//                                                                (Q4_K, Q5_K)
//   result  = (((lane0 + lane4) + (lane2 + lane6)) + ((lane1 + lane5) + (lane3 + lane7))) + scalar
//
// Every integer is exact (no int16 or int32 overflow for any input), so only the float steps
// above, each rounded once, decide the result. Compiled with -ffp-contract=off.
#include <cmath>
#include <cstring>

#include "luminal/core/blocks.hpp"
#include "luminal/core/dtype.hpp"
#include "luminal/core/quantize_ref.hpp"
#include "luminal/cpu/quant/kernels.hpp"

namespace luminal::cpu::quant {

namespace {

float f16_at(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return f16_bits_to_f32(h);
}

float f32_at(const uint8_t* p) {
  float f;
  std::memcpy(&f, p, 4);
  return f;
}

// The canonical accumulator of one output.
struct Acc {
  float lane[8] = {};
  float scalar = 0;

  void block(const int32_t il[8], float dd) {
    for (int l = 0; l < 8; ++l)
      lane[l] = std::fma(static_cast<float>(il[l]), dd, lane[l]);
  }
  void add_scalar(float a, float b) { scalar = std::fma(a, b, scalar); }
  float result() const {
    const float s =
        ((lane[0] + lane[4]) + (lane[2] + lane[6])) + ((lane[1] + lane[5]) + (lane[3] + lane[7]));
    return s + scalar;
  }
};

// The 32 nibble quants of a Q4 block (value j < 16: low nibble of qs[j]; j + 16: high nibble).
void nibbles(const uint8_t* qs, int* q) {
  for (int j = 0; j < 16; ++j) {
    q[j] = qs[j] & 0x0f;
    q[j + 16] = qs[j] >> 4;
  }
}

// Adds bit j of the little-endian u32 at `qh` as bit 4 of q[j].
void fifth_bits(const uint8_t* qh, int* q) {
  uint32_t h;
  std::memcpy(&h, qh, 4);
  for (int j = 0; j < 32; ++j)
    q[j] |= static_cast<int>((h >> j) & 1u) << 4;
}

// The integer factors of one legacy weight block, and its d (and m).
struct LegacyBlock {
  int w[32];
  float d = 0, m = 0;
};

template <WeightIndex T>
LegacyBlock legacy_block(const uint8_t* b) {
  LegacyBlock k;
  k.d = f16_at(b);
  if constexpr (T == kQ4_0) {
    nibbles(b + 2, k.w);
    for (int& v : k.w)
      v -= 8;
  } else if constexpr (T == kQ4_1) {
    k.m = f16_at(b + 2);
    nibbles(b + 4, k.w);
  } else if constexpr (T == kQ5_0) {
    nibbles(b + 6, k.w);
    fifth_bits(b + 2, k.w);
    for (int& v : k.w)
      v -= 16;
  } else if constexpr (T == kQ5_1) {
    k.m = f16_at(b + 2);
    nibbles(b + 8, k.w);
    fifth_bits(b + 4, k.w);
  } else {
    for (int j = 0; j < 32; ++j)
      k.w[j] = static_cast<int8_t>(b[2 + j]);
  }
  return k;
}

constexpr int legacy_bytes(WeightIndex t) {
  return t == kQ4_0 ? 18 : t == kQ4_1 ? 20 : t == kQ5_0 ? 22 : t == kQ5_1 ? 24 : 34;
}

// 8 int32 lanes of sum w(v) * a(v) over 32 values.
void lanes32(const int* w, const int8_t* a, int32_t* il, int scale_lo = 1, int scale_hi = 1) {
  for (int l = 0; l < 8; ++l) {
    int32_t s = 0;
    for (int j = 4 * l; j < 4 * l + 4; ++j)
      s += w[j] * a[j];
    il[l] += s * (l < 4 ? scale_lo : scale_hi);
  }
}

template <WeightIndex T>
void dot_legacy(int64_t nb, const uint8_t* const* w_rows, int rows, const uint8_t* xq,
                int64_t xq_stride, int m, float* out, int64_t out_rs, int64_t out_ms) {
  constexpr bool kMin = T == kQ4_1 || T == kQ5_1;
  constexpr int kWb = legacy_bytes(T), kAb = kMin ? 36 : 34, kAq = kMin ? 4 : 2;
  for (int r = 0; r < rows; ++r) {
    for (int i = 0; i < m; ++i) {
      Acc acc;
      for (int64_t b = 0; b < nb; ++b) {
        const LegacyBlock wb = legacy_block<T>(w_rows[r] + b * kWb);
        const uint8_t* ab = xq + i * xq_stride + b * kAb;
        int32_t il[8] = {};
        lanes32(wb.w, reinterpret_cast<const int8_t*>(ab + kAq), il);
        acc.block(il, wb.d * f16_at(ab));
        if constexpr (kMin) acc.add_scalar(wb.m, f16_at(ab + 2));
      }
      out[r * out_rs + i * out_ms] = acc.result();
    }
  }
}

// One K-type super-block against one Q8_K block: the int32 lanes, d_w, and the scalar term.
template <WeightIndex T>
void k_block(const uint8_t* b, const uint8_t* ab, Acc& acc) {
  const int8_t* a = reinterpret_cast<const int8_t*>(ab + 4);
  int16_t bsums[16];
  std::memcpy(bsums, ab + 260, sizeof bsums);
  const float da = f32_at(ab);
  int32_t il[8] = {};
  if constexpr (T == kQ6_K) {
    const uint8_t* ql = b;
    const uint8_t* qh = b + 128;
    const int8_t* sc = reinterpret_cast<const int8_t*>(b + 192);
    for (int c = 0; c < 8; ++c) {
      const int h = c / 4, k = c % 4;
      int q[32];
      for (int l = 0; l < 32; ++l) {
        const int lo = (ql[64 * h + 32 * (k % 2) + l] >> (4 * (k / 2))) & 0x0f;
        const int hi = (qh[32 * h + l] >> (2 * k)) & 0x03;
        q[l] = (lo | (hi << 4)) - 32;
      }
      lanes32(q, a + 32 * c, il, sc[2 * c], sc[2 * c + 1]);
    }
    acc.block(il, f16_at(b + 208) * da);
  } else {
    const uint8_t* qh = T == kQ5_K ? b + 16 : nullptr;
    const uint8_t* qs = T == kQ5_K ? b + 48 : b + 16;
    int sc[8], mn[8];
    blocks::k_scale_min(b + 4, sc, mn);
    for (int i = 0; i < 8; ++i) {
      int q[32];
      for (int l = 0; l < 32; ++l) {
        q[l] = (qs[(i / 2) * 32 + l] >> (4 * (i % 2))) & 0x0f;
        if (qh) q[l] |= ((qh[l] >> i) & 1) << 4;
      }
      lanes32(q, a + 32 * i, il, sc[i], sc[i]);
    }
    int32_t msum = 0;
    for (int i = 0; i < 8; ++i)
      msum += mn[i] * (bsums[2 * i] + bsums[2 * i + 1]);
    acc.block(il, f16_at(b) * da);
    acc.add_scalar(-(f16_at(b + 2) * da), static_cast<float>(msum));
  }
}

template <WeightIndex T>
void dot_k(int64_t nb, const uint8_t* const* w_rows, int rows, const uint8_t* xq, int64_t xq_stride,
           int m, float* out, int64_t out_rs, int64_t out_ms) {
  constexpr int kWb = T == kQ4_K ? 144 : T == kQ5_K ? 176 : 210;
  for (int r = 0; r < rows; ++r) {
    for (int i = 0; i < m; ++i) {
      Acc acc;
      for (int64_t b = 0; b < nb; ++b)
        k_block<T>(w_rows[r] + b * kWb, xq + i * xq_stride + b * 292, acc);
      out[r * out_rs + i * out_ms] = acc.result();
    }
  }
}

template <WeightIndex T>
void repack_q8_0(const uint8_t* const* w_rows, int rows, int64_t nb, uint8_t* out) {
  for (int r = 0; r < rows; ++r)
    for (int64_t b = 0; b < nb; ++b, out += 34) {
      const uint8_t* src = w_rows[r] + b * legacy_bytes(T);
      const LegacyBlock wb = legacy_block<T>(src);
      std::memcpy(out, src, 2);  // d
      for (int j = 0; j < 32; ++j)
        out[2 + j] = static_cast<uint8_t>(static_cast<int8_t>(wb.w[j]));
    }
}

constexpr QuantKernels kPortable = {
    "portable",
    {blocks::quantize_q8_0, blocks::quantize_q8_1, blocks::quantize_q8_k},
    {dot_legacy<kQ4_0>, dot_legacy<kQ4_1>, dot_legacy<kQ5_0>, dot_legacy<kQ5_1>, dot_legacy<kQ8_0>,
     dot_k<kQ4_K>, dot_k<kQ5_K>, dot_k<kQ6_K>},
    {repack_q8_0<kQ4_0>, nullptr, repack_q8_0<kQ5_0>, nullptr, nullptr, nullptr, nullptr, nullptr},
    {},
    {},
};

}  // namespace

const QuantKernels* kernels_portable() { return &kPortable; }

}  // namespace luminal::cpu::quant
