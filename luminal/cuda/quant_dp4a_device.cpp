// The device code of the integer forms (cuda.QuantizeQ8, cuda.QGemvQ8): a lane's share of a unit
// of GGUF weights as packed int8 words, and the activation quantizers (quant_device.hpp).
#include "luminal/cuda/quant_device.hpp"

namespace luminal::cuda {

// LANES lanes (t = 0 .. LANES - 1) share a unit of 32 values: for the legacy types L of the
// kernel's choosing (1, 2 or 4: QI_<t><L>), two for Q4_K and Q5_K (their sub-block scale takes
// about 20 integer operations to decode), four for Q6_K. Lane t's share is NW words of four int8
// values each, v[j], dotted with words w[j] (0..7) of the unit's 32 activation values, with one
// scale a (a weight value is a times its int8). For the nibble types byte-word wi of the quants
// gives values 4wi..4wi+3 (low nibbles, w = wi) and 16+4wi..16+4wi+3 (high nibbles, w = wi + 4);
// for Q6_K lane t holds values 8t..8t+7; for Q4_K and Q5_K (two lanes) values 16t..16t+15. Types
// with a min give b, the unit's min (a weight value is a q + b), which lane 0 adds once per unit
// against the activation's sum. An offset type's q - o becomes a signed byte as (q + 128 - o) ^
// 0x80: q + 128 - o stays within the byte, so no carry crosses bytes.
//
// The activation formats (core/quantize_ref.hpp, bit for bit): Q8_1 (d, s = f16(d sum q), 32
// int8; 36 bytes, word-aligned) for the legacy types, Q8_K (f32 d, 256 int8, 16 int16 bsums) for
// the K types. lmn_x(...) reads a unit's words, its d, and for the min term its sum: Q8_1's s,
// Q8_K's d times the unit's two bsums.
namespace {

const char* kDp4aSource = R"(
LMN unsigned int lmn_hb4(unsigned int n) { return (((n & 15u) * 0x00204081u) & 0x01010101u) << 4; }
LMN int lmn_off(unsigned int q, unsigned int o) { return (int)((q + (128u - o) * 0x01010101u) ^ 0x80808080u); }
/* The nibble types' byte-word `wi` (0..3) of the quants: its low nibbles (values 4wi..4wi+3,
   activation word wi) and high nibbles (16+4wi.., word wi + 4), each with its fifth bits from qh
   when `q5`, less the offset `o` as signed bytes (o = 0: as they are). */
LMN void lmn_nib_words(unsigned int w, unsigned int qh, bool q5, unsigned int o, int wi, int* v,
                       int* wd) {
  unsigned int lo = w & 0x0F0F0F0Fu, hi = (w >> 4) & 0x0F0F0F0Fu;
  if (q5) { lo |= lmn_hb4(qh >> (4 * wi)); hi |= lmn_hb4(qh >> (16 + 4 * wi)); }
  v[0] = o ? lmn_off(lo, o) : (int)lo;
  v[1] = o ? lmn_off(hi, o) : (int)hi;
  wd[0] = wi; wd[1] = wi + 4;
}
/* The legacy types take L lanes a unit (1, 2 or 4; the kernel's choice): lane t holds byte-words
   t NQ .. t NQ + NQ - 1 of the quants (NQ = 4 / L; Q8_0: words t NW .. of its eight). */
template <int L>
struct QI_q4_0 {
  enum { HAS_B = 0, XK = 0, LANES = L, NQ = 4 / L, NW = 2 * NQ };
  struct Raw { unsigned int d, w[NQ]; };
  static LMN void load(const unsigned char* row, int u, int t, Raw& r) {
    const unsigned char* p = row + u * 18;
    r.d = lmn_u16(p);
#pragma unroll
    for (int j = 0; j < NQ; ++j) r.w[j] = lmn_w16(p + 2 + 4 * (t * NQ + j));
  }
  static LMN void ints(const Raw& r, int t, int* v, int* w, float& a, float& b) {
#pragma unroll
    for (int j = 0; j < NQ; ++j) lmn_nib_words(r.w[j], 0u, false, 8u, t * NQ + j, v + 2 * j, w + 2 * j);
    a = lmn_h16(r.d); b = 0.0f;
  }
};
template <int L>
struct QI_q4_1 {
  enum { HAS_B = 1, XK = 0, LANES = L, NQ = 4 / L, NW = 2 * NQ };
  struct Raw { unsigned int dm, w[NQ]; };
  static LMN void load(const unsigned char* row, int u, int t, Raw& r) {
    const unsigned int* p = (const unsigned int*)(row + u * 20);
    r.dm = __ldg(p);
#pragma unroll
    for (int j = 0; j < NQ; ++j) r.w[j] = __ldg(p + 1 + t * NQ + j);
  }
  static LMN void ints(const Raw& r, int t, int* v, int* w, float& a, float& b) {
#pragma unroll
    for (int j = 0; j < NQ; ++j) lmn_nib_words(r.w[j], 0u, false, 0u, t * NQ + j, v + 2 * j, w + 2 * j);
    a = lmn_h16(r.dm); b = lmn_h16(r.dm >> 16);
  }
};
template <int L>
struct QI_q5_0 {
  enum { HAS_B = 0, XK = 0, LANES = L, NQ = 4 / L, NW = 2 * NQ };
  struct Raw { unsigned int d, qh, w[NQ]; };
  static LMN void load(const unsigned char* row, int u, int t, Raw& r) {
    const unsigned char* p = row + u * 22;
    r.d = lmn_u16(p);
    r.qh = lmn_w16(p + 2);
#pragma unroll
    for (int j = 0; j < NQ; ++j) r.w[j] = lmn_w16(p + 6 + 4 * (t * NQ + j));
  }
  static LMN void ints(const Raw& r, int t, int* v, int* w, float& a, float& b) {
#pragma unroll
    for (int j = 0; j < NQ; ++j) lmn_nib_words(r.w[j], r.qh, true, 16u, t * NQ + j, v + 2 * j, w + 2 * j);
    a = lmn_h16(r.d); b = 0.0f;
  }
};
template <int L>
struct QI_q5_1 {
  enum { HAS_B = 1, XK = 0, LANES = L, NQ = 4 / L, NW = 2 * NQ };
  struct Raw { unsigned int dm, qh, w[NQ]; };
  static LMN void load(const unsigned char* row, int u, int t, Raw& r) {
    const unsigned int* p = (const unsigned int*)(row + u * 24);
    const uint2 h = __ldg((const uint2*)p);
    r.dm = h.x; r.qh = h.y;
#pragma unroll
    for (int j = 0; j < NQ; ++j) r.w[j] = __ldg(p + 2 + t * NQ + j);
  }
  static LMN void ints(const Raw& r, int t, int* v, int* w, float& a, float& b) {
#pragma unroll
    for (int j = 0; j < NQ; ++j) lmn_nib_words(r.w[j], r.qh, true, 0u, t * NQ + j, v + 2 * j, w + 2 * j);
    a = lmn_h16(r.dm); b = lmn_h16(r.dm >> 16);
  }
};
template <int L>
struct QI_q8_0 {
  enum { HAS_B = 0, XK = 0, LANES = L, NW = 8 / L };
  struct Raw { unsigned int d, w[NW]; };
  static LMN void load(const unsigned char* row, int u, int t, Raw& r) {
    const unsigned char* p = row + u * 34;
    r.d = lmn_u16(p);
#pragma unroll
    for (int j = 0; j < NW; ++j) r.w[j] = lmn_w16(p + 2 + 4 * (t * NW + j));
  }
  static LMN void ints(const Raw& r, int t, int* v, int* w, float& a, float& b) {
#pragma unroll
    for (int j = 0; j < NW; ++j) { v[j] = (int)r.w[j]; w[j] = t * NW + j; }
    a = lmn_h16(r.d); b = 0.0f;
  }
};
/* Q4_K / Q5_K: two lanes share a unit, lane t taking values 16t..16t+15 (one scale), so a warp
   takes two super-blocks a step and each lane decodes its sub-block's scale once for 16 values.
   Q4_K / Q5_K: unit u is sub-block i = u % 8 of super-block u / 8 (16-byte aligned); its 32
   quants are the low (i even) or high nibbles of bytes 32 (i / 2) .. + 31. */
struct QI_q4_k {
  enum { HAS_B = 1, XK = 1, LANES = 2, NW = 4 };
  struct Raw { uint4 h, q; int i; };
  static LMN void load(const unsigned char* row, int u, int t, Raw& r) {
    const unsigned char* p = row + (u >> 3) * 144;
    r.i = u & 7;
    r.h = __ldg((const uint4*)p);
    r.q = __ldg((const uint4*)(p + 16 + (r.i >> 1) * 32 + 16 * t));
  }
  static LMN void ints(const Raw& r, int t, int* v, int* w, float& a, float& b) {
    const int sh = (r.i & 1) * 4;
    const unsigned int q[4] = {r.q.x, r.q.y, r.q.z, r.q.w};
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      v[j] = (int)((q[j] >> sh) & 0x0F0F0F0Fu);
      w[j] = 4 * t + j;
    }
    lmn_qk_scale(r.h, r.i, a, b);
  }
};
/* Q4_K in pairs of sub-blocks (QI_q4_k2, the default; LUMINAL_CUDA_QGEMV_Q4K_PAIRS=0 takes
   QI_q4_k): unit u is byte chunk c = u % 4 of super-block u / 4, whose 32 bytes hold sub-block 2c
   in their low nibbles and 2c + 1 in their high ones (64 values). Two lanes a unit, lane t taking
   bytes 16t..16t+15: values 16t..16t+15 of both sub-blocks, so one 16-byte load serves 32 values
   (QI_q4_k loads the same bytes once per sub-block). v[0..3] are sub-block 2c's words (activation
   words 4t + j of the unit's 64 values), v[4..7] 2c + 1's (words 8 + 4t + j); a[h], b[h] the
   scale and min of sub-block 2c + h. */
struct QI_q4_k2 {
  enum { HAS_B = 1, XK = 1, LANES = 2, NW = 8, UV = 64 };
  struct Raw { uint4 h, q; int c; };
  static LMN void load(const unsigned char* row, int u, int t, Raw& r) {
    const unsigned char* p = row + (u >> 2) * 144;
    r.c = u & 3;
    r.h = __ldg((const uint4*)p);
    r.q = __ldg((const uint4*)(p + 16 + r.c * 32 + 16 * t));
  }
  static LMN void ints2(const Raw& r, int t, int* v, int* w, float* a, float* b) {
    const unsigned int q[4] = {r.q.x, r.q.y, r.q.z, r.q.w};
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      v[j] = (int)(q[j] & 0x0F0F0F0Fu);
      v[4 + j] = (int)((q[j] >> 4) & 0x0F0F0F0Fu);
      w[j] = 4 * t + j;
      w[4 + j] = 8 + 4 * t + j;
    }
    lmn_qk_scale(r.h, 2 * r.c, a[0], b[0]);
    lmn_qk_scale(r.h, 2 * r.c + 1, a[1], b[1]);
  }
};
struct QI_q5_k {
  enum { HAS_B = 1, XK = 1, LANES = 2, NW = 4 };
  struct Raw { uint4 h, qh, q; int i; };
  static LMN void load(const unsigned char* row, int u, int t, Raw& r) {
    const unsigned char* p = row + (u >> 3) * 176;
    r.i = u & 7;
    r.h = __ldg((const uint4*)p);
    r.qh = __ldg((const uint4*)(p + 16 + 16 * t));
    r.q = __ldg((const uint4*)(p + 48 + (r.i >> 1) * 32 + 16 * t));
  }
  static LMN void ints(const Raw& r, int t, int* v, int* w, float& a, float& b) {
    const int sh = (r.i & 1) * 4;
    const unsigned int q[4] = {r.q.x, r.q.y, r.q.z, r.q.w};
    const unsigned int h[4] = {r.qh.x, r.qh.y, r.qh.z, r.qh.w};
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      v[j] = (int)(((q[j] >> sh) & 0x0F0F0F0Fu) | (((h[j] >> r.i) & 0x01010101u) << 4));
      w[j] = 4 * t + j;
    }
    lmn_qk_scale(r.h, r.i, a, b);
  }
};
/* Q6_K: unit u is chunk c = u % 8 of super-block u / 8 (2-byte aligned); four lanes a unit (its
   scale is one byte: nothing to share), lane t's values 8t..8t+7 share scale 2c + t / 2. */
