// Unary elementwise ops lowered to primitives: casts, exp/log/trig, activations, sign and abs,
// sqrt and reciprocal, and pow.
#include <cmath>
#include <numbers>

#include "luminal/core/error.hpp"
#include "luminal/ir/elementwise_helpers.hpp"
#include "luminal/ir/prim.hpp"
#include "luminal/ir/tensor.hpp"

namespace luminal {

namespace {

using elementwise::bool_not;
using elementwise::in_f32;
using elementwise::no_bool;
using prim::scalar_like;

}  // namespace

Tensor Tensor::cast(DType to) const {
  if (to == dtype_) return *this;
  return prim::unary(OpKind::Cast, *this, to);
}

Tensor Tensor::dequantize(DType to) const { return prim::dequantize(*this, to); }

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

}  // namespace luminal
