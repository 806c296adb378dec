// Binary arithmetic lowered to primitives: add, sub, mul, fmod, remainder, minimum/maximum,
// clamp, and the arithmetic operators (division is in division.cpp, comparisons in
// elementwise_logic.cpp).
#include <optional>
#include <string>
#include <string_view>

#include "luminal/core/error.hpp"
#include "luminal/ir/elementwise_helpers.hpp"
#include "luminal/ir/prim.hpp"
#include "luminal/ir/tensor.hpp"

namespace luminal {

namespace {

using elementwise::apply_binary;
using elementwise::beyond_range;
using elementwise::no_bool;
using elementwise::operands;
using prim::scalar_for;
using prim::scalar_like;

// maximum (max) or minimum of a and b: b where it wins or, for floats, is NaN; else a.
Tensor extreme(const Tensor& a, const Tensor& b, bool max, std::string_view op) {
  auto [x, y] = operands(a, b, op);
  Tensor take_y = max ? x.lt(y) : y.lt(x);
  if (is_float(a.dtype())) take_y = take_y.logical_or(y.isnan());
  return take_y.where(y, x);
}

}  // namespace

Tensor Tensor::add(const Tensor& b) const { return apply_binary(OpKind::Add, *this, b, "add"); }

Tensor Tensor::mul(const Tensor& b) const { return apply_binary(OpKind::Mul, *this, b, "mul"); }

Tensor Tensor::sub(const Tensor& b) const {
  no_bool(*this, "sub");
  auto [x, y] = operands(*this, b, "sub");
  return x.add(y.mul(scalar_like(y, -1)));
}

Tensor Tensor::fmod(const Tensor& b) const {
  no_bool(*this, "fmod");
  return apply_binary(OpKind::Mod, *this, b, "fmod");
}

Tensor Tensor::remainder(const Tensor& b) const {
  no_bool(*this, "remainder");
  auto [x, y] = operands(*this, b, "remainder");
  Tensor r = x.fmod(y);
  Tensor adjust = r.ne(0).logical_and(r.lt(0).ne(y.lt(0)));
  return adjust.where(r + y, r);
}

Tensor Tensor::maximum(const Tensor& b) const { return extreme(*this, b, true, "maximum"); }
Tensor Tensor::minimum(const Tensor& b) const { return extreme(*this, b, false, "minimum"); }

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

// ---- operators ----

Tensor operator+(const Tensor& a, const Tensor& b) { return a.add(b); }
Tensor operator-(const Tensor& a, const Tensor& b) { return a.sub(b); }
Tensor operator*(const Tensor& a, const Tensor& b) { return a.mul(b); }
Tensor operator%(const Tensor& a, const Tensor& b) { return a.fmod(b); }
Tensor operator-(const Tensor& a) { return a.neg(); }
Tensor operator+(const Tensor& a, double b) { return a.add(scalar_for(a, b, "add")); }
Tensor operator-(const Tensor& a, double b) {
  no_bool(a, "sub");
  return a.sub(scalar_for(a, b, "sub"));
}
Tensor operator*(const Tensor& a, double b) { return a.mul(scalar_for(a, b, "mul")); }
Tensor operator%(const Tensor& a, double b) { return a.fmod(scalar_for(a, b, "fmod")); }
Tensor operator+(double a, const Tensor& b) { return b + a; }
Tensor operator-(double a, const Tensor& b) {
  no_bool(b, "sub");
  return scalar_for(b, a, "sub").sub(b);
}
Tensor operator*(double a, const Tensor& b) { return b * a; }
}  // namespace luminal
