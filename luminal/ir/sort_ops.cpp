// argmax/argmin, argsort, topk and cumsum, built from comparisons, reductions and index maps.
#include "luminal/core/error.hpp"
#include "luminal/ir/prim.hpp"
#include "luminal/ir/tensor.hpp"

namespace luminal {

namespace {

// I32 positions 0..d-1 along `axis`, broadcast to x's shape.
Tensor positions(const Tensor& x, int axis) {
  Tensor p = x.graph().arange(x.dim(axis));
  for (int k = axis + 1; k < x.rank(); ++k)
    p = p.unsqueeze(-1);
  return p.expand(std::vector<Dim>(x.shape().begin(), x.shape().end()));
}

// Index of the first element along `axis` where `hit` holds.
Tensor first_hit(const Tensor& hit, int axis, bool keepdim) {
  Tensor pos = positions(hit, axis);
  Tensor none = prim::dim_scalar(hit.graph(), hit.dim(axis));
  return hit.where(pos, none.expand(std::vector<Dim>(hit.shape().begin(), hit.shape().end())))
      .min(axis, keepdim);
}

Tensor arg_extreme(const Tensor& x, int axis, bool keepdim, bool is_max) {
  int a = normalize_axis(axis, x.rank(), is_max ? "argmax" : "argmin");
  Tensor v = x.dtype() == DType::Bool ? x.cast(DType::I32) : x;
  Tensor m = is_max ? v.max(a, true) : v.min(a, true);
  Tensor hit = v.eq(m);
  if (is_float(v.dtype())) hit = hit.logical_or(v.isnan());
  return first_hit(hit, a, keepdim);
}

// a sorts strictly before b (NaN last when ascending, first when descending, like torch).
Tensor before(const Tensor& a, const Tensor& b, bool descending) {
  Tensor r = descending ? a.gt(b) : a.lt(b);
  if (!is_float(a.dtype())) return r;
  Tensor nan_first = descending ? a.isnan().logical_and(b.isnan().logical_not())
                                : b.isnan().logical_and(a.isnan().logical_not());
  return r.logical_or(nan_first);
}

Tensor same_key(const Tensor& a, const Tensor& b) {
  Tensor r = a.eq(b);
  if (!is_float(a.dtype())) return r;
  return r.logical_or(a.isnan().logical_and(b.isnan()));
}

}  // namespace

Tensor Tensor::argmax(int axis, bool keepdim) const {
  return arg_extreme(*this, axis, keepdim, true);
}
Tensor Tensor::argmin(int axis, bool keepdim) const {
  return arg_extreme(*this, axis, keepdim, false);
}

Tensor Tensor::argsort(int axis, bool descending) const {
  int a = normalize_axis(axis, rank(), "argsort");
  Tensor x =
      (dtype_ == DType::Bool ? cast(DType::I32) : *this).transpose(a, -1);  // sort the last axis
  const int r = x.rank();
  // Element i (axis r-1 of xi) against every j (axis r of xj).
  Tensor xi = x.unsqueeze(-1);
  Tensor xj = x.unsqueeze(-2);
  Shape pair_shape = x.shape();
  pair_shape.push_back(x.dim(-1));
  std::vector<Dim> pair(pair_shape.begin(), pair_shape.end());
  Tensor pi = positions(xi.expand(pair), r - 1);
  Tensor pj = positions(xj.expand(pair), r);
  Tensor j_first = before(xj, xi, descending).logical_or(same_key(xj, xi).logical_and(pj.lt(pi)));
  Tensor rank_of_i = j_first.sum(-1);  // I32, the sorted position of element i
  // out[rank_of_i] = i along the last axis.
  Tensor dest = graph().zeros(std::vector<Dim>(x.shape().begin(), x.shape().end()), DType::I32);
  Tensor sorted = dest.scatter_elements(r - 1, rank_of_i, positions(x, r - 1));
  return sorted.transpose(a, -1);
}

std::pair<Tensor, Tensor> Tensor::topk(int64_t k, int axis, bool largest) const {
  int a = normalize_axis(axis, rank(), "topk");
  if (k < 0 || (dim(a).is_const() && k > dim(a).as_const())) {
    throw Error("topk: k = " + std::to_string(k) + " is out of range for axis " +
                std::to_string(axis) + " of " + shape_to_string(shape()));
  }
  Tensor idx = argsort(a, largest).slice(a, 0, k);
  return {gather_elements(a, idx), idx};
}

Tensor Tensor::cumsum(int axis) const {
  int a = normalize_axis(axis, rank(), "cumsum");
  Tensor x = dtype_ == DType::Bool ? cast(DType::I32) : *this;
  Expr n = dim(a);
  if (n == Expr(0)) return x;  // an empty axis: nothing to sum (the windows below need n >= 1)
  // Window i of the left-padded axis covers x[i-n+1 .. i]: summing it gives the prefix sum.
  std::vector<std::pair<Dim, Dim>> pads(a + 1, {0, 0});
  pads[a] = {n - 1, 0};
  return x.pad(pads, 0).unfold(a, n, 1).sum(-1);
}

}  // namespace luminal
