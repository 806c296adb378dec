// CI without a GPU: the device decoders of quant_device.hpp (the element decoders of Dequantize
// and cuda.QGather, the unit decoders of cuda.QGemv) compiled for the host with shims for the
// CUDA intrinsics, run on random blocks of every weight type, give bitwise what
// blocks::dequantize gives: each element decoder's value, and each unit's a q_j + b (a0 for the
// first 16 values, a1 after; the types without a min: a q_j). The shims are exact (a byte
// permute, bit casts, IEEE f32 operations, the f16 conversion), so a wrong shift, mask, selector,
// offset or bias fails here; the GPU suite (quant_test.cpp) runs the same code on the device.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "luminal/core/blocks.hpp"
#include "luminal/core/quantize_ref.hpp"
#include "luminal/cuda/quant_device.hpp"
#include "support/quant_bound.hpp"

namespace luminal {
namespace {

namespace fs = std::filesystem;

const char* kShim = R"(
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <vector>
#define LMN inline
struct uint4 { unsigned int x, y, z, w; };
struct uint2 { unsigned int x, y; };
template <class T> inline T __ldg(const T* p) { T v; std::memcpy(&v, p, sizeof(T)); return v; }
inline float __fsub_rn(float a, float b) { return a - b; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __uint_as_float(unsigned int u) { float f; std::memcpy(&f, &u, 4); return f; }
inline float __int_as_float(int i) { float f; std::memcpy(&f, &i, 4); return f; }
inline unsigned int __byte_perm(unsigned int x, unsigned int y, unsigned int s) {
  unsigned char b[8];
  std::memcpy(b, &x, 4);
  std::memcpy(b + 4, &y, 4);
  unsigned int r = 0;
  for (int i = 0; i < 4; ++i) r |= (unsigned int)b[(s >> (4 * i)) & 7] << (8 * i);
  return r;
}
inline float __fmaf_rn(float a, float b, float c) { return std::fma(a, b, c); }
/* compile-only stand-ins for the warp quantizers (the GPU suite runs those) */
inline bool __all_sync(unsigned, bool p) { return p; }
template <class T> inline T __shfl_xor_sync(unsigned, T v, int) { return v; }
inline float __fdiv_rn(float a, float b) { return a / b; }
inline int __float2int_rn(float f) { return (int)std::nearbyint(f); }
inline unsigned short lmn_f32_to_f16(float) { return 0; }
using std::isfinite;
using std::min;
inline int __dp4a(int a, int b, int c) {
  for (int i = 0; i < 4; ++i)
    c += (int)(signed char)(a >> (8 * i)) * (int)(signed char)(b >> (8 * i));
  return c;
}
inline float ldm_f16(unsigned short h) {  /* finite halves, exactly */
  const unsigned int sign = (unsigned int)(h & 0x8000u) << 16, e = (h >> 10) & 31u;
  unsigned int m = h & 0x3ffu;
  if (e != 0) return __uint_as_float(sign | ((e + 112) << 23) | (m << 13));
  if (m == 0) return __uint_as_float(sign);
  unsigned int x = 113;
  while ((m & 0x400u) == 0) { m <<= 1; --x; }
  return __uint_as_float(sign | (x << 23) | ((m & 0x3ffu) << 13));
}
)";

// Decodes `blocks` blocks read from argv[2] (type argv[1], 0..7 in kWeightBlockDTypes order) and
// writes, per value, the element decoder's float then the unit decoder's.
const char* kMain = R"(
template <class QT, class E>
int run(const char* in, const char* out, int n, int bs, E elem) {
  std::vector<unsigned char> bytes((size_t)n * QT::BB);
  FILE* f = std::fopen(in, "rb");
  if (!f || std::fread(bytes.data(), 1, bytes.size(), f) != bytes.size()) return 2;
  std::fclose(f);
  const int values = n * bs;
  std::vector<float> o((size_t)values * 2);
  for (int e = 0; e < values; ++e) o[2 * e] = elem(bytes.data() + (e / bs) * QT::BB, e % bs);
  for (int u = 0; u < values / 32; ++u) {
    typename QT::Raw r;
    QT::load(bytes.data(), u, r);
    float q[32], a0, a1, b;
    QT::dec(r, q, a0, a1, b);
    for (int j = 0; j < 32; ++j) {
      const float p = __fmul_rn(j < 16 ? a0 : a1, q[j]);
      o[2 * (u * 32 + j) + 1] = QT::HAS_B ? __fadd_rn(p, b) : p;
    }
  }
  f = std::fopen(out, "wb");
  if (!f || std::fwrite(o.data(), 4, o.size(), f) != o.size()) return 3;
  std::fclose(f);
  return 0;
}
int main(int argc, char** argv) {
  if (argc != 5) return 1;
  const int t = std::atoi(argv[1]), n = std::atoi(argv[4]);
  switch (t) {
    case 0: return run<QT_q4_0>(argv[2], argv[3], n, 32, lmn_deq_q4_0);
    case 1: return run<QT_q4_1>(argv[2], argv[3], n, 32, lmn_deq_q4_1);
    case 2: return run<QT_q5_0>(argv[2], argv[3], n, 32, lmn_deq_q5_0);
    case 3: return run<QT_q5_1>(argv[2], argv[3], n, 32, lmn_deq_q5_1);
    case 4: return run<QT_q8_0>(argv[2], argv[3], n, 32, lmn_deq_q8_0);
    case 5: return run<QT_q4_k>(argv[2], argv[3], n, 256, lmn_deq_q4_k);
    case 6: return run<QT_q5_k>(argv[2], argv[3], n, 256, lmn_deq_q5_k);
    case 7: return run<QT_q6_k>(argv[2], argv[3], n, 256, lmn_deq_q6_k);
  }
  return 1;
}
)";

// The integer form's dot of one weight row (argv[2], type argv[1]) with one activation row
// (argv[3], Q8_1 or Q8_K), k = argv[5] values, as cuda.QGemvQ8 computes it (the legacy types with
// argv[6] lanes a unit): per unit, its lanes (QI_<t>::LANES) each dot their words (QI_<t>::ints,
// lmn_x, __dp4a) into their own accumulator, lane 0 adds the min term; then the lanes' sums. Writes
// the float result to argv[4].
const char* kDotMain = R"(
std::vector<unsigned char> slurp(const char* path) {
  std::vector<unsigned char> b;
  FILE* f = std::fopen(path, "rb");
  if (!f) return b;
  int c;
  while ((c = std::fgetc(f)) != EOF) b.push_back((unsigned char)c);
  std::fclose(f);
  return b;
}
int put(const char* out, float y) {
  FILE* f = std::fopen(out, "wb");
  if (!f || std::fwrite(&y, 4, 1, f) != 1) return 3;
  std::fclose(f);
  return 0;
}
/* The lanes' dot over k values: load(u, t, raw) reads lane t's share of unit u, xw(u, t, wd, xv,
   dx, sx) the activation words wd it meets, its d and its sum. */
template <class Q, class Load, class X>
float lanes_dot(int k, Load load, X xw) {
  float acc[4] = {0, 0, 0, 0};
  for (int u = 0; u < k / 32; ++u)
    for (int t = 0; t < Q::LANES; ++t) {
      typename Q::Raw r;
      load(u, t, r);
      int v[Q::NW], wd[Q::NW], xv[Q::NW];
      float a, b, dx, sx;
      Q::ints(r, t, v, wd, a, b);
      xw(u, t, wd, xv, dx, sx);
      int si = 0;
      for (int j = 0; j < Q::NW; ++j) si = __dp4a(v[j], xv[j], si);
      acc[t] = __fmaf_rn(__fmul_rn(a, dx), (float)si, acc[t]);
      if (Q::HAS_B && t == 0) acc[t] = __fmaf_rn(b, sx, acc[t]);
    }
  return (acc[0] + acc[1]) + (acc[2] + acc[3]);
}
template <class QI>
int dot(const char* win, const char* xin, const char* out, int k) {
  const std::vector<unsigned char> w = slurp(win), x = slurp(xin);
  if (w.empty() || x.empty()) return 2;
  return put(out, lanes_dot<QI>(
                      k, [&](int u, int t, typename QI::Raw& r) { QI::load(w.data(), u, t, r); },
                      [&](int u, int, const int* wd, int* xv, float& dx, float& sx) {
                        lmn_x<QI::NW>(x.data(), QI::XK, u, wd, xv, dx, sx);
                      }));
}
/* The same over the split layout (QS_<t>): the weight's blocks split here as cuda.QRepack writes
   them, the Q8_1 activation split as cuda.QuantizeQ8 writes it for QGemvQ8S. */
template <class QS, int BODY, int HEAD, int HEAD_AT, int BB>
int dot_split(const char* win, const char* xin, const char* out, int k) {
  const std::vector<unsigned char> w = slurp(win), x = slurp(xin);
  if (w.empty() || x.empty()) return 2;
  const size_t nb = w.size() / BB, nbx = (size_t)k / 32;
  std::vector<unsigned char> ws(w.size()), xs(x.size());
  for (size_t b = 0; b < nb; ++b) {
    std::memcpy(&ws[b * BODY], &w[b * BB + (HEAD_AT == 0 ? HEAD : 0)], BODY);
    std::memcpy(&ws[nb * BODY + b * HEAD], &w[b * BB + HEAD_AT], HEAD);
  }
  if (!QS::XK)
    for (size_t b = 0; b < nbx; ++b) {
      std::memcpy(&xs[b * 32], &x[b * 36 + 4], 32);
      std::memcpy(&xs[nbx * 32 + b * 4], &x[b * 36], 4);
    }
  return put(out, lanes_dot<QS>(
                      k,
                      [&](int u, int t, typename QS::Raw& r) {
                        QS::load(ws.data(), ws.data() + nb * BODY, u, t, r);
                      },
                      [&](int u, int t, const int* wd, int* xv, float& dx, float& sx) {
                        if constexpr (QS::XK) {
                          lmn_x<QS::NW>(x.data(), 1, u, wd, xv, dx, sx);
                        } else {
                          QS::xw(xs.data() + u * 32, t, xv);
                          unsigned int ds;
                          std::memcpy(&ds, &xs[nbx * 32 + (size_t)u * 4], 4);
                          dx = lmn_h16(ds);
                          sx = lmn_h16(ds >> 16);
                        }
                      }));
}
/* Q4_K in pairs of sub-blocks (QI_q4_k2, lmn_x2): units of 64 values with two scales each, as
   cuda.QGemvQ8 runs them. */
int dot_pairs(const char* win, const char* xin, const char* out, int k) {
  const std::vector<unsigned char> w = slurp(win), x = slurp(xin);
  if (w.empty() || x.empty()) return 2;
  float acc[2] = {0, 0};
  for (int u = 0; u < k / 64; ++u)
    for (int t = 0; t < 2; ++t) {
      QI_q4_k2::Raw r;
      QI_q4_k2::load(w.data(), u, t, r);
      int v[8], wd[8], xv[8];
      float a[2], b[2], dx, sx0, sx1;
      QI_q4_k2::ints2(r, t, v, wd, a, b);
      lmn_x2(x.data(), u, wd, xv, dx, sx0, sx1);
      int s0 = 0, s1 = 0;
      for (int j = 0; j < 4; ++j) {
        s0 = __dp4a(v[j], xv[j], s0);
        s1 = __dp4a(v[4 + j], xv[4 + j], s1);
      }
      acc[t] = __fmaf_rn(__fmul_rn(a[0], dx), (float)s0, acc[t]);
      acc[t] = __fmaf_rn(__fmul_rn(a[1], dx), (float)s1, acc[t]);
      if (t == 0) {
        acc[t] = __fmaf_rn(b[0], sx0, acc[t]);
        acc[t] = __fmaf_rn(b[1], sx1, acc[t]);
      }
    }
  return put(out, acc[0] + acc[1]);
}
template <int L>
int legacy_split(int t, char** argv, int k) {
  switch (t) {
    case 0: return dot_split<QS_q4_0<L>, 16, 2, 0, 18>(argv[2], argv[3], argv[4], k);
    case 1: return dot_split<QS_q4_1<L>, 16, 4, 0, 20>(argv[2], argv[3], argv[4], k);
    case 2: return dot_split<QS_q5_0<L>, 20, 2, 0, 22>(argv[2], argv[3], argv[4], k);
    case 3: return dot_split<QS_q5_1<L>, 20, 4, 0, 24>(argv[2], argv[3], argv[4], k);
    case 4: return dot_split<QS_q8_0<L>, 32, 2, 0, 34>(argv[2], argv[3], argv[4], k);
  }
  return 1;
}
template <int L>
int legacy(int t, char** argv, int k) {
  switch (t) {
    case 0: return dot<QI_q4_0<L>>(argv[2], argv[3], argv[4], k);
    case 1: return dot<QI_q4_1<L>>(argv[2], argv[3], argv[4], k);
    case 2: return dot<QI_q5_0<L>>(argv[2], argv[3], argv[4], k);
    case 3: return dot<QI_q5_1<L>>(argv[2], argv[3], argv[4], k);
    case 4: return dot<QI_q8_0<L>>(argv[2], argv[3], argv[4], k);
  }
  return 1;
}
int main(int argc, char** argv) {
  if (argc != 8) return 1;
  const int t = std::atoi(argv[1]), k = std::atoi(argv[5]), lanes = std::atoi(argv[6]);
  if (std::atoi(argv[7]) == 2) return t == 5 ? dot_pairs(argv[2], argv[3], argv[4], k) : 1;
  if (std::atoi(argv[7])) {
    if (t == 7) return dot_split<QS_q6_k, 208, 2, 208, 210>(argv[2], argv[3], argv[4], k);
    return lanes == 1 ? legacy_split<1>(t, argv, k) : lanes == 2 ? legacy_split<2>(t, argv, k)
                                                                 : legacy_split<4>(t, argv, k);
  }
  switch (t) {
    case 5: return dot<QI_q4_k>(argv[2], argv[3], argv[4], k);
    case 6: return dot<QI_q5_k>(argv[2], argv[3], argv[4], k);
    case 7: return dot<QI_q6_k>(argv[2], argv[3], argv[4], k);
  }
  return lanes == 1 ? legacy<1>(t, argv, k) : lanes == 2 ? legacy<2>(t, argv, k)
                                                         : legacy<4>(t, argv, k);
}
)";

