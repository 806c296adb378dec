// Reductions over one or many axes.
#include <algorithm>

#include "luminal/core/error.hpp"
#include "luminal/ir/prim.hpp"
#include "luminal/ir/tensor.hpp"

namespace luminal {

namespace {

// Normalised axes, sorted, duplicates rejected; empty means every axis.
std::vector<int> norm_axes(const Tensor& x, const std::vector<int>& axes, std::string_view op) {
  std::vector<int> out;
  if (axes.empty()) {
    for (int i = 0; i < x.rank(); ++i)
      out.push_back(i);
    return out;
  }
  for (int a : axes)
    out.push_back(normalize_axis(a, x.rank(), op));
  std::sort(out.begin(), out.end());
  if (std::adjacent_find(out.begin(), out.end()) != out.end()) {
    throw Error(std::string(op) + ": an axis is listed twice");
  }
  return out;
}

// Applies a one-axis reduction to each axis (highest first), then restores size-1 axes if keepdim.
template <class F>
Tensor reduce_axes(const Tensor& x, const std::vector<int>& axes, bool keepdim, std::string_view op,
                   F&& one) {
  std::vector<int> ax = norm_axes(x, axes, op);
  Tensor r = x;
  for (auto it = ax.rbegin(); it != ax.rend(); ++it)
    r = one(r, *it);
  if (keepdim)
    for (int a : ax)
      r = r.unsqueeze(a);
  return r;
}

Tensor as_summable(const Tensor& x) { return x.dtype() == DType::Bool ? x.cast(DType::I32) : x; }

}  // namespace

Tensor Tensor::sum(const std::vector<int>& axes, bool keepdim) const {
  return reduce_axes(as_summable(*this), axes, keepdim, "sum",
                     [](const Tensor& t, int a) { return prim::reduce(OpKind::SumReduce, t, a); });
}

Tensor Tensor::max(const std::vector<int>& axes, bool keepdim) const {
  return reduce_axes(*this, axes, keepdim, "max",
                     [](const Tensor& t, int a) { return prim::reduce(OpKind::MaxReduce, t, a); });
}

Tensor Tensor::min(const std::vector<int>& axes, bool keepdim) const {
  norm_axes(*this, axes, "min");  // checks the axes, naming min
  if (dtype_ == DType::Bool) return logical_not().max(axes, keepdim).logical_not();
  if (is_float(dtype_)) return (-*this).max(axes, keepdim).neg();
  // ~x = -1 - x maps integers order-reversingly without overflow (also for unsigned types).
  auto bit_not = [](const Tensor& x) { return x.neg().add(prim::scalar_like(x, -1)); };
  return bit_not(bit_not(*this).max(axes, keepdim));
}

Tensor Tensor::mean(const std::vector<int>& axes, bool keepdim) const {
  prim::require_float(*this, "mean");
  Expr n = 1;
  for (int a : norm_axes(*this, axes, "mean"))
    n = n * dim(a);
  // In f32 for 16/8-bit floats: the sum rounds once, and the count need not fit the dtype. A
  // constant count divides as a Python number does (operator/(Tensor, double)): a power of two
  // (an 8B's hidden 4096) is a multiplication by its exact reciprocal, not the emulated division.
  return prim::in_f32(*this, [&](const Tensor& x) {
    if (n.is_const()) return x.sum(axes, keepdim) / static_cast<double>(n.as_const());
    Tensor count = prim::dim_scalar(graph_, n).cast(x.dtype());
    return x.sum(axes, keepdim) / count;
  });
}

Tensor Tensor::prod(const std::vector<int>& axes, bool keepdim) const {
  // Bool promotes to I32 as in sum (torch promotes both to an integer dtype).
  return reduce_axes(as_summable(*this), axes, keepdim, "prod", [](const Tensor& t, int a) {
    Expr d = t.dim(a);
    if (!d.is_const()) {
      throw Error("prod: axis " + std::to_string(a) + " has the dynamic size " + d.to_string() +
                  "; prod needs a constant size (use exp(sum(log(x))) for positive values)");
    }
    int64_t n = d.as_const();
    if (n == 0) return prim::scalar_like(prim::reduce(OpKind::SumReduce, t, a), 1);
    // Pairwise tree: pad to a power of two with ones, multiply halves.
    int64_t p = 1;
    while (p < n)
      p *= 2;
    Tensor x = t;
    if (p != n) {
      std::vector<std::pair<Dim, Dim>> pads(a + 1, {0, 0});
      pads[a] = {0, p - n};
      x = x.pad(pads, 1);
    }
    while (p > 1) {
      p /= 2;
      x = x.slice(a, 0, p) * x.slice(a, p, 2 * p);
    }
    return x.squeeze(a);
  });
}

Tensor Tensor::var(int axis, bool keepdim) const {
  prim::require_float(*this, "var");
  int a = normalize_axis(axis, rank(), "var");
  // Corrected two-pass: mean(d^2) - mean(d)^2 with d = x - mean(x) cancels the rounding error of
  // the mean (which otherwise adds its square, large for small spreads around a large mean).
  // In f32 for 16/8-bit floats.
  return prim::in_f32(*this, [&](const Tensor& x) {
    Tensor d = x - x.mean(a, true);
    Tensor md = d.mean(a, keepdim);
    return (d * d).mean(a, keepdim) - md * md;
  });
}

Tensor Tensor::sum(int axis, bool keepdim) const { return sum(std::vector<int>{axis}, keepdim); }
Tensor Tensor::mean(int axis, bool keepdim) const { return mean(std::vector<int>{axis}, keepdim); }
Tensor Tensor::max(int axis, bool keepdim) const { return max(std::vector<int>{axis}, keepdim); }
Tensor Tensor::min(int axis, bool keepdim) const { return min(std::vector<int>{axis}, keepdim); }
Tensor Tensor::prod(int axis, bool keepdim) const { return prod(std::vector<int>{axis}, keepdim); }

}  // namespace luminal
