// Comparisons, logic and selection lowered to primitives: isnan/isinf, lt/le/gt/ge/eq/ne (with
// tensors and scalars), logical_not/and/or, where and masked_fill, and the comparison operators.
// Comparisons follow IEEE (NaN compares false, except ne); Bool is 0/1 of the primitives.
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "luminal/core/error.hpp"
#include "luminal/ir/elementwise_helpers.hpp"
#include "luminal/ir/prim.hpp"
#include "luminal/ir/tensor.hpp"

namespace luminal {

namespace {

using elementwise::apply_binary;
using elementwise::beyond_range;
using elementwise::bool_and;
using elementwise::bool_not;
using elementwise::bool_or;
using elementwise::operands;
using prim::scalar_for;
using prim::scalar_like;

Tensor as_bool(const Tensor& x) { return x.dtype() == DType::Bool ? x : x.ne(0); }

Tensor not_nan(const Tensor& x) {
  return is_float(x.dtype()) ? bool_not(x.isnan())
                             : x.graph()
                                   .ones({}, DType::Bool)
                                   .expand(std::vector<Dim>(x.shape().begin(), x.shape().end()));
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

// x <op> b for a scalar b (`cmp` compares with the scalar as a tensor of x's dtype).
Tensor compare_scalar(const Tensor& x, double b, bool if_below, bool if_above, std::string_view op,
                      Tensor (Tensor::*cmp)(const Tensor&) const) {
  if (auto c = beyond_range(x, b, if_below, if_above)) return all_bool(x, *c);
  return (x.*cmp)(scalar_for(x, b, op));
}

}  // namespace

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

Tensor Tensor::lt(const Tensor& b) const { return apply_binary(OpKind::LessThan, *this, b, "lt"); }
Tensor Tensor::gt(const Tensor& b) const {
  return apply_binary(OpKind::LessThan, *this, b, "gt", /*swapped=*/true);
}

Tensor Tensor::le(const Tensor& b) const { return less_equal(*this, b, "le"); }
Tensor Tensor::ge(const Tensor& b) const { return less_equal(b, *this, "ge"); }
Tensor Tensor::eq(const Tensor& b) const { return equal(*this, b, "eq"); }
Tensor Tensor::ne(const Tensor& b) const { return bool_not(equal(*this, b, "ne")); }

// Scalar comparisons: the scalar takes the tensor's dtype, except that integer tensors compared
// with a scalar beyond their range give the constant answer (if_below / if_above).
Tensor Tensor::lt(double b) const {
  return compare_scalar(*this, b, false, true, "lt", &Tensor::lt);
}
Tensor Tensor::le(double b) const {
  return compare_scalar(*this, b, false, true, "le", &Tensor::le);
}
Tensor Tensor::gt(double b) const {
  return compare_scalar(*this, b, true, false, "gt", &Tensor::gt);
}
Tensor Tensor::ge(double b) const {
  return compare_scalar(*this, b, true, false, "ge", &Tensor::ge);
}
Tensor Tensor::eq(double b) const {
  return compare_scalar(*this, b, false, false, "eq", &Tensor::eq);
}
Tensor Tensor::ne(double b) const {
  return compare_scalar(*this, b, true, true, "ne", &Tensor::ne);
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

Tensor operator<(const Tensor& a, const Tensor& b) { return a.lt(b); }
Tensor operator<=(const Tensor& a, const Tensor& b) { return a.le(b); }
Tensor operator>(const Tensor& a, const Tensor& b) { return a.gt(b); }
Tensor operator>=(const Tensor& a, const Tensor& b) { return a.ge(b); }
Tensor operator<(const Tensor& a, double b) { return a.lt(b); }
Tensor operator>(const Tensor& a, double b) { return a.gt(b); }
Tensor operator<=(const Tensor& a, double b) { return a.le(b); }
Tensor operator>=(const Tensor& a, double b) { return a.ge(b); }

}  // namespace luminal