// cuda.QGemmQ8's arithmetic for one output (weight row argv[2], type argv[1]; activation row
// argv[3], Q8_1 or Q8_K; k = argv[5]; argv[6] 1: the weight in its split layout, QBS_<t>): the
// four lanes t of a weight row give their B fragment words (QB_<t>::get), assembled as the MMA
// reads them (k = 4t + e from b0's byte e, 16 + 4t + e from b1's) against the activation words
// t and t + 4 of each unit; the integer sums join the accumulator in the kernel's order (Q6_K:
// each 16-value half with its own scale). Writes the float result to argv[4].
const char* kGemmMain = R"(
template <class W>
LMN void sums(const int* b0, const int* b1, const unsigned char* xq, int& lo, int& hi) {
  lo = hi = 0;
  for (int t = 0; t < 4; ++t)
    for (int e = 0; e < 4; ++e) {
      lo += (int)(signed char)(b0[t] >> (8 * e)) * (int)(signed char)xq[4 * t + e];
      hi += (int)(signed char)(b1[t] >> (8 * e)) * (int)(signed char)xq[16 + 4 * t + e];
    }
}
/* the activation unit u: its 32 int8, d and sum (as the kernel reads them) */
LMN const unsigned char* unit(const unsigned char* x, int kt, int u, float& dx, float& sx) {
  if (kt) {
    const unsigned char* p = x + (u >> 3) * 292;
    dx = __ldg((const float*)p);
    sx = lmn_bsum2(dx, __ldg((const unsigned int*)(p + 260 + 4 * (u & 7))));
    return p + 4 + 32 * (u & 7);
  }
  const unsigned int ds = __ldg((const unsigned int*)(x + u * 36));
  dx = lmn_h16(ds);
  sx = lmn_h16(ds >> 16);
  return x + u * 36 + 4;
}
template <class Q, bool S>
float legacy(const unsigned char* w, const unsigned char* x, int k, const unsigned char* head) {
  float acc = 0.0f;
  for (int u = 0; u < k / 32; ++u) {
    int b0[4], b1[4];
    float a = 0, b = 0;
    for (int t = 0; t < 4; ++t) {
      if constexpr (S) Q::get(w, head, u, t, b0[t], b1[t], a, b);
      else Q::get(w, u, t, b0[t], b1[t], a, b);
    }
    float dx, sx;
    const unsigned char* xq = unit(x, 0, u, dx, sx);
    int lo, hi;
    sums<Q>(b0, b1, xq, lo, hi);
    acc = __fmaf_rn(__fmul_rn(a, dx), lmn_i2f(lo + hi), acc);
    if (Q::HAS_B) acc = __fmaf_rn(b, sx, acc);
  }
  return acc;
}
template <class Q>
float ktype(const unsigned char* w, const unsigned char* x, int k, bool two) {
  float acc = 0.0f;
  for (int u = 0; u < k / 32; ++u) {
    int b0[4], b1[4];
    float a = 0, a2 = 0, b = 0;
    for (int t = 0; t < 4; ++t) Q::get(w, u, t, b0[t], b1[t], a, a2, b);
    float dx, sx;
    const unsigned char* xq = unit(x, 1, u, dx, sx);
    int lo, hi;
    sums<Q>(b0, b1, xq, lo, hi);
    if (two) {
      acc = __fmaf_rn(__fmul_rn(a, dx), lmn_i2f(lo), acc);
      acc = __fmaf_rn(__fmul_rn(a2, dx), lmn_i2f(hi), acc);
    } else {
      acc = __fmaf_rn(__fmul_rn(a, dx), lmn_i2f(lo + hi), acc);
    }
    if (Q::HAS_B) acc = __fmaf_rn(b, sx, acc);
  }
  return acc;
}
int main(int argc, char** argv) {
  if (argc == 2) {  /* lmn_i2f against the conversion over its whole range: the count that differ */
    long bad = 0;
    for (int c = -(1 << 22); c < (1 << 22); ++c) {
      const float f = lmn_i2f(c), want = (float)c;
      bad += std::memcmp(&f, &want, 4) != 0;
    }
    std::printf("%ld\n", bad);
    return bad != 0;
  }
  if (argc != 7) return 1;
  auto slurp = [](const char* path) {
    std::vector<unsigned char> v;
    FILE* f = std::fopen(path, "rb");
    if (!f) return v;
    int c;
    while ((c = std::fgetc(f)) != EOF) v.push_back((unsigned char)c);
    std::fclose(f);
    return v;
  };
  const std::vector<unsigned char> w = slurp(argv[2]), x = slurp(argv[3]);
  const int t = std::atoi(argv[1]), k = std::atoi(argv[5]), split = std::atoi(argv[6]);
  const int nb = k / 32;
  const unsigned char* head = nullptr;
  const int bodies[5] = {16, 16, 20, 20, 32};
  if (split) head = w.data() + nb * bodies[t];
  float y = 0;
  switch (t) {
    case 0: y = split ? legacy<QBS_q4_0, true>(w.data(), x.data(), k, head) : legacy<QB_q4_0, false>(w.data(), x.data(), k, nullptr); break;
    case 1: y = split ? legacy<QBS_q4_1, true>(w.data(), x.data(), k, head) : legacy<QB_q4_1, false>(w.data(), x.data(), k, nullptr); break;
    case 2: y = split ? legacy<QBS_q5_0, true>(w.data(), x.data(), k, head) : legacy<QB_q5_0, false>(w.data(), x.data(), k, nullptr); break;
    case 3: y = split ? legacy<QBS_q5_1, true>(w.data(), x.data(), k, head) : legacy<QB_q5_1, false>(w.data(), x.data(), k, nullptr); break;
    case 4: y = split ? legacy<QBS_q8_0, true>(w.data(), x.data(), k, head) : legacy<QB_q8_0, false>(w.data(), x.data(), k, nullptr); break;
    case 5: y = ktype<QB_q4_k>(w.data(), x.data(), k, false); break;
    case 6: y = ktype<QB_q5_k>(w.data(), x.data(), k, false); break;
    case 7: y = ktype<QB_q6_k>(w.data(), x.data(), k, true); break;
    default: return 1;
  }
  FILE* f = std::fopen(argv[4], "wb");
  if (!f || std::fwrite(&y, 4, 1, f) != 1) return 3;
  std::fclose(f);
  return 0;
}
)";

