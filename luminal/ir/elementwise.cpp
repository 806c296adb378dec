// Elementwise high-level ops lowered to primitives.
#include <cmath>
#include <numbers>
#include <optional>

#include "luminal/core/error.hpp"
#include "luminal/ir/prim.hpp"
#include "luminal/ir/tensor.hpp"

namespace luminal {

namespace {

using prim::scalar_for;
using prim::scalar_like;

// A float-only op; composite math on 16/8-bit floats runs in f32 and rounds once at the end.
template <class F>
Tensor in_f32(const Tensor& x, std::string_view op, F&& fn) {
  prim::require_float(x, op);
  return prim::in_f32(x, std::forward<F>(fn));
}

Tensor bool_not(const Tensor& b) { return prim::binary(OpKind::LessThan, b, scalar_like(b, 1)); }
Tensor bool_and(const Tensor& a, const Tensor& b) { return prim::binary(OpKind::Mul, a, b); }
Tensor bool_or(const Tensor& a, const Tensor& b) { return prim::binary(OpKind::Add, a, b); }
Tensor as_bool(const Tensor& x) { return x.dtype() == DType::Bool ? x : x.ne(0); }

Tensor not_nan(const Tensor& x) {
  return is_float(x.dtype()) ? bool_not(x.isnan())
                             : x.graph()
                                   .ones({}, DType::Bool)
                                   .expand(std::vector<Dim>(x.shape().begin(), x.shape().end()));
}

void no_bool(const Tensor& x, std::string_view op) {
  if (x.dtype() == DType::Bool) {
    throw Error(std::string(op) +
                " is not defined for bool tensors; cast to an integer or float dtype first");
  }
}

// Both operands must have one dtype; errors name the op the caller used.
void same_dtype(const Tensor& a, const Tensor& b, std::string_view op) {
  if (a.dtype() != b.dtype()) {
    throw Error(std::string(op) + ": dtypes differ (" + std::string(name(a.dtype())) +
                shape_to_string(a.shape()) + " vs " + std::string(name(b.dtype())) +
                shape_to_string(b.shape()) + "); cast one side so both match");
  }
}

// Same dtype, then broadcast to the common shape.
std::pair<Tensor, Tensor> operands(const Tensor& a, const Tensor& b, std::string_view op) {
  same_dtype(a, b, op);
  return prim::broadcast(a, b, op);
}

// Integer tensors against a scalar outside their dtype's range (which would wrap as a constant):
// every element is on the same side of it. Returns the answer when s is below / above the range.
std::optional<bool> beyond_range(const Tensor& x, double s, bool if_below, bool if_above) {
  if (!is_integer(x.dtype())) return std::nullopt;
  if (s < min_value(x.dtype())) return if_below;
  if (s >= max_value(x.dtype()) + 1.0) return if_above;  // +1: I64's max is 2^63 as a double
  return std::nullopt;
}

Tensor all_bool(const Tensor& x, bool value) {
  std::vector<Dim> dims(x.shape().begin(), x.shape().end());
  return x.graph().constant(value ? 1 : 0, DType::Bool).expand(dims);
}

// a <= b: not (b < a), and false when either side is NaN.
Tensor less_equal(const Tensor& a, const Tensor& b, std::string_view op) {
  auto [x, y] = operands(a, b, op);
  Tensor r = bool_not(prim::binary(OpKind::LessThan, y, x));
  if (!is_float(x.dtype())) return r;
  return bool_and(r, bool_and(not_nan(x), not_nan(y)));
}

// a == b: neither is less, and false when either side is NaN.
Tensor equal(const Tensor& a, const Tensor& b, std::string_view op) {
  auto [x, y] = operands(a, b, op);
  Tensor r = bool_and(bool_not(prim::binary(OpKind::LessThan, x, y)),
                      bool_not(prim::binary(OpKind::LessThan, y, x)));
  if (!is_float(x.dtype())) return r;
  return bool_and(r, bool_and(not_nan(x), not_nan(y)));
}

// ---- true division ----
//
// The HLIR has no Div: x / y is built from Recip, Mul and Add in f64, with one correction step
// whose residual is computed exactly (no fma needed), so it matches IEEE division.

// Veltkamp split of an f64 value into hi (its leading 26 significand bits) and lo = a - hi
// (at most 27 bits); exact while |a| < 2^996 (the product by 2^27 + 1 must not overflow).
std::pair<Tensor, Tensor> split26(const Tensor& a) {
  Tensor t = a * 134217729.0;  // 2^27 + 1
  Tensor hi = t - (t - a);
  return {hi, a - hi};
}

// x / y for f64 tensors holding values of f32 (or of a narrower float format): the result,
// rounded once to f32 or to the narrower format, is the correctly rounded quotient.
//   q0 = x * (1/y) is within 2 ulp64 of x/y (|x/y| lies in [2^-277, 2^277], far from f64's
//   limits). The residual x - q0*y is exact in f64: q0 = hi + lo with hi, lo of <= 27 bits and y
//   of <= 24 bits, so hi*y and lo*y are exact, x - hi*y is exact (hi*y is within 2^-25 relative of
//   x) and so is the remaining small difference. q1 = q0 + residual * (1/y) is then within
//   ~0.5 ulp64 + 2^-50 ulp64 of x/y, and equal to it when x/y is an f64. A quotient of two 24-bit
//   values that is not an f32 rounding midpoint lies >= 2^-49 (relative) away from every one, so
//   rounding q1 to f32 gives the correctly rounded quotient, ties included (a tie, possible only
//   for subnormal f32 results, is an f64 and so q1 exactly). The f32 double rounding to f16/bf16
//   /fp8 afterwards is innocuous for division (2p + 2 <= 24 for those formats).
// Zeros, infinities and NaN (where q0 is not finite and nonzero) take q0, which is then exact:
// x*(1/0) = +-inf, 0*inf = NaN, x*(1/inf) = +-0, inf*(1/y) = +-inf.
Tensor narrow_quotient(const Tensor& x, const Tensor& y) {
  Tensor r = y.reciprocal();
  Tensor q0 = x * r;
  auto [hi, lo] = split26(q0);
  Tensor ny = -y;
  Tensor residual = (x + hi * ny) + lo * ny;
  Tensor q1 = q0 + residual * r;
  Tensor q0sq = q0 * q0;  // in [2^-554, 2^554] when q0 is finite and nonzero
  Tensor regular = q0sq.gt(0).logical_and(q0sq.lt(INFINITY));
  return regular.where(q1, q0);
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

Tensor Tensor::cast(DType to) const {
  if (to == dtype_) return *this;
  return prim::unary(OpKind::Cast, *this, to);
}

Tensor Tensor::neg() const {
  no_bool(*this, "neg");
  return mul(scalar_like(*this, -1));  // -1 wraps to the maximum for unsigned dtypes
}

Tensor Tensor::exp2() const {
  return in_f32(*this, "exp2",
                [](const Tensor& x) { return prim::unary(OpKind::Exp2, x, x.dtype()); });
}

Tensor Tensor::exp() const {
  return in_f32(*this, "exp", [](const Tensor& x) {
    return prim::unary(OpKind::Exp2, x * std::numbers::log2e, x.dtype());
  });
}

Tensor Tensor::log2() const {
  return in_f32(*this, "log2",
                [](const Tensor& x) { return prim::unary(OpKind::Log2, x, x.dtype()); });
}

Tensor Tensor::log() const {
  return in_f32(*this, "log", [](const Tensor& x) {
    return prim::unary(OpKind::Log2, x, x.dtype()) * std::numbers::ln2;
  });
}

Tensor Tensor::sin() const {
  return in_f32(*this, "sin",
                [](const Tensor& x) { return prim::unary(OpKind::Sin, x, x.dtype()); });
}

Tensor Tensor::cos() const {
  // 1 - 2*sin(x/2)^2: x/2 is exact, so the error stays a few eps for any |x| (sin(x + pi/2)
  // would round x + pi/2, an absolute error of ~|x|*eps).
  return in_f32(*this, "cos", [](const Tensor& x) {
    Tensor s = prim::unary(OpKind::Sin, x * 0.5, x.dtype());
    return 1.0 - s * s * 2.0;
  });
}

Tensor Tensor::sigmoid() const {
  return in_f32(*this, "sigmoid", [](const Tensor& x) { return ((-x).exp() + 1.0).reciprocal(); });
}

Tensor Tensor::tanh() const {
  return in_f32(*this, "tanh", [](const Tensor& x) { return (x * 2.0).sigmoid() * 2.0 - 1.0; });
}

Tensor Tensor::silu() const {
  return in_f32(*this, "silu", [](const Tensor& x) { return x * x.sigmoid(); });
}

Tensor Tensor::relu() const {
  no_bool(*this, "relu");
  return maximum(scalar_like(*this, 0));
}

Tensor Tensor::erf() const {
  // Abramowitz & Stegun 7.1.26: |error| <= 1.5e-7.
  return in_f32(*this, "erf", [](const Tensor& x) {
    Tensor ax = x.abs();
    Tensor t = (ax * 0.3275911 + 1.0).reciprocal();
    Tensor poly = ((((t * 1.061405429 - 1.453152027) * t + 1.421413741) * t - 0.284496736) * t +
                   0.254829592) *
                  t;
    Tensor y = 1.0 - poly * (-(x * x)).exp();
    return x.sign() * y;
  });
}

Tensor Tensor::gelu() const {
  return in_f32(*this, "gelu", [](const Tensor& x) {
    return x * 0.5 * ((x * (1.0 / std::numbers::sqrt2)).erf() + 1.0);
  });
}

Tensor Tensor::gelu_tanh() const {
  return in_f32(*this, "gelu_tanh", [](const Tensor& x) {
    const double k = std::sqrt(2.0 / std::numbers::pi);
    return x * 0.5 * (((x + x * x * x * 0.044715) * k).tanh() + 1.0);
  });
}

Tensor Tensor::sign() const {
  no_bool(*this, "sign");
  Tensor s = gt(0).cast(dtype_) - lt(0).cast(dtype_);
  if (!is_float(dtype_)) return s;
  return isnan().where(*this, s);
}

Tensor Tensor::abs() const {
  no_bool(*this, "abs");
  if (is_integer(dtype_) && !is_signed(dtype_)) return *this;
  if (!is_float(dtype_)) return *this * sign();
  return *this * sign() + 0.0;  // + 0 turns -0 into +0
}

Tensor Tensor::sqrt() const {
  return in_f32(*this, "sqrt",
                [](const Tensor& x) { return prim::unary(OpKind::Sqrt, x, x.dtype()); });
}

Tensor Tensor::reciprocal() const {
  return in_f32(*this, "reciprocal",
                [](const Tensor& x) { return prim::unary(OpKind::Recip, x, x.dtype()); });
}

Tensor Tensor::rsqrt() const {
  return in_f32(*this, "rsqrt", [](const Tensor& x) { return x.sqrt().reciprocal(); });
}

Tensor Tensor::square() const { return *this * *this; }

Tensor Tensor::pow(double p) const {
  no_bool(*this, "pow");
  const bool integral = std::isfinite(p) && p == std::trunc(p);
  if (is_integer(dtype_) && (!integral || p < 0 || p > 16)) {
    throw Error("pow: integer tensors take only integral exponents 0..16, got " +
                std::to_string(p));
  }
  // Integral exponents up to 2^31: repeated squaring of x (or of 1/x for p < 0, so
  // intermediates overflow only when the result does); signs of negative bases, zeros and
  // infinities follow from the products. Floats compute in f32 for the low-precision dtypes.
  if (integral && std::fabs(p) <= 0x1p31) {
    auto power = [p](const Tensor& x) {
      int64_t n = static_cast<int64_t>(std::fabs(p));
      Tensor result = scalar_like(x, 1);
      Tensor base = p < 0 ? x.reciprocal() : x;
      bool first = true;
      while (n > 0) {
        if (n & 1) {
          result = first ? base : result * base;
          first = false;
        }
        n >>= 1;
        if (n) base = base * base;
      }
      return result;
    };
    return is_float(dtype_) ? in_f32(*this, "pow", power) : power(*this);
  }
  // As torch, sqrt and rsqrt except for f16 (so pow(-0, 0.5) = -0 and pow(-inf, 0.5) = NaN;
  // torch's f16 kernel takes std::pow's +0 and inf).
  if (p == 0.5 && dtype_ != DType::F16) return sqrt();
  if (p == -0.5 && dtype_ != DType::F16) return rsqrt();
  return in_f32(*this, "pow", [p, integral](const Tensor& x) {
    // inf and NaN exponents: std::pow's special cases, through the tensor-exponent path.
    if (!std::isfinite(p)) return x.pow(scalar_like(x, p));
    if (integral) {
      // |p| > 2^31: |x|^p, negated for negative bases (-0 included) when p is odd.
      Tensor mag = (x.abs().log2() * p).exp2();
      if (std::fmod(p, 2.0) == 0) return mag;
      Tensor negative = x.lt(0).logical_or(x.reciprocal().lt(0));
      return negative.where(-mag, mag);
    }
    // Fractional p: exp2(p*log2(x)), NaN for negative finite x; -inf gives inf (p > 0) or +0.
    Tensor r = (x.log2() * p).exp2();
    return x.lt(-max_value(x.dtype())).where(p > 0 ? INFINITY : 0.0, r);
  });
}

Tensor Tensor::pow(const Tensor& p) const {
  // std::pow semantics: |x|^p through exp2(p*log2|x|), then the sign for negative bases with odd
  // integral exponents, NaN for negative finite bases with non-integral exponents, and the
  // special cases pow(x, 0) = pow(1, y) = pow(-1, +-inf) = 1.
  return in_f32(*this, "pow", [&](const Tensor& x) {
    auto [b, e] = prim::broadcast(x, p.cast(x.dtype()), "pow");
    Tensor mag = (b.abs().log2() * e).exp2();
    Tensor e_inf = e.isinf();
    Tensor e_integral = (e % 1.0).eq(0).logical_or(e_inf);
    Tensor e_odd = (e % 2.0).abs().eq(1);
    // x < 0, or x == -0 (whose reciprocal is -inf).
    Tensor negative = b.lt(0).logical_or(b.reciprocal().lt(0));
    Tensor r = negative.logical_and(e_odd).where(-mag, mag);
    Tensor nan = b.lt(0).logical_and(bool_not(b.isinf())).logical_and(bool_not(e_integral));
    r = nan.where(NAN, r);
    Tensor one = e.eq(0).logical_or(b.eq(1)).logical_or(b.eq(-1).logical_and(e_inf));
    return one.where(1.0, r);
  });
}

Tensor Tensor::isnan() const {
  if (!is_float(dtype_)) return prim::scalar_like(*this, 0).cast(DType::Bool);
  Tensor below_inf = prim::binary(OpKind::LessThan, *this, scalar_like(*this, INFINITY));
  Tensor above_ninf = prim::binary(OpKind::LessThan, scalar_like(*this, -INFINITY), *this);
  return bool_and(bool_not(below_inf), bool_not(above_ninf));
}

Tensor Tensor::isinf() const {
  if (!is_float(dtype_)) return prim::scalar_like(*this, 0).cast(DType::Bool);
  Tensor a = bool_not(prim::binary(OpKind::LessThan, *this, scalar_like(*this, INFINITY)));
  Tensor b = bool_not(prim::binary(OpKind::LessThan, scalar_like(*this, -INFINITY), *this));
  // +inf: a and not b; -inf: b and not a; NaN: both.
  return bool_or(bool_and(a, bool_not(b)), bool_and(b, bool_not(a)));
}

Tensor Tensor::logical_not() const {
  if (dtype_ == DType::Bool) return bool_not(*this);
  return eq(0);
}

// ---- binary ----

Tensor Tensor::add(const Tensor& b) const {
  auto [x, y] = operands(*this, b, "add");
  return prim::binary(OpKind::Add, x, y);
}

Tensor Tensor::mul(const Tensor& b) const {
  auto [x, y] = operands(*this, b, "mul");
  return prim::binary(OpKind::Mul, x, y);
}

Tensor Tensor::sub(const Tensor& b) const {
  no_bool(*this, "sub");
  auto [x, y] = operands(*this, b, "sub");
  return x.add(y.mul(scalar_like(y, -1)));
}

Tensor Tensor::div(const Tensor& b) const {
  if (!is_float(dtype_)) {
    throw Error("div: " + std::string(name(dtype_)) +
                " tensors have no true division; cast to a float dtype first (x.cast(DType::F32))");
  }
  auto [x, y] = operands(*this, b, "div");
  // True division (IEEE's correctly rounded quotient), computed in f64: see narrow_quotient and
  // wide_quotient above. f32 and the 16/8-bit floats cast the f64 result to their dtype.
  if (dtype_ == DType::F64) return wide_quotient(x, y);
  return narrow_quotient(x.cast(DType::F64), y.cast(DType::F64)).cast(dtype_);
}

Tensor Tensor::fmod(const Tensor& b) const {
  no_bool(*this, "fmod");
  auto [x, y] = operands(*this, b, "fmod");
  return prim::binary(OpKind::Mod, x, y);
}

Tensor Tensor::remainder(const Tensor& b) const {
  no_bool(*this, "remainder");
  auto [x, y] = operands(*this, b, "remainder");
  Tensor r = x.fmod(y);
  Tensor adjust = r.ne(0).logical_and(r.lt(0).ne(y.lt(0)));
  return adjust.where(r + y, r);
}

Tensor Tensor::maximum(const Tensor& b) const {
  auto [x, y] = operands(*this, b, "maximum");
  Tensor take_y = x.lt(y);
  if (is_float(dtype_)) take_y = take_y.logical_or(y.isnan());
  return take_y.where(y, x);
}

Tensor Tensor::minimum(const Tensor& b) const {
  auto [x, y] = operands(*this, b, "minimum");
  Tensor take_y = y.lt(x);
  if (is_float(dtype_)) take_y = take_y.logical_or(y.isnan());
  return take_y.where(y, x);
}

Tensor Tensor::clamp(double lo, double hi) const {
  if (lo > hi)
    throw Error("clamp: lo " + std::to_string(lo) + " is greater than hi " + std::to_string(hi));
  Tensor r = *this;
  // Integer bounds beyond the dtype's range bound nothing (as constants they would wrap).
  const std::optional<bool> lo_below = beyond_range(*this, lo, true, false);
  const std::optional<bool> hi_above = beyond_range(*this, hi, false, true);
  if (beyond_range(*this, lo, false, true).value_or(false) ||
      beyond_range(*this, hi, true, false).value_or(false)) {
    throw Error("clamp: the interval [" + std::to_string(lo) + ", " + std::to_string(hi) +
                "] lies outside the range of " + std::string(name(dtype_)) +
                "; cast to a wider dtype first");
  }
  if (!lo_below.value_or(false)) r = r.maximum(scalar_for(*this, lo, "clamp"));
  if (!hi_above.value_or(false)) r = r.minimum(scalar_for(*this, hi, "clamp"));
  return r;
}

Tensor Tensor::clamp(const Tensor& lo, const Tensor& hi) const { return maximum(lo).minimum(hi); }

Tensor Tensor::lt(const Tensor& b) const {
  auto [x, y] = operands(*this, b, "lt");
  return prim::binary(OpKind::LessThan, x, y);
}

Tensor Tensor::gt(const Tensor& b) const {
  auto [x, y] = operands(*this, b, "gt");
  return prim::binary(OpKind::LessThan, y, x);
}

Tensor Tensor::le(const Tensor& b) const { return less_equal(*this, b, "le"); }
Tensor Tensor::ge(const Tensor& b) const { return less_equal(b, *this, "ge"); }
Tensor Tensor::eq(const Tensor& b) const { return equal(*this, b, "eq"); }
Tensor Tensor::ne(const Tensor& b) const { return bool_not(equal(*this, b, "ne")); }

// Scalar comparisons: the scalar takes the tensor's dtype, except that integer tensors compared
// with a scalar beyond their range give the constant answer.
Tensor Tensor::lt(double b) const {
  if (auto c = beyond_range(*this, b, false, true)) return all_bool(*this, *c);
  return lt(scalar_for(*this, b, "lt"));
}
Tensor Tensor::le(double b) const {
  if (auto c = beyond_range(*this, b, false, true)) return all_bool(*this, *c);
  return le(scalar_for(*this, b, "le"));
}
Tensor Tensor::gt(double b) const {
  if (auto c = beyond_range(*this, b, true, false)) return all_bool(*this, *c);
  return gt(scalar_for(*this, b, "gt"));
}
Tensor Tensor::ge(double b) const {
  if (auto c = beyond_range(*this, b, true, false)) return all_bool(*this, *c);
  return ge(scalar_for(*this, b, "ge"));
}
Tensor Tensor::eq(double b) const {
  if (auto c = beyond_range(*this, b, false, false)) return all_bool(*this, *c);
  return eq(scalar_for(*this, b, "eq"));
}
Tensor Tensor::ne(double b) const {
  if (auto c = beyond_range(*this, b, true, true)) return all_bool(*this, *c);
  return ne(scalar_for(*this, b, "ne"));
}

Tensor Tensor::logical_and(const Tensor& b) const {
  auto [x, y] = prim::broadcast(as_bool(*this), as_bool(b), "logical_and");
  return bool_and(x, y);
}

Tensor Tensor::logical_or(const Tensor& b) const {
  auto [x, y] = prim::broadcast(as_bool(*this), as_bool(b), "logical_or");
  return bool_or(x, y);
}

Tensor Tensor::where(const Tensor& a, const Tensor& b) const {
  if (a.dtype() != b.dtype()) {
    throw Error("where: the two branches have different dtypes (" + std::string(name(a.dtype())) +
                " vs " + std::string(name(b.dtype())) + "); cast one to match");
  }
  Tensor cond = as_bool(*this);
  Shape s = prim::broadcast_shape(prim::broadcast_shape(cond.shape(), a.shape(), "where"),
                                  b.shape(), "where");
  std::vector<Dim> dims(s.begin(), s.end());
  // Scatter a over b at the flat indices where cond holds; elsewhere the index is -1 (skipped),
  // so values of the unselected branch never mix into the result.
  Tensor index = (prim::flat_index(graph_, s) + 1) * cond.expand(dims).cast(DType::I32) - 1.0;
  return prim::scatter(b.expand(dims), index, a.expand(dims));
}

Tensor Tensor::where(const Tensor& a, double b) const {
  return where(a, scalar_for(a, b, "where"));
}
Tensor Tensor::where(double a, const Tensor& b) const {
  return where(scalar_for(b, a, "where"), b);
}

Tensor Tensor::masked_fill(const Tensor& mask, double value) const {
  return mask.where(scalar_for(*this, value, "masked_fill"), *this);
}

// ---- operators ----

Tensor operator+(const Tensor& a, const Tensor& b) { return a.add(b); }
Tensor operator-(const Tensor& a, const Tensor& b) { return a.sub(b); }
Tensor operator*(const Tensor& a, const Tensor& b) { return a.mul(b); }
Tensor operator/(const Tensor& a, const Tensor& b) { return a.div(b); }
Tensor operator%(const Tensor& a, const Tensor& b) { return a.fmod(b); }
Tensor operator-(const Tensor& a) { return a.neg(); }
Tensor operator+(const Tensor& a, double b) { return a.add(scalar_for(a, b, "add")); }
Tensor operator-(const Tensor& a, double b) {
  no_bool(a, "sub");
  return a.sub(scalar_for(a, b, "sub"));
}
Tensor operator*(const Tensor& a, double b) { return a.mul(scalar_for(a, b, "mul")); }
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
Tensor operator%(const Tensor& a, double b) { return a.fmod(scalar_for(a, b, "fmod")); }
Tensor operator+(double a, const Tensor& b) { return b + a; }
Tensor operator-(double a, const Tensor& b) {
  no_bool(b, "sub");
  return scalar_for(b, a, "sub").sub(b);
}
Tensor operator*(double a, const Tensor& b) { return b * a; }
Tensor operator/(double a, const Tensor& b) {
  if (is_float(b.dtype()) && prim::computes_in_f32(b.dtype())) {
    Tensor y = b.cast(DType::F32);
    return scalar_for(y, a, "div").div(y).cast(b.dtype());
  }
  return scalar_for(b, a, "div").div(b);
}
Tensor operator<(const Tensor& a, const Tensor& b) { return a.lt(b); }
Tensor operator<=(const Tensor& a, const Tensor& b) { return a.le(b); }
Tensor operator>(const Tensor& a, const Tensor& b) { return a.gt(b); }
Tensor operator>=(const Tensor& a, const Tensor& b) { return a.ge(b); }
Tensor operator<(const Tensor& a, double b) { return a.lt(b); }
Tensor operator>(const Tensor& a, double b) { return a.gt(b); }
Tensor operator<=(const Tensor& a, double b) { return a.le(b); }
Tensor operator>=(const Tensor& a, double b) { return a.ge(b); }

}  // namespace luminal
