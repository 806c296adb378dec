// The device prelude: bit-exact ports of luminal/core/dtype.cpp's conversions and of the CPU
// kernels' integer helpers (see prelude.hpp).
#include "luminal/cuda/prelude.hpp"

#include "luminal/core/error.hpp"
#include "luminal/core/expr.hpp"

namespace luminal::cuda {

namespace {

const char* kPrelude = R"(
#ifndef LMN_ENTRY
#define LMN_ENTRY(n) n
#endif
typedef float S_f32; typedef double S_f64; typedef unsigned short S_f16; typedef unsigned short S_bf16;
typedef float S_tf32; typedef signed char S_i8; typedef unsigned char S_u8; typedef short S_i16;
typedef unsigned short S_u16; typedef int S_i32; typedef long long S_i64; typedef unsigned char S_bool;
typedef unsigned char S_f8e4m3; typedef unsigned char S_f8e5m2;
typedef float C_f32; typedef double C_f64; typedef float C_f16; typedef float C_bf16; typedef float C_tf32;
typedef long long C_i8; typedef long long C_u8; typedef long long C_i16; typedef long long C_u16;
typedef long long C_i32; typedef long long C_i64; typedef long long C_bool; typedef float C_f8e4m3;
typedef float C_f8e5m2;
#define LMN __device__ __forceinline__
LMN unsigned int lmn_rne_shift(unsigned int x, int s) {
  if (s == 0) return x;
  if (s >= 32) return 0u;
  unsigned int q = x >> s, rem = x & ((1u << s) - 1u), half = 1u << (s - 1);
  return q + ((rem > half || (rem == half && (q & 1u))) ? 1u : 0u);
}
LMN unsigned int lmn_round_mag(unsigned int a, int man_bits, int bias) {
  unsigned int e32 = a >> 23, m32 = a & 0x7FFFFFu;
  int drop = 23 - man_bits;
  if (e32 != 0u) {
    int e = (int)e32 - 127 + bias;
    if (e >= 1) return lmn_rne_shift(((unsigned int)e << 23) | m32, drop);
    return lmn_rne_shift(m32 | (1u << 23), drop + 1 - e);
  }
  int e = 1 - 127 + bias;
  return lmn_rne_shift(m32, drop + 1 - e);
}
LMN float lmn_decode_mag(unsigned int mag, int man_bits, int bias) {
  unsigned int ex = mag >> man_bits, man = mag & ((1u << man_bits) - 1u);
  if (ex == 0u) {
    int scale = 1 - bias - man_bits;
    return (float)man * __uint_as_float((unsigned int)(127 + scale) << 23);
  }
  return __uint_as_float(((ex - (unsigned int)bias + 127u) << 23) | (man << (23 - man_bits)));
}
LMN float lmn_decode_ieee(unsigned int bits, int exp_bits, int man_bits, int bias) {
  int width = 1 + exp_bits + man_bits;
  bool neg = ((bits >> (width - 1)) & 1u) != 0u;
  unsigned int mag = bits & ((1u << (width - 1)) - 1u);
  unsigned int inf = ((1u << exp_bits) - 1u) << man_bits;
  unsigned int s32 = neg ? 0x80000000u : 0u;
  if (mag > inf) return __uint_as_float(s32 | 0x7FC00000u | ((mag & ((1u << man_bits) - 1u)) << (23 - man_bits)));
  if (mag == inf) return __uint_as_float(s32 | 0x7F800000u);
  return __uint_as_float(s32 | __float_as_uint(lmn_decode_mag(mag, man_bits, bias)));
}
LMN unsigned short lmn_f32_to_f16(float f) {
  unsigned int b = __float_as_uint(f), sign = (b >> 16) & 0x8000u, a = b & 0x7FFFFFFFu;
  if (a > 0x7F800000u) return (unsigned short)(sign | 0x7C00u | 0x0200u | ((a >> 13) & 0x03FFu));
  if (a == 0x7F800000u) return (unsigned short)(sign | 0x7C00u);
#if __CUDA_ARCH__ >= 800
  unsigned short h;  // the hardware's round-to-nearest-even (NaNs above keep their payload)
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
#else
  unsigned int m = lmn_round_mag(a, 10, 15);
  return (unsigned short)(sign | (m < 0x7C00u ? m : 0x7C00u));
#endif
}
LMN unsigned short lmn_f32_to_bf16(float f) {
  unsigned int b = __float_as_uint(f), sign = (b >> 16) & 0x8000u, a = b & 0x7FFFFFFFu;
  if (a > 0x7F800000u) return (unsigned short)(sign | 0x0040u | (a >> 16));
  if (a == 0x7F800000u) return (unsigned short)(sign | 0x7F80u);
#if __CUDA_ARCH__ >= 800
  unsigned short h;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
#else
  unsigned int m = lmn_round_mag(a, 7, 127);
  return (unsigned short)(sign | (m < 0x7F80u ? m : 0x7F80u));
#endif
}
LMN float lmn_bf16_to_f32(unsigned short h) {
  unsigned int b = ((unsigned int)h) << 16;
  if ((b & 0x7FFFFFFFu) > 0x7F800000u) b |= 0x00400000u;
  return __uint_as_float(b);
}
LMN float lmn_round_tf32(float f) {
  unsigned int b = __float_as_uint(f), sign = b & 0x80000000u, a = b & 0x7FFFFFFFu;
  if (a > 0x7F800000u) return __uint_as_float((b & ~0x1FFFu) | 0x00400000u);
  return __uint_as_float(sign | (lmn_rne_shift(a, 13) << 13));
}
LMN unsigned char lmn_f32_to_f8(float f, int man_bits, int bias, unsigned int maxf, unsigned int nan) {
  unsigned int b = __float_as_uint(f), sign = (b >> 24) & 0x80u, a = b & 0x7FFFFFFFu;
  if (a > 0x7F800000u) return (unsigned char)(sign | nan);
  if (a == 0x7F800000u) return (unsigned char)(sign | maxf);
  unsigned int m = lmn_round_mag(a, man_bits, bias);
  return (unsigned char)(sign | (m < maxf ? m : maxf));
}
LMN float lmn_f8e4m3_to_f32(unsigned char v) {
  bool neg = (v & 0x80u) != 0u;
  unsigned int mag = v & 0x7Fu;
  if (mag == 0x7Fu) return __uint_as_float((neg ? 0x80000000u : 0u) | 0x7FC00000u);
  float r = lmn_decode_mag(mag, 3, 7);
  return neg ? -r : r;
}
LMN long long lmn_sat_i64(double v) {
  if (v != v) return 0;
  if (v >= 9223372036854775808.0) return 0x7FFFFFFFFFFFFFFFLL;
  if (v < -9223372036854775808.0) return (-0x7FFFFFFFFFFFFFFFLL - 1);
  return (long long)v;
}
LMN long long wrap_add(long long a, long long b) { return (long long)((unsigned long long)a + (unsigned long long)b); }
LMN long long wrap_mul(long long a, long long b) { return (long long)((unsigned long long)a * (unsigned long long)b); }
LMN long long int_mod(long long a, long long b) { return (b == 0 || b == -1) ? 0 : a % b; }
LMN float ld_f32(float s) { return s; }
LMN double ld_f64(double s) { return s; }
LMN float ld_f16(unsigned short s) { return lmn_decode_ieee(s, 5, 10, 15); }
LMN float ld_bf16(unsigned short s) { return lmn_bf16_to_f32(s); }
LMN float ld_tf32(float s) { return s; }
/* Loads for arithmetic only (a product): NaN payloads are not kept, as every float op makes its NaN
   canonical anyway; one instruction for bf16 and f16. */
LMN float ldm_f32(float s) { return s; }
LMN float ldm_bf16(unsigned short s) { return __uint_as_float(((unsigned int)s) << 16); }
LMN float ldm_f16(unsigned short s) { float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(s)); return f; }
LMN long long ld_i8(signed char s) { return s; }
LMN long long ld_u8(unsigned char s) { return s; }
LMN long long ld_i16(short s) { return s; }
LMN long long ld_u16(unsigned short s) { return s; }
LMN long long ld_i32(int s) { return s; }
LMN long long ld_i64(long long s) { return s; }
LMN long long ld_bool(unsigned char s) { return s != 0 ? 1 : 0; }
LMN float ld_f8e4m3(unsigned char s) { return lmn_f8e4m3_to_f32(s); }
LMN float ld_f8e5m2(unsigned char s) { return lmn_decode_ieee(s, 5, 2, 15); }
#define LMN_FLOAT_STORE(T, S, CONV) \
  LMN S st_##T(float v) { return CONV(v); } \
  LMN S st_##T(double v) { return CONV((float)v); } \
  LMN S st_##T(long long v) { return CONV((float)v); }
#define LMN_ID(v) (v)
LMN_FLOAT_STORE(f32, float, LMN_ID)
LMN_FLOAT_STORE(tf32, float, lmn_round_tf32)
LMN_FLOAT_STORE(f16, unsigned short, lmn_f32_to_f16)
LMN_FLOAT_STORE(bf16, unsigned short, lmn_f32_to_bf16)
#define LMN_E4M3(v) lmn_f32_to_f8(v, 3, 7, 0x7Eu, 0x7Fu)
#define LMN_E5M2(v) lmn_f32_to_f8(v, 2, 15, 0x7Bu, 0x7Eu)
LMN_FLOAT_STORE(f8e4m3, unsigned char, LMN_E4M3)
LMN_FLOAT_STORE(f8e5m2, unsigned char, LMN_E5M2)
LMN double st_f64(float v) { return (double)v; }
LMN double st_f64(double v) { return v; }
LMN double st_f64(long long v) { return (double)v; }
#define LMN_INT_STORE(T, S) \
  LMN S st_##T(long long v) { return (S)(unsigned long long)v; } \
  LMN S st_##T(double v) { return (S)(unsigned long long)lmn_sat_i64(v); } \
  LMN S st_##T(float v) { return (S)(unsigned long long)lmn_sat_i64((double)v); }
LMN_INT_STORE(i8, signed char)
LMN_INT_STORE(u8, unsigned char)
LMN_INT_STORE(i16, short)
LMN_INT_STORE(u16, unsigned short)
LMN_INT_STORE(i32, int)
LMN_INT_STORE(i64, long long)
LMN unsigned char st_bool(long long v) { return v != 0 ? 1 : 0; }
LMN unsigned char st_bool(double v) { return v != 0 ? 1 : 0; }
LMN unsigned char st_bool(float v) { return v != 0 ? 1 : 0; }
#define LMN_RD(T) template <class V> LMN C_##T rd_##T(V v) { return ld_##T(st_##T(v)); }
LMN_RD(f32) LMN_RD(f64) LMN_RD(f16) LMN_RD(bf16) LMN_RD(tf32) LMN_RD(i8) LMN_RD(u8) LMN_RD(i16)
LMN_RD(u16) LMN_RD(i32) LMN_RD(i64) LMN_RD(bool) LMN_RD(f8e4m3) LMN_RD(f8e5m2)
/* Roundings to bf16/f16 for values whose NaN payload cannot reach an output: the hardware's
   round-to-nearest-even and one-instruction load, two instructions instead of rd_T's NaN checks.
   The double and integer forms go through float, as st_T does. */
#if __CUDA_ARCH__ >= 800
LMN float rdm_bf16(float v) { unsigned short h; asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(v)); return ldm_bf16(h); }
LMN float rdm_f16(float v) { unsigned short h; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(v)); return ldm_f16(h); }
#else
LMN float rdm_bf16(float v) { return ld_bf16(st_bf16(v)); }
LMN float rdm_f16(float v) { return ld_f16(st_f16(v)); }
#endif
LMN float rdm_bf16(double v) { return rdm_bf16((float)v); }
LMN float rdm_bf16(long long v) { return rdm_bf16((float)v); }
LMN float rdm_f16(double v) { return rdm_f16((float)v); }
LMN float rdm_f16(long long v) { return rdm_f16((float)v); }
/* Expr::to_c prints min/max: mixed int / long long operands resolve here. */
template <class A, class B> LMN long long min(A a, B b) { return (long long)a < (long long)b ? (long long)a : (long long)b; }
template <class A, class B> LMN long long max(A a, B b) { return (long long)a > (long long)b ? (long long)a : (long long)b; }
LMN float lmn_max(float a, float b) { return (a != a || b != b) ? __int_as_float(0x7FC00000) : (a > b ? a : b); }
LMN double lmn_max(double a, double b) { return (a != a || b != b) ? __longlong_as_double(0x7FF8000000000000LL) : (a > b ? a : b); }
LMN long long lmn_max(long long a, long long b) { return a > b ? a : b; }
// Programmatic dependent launch (sm_90+): wait until the kernel this one depends on has finished
// and its writes are visible, then allow the next kernel's blocks to launch. Every kernel calls it
// before it reads anything another kernel writes (first, but for the dims reads and a GEMV's L2
// prefetch); without a programmatic dependency both are no-ops.
LMN void lmn_pdl() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
#endif
}
// An L2 prefetch of the bytes [p, p + bytes) by thread t of n (a line of 128 bytes each): a
// kernel's weights, issued before lmn_pdl() so the loads overlap the kernel before. Safe
// whatever the bytes hold: L2 is where every SM's writes land, so nothing stale can be read.
LMN void lmn_prefetch_l2(const void* p, long long bytes, int t, int n) {
  const unsigned long long a = (unsigned long long)p, end = a + (unsigned long long)bytes;
  for (unsigned long long l = (a & ~127ull) + 128ull * (unsigned long long)t; l < end; l += 128ull * (unsigned long long)n)
    asm volatile("prefetch.global.L2 [%0];" ::"l"(l));
}
// Thread block clusters (sm_90+; kernels declared __cluster_dims__): this block's rank in its
// cluster, a barrier over the cluster, and a 64-bit load of the shared variable at `p` in block
// `q` of the cluster (mapa gives its address there; ld.shared::cluster reads it).
LMN unsigned lmn_cluster_rank() {
  unsigned r; asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r)); return r;
}
LMN void lmn_cluster_sync() {
  asm volatile("barrier.cluster.arrive.aligned;\n\tbarrier.cluster.wait.aligned;" ::: "memory");
}
LMN unsigned long long lmn_cluster_ld(const void* p, unsigned q) {
  unsigned a = (unsigned)__cvta_generic_to_shared(p), r; unsigned long long v;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(r) : "r"(a), "r"(q));
  asm volatile("ld.shared::cluster.b64 %0, [%1];" : "=l"(v) : "r"(r) : "memory");
  return v;
}
/* A kernel's `out` when its stores go into a scatter's destination instead (scatter_store.cpp):
   out[t] = v writes the destination's element idx[t], and nothing where that is outside it. */
template <class T> struct lmn_scatter_ref {
  T* p;
  LMN void operator=(T v) const { if (p) *p = v; }
};
template <class T, class J> struct lmn_scatter_out {
  T* p; const J* idx; long long n;
  LMN lmn_scatter_ref<T> operator[](long long t) const {
    const long long j = (long long)idx[t];
    return lmn_scatter_ref<T>{j >= 0 && j < n ? p + j : nullptr};
  }
};
/* Max with NaN propagating, for row reductions: the NaN it returns is made the reference's
   (lmn_max's 0x7FC00000) once, after the reduction. */
LMN float lmn_maxn(float a, float b) {
#if __CUDA_ARCH__ >= 800
  float r; asm("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b)); return r;
#else
  return lmn_max(a, b);
#endif
}
)";

}  // namespace

const std::string& device_prelude() {
  static const std::string p = std::string(kPrelude) + Expr::c_prelude();
  return p;
}

std::string dtype_tag(DType t) { return std::string(name(t)); }  // the prelude uses DType names

std::string compute_type(DType t) {
  if (t == DType::F64) return "double";
  if (is_float(t)) return "float";
  return "long long";
}

}  // namespace luminal::cuda