// cuda.QGemmBF16's shared-memory tile of one weight row (type argv[1], blocks in argv[2], k =
// argv[3]; argv[4] 1: the split layout): each unit's four lanes load and decode their bytes
// (QRG / QRS / QRK of qgemm_bf16.cpp) and lmn_bf2 writes values 4t..4t+3 and 16+4t..16+4t+3 in
// bf16, as the kernel stores them. Writes the k bf16 values to argv[5].
const char* kBf16Main = R"(
template <class R>
void tile(const unsigned char* w, const unsigned char* head, int k, unsigned short* out) {
  for (int u = 0; u < k / 32; ++u)
    for (int t = 0; t < 4; ++t) {
      typename R::Raw r;
      R::load(w, head, u, t, r);
      int b0 = 0, b1 = 0;
      float a = 0, a2 = 0, b = 0;
      R::dec(r, u, t, b0, b1, a, a2, b);
      const unsigned int x0 = (unsigned int)b0 ^ 0x80808080u, x1 = (unsigned int)b1 ^ 0x80808080u;
      const unsigned int v[4] = {lmn_bf2(a, b, x0, 0), lmn_bf2(a, b, x0, 1), lmn_bf2(a2, b, x1, 0),
                                 lmn_bf2(a2, b, x1, 1)};
      for (int e = 0; e < 4; ++e) {
        const int at = u * 32 + (e >> 1) * 16 + 4 * t + 2 * (e & 1);
        out[at] = (unsigned short)(v[e] & 0xFFFFu);
        out[at + 1] = (unsigned short)(v[e] >> 16);
      }
    }
}
int main(int argc, char** argv) {
  if (argc != 6) return 1;
  std::vector<unsigned char> w;
  FILE* f = std::fopen(argv[2], "rb");
  if (!f) return 2;
  for (int c; (c = std::fgetc(f)) != EOF;) w.push_back((unsigned char)c);
  std::fclose(f);
  const int t = std::atoi(argv[1]), k = std::atoi(argv[3]), split = std::atoi(argv[4]);
  const int bodies[5] = {16, 16, 20, 20, 32};
  const unsigned char* head = split && t < 5 ? w.data() + (k / 32) * bodies[t] : nullptr;
  std::vector<unsigned short> out((size_t)k);
  const unsigned char* p = w.data();
  switch (t) {
    case 0: split ? tile<QRS<QS_q4_0<4>>>(p, head, k, out.data()) : tile<QRG<QI_q4_0<4>>>(p, head, k, out.data()); break;
    case 1: split ? tile<QRS<QS_q4_1<4>>>(p, head, k, out.data()) : tile<QRG<QI_q4_1<4>>>(p, head, k, out.data()); break;
    case 2: split ? tile<QRS<QS_q5_0<4>>>(p, head, k, out.data()) : tile<QRG<QI_q5_0<4>>>(p, head, k, out.data()); break;
    case 3: split ? tile<QRS<QS_q5_1<4>>>(p, head, k, out.data()) : tile<QRG<QI_q5_1<4>>>(p, head, k, out.data()); break;
    case 4: split ? tile<QRS_q8_0>(p, head, k, out.data()) : tile<QRG_q8_0>(p, head, k, out.data()); break;
    case 5: tile<QRK<QB_q4_k>>(p, head, k, out.data()); break;
    case 6: tile<QRK<QB_q5_k>>(p, head, k, out.data()); break;
    case 7: tile<QRK<QB_q6_k>>(p, head, k, out.data()); break;
    default: return 1;
  }
  f = std::fopen(argv[5], "wb");
  if (!f || std::fwrite(out.data(), 2, out.size(), f) != out.size()) return 3;
  std::fclose(f);
  return 0;
}
)";

