// The device decoders of GGUF blocks (see quant_device.hpp). Layouts: core/blocks.hpp.
#include "luminal/cuda/quant_device.hpp"

namespace luminal::cuda {

namespace {

// Element decoders: core/dequant.cpp's operations, each an explicitly rounded f32 operation
// (kernels are compiled with --fmad=false as well). f16 fields go through the hardware
// conversion, exact for every finite half (NaN payloads aside).
const char* kElementSource = R"(
typedef unsigned char S_q4_0; typedef unsigned char S_q4_1; typedef unsigned char S_q5_0;
typedef unsigned char S_q5_1; typedef unsigned char S_q8_0; typedef unsigned char S_q8_1;
typedef unsigned char S_q4_k; typedef unsigned char S_q5_k; typedef unsigned char S_q6_k;
typedef unsigned char S_q8_k;
LMN float lmn_hf(const unsigned char* p) { return ldm_f16(__ldg((const unsigned short*)p)); }
LMN unsigned int lmn_b(const unsigned char* p) { return __ldg(p); }
LMN unsigned int lmn_nib(const unsigned char* qs, int e) {
  const unsigned int b = lmn_b(qs + (e & 15));
  return e < 16 ? (b & 15u) : (b >> 4);
}
LMN unsigned int lmn_q5(const unsigned char* qh, const unsigned char* qs, int e) {
  const unsigned int h = lmn_b(qh + (e >> 3));
  return lmn_nib(qs, e) | (((h >> (e & 7)) & 1u) << 4);
}
LMN float lmn_deq_q4_0(const unsigned char* p, int e) {
  return __fmul_rn(lmn_hf(p), (float)((int)lmn_nib(p + 2, e) - 8));
}
LMN float lmn_deq_q4_1(const unsigned char* p, int e) {
  return __fadd_rn(__fmul_rn(lmn_hf(p), (float)lmn_nib(p + 4, e)), lmn_hf(p + 2));
}
LMN float lmn_deq_q5_0(const unsigned char* p, int e) {
  return __fmul_rn(lmn_hf(p), (float)((int)lmn_q5(p + 2, p + 6, e) - 16));
}
LMN float lmn_deq_q5_1(const unsigned char* p, int e) {
  return __fadd_rn(__fmul_rn(lmn_hf(p), (float)lmn_q5(p + 4, p + 8, e)), lmn_hf(p + 2));
}
LMN float lmn_deq_q8_0(const unsigned char* p, int e) {
  return __fmul_rn((float)(signed char)lmn_b(p + 2 + e), lmn_hf(p));
}
LMN void lmn_k_scale_min(const unsigned char* s, int i, int& sc, int& mn) {
  if (i < 4) {
    sc = (int)(lmn_b(s + i) & 63u);
    mn = (int)(lmn_b(s + i + 4) & 63u);
  } else {
    sc = (int)((lmn_b(s + i + 4) & 15u) | ((lmn_b(s + i - 4) >> 6) << 4));
    mn = (int)((lmn_b(s + i + 4) >> 4) | ((lmn_b(s + i) >> 6) << 4));
  }
}
LMN float lmn_deq_qk(const unsigned char* p, const unsigned char* qh, const unsigned char* qs, int e) {
  const int i = e >> 5, l = e & 31;
  int sc, mn;
  lmn_k_scale_min(p + 4, i, sc, mn);
  const float dl = __fmul_rn(lmn_hf(p), (float)sc);
  const float ml = __fmul_rn(lmn_hf(p + 2), (float)mn);
  unsigned int q = (lmn_b(qs + (i >> 1) * 32 + l) >> ((i & 1) * 4)) & 15u;
  if (qh) q |= ((lmn_b(qh + l) >> i) & 1u) << 4;
  return __fsub_rn(__fmul_rn(dl, (float)q), ml);
}
LMN float lmn_deq_q4_k(const unsigned char* p, int e) { return lmn_deq_qk(p, nullptr, p + 16, e); }
LMN float lmn_deq_q5_k(const unsigned char* p, int e) { return lmn_deq_qk(p, p + 16, p + 48, e); }
LMN float lmn_deq_q6_k(const unsigned char* p, int e) {
  const int c = e >> 5, h = c >> 2, k = c & 3, l = e & 31;
  const unsigned int lo = (lmn_b(p + h * 64 + (k & 1) * 32 + l) >> ((k >> 1) * 4)) & 15u;
  const unsigned int hi = (lmn_b(p + 128 + h * 32 + l) >> (2 * k)) & 3u;
  const int q = (int)(lo | (hi << 4)) - 32;
  const float ds = __fmul_rn(lmn_hf(p + 208), (float)(signed char)lmn_b(p + 192 + (e >> 4)));
  return __fmul_rn(ds, (float)q);
}
)";

// The GEMV's unit decoders. A small integer q becomes a float exactly as
// (2^23 + q as bits) - 2^23, minus the type's offset in the same subtraction: where q is a whole
// byte of a word (the nibbles of 4 bytes masked at once), one byte permute builds the bits, so a
// value costs a permute and an add where a conversion instruction runs at a quarter of the FMA
// rate.
const char* kUnitSource = R"(
LMN float lmn_qf(unsigned int q, float bias) { return __fsub_rn(__uint_as_float(0x4B000000u | q), bias); }
LMN unsigned int lmn_u16(const unsigned char* p) { return __ldg((const unsigned short*)p); }
LMN unsigned int lmn_w16(const unsigned char* p) { return lmn_u16(p) | (lmn_u16(p + 2) << 16); }
LMN unsigned int lmn_byte(const unsigned int* w, int j) { return (w[j >> 2] >> ((j & 3) * 8)) & 255u; }
LMN float lmn_h16(unsigned int h) { return ldm_f16((unsigned short)(h & 0xFFFFu)); }
/* Byte b of w as a float, less `bias` (2^23 + the offset): 0x4B0000 above the byte. */
LMN float lmn_pf(unsigned int w, int b, float bias) {
  return __fsub_rn(__uint_as_float(__byte_perm(w, 0x4B000000u, 0x7650u | (unsigned int)b)), bias);
}
/* The 4 bytes of w as q[0..3]. */
LMN void lmn_bytes4(unsigned int w, float* q, float bias) {
#pragma unroll
  for (int b = 0; b < 4; ++b) q[b] = lmn_pf(w, b, bias);
}
/* 16 bytes of 4-bit quants: q[j] low nibble of byte j, q[j + 16] its high nibble. */
LMN void lmn_nibbles(const unsigned int* w, float* q, float bias) {
#pragma unroll
  for (int t = 0; t < 4; ++t) {
    lmn_bytes4(w[t] & 0x0F0F0F0Fu, q + 4 * t, bias);
    lmn_bytes4((w[t] >> 4) & 0x0F0F0F0Fu, q + 16 + 4 * t, bias);
  }
}
LMN void lmn_nibbles5(const unsigned int* w, unsigned int qh, float* q, float bias) {
#pragma unroll
  for (int j = 0; j < 16; ++j) {
    const unsigned int b = lmn_byte(w, j);
    q[j] = lmn_qf((b & 15u) | (((qh >> j) & 1u) << 4), bias);
    q[j + 16] = lmn_qf((b >> 4) | (((qh >> (j + 16)) & 1u) << 4), bias);
  }
}
struct QT_q4_0 {
  enum { BB = 18, UPB = 1, HAS_B = 0 };
  struct Raw { unsigned int d, w[4]; };
  static LMN void load(const unsigned char* row, int u, Raw& r) {
    const unsigned char* p = row + u * 18;
    r.d = lmn_u16(p);
#pragma unroll
    for (int t = 0; t < 4; ++t) r.w[t] = lmn_w16(p + 2 + 4 * t);
  }
  static LMN void dec(const Raw& r, float* q, float& a0, float& a1, float& b) {
    lmn_nibbles(r.w, q, 8388616.0f);
    a0 = a1 = lmn_h16(r.d);
    b = 0.0f;
  }
};
struct QT_q4_1 {
  enum { BB = 20, UPB = 1, HAS_B = 1 };
  struct Raw { unsigned int dm, w[4]; };
  static LMN void load(const unsigned char* row, int u, Raw& r) {
    const unsigned int* p = (const unsigned int*)(row + u * 20);
    r.dm = __ldg(p);
#pragma unroll
    for (int t = 0; t < 4; ++t) r.w[t] = __ldg(p + 1 + t);
  }
  static LMN void dec(const Raw& r, float* q, float& a0, float& a1, float& b) {
    lmn_nibbles(r.w, q, 8388608.0f);
    a0 = a1 = lmn_h16(r.dm);
    b = lmn_h16(r.dm >> 16);
  }
};
struct QT_q5_0 {
  enum { BB = 22, UPB = 1, HAS_B = 0 };
  struct Raw { unsigned int d, qh, w[4]; };
  static LMN void load(const unsigned char* row, int u, Raw& r) {
    const unsigned char* p = row + u * 22;
    r.d = lmn_u16(p);
    r.qh = lmn_w16(p + 2);
#pragma unroll
    for (int t = 0; t < 4; ++t) r.w[t] = lmn_w16(p + 6 + 4 * t);
  }
  static LMN void dec(const Raw& r, float* q, float& a0, float& a1, float& b) {
    lmn_nibbles5(r.w, r.qh, q, 8388624.0f);
    a0 = a1 = lmn_h16(r.d);
    b = 0.0f;
  }
};
struct QT_q5_1 {
  enum { BB = 24, UPB = 1, HAS_B = 1 };
  struct Raw { unsigned int dm, qh, w[4]; };
  static LMN void load(const unsigned char* row, int u, Raw& r) {
    const uint2* p = (const uint2*)(row + u * 24);
    const uint2 a = __ldg(p), c = __ldg(p + 1), e = __ldg(p + 2);
    r.dm = a.x; r.qh = a.y; r.w[0] = c.x; r.w[1] = c.y; r.w[2] = e.x; r.w[3] = e.y;
  }
  static LMN void dec(const Raw& r, float* q, float& a0, float& a1, float& b) {
    lmn_nibbles5(r.w, r.qh, q, 8388608.0f);
    a0 = a1 = lmn_h16(r.dm);
    b = lmn_h16(r.dm >> 16);
  }
};
struct QT_q8_0 {
  enum { BB = 34, UPB = 1, HAS_B = 0 };
  struct Raw { unsigned int d, w[8]; };
  static LMN void load(const unsigned char* row, int u, Raw& r) {
    const unsigned char* p = row + u * 34;
    r.d = lmn_u16(p);
#pragma unroll
    for (int t = 0; t < 8; ++t) r.w[t] = lmn_w16(p + 2 + 4 * t);
  }
  static LMN void dec(const Raw& r, float* q, float& a0, float& a1, float& b) {
    /* int8 v as (v + 128) = its byte ^ 0x80, less 128 in the subtraction */
#pragma unroll
    for (int t = 0; t < 8; ++t) lmn_bytes4(r.w[t] ^ 0x80808080u, q + 4 * t, 8388736.0f);
    a0 = a1 = lmn_h16(r.d);
    b = 0.0f;
  }
};
/* Q4_K / Q5_K: unit u is sub-block u % 8 of super-block u / 8 (16-byte aligned). */
LMN void lmn_qk_scale(const uint4& h, int i, float& a, float& b) {
  const unsigned int s[3] = {h.y, h.z, h.w};
  int sc, mn;
  if (i < 4) {
    sc = (int)(lmn_byte(s, i) & 63u);
    mn = (int)(lmn_byte(s, i + 4) & 63u);
  } else {
    sc = (int)((lmn_byte(s, i + 4) & 15u) | ((lmn_byte(s, i - 4) >> 6) << 4));
    mn = (int)((lmn_byte(s, i + 4) >> 4) | ((lmn_byte(s, i) >> 6) << 4));
  }
  a = __fmul_rn(lmn_h16(h.x), (float)sc);
  b = -__fmul_rn(lmn_h16(h.x >> 16), (float)mn);
}
struct QT_q4_k {
  enum { BB = 144, UPB = 8, HAS_B = 1 };
  struct Raw { uint4 h, q0, q1; int i; };
  static LMN void load(const unsigned char* row, int u, Raw& r) {
    const uint4* p = (const uint4*)(row + (u >> 3) * 144);
    r.i = u & 7;
    r.h = __ldg(p);
    r.q0 = __ldg(p + 1 + (r.i >> 1) * 2);
    r.q1 = __ldg(p + 2 + (r.i >> 1) * 2);
  }
  static LMN void dec(const Raw& r, float* q, float& a0, float& a1, float& b) {
    const unsigned int w[8] = {r.q0.x, r.q0.y, r.q0.z, r.q0.w, r.q1.x, r.q1.y, r.q1.z, r.q1.w};
    const int sh = (r.i & 1) * 4;
#pragma unroll
    for (int t = 0; t < 8; ++t) lmn_bytes4((w[t] >> sh) & 0x0F0F0F0Fu, q + 4 * t, 8388608.0f);
    lmn_qk_scale(r.h, r.i, a0, b);
    a1 = a0;
  }
};
struct QT_q5_k {
  enum { BB = 176, UPB = 8, HAS_B = 1 };
  struct Raw { uint4 h, h0, h1, q0, q1; int i; };
  static LMN void load(const unsigned char* row, int u, Raw& r) {
    const uint4* p = (const uint4*)(row + (u >> 3) * 176);
    r.i = u & 7;
    r.h = __ldg(p);
    r.h0 = __ldg(p + 1);
    r.h1 = __ldg(p + 2);
    r.q0 = __ldg(p + 3 + (r.i >> 1) * 2);
    r.q1 = __ldg(p + 4 + (r.i >> 1) * 2);
  }
  static LMN void dec(const Raw& r, float* q, float& a0, float& a1, float& b) {
    const unsigned int w[8] = {r.q0.x, r.q0.y, r.q0.z, r.q0.w, r.q1.x, r.q1.y, r.q1.z, r.q1.w};
    const unsigned int hb[8] = {r.h0.x, r.h0.y, r.h0.z, r.h0.w, r.h1.x, r.h1.y, r.h1.z, r.h1.w};
    const int sh = (r.i & 1) * 4;
#pragma unroll
    for (int l = 0; l < 32; ++l)
      q[l] = lmn_qf(((lmn_byte(w, l) >> sh) & 15u) | (((lmn_byte(hb, l) >> r.i) & 1u) << 4),
                    8388608.0f);
    lmn_qk_scale(r.h, r.i, a0, b);
    a1 = a0;
  }
};
/* Q6_K: unit u is chunk c = u % 8 of super-block u / 8 (2-byte aligned): values 32c .. 32c + 31,
   the first 16 scaled by scales[2c], the rest by scales[2c + 1]. */
struct QT_q6_k {
  enum { BB = 210, UPB = 8, HAS_B = 0 };
  struct Raw { unsigned int l[8], h[8], sc, d; int c; };
  static LMN void load(const unsigned char* row, int u, Raw& r) {
    const unsigned char* p = row + (u >> 3) * 210;
    r.c = u & 7;
    const int hh = r.c >> 2, k = r.c & 3;
    const unsigned char* ql = p + hh * 64 + (k & 1) * 32;
    const unsigned char* qh = p + 128 + hh * 32;
#pragma unroll
    for (int t = 0; t < 8; ++t) r.l[t] = lmn_w16(ql + 4 * t);
#pragma unroll
    for (int t = 0; t < 8; ++t) r.h[t] = lmn_w16(qh + 4 * t);
    r.sc = lmn_u16(p + 192 + 2 * r.c);
    r.d = lmn_u16(p + 208);
  }
  static LMN void dec(const Raw& r, float* q, float& a0, float& a1, float& b) {
    const int k = r.c & 3, sl = (k >> 1) * 4, sh = 2 * k;
#pragma unroll
    for (int t = 0; t < 8; ++t)
      lmn_bytes4(((r.l[t] >> sl) & 0x0F0F0F0Fu) | (((r.h[t] >> sh) & 0x03030303u) << 4), q + 4 * t,
                 8388640.0f);
    const float d = lmn_h16(r.d);
    a0 = __fmul_rn(d, (float)(signed char)(r.sc & 255u));
    a1 = __fmul_rn(d, (float)(signed char)(r.sc >> 8));
    b = 0.0f;
  }
};
)";

}  // namespace

const std::string& quant_device_source() {
  // (guarded: a batch compiles several kernels' sources, the prelude once, in one program)
  static const std::string s = "#ifndef LMN_QUANT_DEVICE\n#define LMN_QUANT_DEVICE" +
                               std::string(kElementSource) + kUnitSource + dp4a_unit_source() +
                               "#endif\n";
  return s;
}

std::string quant_tag(DType t) { return std::string(name(t)); }

bool cuda_block_type(DType t) {
  for (DType w : kWeightBlockDTypes)
    if (w == t) return true;
  return false;
}

}  // namespace luminal::cuda