struct QI_q6_k {
  enum { HAS_B = 0, XK = 1, LANES = 4, NW = 2 };
  struct Raw { unsigned int l[2], h[2], sc, d; int c; };
  static LMN void load(const unsigned char* row, int u, int t, Raw& r) {
    const unsigned char* p = row + (u >> 3) * 210;
    r.c = u & 7;
    const int hh = r.c >> 2, k = r.c & 3;
    const unsigned char* ql = p + hh * 64 + (k & 1) * 32 + 8 * t;
    const unsigned char* qh = p + 128 + hh * 32 + 8 * t;
#pragma unroll
    for (int j = 0; j < 2; ++j) { r.l[j] = lmn_w16(ql + 4 * j); r.h[j] = lmn_w16(qh + 4 * j); }
    r.sc = lmn_u16(p + 192 + 2 * r.c);
    r.d = lmn_u16(p + 208);
  }
  static LMN void ints(const Raw& r, int t, int* v, int* w, float& a, float& b) {
    const int k = r.c & 3, sl = (k >> 1) * 4, sh = 2 * k;
#pragma unroll
    for (int j = 0; j < 2; ++j) {
      v[j] = lmn_off(((r.l[j] >> sl) & 0x0F0F0F0Fu) | (((r.h[j] >> sh) & 0x03030303u) << 4), 32u);
      w[j] = 2 * t + j;
    }
    a = __fmul_rn(lmn_h16(r.d), (float)(signed char)((r.sc >> (8 * (t >> 1))) & 255u));
    b = 0.0f;
  }
};
/* A warp quantizes one activation block to `o` (core/quantize_ref.hpp, bit for bit): Q8_1 from
   lane j's value v (32 values; lmn_q8_1_warp_to: its 32 q to `qs`, its d and s to `ds`, the
   split layout), Q8_K from lane j's v[r] = value 32 r + j (256 values). */