/// Valid blocks with random quants, scales of random sign and size (a few subnormal) and mins.
std::vector<uint8_t> random_blocks(DType t, int blocks, uint64_t seed) {
  std::vector<uint8_t> b(static_cast<size_t>(blocks) * static_cast<size_t>(block_bytes(t)));
  blocks::fill_valid_blocks(t, b, seed);
  std::mt19937_64 rng(seed + 1);
  for (int k = 0; k < blocks; ++k) {
    uint8_t* p = b.data() + static_cast<size_t>(k) * static_cast<size_t>(block_bytes(t));
    const float mag =
        k % 13 == 0 ? 0x1p-20f : std::ldexp(1.0f + (rng() % 97) / 97.0f, -3 - (int)(rng() % 10));
    const uint16_t d = f32_to_f16_bits((rng() & 1) ? -mag : mag);
    const uint16_t m = f32_to_f16_bits(-0.01f * static_cast<float>(1 + rng() % 50));
    testing::set_block_scales(t, p, d, m);
  }
  return b;
}

/// Blocks of `t` (k values) in the split layout cuda.QRepack writes: the bodies, then the heads
/// (the legacy heads lead a block).
std::vector<uint8_t> split_blocks(DType t, const std::vector<uint8_t>& w, int64_t k) {
  const std::optional<cuda::SplitLayout> sl = cuda::split_layout(t);
  const size_t nb = static_cast<size_t>(k / 32), bb = static_cast<size_t>(block_bytes(t));
  std::vector<uint8_t> r(w.size());
  for (size_t b = 0; b < nb; ++b) {
    std::memcpy(r.data() + b * sl->body, w.data() + b * bb + sl->head, sl->body);
    std::memcpy(r.data() + nb * sl->body + b * sl->head, w.data() + b * bb, sl->head);
  }
  return r;
}

