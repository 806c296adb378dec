// True division lowered to primitives: Tensor::div and the / operators.
//
// The HLIR has no Div: x / y is built from Recip and Mul in f64 (for f32 and narrower floats,
// with an exact tie-break for subnormal quotients; for f64, correction steps whose residuals are
// computed exactly, no fma needed), so it matches IEEE division.
#include <cmath>
#include <string>
#include <utility>

#include "luminal/core/error.hpp"
#include "luminal/ir/elementwise_helpers.hpp"
#include "luminal/ir/prim.hpp"
#include "luminal/ir/tensor.hpp"

namespace luminal {

namespace {

using elementwise::bool_not;
using elementwise::operands;
using prim::scalar_for;

// Veltkamp split of an f64 value into hi (its leading 26 significand bits) and lo = a - hi
// (at most 27 bits); exact while |a| < 2^996 (the product by 2^27 + 1 must not overflow).
std::pair<Tensor, Tensor> split26(const Tensor& a) {
  Tensor t = a * 134217729.0;  // 2^27 + 1
  Tensor hi = t - (t - a);
  return {hi, a - hi};
}

// x / y for f64 tensors holding values of f32 (or of a narrower float format), as the correctly
// rounded f32 quotient (the narrower formats round that once more: double rounding is innocuous
// for division when 2p + 2 <= 24).
//   q0 = x * (1/y) is within 2^-52 of x/y (relative). A quotient of two 24-bit values that is not
//   an f32 rounding midpoint lies at least 2^-49 (relative) from every midpoint of the normal
//   range and at least 2^-174 from every midpoint of the subnormal grid, so rounding q0 to f32
//   gives the correctly rounded quotient except at an exact tie, possible only for subnormal
//   results: x/y = (k + 1/2) * 2^-149, which q0 misses by at most 2^-178. So q0 within 2^-176 of
//   a multiple of 2^-150 (`mid`: q0 rounded to one by adding and taking away 1.5 * 2^-98) is a
//   tie, and mid, rounded to f32, breaks it to even (a zero with the tie's sign); a q0 that
//   snaps anywhere else moves by less than 2^-176, across no midpoint.
// Each of x and y is read once, and nothing amplifies a difference between two computations of
// x: were x computed by two programs in two places (a fused kernel's inline copy of a sum beside
// a library matmul's result), the quotient is still within their difference. (A Veltkamp split
// of q0, t - (t - q0) with t and q0 from the two copies, was off by 2^27 times it.)
// Zeros, infinities and NaN: q0 (never snapped: a zero mid, or a NaN distance), then exact:
// x*(1/0) = +-inf, 0*inf = NaN, x*(1/inf) = +-0, inf*(1/y) = +-inf.
Tensor narrow_quotient(const Tensor& x, const Tensor& y) {
  Tensor q0 = x * y.reciprocal();
  constexpr double kGrid = 0x1.8p-98;
  Tensor mid = (q0 + kGrid) + -kGrid;
  Tensor d = q0 - mid;
  Tensor snap = (d * d).lt(0x1p-352).logical_and((mid * mid).gt(0x1p-400));
  return snap.where(mid, q0).cast(DType::F32);
}

// Dekker's exact product: a*b = p + e, from the splits of a and b (no overflow or underflow).
std::pair<Tensor, Tensor> two_product(const Tensor& a, const std::pair<Tensor, Tensor>& as,
                                      const Tensor& b, const std::pair<Tensor, Tensor>& bs) {
  Tensor p = a * b;
  const auto& [ah, al] = as;
  const auto& [bh, bl] = bs;
  return {p, (((ah * bh - p) + ah * bl) + al * bh) + al * bl};
}

// Knuth's exact sum: a + b = s + t.
std::pair<Tensor, Tensor> two_sum(const Tensor& a, const Tensor& b) {
  Tensor s = a + b;
  Tensor bb = s - a;
  return {s, (a - (s - bb)) + (b - bb)};
}

// 0/1 (f64) for |v| < 2^-440 (subnormals and zeros included) and for |v| >= 2^440 (inf and NaN
// included).
std::pair<Tensor, Tensor> f64_magnitude_class(const Tensor& v) {
  Tensor v2 = v * v;
  return {v2.lt(0x1p-880).cast(DType::F64), bool_not(v2.lt(0x1p880)).cast(DType::F64)};
}

// x / y for f64 tensors.
//  1. Operands with |v| < 2^-440 are scaled by 2^540, those with |v| >= 2^440 by 2^-540 (exact),
//     so x', y' lie in [2^-534, 2^484).
//  2. q0 = x' * (1/y') (within 2 ulp); the residual x' - q0*y' from Dekker's exact product
//     q0*y' = p + e as (x' - p) - e; q1 = q0 + residual/y' (faithful: within 0.5 ulp + 2^-52 ulp).
//  3. Markstein's final step: r1 = x' - q1*y' is exact (a faithful quotient's remainder is an
//     f64), and RN(q1 + r1 * R) with R = RN(1/y') is the correctly rounded quotient. The
//     product r1*R = ch + cl is taken exactly (Dekker), q1 + ch = s + t exactly (Knuth's
//     two-sum); with u = RN(t + cl) (error w) the result is RN(s + u): s + u is never closer to
//     a midpoint of s's grid than |w|, so this is RN(q1 + r1*R) unless s + u is exactly a
//     midpoint (w would decide; ties to even decide instead: not known to occur).
//  Steps 2-3 apply while 2^-900 < |q0| < 2^990, where every product, split and error term is
//  exact and normal (the scaled ranges guarantee it for every result that is not 0 or inf
//  after step 4); elsewhere q0.
//  4. The quotient is scaled back by sy/sx (two exact multiplications; operands scaled alike
//     need none). Results that are subnormal round twice (53 bits, then the subnormal grid) and
//     may be 1 ulp off near a tie.
// Zeros, infinities and NaN: q0, which is then exact as in narrow_quotient.
Tensor wide_quotient(const Tensor& x, const Tensor& y) {
  constexpr double kUp = 0x1p540, kDown = 0x1p-540;
  auto [x_small, x_big] = f64_magnitude_class(x);
  auto [y_small, y_big] = f64_magnitude_class(y);
  Tensor xs = x * (x_small * kUp + x_big * kDown + (1.0 - x_small - x_big));
  Tensor ys = y * (y_small * kUp + y_big * kDown + (1.0 - y_small - y_big));
  Tensor r = ys.reciprocal();
  Tensor q0 = xs * r;
  auto ys_split = split26(ys);
  auto [p0, e0] = two_product(q0, split26(q0), ys, ys_split);
  Tensor q1 = q0 + ((xs - p0) - e0) * r;
  auto [p1, e1] = two_product(q1, split26(q1), ys, ys_split);
  Tensor r1 = (xs - p1) - e1;
  auto [ch, cl] = two_product(r1, split26(r1), r, split26(r));
  auto [s, t] = two_sum(q1, ch);
  Tensor q2 = s + (t + cl);
  Tensor in_range = q0.lt(0x1p990)
                        .logical_and(q0.gt(-0x1p990))
                        .logical_and(q0.gt(0x1p-900).logical_or(q0.lt(-0x1p-900)));
  Tensor q = in_range.where(q2, q0);
  // x/y = q * sy / sx: factors 1 when both operands were scaled alike; otherwise both factors
  // move q the same way (or one is 1), so an intermediate leaves the normal range only when
  // the result does.
  Tensor alike = x_small * y_small + x_big * y_big;
  Tensor up = (y_small * kUp + y_big * kDown + (1.0 - y_small - y_big)) * (1.0 - alike) + alike;
  Tensor down = (x_small * kDown + x_big * kUp + (1.0 - x_small - x_big)) * (1.0 - alike) + alike;
  return q * up * down;
}

// A scalar divisor that is 0, inf, NaN or a power of two (of the dtype) whose reciprocal is a
// finite value of the dtype: x * (1/s) is then exactly x / s (both round the same real once).
bool reciprocal_is_exact(double s, DType t) {
  if (s == 0 || !std::isfinite(s)) return true;
  int e = 0;
  const double m = std::frexp(s, &e);
  return (m == 0.5 || m == -0.5) && std::fabs(s) <= max_value(t) &&
         std::fabs(1.0 / s) <= max_value(t);
}

}  // namespace

Tensor Tensor::div(const Tensor& b) const {
  if (!is_float(dtype_)) {
    throw Error("div: " + std::string(name(dtype_)) +
                " tensors have no true division; cast to a float dtype first (x.cast(DType::F32))");
  }
  auto [x, y] = operands(*this, b, "div");
  // True division (IEEE's correctly rounded quotient), computed in f64: see narrow_quotient and
  // wide_quotient above. The 16/8-bit floats round narrow_quotient's f32 result to their dtype.
  if (dtype_ == DType::F64) return wide_quotient(x, y);
  Tensor q = narrow_quotient(x.cast(DType::F64), y.cast(DType::F64));
  return dtype_ == DType::F32 ? q : q.cast(dtype_);
}

Tensor operator/(const Tensor& a, const Tensor& b) { return a.div(b); }
Tensor operator/(const Tensor& a, double b) {
  // Integers: div throws the dtype error. Low-precision floats: as torch, the scalar is an f32
  // (not rounded to the dtype) and the f32 quotient rounds to the dtype. f32/f64: the scalar takes
  // the dtype; a multiplication by its reciprocal when that is exact, else a true division.
  if (!is_float(a.dtype())) return a.div(scalar_for(a, b, "div"));
  if (prim::computes_in_f32(a.dtype())) {
    Tensor x = a.cast(DType::F32);
    return x.div(scalar_for(x, b, "div")).cast(a.dtype());
  }
  if (reciprocal_is_exact(b, a.dtype())) return a * (1.0 / b);
  return a.div(scalar_for(a, b, "div"));
}
Tensor operator/(double a, const Tensor& b) {
  if (is_float(b.dtype()) && prim::computes_in_f32(b.dtype())) {
    Tensor y = b.cast(DType::F32);
    return scalar_for(y, a, "div").div(y).cast(b.dtype());
  }
  return scalar_for(b, a, "div").div(b);
}

}  // namespace luminal