LMN void lmn_q8_1_warp_to(float v, unsigned char* qs, unsigned char* ds, int lane) {
  const bool fin = __all_sync(0xffffffffu, isfinite(v));
  float amax = fabsf(v);
  for (int s = 16; s > 0; s >>= 1) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, s));
  int q = 0;
  unsigned short dh = 0, sh = 0;
  if (!fin) {
    dh = sh = 0x7E00;
  } else {
    const float id = amax != 0.0f ? __fdiv_rn(127.0f, amax) : 0.0f;
    if (id != 0.0f && isfinite(id)) {
      const float d = __fdiv_rn(amax, 127.0f);
      q = __float2int_rn(__fmul_rn(v, id));
      int sum = q;
      for (int s = 16; s > 0; s >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, s);
      dh = lmn_f32_to_f16(d);
      sh = lmn_f32_to_f16(__fmul_rn(d, (float)sum));
    }
  }
  qs[lane] = (unsigned char)(signed char)q;
  if (lane == 0) { ((unsigned short*)ds)[0] = dh; ((unsigned short*)ds)[1] = sh; }
}
LMN void lmn_q8_1_warp(float v, unsigned char* o, int lane) { lmn_q8_1_warp_to(v, o + 4, o, lane); }
/* The same bytes for four blocks at once: eight lanes a block (lanes 8g .. 8g + 7 block g), lane
   j holding values 4(j % 8) .. 4(j % 8) + 3 as v0 .. v3. Max and the integer sum do not depend on
   their order, so each block's d, s and q are lmn_q8_1_warp_to's; the butterflies take three
   steps, not five, and a warp's four chains run side by side. Every lane of the warp calls it (the
   butterflies are full-warp); a group whose `live` is false stores nothing. */