#ifdef LUMINAL_HOST_CXX
/// Compiles the shims, the device source and `main_src` for the host into dir/`stem`: its path in
/// `exe`, or false with the compiler's messages in `error`.
bool host_program(const fs::path& dir, const std::string& stem, const char* main_src,
                  std::string& exe, std::string& error, const char* extra = "") {
  fs::create_directories(dir);
  {
    std::ofstream src(dir / (stem + ".cpp"));
    src << kShim << cuda::quant_device_source() << extra << main_src;
  }
  exe = (dir / stem).string();
  const std::string cmd = std::string(LUMINAL_HOST_CXX) + " -std=c++17 -O1 -ffp-contract=off -w " +
                          (dir / (stem + ".cpp")).string() + " -o " + exe + " 2> " +
                          (dir / "cc.log").string();
  if (std::system(cmd.c_str()) == 0) return true;
  std::ifstream log(dir / "cc.log");
  error = "host compile failed: " + std::string(std::istreambuf_iterator<char>(log), {});
  return false;
}
#endif

TEST(CudaQuantHost, DeviceDecodersMatchBlocksDequantizeBitwise) {
#ifndef LUMINAL_HOST_CXX
  GTEST_SKIP() << "no host compiler recorded";
#else
  const fs::path dir =
      fs::temp_directory_path() / ("luminal_quant_host_" + std::to_string(::getpid()));
  std::string exe, error;
  if (!host_program(dir, "decoders", kMain, exe, error)) FAIL() << error;
  int index = 0;
  for (DType t : kWeightBlockDTypes) {
    const int n = block_size(t) == 256 ? 24 : 192;
    const std::vector<uint8_t> bytes = random_blocks(t, n, 40 + static_cast<uint64_t>(index));
    const int values = n * block_size(t);
    std::vector<float> want(static_cast<size_t>(values));
    blocks::dequantize(t, bytes.data(), want.data(), values);
    {
      std::ofstream in(dir / "in.bin", std::ios::binary);
      in.write(reinterpret_cast<const char*>(bytes.data()),
               static_cast<std::streamsize>(bytes.size()));
    }
    const std::string run = exe + " " + std::to_string(index++) + " " + (dir / "in.bin").string() +
                            " " + (dir / "out.bin").string() + " " + std::to_string(n);
    ASSERT_EQ(std::system(run.c_str()), 0) << name(t);
    std::vector<float> got(static_cast<size_t>(values) * 2);
    std::ifstream out(dir / "out.bin", std::ios::binary);
    out.read(reinterpret_cast<char*>(got.data()), static_cast<std::streamsize>(got.size() * 4));
    int bad_elem = 0, bad_unit = 0;
    for (int e = 0; e < values; ++e) {
      bad_elem +=
          std::memcmp(&got[2 * static_cast<size_t>(e)], &want[static_cast<size_t>(e)], 4) != 0;
      bad_unit +=
          std::memcmp(&got[2 * static_cast<size_t>(e) + 1], &want[static_cast<size_t>(e)], 4) != 0;
    }
    EXPECT_EQ(bad_elem, 0) << name(t) << ": element decoder";
    EXPECT_EQ(bad_unit, 0) << name(t) << ": unit decoder";
  }
  std::error_code ec;
  fs::remove_all(dir, ec);
#endif
}

