// Elementwise high-level ops lowered to primitives.
#include <cmath>
#include <numbers>

#include "luminal/core/error.hpp"
#include "luminal/ir/prim.hpp"
#include "luminal/ir/tensor.hpp"

namespace luminal {

namespace {

using prim::scalar_for;
using prim::scalar_like;

bool low_precision_float(DType t) {
  return t == DType::F16 || t == DType::BF16 || t == DType::TF32 || t == DType::F8E4M3 ||
         t == DType::F8E5M2;
}

// Composite float math on 16/8-bit floats runs in f32 and rounds once at the end.
template <class F>
Tensor in_f32(const Tensor& x, std::string_view op, F&& fn) {
  prim::require_float(x, op);
  if (!low_precision_float(x.dtype())) return fn(x);
  return fn(x.cast(DType::F32)).cast(x.dtype());
}

Tensor bool_not(const Tensor& b) { return prim::binary(OpKind::LessThan, b, scalar_like(b, 1)); }
Tensor bool_and(const Tensor& a, const Tensor& b) { return prim::binary(OpKind::Mul, a, b); }
Tensor bool_or(const Tensor& a, const Tensor& b) { return prim::binary(OpKind::Add, a, b); }
Tensor as_bool(const Tensor& x) { return x.dtype() == DType::Bool ? x : x.ne(0); }

Tensor not_nan(const Tensor& x) {
  return is_float(x.dtype()) ? bool_not(x.isnan()) : x.graph().ones({}, DType::Bool).expand(
                                                         std::vector<Dim>(x.shape().begin(), x.shape().end()));
}

void no_bool(const Tensor& x, std::string_view op) {
  if (x.dtype() == DType::Bool) {
    throw Error(std::string(op) + " is not defined for bool tensors; cast to an integer or float dtype first");
  }
}

}  // namespace

Tensor Tensor::cast(DType to) const {
  if (to == dtype_) return *this;
  return prim::unary(OpKind::Cast, *this, to);
}

Tensor Tensor::neg() const {
  no_bool(*this, "neg");
  return *this * -1.0;
}

Tensor Tensor::exp2() const {
  return in_f32(*this, "exp2", [](const Tensor& x) { return prim::unary(OpKind::Exp2, x, x.dtype()); });
}

Tensor Tensor::exp() const {
  return in_f32(*this, "exp", [](const Tensor& x) {
    return prim::unary(OpKind::Exp2, x * std::numbers::log2e, x.dtype());
  });
}

Tensor Tensor::log2() const {
  return in_f32(*this, "log2", [](const Tensor& x) { return prim::unary(OpKind::Log2, x, x.dtype()); });
}

Tensor Tensor::log() const {
  return in_f32(*this, "log", [](const Tensor& x) {
    return prim::unary(OpKind::Log2, x, x.dtype()) * std::numbers::ln2;
  });
}

Tensor Tensor::sin() const {
  return in_f32(*this, "sin", [](const Tensor& x) { return prim::unary(OpKind::Sin, x, x.dtype()); });
}

Tensor Tensor::cos() const {
  return in_f32(*this, "cos", [](const Tensor& x) {
    return prim::unary(OpKind::Sin, x + std::numbers::pi / 2, x.dtype());
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
  return in_f32(*this, "sqrt", [](const Tensor& x) { return prim::unary(OpKind::Sqrt, x, x.dtype()); });
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
  const bool integral = p == std::trunc(p) && std::fabs(p) <= 16;
  if (is_integer(dtype_) && (!integral || p < 0)) {
    throw Error("pow: integer tensors take only integral exponents 0..16, got " + std::to_string(p));
  }
  if (integral) {
    int64_t n = static_cast<int64_t>(std::fabs(p));
    Tensor result = scalar_like(*this, 1);
    Tensor base = *this;
    bool first = true;
    while (n > 0) {
      if (n & 1) {
        result = first ? base : result * base;
        first = false;
      }
      n >>= 1;
      if (n) base = base * base;
    }
    return p < 0 ? result.reciprocal() : result;
  }
  if (p == 0.5) return sqrt();
  return in_f32(*this, "pow", [p](const Tensor& x) { return (x.log2() * p).exp2(); });
}

Tensor Tensor::pow(const Tensor& p) const {
  return in_f32(*this, "pow", [&](const Tensor& x) { return (x.log2() * p.cast(x.dtype())).exp2(); });
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
  auto [x, y] = prim::broadcast(*this, b, "add");
  return prim::binary(OpKind::Add, x, y);
}

Tensor Tensor::mul(const Tensor& b) const {
  auto [x, y] = prim::broadcast(*this, b, "mul");
  return prim::binary(OpKind::Mul, x, y);
}

Tensor Tensor::sub(const Tensor& b) const {
  no_bool(*this, "sub");
  return add(b * -1.0);
}

Tensor Tensor::div(const Tensor& b) const {
  if (!is_float(dtype_)) {
    throw Error("div: " + std::string(name(dtype_)) +
                " tensors have no true division; cast to a float dtype first (x.cast(DType::F32))");
  }
  if (low_precision_float(dtype_)) return (cast(DType::F32).div(b.cast(DType::F32))).cast(dtype_);
  return mul(b.reciprocal());
}

Tensor Tensor::fmod(const Tensor& b) const {
  no_bool(*this, "fmod");
  auto [x, y] = prim::broadcast(*this, b, "fmod");
  return prim::binary(OpKind::Mod, x, y);
}

Tensor Tensor::remainder(const Tensor& b) const {
  Tensor r = fmod(b);
  auto [rr, bb] = prim::broadcast(r, b, "remainder");
  Tensor adjust = r.ne(0).logical_and(rr.lt(0).ne(bb.lt(0)));
  return adjust.where(rr + bb, rr);
}

Tensor Tensor::maximum(const Tensor& b) const {
  auto [x, y] = prim::broadcast(*this, b, "maximum");
  Tensor take_y = x.lt(y);
  if (is_float(dtype_)) take_y = take_y.logical_or(y.isnan());
  return take_y.where(y, x);
}

Tensor Tensor::minimum(const Tensor& b) const {
  auto [x, y] = prim::broadcast(*this, b, "minimum");
  Tensor take_y = y.lt(x);
  if (is_float(dtype_)) take_y = take_y.logical_or(y.isnan());
  return take_y.where(y, x);
}

Tensor Tensor::clamp(double lo, double hi) const {
  if (lo > hi) throw Error("clamp: lo " + std::to_string(lo) + " is greater than hi " + std::to_string(hi));
  return maximum(scalar_for(*this, lo, "clamp")).minimum(scalar_for(*this, hi, "clamp"));
}

Tensor Tensor::clamp(const Tensor& lo, const Tensor& hi) const { return maximum(lo).minimum(hi); }

Tensor Tensor::lt(const Tensor& b) const {
  auto [x, y] = prim::broadcast(*this, b, "lt");
  return prim::binary(OpKind::LessThan, x, y);
}

Tensor Tensor::gt(const Tensor& b) const { return b.lt(*this); }

Tensor Tensor::le(const Tensor& b) const {
  auto [x, y] = prim::broadcast(*this, b, "le");
  Tensor r = bool_not(prim::binary(OpKind::LessThan, y, x));
  if (!is_float(dtype_)) return r;
  return bool_and(r, bool_and(not_nan(x), not_nan(y)));
}

Tensor Tensor::ge(const Tensor& b) const { return b.le(*this); }

Tensor Tensor::eq(const Tensor& b) const {
  auto [x, y] = prim::broadcast(*this, b, "eq");
  Tensor r = bool_and(bool_not(prim::binary(OpKind::LessThan, x, y)),
                      bool_not(prim::binary(OpKind::LessThan, y, x)));
  if (!is_float(dtype_)) return r;
  return bool_and(r, bool_and(not_nan(x), not_nan(y)));
}

Tensor Tensor::ne(const Tensor& b) const { return bool_not(eq(b)); }

Tensor Tensor::lt(double b) const { return lt(scalar_for(*this, b, "lt")); }
Tensor Tensor::le(double b) const { return le(scalar_for(*this, b, "le")); }
Tensor Tensor::gt(double b) const { return gt(scalar_for(*this, b, "gt")); }
Tensor Tensor::ge(double b) const { return ge(scalar_for(*this, b, "ge")); }
Tensor Tensor::eq(double b) const { return eq(scalar_for(*this, b, "eq")); }
Tensor Tensor::ne(double b) const { return ne(scalar_for(*this, b, "ne")); }

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
    throw Error("where: the two branches have different dtypes (" + std::string(name(a.dtype())) + " vs " +
                std::string(name(b.dtype())) + "); cast one to match");
  }
  Tensor cond = as_bool(*this);
  Shape s = prim::broadcast_shape(prim::broadcast_shape(cond.shape(), a.shape(), "where"), b.shape(), "where");
  std::vector<Dim> dims(s.begin(), s.end());
  // Scatter a over b at the flat indices where cond holds; elsewhere the index is -1 (skipped),
  // so values of the unselected branch never mix into the result.
  Tensor index = (prim::flat_index(graph_, s) + 1) * cond.expand(dims).cast(DType::I32) - 1.0;
  return prim::scatter(b.expand(dims), index, a.expand(dims));
}

Tensor Tensor::where(const Tensor& a, double b) const { return where(a, scalar_for(a, b, "where")); }
Tensor Tensor::where(double a, const Tensor& b) const { return where(scalar_for(b, a, "where"), b); }

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
Tensor operator-(const Tensor& a, double b) { return a.add(scalar_for(a, -b, "sub")); }
Tensor operator*(const Tensor& a, double b) { return a.mul(scalar_for(a, b, "mul")); }
Tensor operator/(const Tensor& a, double b) {
  if (!is_float(a.dtype())) return a.div(scalar_for(a, b, "div"));  // throws the dtype error
  return a * (1.0 / b);
}
Tensor operator%(const Tensor& a, double b) { return a.fmod(scalar_for(a, b, "fmod")); }
Tensor operator+(double a, const Tensor& b) { return b + a; }
Tensor operator-(double a, const Tensor& b) { return (-b) + a; }
Tensor operator*(double a, const Tensor& b) { return b * a; }
Tensor operator/(double a, const Tensor& b) { return scalar_for(b, a, "div").div(b); }
Tensor operator<(const Tensor& a, const Tensor& b) { return a.lt(b); }
Tensor operator<=(const Tensor& a, const Tensor& b) { return a.le(b); }
Tensor operator>(const Tensor& a, const Tensor& b) { return a.gt(b); }
Tensor operator>=(const Tensor& a, const Tensor& b) { return a.ge(b); }
Tensor operator<(const Tensor& a, double b) { return a.lt(b); }
Tensor operator>(const Tensor& a, double b) { return a.gt(b); }
Tensor operator<=(const Tensor& a, double b) { return a.le(b); }
Tensor operator>=(const Tensor& a, double b) { return a.ge(b); }

}  // namespace luminal