LMN void lmn_q8_1_oct_to(float v0, float v1, float v2, float v3, unsigned char* qs,
                         unsigned char* ds, int lane, bool live) {
  int bad = !(isfinite(v0) && isfinite(v1) && isfinite(v2) && isfinite(v3));
  float amax = fmaxf(fmaxf(fabsf(v0), fabsf(v1)), fmaxf(fabsf(v2), fabsf(v3)));
  for (int s = 4; s > 0; s >>= 1) {
    bad |= __shfl_xor_sync(0xffffffffu, bad, s);
    amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, s));
  }
  const bool fin = bad == 0;
  const float id = fin && amax != 0.0f ? __fdiv_rn(127.0f, amax) : 0.0f;
  const bool scaled = fin && id != 0.0f && isfinite(id);
  int q0 = 0, q1 = 0, q2 = 0, q3 = 0;
  if (scaled) {
    q0 = __float2int_rn(__fmul_rn(v0, id));
    q1 = __float2int_rn(__fmul_rn(v1, id));
    q2 = __float2int_rn(__fmul_rn(v2, id));
    q3 = __float2int_rn(__fmul_rn(v3, id));
  }
  int sum = q0 + q1 + q2 + q3;
  for (int s = 4; s > 0; s >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, s);
  unsigned short dh = 0, sh = 0;
  if (!fin) {
    dh = sh = 0x7E00;
  } else if (scaled) {
    const float d = __fdiv_rn(amax, 127.0f);
    dh = lmn_f32_to_f16(d);
    sh = lmn_f32_to_f16(__fmul_rn(d, (float)sum));
  }
  if (!live) return;
  ((unsigned int*)qs)[lane & 7] = (unsigned int)(q0 & 255) | ((unsigned int)(q1 & 255) << 8) |
                                  ((unsigned int)(q2 & 255) << 16) | ((unsigned int)(q3 & 255) << 24);
  if ((lane & 7) == 0) { ((unsigned short*)ds)[0] = dh; ((unsigned short*)ds)[1] = sh; }
}
LMN void lmn_q8_1_oct(float v0, float v1, float v2, float v3, unsigned char* o, int lane,
                      bool live) {
  lmn_q8_1_oct_to(v0, v1, v2, v3, o + 4, o, lane, live);
}
LMN void lmn_q8_k_warp(const float* v, unsigned char* o, int lane) {
  float ba = -1.0f, bv = 0.0f;
  int bi = 0;
  bool fin = true;
#pragma unroll
  for (int r = 0; r < 8; ++r) {
    fin = fin && isfinite(v[r]);
    const float ax = fabsf(v[r]);
    if (ax > ba) { ba = ax; bv = v[r]; bi = r * 32 + lane; }
  }
  fin = __all_sync(0xffffffffu, fin);
  for (int s = 16; s > 0; s >>= 1) {
    const float oa = __shfl_xor_sync(0xffffffffu, ba, s);
    const float ov = __shfl_xor_sync(0xffffffffu, bv, s);
    const int oi = __shfl_xor_sync(0xffffffffu, bi, s);
    if (oa > ba || (oa == ba && oi < bi)) { ba = oa; bv = ov; bi = oi; }
  }
  int q[8];
#pragma unroll
  for (int r = 0; r < 8; ++r) q[r] = 0;
  float d = 0.0f;
  if (!fin) {
    d = __uint_as_float(0x7FC00000u);
  } else if (ba != 0.0f) {
    const float iscale = __fdiv_rn(-127.0f, bv);
    if (isfinite(iscale)) {
#pragma unroll
      for (int r = 0; r < 8; ++r) q[r] = min(127, __float2int_rn(__fmul_rn(iscale, v[r])));
      d = __fdiv_rn(1.0f, iscale);
    }
  }
#pragma unroll
  for (int r = 0; r < 8; ++r) {
    o[4 + r * 32 + lane] = (unsigned char)(signed char)q[r];
    int s = q[r];
    for (int w = 8; w > 0; w >>= 1) s += __shfl_xor_sync(0xffffffffu, s, w);
    if ((lane & 15) == 0) ((short*)(o + 260))[2 * r + (lane >> 4)] = (short)s;
  }
  if (lane == 0) *(float*)o = d;
}
/* Q8_K's d times a pair of its int16 bsums (two 16-value sums) packed in one word. */
LMN float lmn_bsum2(float dx, unsigned int bs) {
  return __fmul_rn(dx, (float)((int)(short)(bs & 0xFFFFu) + (int)(short)(bs >> 16)));
}
/* Unit u of an activation row at `x` (Q8_1 when xk is 0, else Q8_K): its words w[0..NW) in xv,
   its d, and its sum for a min term (Q8_1: s; Q8_K: d times the unit's two bsums). */