void write_file(const fs::path& p, const void* data, size_t n) {
  std::ofstream f(p, std::ios::binary);
  f.write(static_cast<const char*>(data), static_cast<std::streamsize>(n));
}

/// k activation values uniform in [-2, 2), times 1e-3 when `small`.
std::vector<float> random_activation(int64_t k, uint64_t seed, bool small) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-2, 2);
  std::vector<float> x(static_cast<size_t>(k));
  for (float& v : x)
    v = u(rng) * (small ? 1e-3f : 1.0f);
  return x;
}

/// Runs a dot program (`exe TYPE w.bin x.bin y.bin K ARGS`) on weight row `w` and the activation
/// `x` quantized to `af`: its result, or nothing when it failed.
std::optional<float> host_dot(const std::string& exe, const fs::path& dir, int type,
                              const std::vector<uint8_t>& w, const std::vector<float>& x, DType af,
                              const std::string& args) {
  const int64_t k = static_cast<int64_t>(x.size());
  std::vector<uint8_t> xq(storage_bytes(af, k));
  blocks::quantize_reference(af, x.data(), xq.data(), k);
  write_file(dir / "w.bin", w.data(), w.size());
  write_file(dir / "x.bin", xq.data(), xq.size());
  const std::string run = exe + " " + std::to_string(type) + " " + (dir / "w.bin").string() + " " +
                          (dir / "x.bin").string() + " " + (dir / "y.bin").string() + " " +
                          std::to_string(k) + " " + args;
  if (std::system(run.c_str()) != 0) return std::nullopt;
  float got = 0;
  std::ifstream out(dir / "y.bin", std::ios::binary);
  out.read(reinterpret_cast<char*>(&got), 4);
  return got;
}

// The integer form (QI_<t>, lmn_x) against the f64 dot of the dequantised weights with the
// dequantised activation (testing::quant_dot_bound's y_q), within its rounding bound with the
// accumulation depth of its lanes (each takes a share of every unit): a wrong word, shift, offset,
// scale or min term is off by far more.
TEST(CudaQuantHost, IntegerFormMatchesTheQuantizedActivationDot) {
#ifndef LUMINAL_HOST_CXX
  GTEST_SKIP() << "no host compiler recorded";
#else
  const fs::path dir =
      fs::temp_directory_path() / ("luminal_quant_dot_" + std::to_string(::getpid()));
  std::string exe, error;
  if (!host_program(dir, "dot", kDotMain, exe, error)) FAIL() << error;
  int index = 0, runs = 0;
  for (DType t : kWeightBlockDTypes) {
    const int64_t k = block_size(t) == 256 ? 1024 : 576;
    const DType af = cuda::cuda_activation_format(t);
    for (uint64_t seed = 0; seed < 6; ++seed) {
      // the legacy types with 1, 2 and 4 lanes a unit in turn
      const int lanes = block_size(t) == 256 ? 0 : 1 << (seed % 3);
      // and over the split layout (QS_<t>, cuda.QGemvQ8S) for seeds 3 to 5
      const bool split = seed >= 3 && cuda::split_layout(t).has_value();
      // and Q4_K in pairs of sub-blocks (QI_q4_k2, the default form) for seeds 3 to 5
      const bool pairs = seed >= 3 && t == DType::Q4_K;
      const std::vector<uint8_t> w =
          random_blocks(t, static_cast<int>(k / block_size(t)), 90 + seed * 8 + index);
      const std::vector<float> x =
          random_activation(k, seed * 31 + static_cast<uint64_t>(index), seed % 3 == 0);
      const std::optional<float> y = host_dot(exe, dir, index, w, x, af,
                                              std::to_string(lanes) + " " +
                                                  (pairs   ? "2"
                                                   : split ? "1"
                                                           : "0"));
      ASSERT_TRUE(y.has_value()) << name(t) << " lanes " << lanes;
      const float got = *y;
      const testing::QuantDotBound b = testing::quant_dot_bound(t, w.data(), x.data(), k);
      // A lane accumulates k / 32 units (two terms each with a min), then the lanes' adds.
      const double tol = b.bound_q_at_depth(2 * (k / 32) + 8);
      EXPECT_LE(std::fabs(got - b.y_q), tol)
          << name(t) << " lanes " << lanes << " seed " << seed << ": " << got << " vs " << b.y_q;
      // Against the f32 activation: within the activation's rounding too.
      EXPECT_LE(std::fabs(got - b.y), tol + b.e_q + b.e_s) << name(t) << " seed " << seed;
      ++runs;
    }
    ++index;
  }
  EXPECT_EQ(runs, 48);
  std::error_code ec;
  fs::remove_all(dir, ec);
#endif
}