template <int NW>
LMN void lmn_x(const unsigned char* x, int xk, int u, const int* w, int* xv, float& dx, float& sx) {
  if (xk) {
    const unsigned char* p = x + (u >> 3) * 292;
    const int* q = (const int*)(p + 4 + 32 * (u & 7));
#pragma unroll
    for (int j = 0; j < NW; ++j) xv[j] = __ldg(q + w[j]);
    dx = __ldg((const float*)p);
    sx = lmn_bsum2(dx, __ldg((const unsigned int*)(p + 260 + 4 * (u & 7))));
  } else {
    const unsigned char* p = x + u * 36;
    const int* q = (const int*)(p + 4);
#pragma unroll
    for (int j = 0; j < NW; ++j) xv[j] = __ldg(q + w[j]);
    const unsigned int ds = __ldg((const unsigned int*)p);
    dx = lmn_h16(ds);
    sx = lmn_h16(ds >> 16);
  }
}
/* QI_q4_k2's activation: unit u's words w[j] of its 64 values (Q8_K sub-blocks 2c and 2c + 1,
   c = u % 4), its d, and each sub-block's sum (d times its two bsums) for the min terms. */
LMN void lmn_x2(const unsigned char* x, int u, const int* w, int* xv, float& dx, float& sx0,
                float& sx1) {
  const unsigned char* p = x + (u >> 2) * 292;
  const int* q = (const int*)(p + 4 + 64 * (u & 3));
#pragma unroll
  for (int j = 0; j < 8; ++j) xv[j] = __ldg(q + w[j]);
  dx = __ldg((const float*)p);
  const unsigned int* bp = (const unsigned int*)(p + 260 + 8 * (u & 3));
  sx0 = lmn_bsum2(dx, __ldg(bp));
  sx1 = lmn_bsum2(dx, __ldg(bp + 1));
}
/* The split layouts (cuda.QRepack, load-time folding): a weight's blocks as two arrays, each
   block less its scale head (its body: the bytes after the head, or for Q6_K the 208 before its
   d) in order, then every head. Bodies of Q4_0/Q4_1 (16 bytes), Q8_0 (32) and Q6_K (208) are
   16-byte aligned, Q5_0/Q5_1 (20) 4-byte aligned. QS_<t>::load(body, head, u, t, raw) reads lane
   t's share of unit u of a row whose bodies start at `body` and heads at `head`; ints() is QI_'s.
   A split activation row (Q8_1) is its 32-byte q blocks (16-byte aligned), then its (d, s)
   pairs; QS_<t>::xw(q, t, xv) reads lane t's words of a unit's q. */
template <int N, int A>
LMN void lmn_ldw(const unsigned char* p, unsigned int* w) {
  if (N % 4 == 0 && A >= 16) {
#pragma unroll
    for (int i = 0; i < N / 4; ++i) {
      const uint4 v = __ldg((const uint4*)p + i);
      w[4 * i] = v.x; w[4 * i + 1] = v.y; w[4 * i + 2] = v.z; w[4 * i + 3] = v.w;
    }
  } else if (N % 2 == 0 && A >= 8) {
#pragma unroll
    for (int i = 0; i < N / 2; ++i) {
      const uint2 v = __ldg((const uint2*)p + i);
      w[2 * i] = v.x; w[2 * i + 1] = v.y;
    }
  } else {
#pragma unroll
    for (int i = 0; i < N; ++i) w[i] = __ldg((const unsigned int*)p + i);
  }
}
/* The nibble types' activation words: lane t's low words t NQ.. and high words 4 + t NQ.., in
   the order ints() gives them (w[2j] = t NQ + j, w[2j + 1] = 4 + t NQ + j). */
template <int NQ, int A>
LMN void lmn_nib_xw(const unsigned char* q, int t, int* xv) {
  unsigned int lo[NQ], hi[NQ];
  lmn_ldw<NQ, A>(q + 4 * t * NQ, lo);
  lmn_ldw<NQ, A>(q + 16 + 4 * t * NQ, hi);
#pragma unroll
  for (int j = 0; j < NQ; ++j) { xv[2 * j] = (int)lo[j]; xv[2 * j + 1] = (int)hi[j]; }
}
template <int L>
struct QS_q4_0 : QI_q4_0<L> {
  typedef QI_q4_0<L> B;
  static LMN void load(const unsigned char* body, const unsigned char* head, int u, int t, typename B::Raw& r) {
    r.d = lmn_u16(head + 2 * u);
    lmn_ldw<B::NQ, 16 / L>(body + u * 16 + 4 * t * B::NQ, r.w);
  }
  static LMN void xw(const unsigned char* q, int t, int* xv) { lmn_nib_xw<B::NQ, 16 / L>(q, t, xv); }
};
template <int L>
struct QS_q4_1 : QI_q4_1<L> {
  typedef QI_q4_1<L> B;
  static LMN void load(const unsigned char* body, const unsigned char* head, int u, int t, typename B::Raw& r) {
    r.dm = __ldg((const unsigned int*)(head + 4 * u));
    lmn_ldw<B::NQ, 16 / L>(body + u * 16 + 4 * t * B::NQ, r.w);
  }
  static LMN void xw(const unsigned char* q, int t, int* xv) { lmn_nib_xw<B::NQ, 16 / L>(q, t, xv); }
};
template <int L>
struct QS_q5_0 : QI_q5_0<L> {
  typedef QI_q5_0<L> B;
  static LMN void load(const unsigned char* body, const unsigned char* head, int u, int t, typename B::Raw& r) {
    r.d = lmn_u16(head + 2 * u);
    r.qh = __ldg((const unsigned int*)(body + u * 20));
    lmn_ldw<B::NQ, 4>(body + u * 20 + 4 + 4 * t * B::NQ, r.w);
  }
  static LMN void xw(const unsigned char* q, int t, int* xv) { lmn_nib_xw<B::NQ, 16 / L>(q, t, xv); }
};
template <int L>
struct QS_q5_1 : QI_q5_1<L> {
  typedef QI_q5_1<L> B;
  static LMN void load(const unsigned char* body, const unsigned char* head, int u, int t, typename B::Raw& r) {
    r.dm = __ldg((const unsigned int*)(head + 4 * u));
    r.qh = __ldg((const unsigned int*)(body + u * 20));
    lmn_ldw<B::NQ, 4>(body + u * 20 + 4 + 4 * t * B::NQ, r.w);
  }
  static LMN void xw(const unsigned char* q, int t, int* xv) { lmn_nib_xw<B::NQ, 16 / L>(q, t, xv); }
};
template <int L>
struct QS_q8_0 : QI_q8_0<L> {
  typedef QI_q8_0<L> B;
  enum { A = 32 / L < 16 ? 32 / L : 16 };
  static LMN void load(const unsigned char* body, const unsigned char* head, int u, int t, typename B::Raw& r) {
    r.d = lmn_u16(head + 2 * u);
    lmn_ldw<B::NW, A>(body + u * 32 + 4 * t * B::NW, r.w);
  }
  static LMN void xw(const unsigned char* q, int t, int* xv) {
    lmn_ldw<B::NW, A>(q + 4 * t * B::NW, (unsigned int*)xv);
  }
};
struct QS_q6_k : QI_q6_k {
  static LMN void load(const unsigned char* body, const unsigned char* head, int u, int t, Raw& r) {
    const unsigned char* p = body + (u >> 3) * 208;
    r.c = u & 7;
    const int hh = r.c >> 2, k = r.c & 3;
    lmn_ldw<2, 8>(p + hh * 64 + (k & 1) * 32 + 8 * t, r.l);
    lmn_ldw<2, 8>(p + 128 + hh * 32 + 8 * t, r.h);
    r.sc = lmn_u16(p + 192 + 2 * r.c);
    r.d = lmn_u16(head + 2 * (u >> 3));
  }
};
)";

}  // namespace

const char* dp4a_unit_source() { return kDp4aSource; }

}  // namespace luminal::cuda