// cuda.QGemmQ8's fragments (QB_<t>, QBS_<t>: which values lane t's words hold, their scales and
// mins), its integer sums' conversion (lmn_i2f, checked over its whole range) and its
// accumulation order, every weight type (the split layout for the legacy types
// too), against the f64 dot of the dequantised weights with the dequantised activation: a wrong
// word, shift, half or scale is off by far more than the bound.
TEST(CudaQuantHost, PrefillGemmFragmentsMatchTheQuantizedActivationDot) {
#ifndef LUMINAL_HOST_CXX
  GTEST_SKIP() << "no host compiler recorded";
#else
  const fs::path dir =
      fs::temp_directory_path() / ("luminal_quant_gemm_" + std::to_string(::getpid()));
  std::string exe, error;
  if (!host_program(dir, "gemm", kGemmMain, exe, error, cuda::qgemm_device_source()))
    FAIL() << error;
  // The MMA sums become floats by lmn_i2f: the same value as the conversion, every int in range.
  EXPECT_EQ(std::system((exe + " i2f").c_str()), 0) << "lmn_i2f differs from (float)";
  int index = 0, runs = 0;
  for (DType t : kWeightBlockDTypes) {
    const int64_t k = block_size(t) == 256 ? 1024 : 576;
    const DType af = cuda::cuda_activation_format(t);
    for (uint64_t seed = 0; seed < 4; ++seed) {
      const bool split = seed >= 2 && block_size(t) == 32;
      std::vector<uint8_t> w =
          random_blocks(t, static_cast<int>(k / block_size(t)), 300 + seed * 8 + index);
      if (split) w = split_blocks(t, w, k);
      const std::vector<float> x =
          random_activation(k, seed * 37 + static_cast<uint64_t>(index), seed % 2 == 0);
      const std::optional<float> y = host_dot(exe, dir, index, w, x, af, split ? "1" : "0");
      ASSERT_TRUE(y.has_value()) << name(t);
      const float got = *y;
      const std::vector<uint8_t> wg =
          split ? random_blocks(t, static_cast<int>(k / block_size(t)), 300 + seed * 8 + index) : w;
      const testing::QuantDotBound b = testing::quant_dot_bound(t, wg.data(), x.data(), k);
      const double tol = b.bound_q_at_depth(2 * (k / 32) + 8);
      EXPECT_LE(std::fabs(got - b.y_q), tol) << name(t) << (split ? " split" : "") << " seed "
                                             << seed << ": " << got << " vs " << b.y_q;
      ++runs;
    }
    ++index;
  }
  EXPECT_EQ(runs, 32);
  std::error_code ec;
  fs::remove_all(dir, ec);
#endif
}

// cuda.QGemmBF16's weight tiles (the QR* decoders and lmn_bf2 of qgemm_bf16.cpp: which values
// lane t writes where, each as a q + b with its half's scale, rounded to bf16), every weight type
// (the split layout for the legacy types too), against blocks::dequantize: each value within
// 2^-8 (1 + 2^-14) of it, relative (a bf16 rounding of a q + b computed with one rounding, where
// the reference may round twice), and at least 99% equal to its nearest bf16; a wrong word, lane,
// half, shift or scale is off by far more.
TEST(CudaQuantHost, PrefillBf16TilesMatchTheDequantisedWeights) {
#ifndef LUMINAL_HOST_CXX
  GTEST_SKIP() << "no host compiler recorded";
#else
  const fs::path dir =
      fs::temp_directory_path() / ("luminal_quant_bf16_" + std::to_string(::getpid()));
  std::string exe, error;
  const std::string decoders =
      std::string(cuda::qgemm_device_source()) + cuda::qgemm_bf16_decode_source();
  if (!host_program(dir, "bf16", kBf16Main, exe, error, decoders.c_str())) FAIL() << error;
  auto bf16 = [](float f) {  // nearest even
    uint32_t u;
    std::memcpy(&u, &f, 4);
    u += 0x7FFFu + ((u >> 16) & 1u);
    u &= 0xFFFF0000u;
    float r;
    std::memcpy(&r, &u, 4);
    return r;
  };
  int index = 0, runs = 0;
  for (DType t : kWeightBlockDTypes) {
    const int64_t k = block_size(t) == 256 ? 1024 : 576;
    for (bool split : {false, true}) {
      if (split && block_size(t) != 32) continue;
      const std::vector<uint8_t> w =
          random_blocks(t, static_cast<int>(k / block_size(t)), 700 + index * 2 + split);
      std::vector<float> ref(static_cast<size_t>(k));
      blocks::dequantize(t, w.data(), ref.data(), k);
      const std::vector<uint8_t> in = split ? split_blocks(t, w, k) : w;
      write_file(dir / "w.bin", in.data(), in.size());
      const std::string run = exe + " " + std::to_string(index) + " " + (dir / "w.bin").string() +
                              " " + std::to_string(k) + " " + (split ? "1 " : "0 ") +
                              (dir / "tile.bin").string();
      ASSERT_EQ(std::system(run.c_str()), 0) << name(t);
      std::vector<uint16_t> got(static_cast<size_t>(k));
      std::ifstream out(dir / "tile.bin", std::ios::binary);
      out.read(reinterpret_cast<char*>(got.data()), static_cast<std::streamsize>(2 * k));
      ASSERT_TRUE(out.good()) << name(t);
      int bad = 0, nearest = 0;
      for (int64_t i = 0; i < k; ++i) {
        const uint32_t bits = static_cast<uint32_t>(got[static_cast<size_t>(i)]) << 16;
        float g;
        std::memcpy(&g, &bits, 4);
        const float r = ref[static_cast<size_t>(i)];
        nearest += g == bf16(r);
        if (!(std::fabs(g - r) <= std::ldexp(std::fabs(r), -8) * (1 + std::ldexp(1.0, -14)))) {
          if (bad < 3)
            ADD_FAILURE() << name(t) << (split ? " split" : "") << " value " << i << ": " << g
                          << ", want " << r;
          ++bad;
        }
      }
      EXPECT_EQ(bad, 0) << name(t) << (split ? " split" : "");
      EXPECT_GE(nearest, k - k / 100) << name(t) << (split ? " split" : "");
      ++runs;
    }
    ++index;
  }
  EXPECT_EQ(runs, 13);
  std::error_code ec;
  fs::remove_all(dir, ec);
#endif
}

}  // namespace
}  // namespace luminal
