// Shape and movement ops: views where possible (slices at a start too: a view with an element
// offset), Iota + Gather/Scatter index maps otherwise.
#include <algorithm>

#include "luminal/core/error.hpp"
#include "luminal/ir/prim.hpp"
#include "luminal/ir/tensor.hpp"

namespace luminal {

namespace {

std::string shape_str(const Tensor& t) { return shape_to_string(t.shape()); }

Tensor with_view(const Tensor& t, View v) {
  return Tensor(t.graph(), t.id(), std::move(v), t.dtype());
}

// A possibly negative axis of t (of t.rank() + extra axes, for inserting); errors name t's shape.
int axis_of(const Tensor& t, int axis, std::string_view op, int extra = 0) {
  return normalize_axis(axis, t.shape(), op, extra);
}

}  // namespace

Tensor Tensor::reshape(const std::vector<Dim>& dims) const {
  Shape target = to_shape(dims);
  if (numel() != luminal::numel(target)) {
    throw Error("reshape: cannot reshape " + shape_str(*this) + " (" + numel().to_string() +
                " elements) to " + shape_to_string(target) + " (" +
                luminal::numel(target).to_string() + " elements)");
  }
  if (auto v = view_.reshape(target)) return with_view(*this, *v);
  Tensor c = contiguous();
  return with_view(c, View::contiguous(target));
}

Tensor Tensor::permute(const std::vector<int>& order) const {
  return with_view(*this, view_.permute(order));
}

Tensor Tensor::transpose(int a, int b) const {
  int x = axis_of(*this, a, "transpose"), y = axis_of(*this, b, "transpose");
  std::vector<int> order(rank());
  for (int i = 0; i < rank(); ++i)
    order[i] = i;
  std::swap(order[x], order[y]);
  return permute(order);
}

Tensor Tensor::expand(const std::vector<Dim>& dims) const {
  Shape target = to_shape(dims);
  if (target.size() < shape().size()) {
    throw Error("expand: cannot expand " + shape_str(*this) + " to the lower-rank shape " +
                shape_to_string(target));
  }
  View v = view_;
  while (v.rank() < static_cast<int>(target.size()))
    v = v.expand(0, 1);
  for (size_t i = 0; i < target.size(); ++i) {
    if (v.dims[i] == target[i]) continue;
    if (v.dims[i] != Expr(1)) {
      throw Error("expand: cannot expand " + shape_str(*this) + " to " + shape_to_string(target) +
                  " (axis " + std::to_string(i) + " has size " + v.dims[i].to_string() +
                  "; only size-1 axes broadcast)");
    }
    v = v.broadcast_axis(static_cast<int>(i), target[i]);
  }
  return with_view(*this, v);
}

Tensor Tensor::expand_dim(int axis, Dim size) const {
  return with_view(*this, view_.expand(axis_of(*this, axis, "expand_dim", 1), size.e));
}

Tensor Tensor::squeeze(int axis) const { return with_view(*this, view_.squeeze(axis)); }

Tensor Tensor::unsqueeze(int axis) const {
  return with_view(*this, view_.unsqueeze(axis_of(*this, axis, "unsqueeze", 1)));
}

Tensor Tensor::merge_dims(int axis) const {
  int a = axis_of(*this, axis, "merge_dims");
  if (a + 1 >= rank()) {
    throw Error("merge_dims: axis " + std::to_string(axis) + " of a tensor of shape " +
                shape_str(*this) + " has no following axis to merge with");
  }
  return with_view(*this, view_.merge(a));
}

Tensor Tensor::flatten(int start, int end) const {
  if (rank() == 0) return reshape({1});
  int s = axis_of(*this, start, "flatten"), e = axis_of(*this, end, "flatten");
  if (s > e) {
    throw Error("flatten: start axis " + std::to_string(start) + " is after end axis " +
                std::to_string(end) + " for a tensor of shape " + shape_str(*this));
  }
  View v = view_;
  for (int i = s; i < e; ++i)
    v = v.merge(s);
  return with_view(*this, v);
}

Tensor Tensor::split_dims(int axis, Dim inner) const {
  int a = axis_of(*this, axis, "split_dims");
  if (dim(a).is_const() && inner.e.is_const() &&
      (inner.e.as_const() <= 0 || dim(a).as_const() % inner.e.as_const() != 0)) {
    throw Error("split_dims: axis " + std::to_string(axis) + " of " + shape_str(*this) +
                " is not divisible by " + inner.e.to_string());
  }
  if (auto v = view_.split(a, inner.e)) return with_view(*this, *v);
  return contiguous().split_dims(a, inner);
}

Tensor Tensor::slice(int axis, Dim start, std::optional<Dim> end, int64_t step) const {
  int a = axis_of(*this, axis, "slice");
  if (step <= 0) {
    throw Error("slice: step must be positive, got " + std::to_string(step) + " (axis " +
                std::to_string(axis) + " of a tensor of shape " + shape_str(*this) + ")");
  }
  const Expr d = dim(a);
  auto resolve = [&](Expr e) {
    if (e.is_const() && e.as_const() < 0) e = d + e;  // negative bounds count from the end
    return luminal::max(Expr(0), luminal::min(e, d));
  };
  Expr s = resolve(start.e);
  Expr e = end ? resolve(end->e) : d;
  // Declared dim ranges decide the clamps (slice(0, 0, "c") of a [slots] axis with c <= slots
  // has length c).
  Facts facts;
  for (const Expr& x : {d, s, e})
    for (const std::string& v : x.vars())
      facts[v] = graph_.dim_range(v);
  s = s.simplify(facts);
  Expr len = luminal::max(Expr(0), ceil_div(e - s, step)).simplify(facts);
  if (s == Expr(0) && step == 1) return with_view(*this, view_.shrink(a, len));
  // A view at an element offset where the axis' stride allows (views of a block-quantized
  // tensor keep whole rows: a gather).
  if (!is_block(dtype()))
    if (std::optional<View> v = view_.slice(a, s, len, step)) return with_view(*this, *v);
  Shape out = shape();
  out[a] = len;
  return prim::gather_by_map(*this, out, [&](const std::vector<Expr>& i) {
    std::vector<Expr> src = i;
    src[a] = s + i[a] * step;
    return src;
  });
}

Tensor Tensor::slice_exact(int axis, Dim start, Dim length) const {
  const int a = axis_of(*this, axis, "slice_exact");
  const Expr d = dim(a), s = start.e, len = length.e;
  if (s.is_const() && len.is_const() && d.is_const() &&
      (s.as_const() < 0 || len.as_const() < 0 || s.as_const() + len.as_const() > d.as_const()))
    throw Error("slice_exact: " + std::to_string(len.as_const()) + " elements from " +
                std::to_string(s.as_const()) + " do not fit axis " + std::to_string(axis) +
                " of a tensor of shape " + shape_str(*this) + "; use slice, which clamps");
  if (s == Expr(0)) return with_view(*this, view_.shrink(a, len));
  if (!is_block(dtype()))
    if (std::optional<View> v = view_.slice(a, s, len, 1)) return with_view(*this, *v);
  Shape out = shape();
  out[a] = len;
  return prim::gather_by_map(*this, out, [&](const std::vector<Expr>& i) {
    std::vector<Expr> src = i;
    src[a] = s + i[a];
    return src;
  });
}

Tensor Tensor::pad(const std::vector<std::pair<Dim, Dim>>& pads, double value) const {
  if (pads.size() > static_cast<size_t>(rank())) {
    throw Error("pad: " + std::to_string(pads.size()) +
                " (before, after) pairs for a tensor of shape " + shape_str(*this) +
                "; give at most one per axis");
  }
  // Negative constant padding crops (one slice per axis); the rest is a scatter into a filled
  // tensor, so values never mix with the fill (exact with inf/NaN).
  Tensor x = *this;
  std::vector<Expr> before(rank(), Expr(0)), after(rank(), Expr(0));
  for (size_t i = 0; i < pads.size(); ++i) {
    Expr b = pads[i].first.e, e = pads[i].second.e;
    const int ax = static_cast<int>(i);
    const int64_t crop_b = b.is_const() && b.as_const() < 0 ? -b.as_const() : 0;
    const int64_t crop_e = e.is_const() && e.as_const() < 0 ? -e.as_const() : 0;
    if (crop_b == 0 && crop_e == 0) {
      before[i] = b;
      after[i] = e;
      continue;
    }
    const Expr d = x.dim(ax);
    if (d.is_const() && crop_b + crop_e > d.as_const()) {
      throw Error("pad: padding (" + b.to_string() + ", " + e.to_string() + ") crops " +
                  std::to_string(crop_b + crop_e) + " elements from axis " + std::to_string(i) +
                  " of a tensor of shape " + shape_str(*this) + ", which has only " +
                  d.to_string());
    }
    // Crop [crop_b, d - crop_e). For a dynamic d the end is an expression, which slice clamps
    // (never read as counting from the end).
    x = x.slice(ax, crop_b, d - crop_e);
    before[i] = crop_b ? Expr(0) : b;
    after[i] = crop_e ? Expr(0) : e;
  }
  std::vector<Dim> out;
  for (int i = 0; i < rank(); ++i)
    out.push_back(before[i] + x.dim(i) + after[i]);
  Tensor dest = graph().full(out, value, dtype_);
  return prim::scatter_by_map(dest, x, [&](const std::vector<Expr>& i) {
    std::vector<Expr> dst = i;
    for (size_t k = 0; k < dst.size(); ++k)
      dst[k] = dst[k] + before[k];
    return dst;
  });
}

Tensor Tensor::unfold(int axis, Dim size, Dim step) const {
  int a = axis_of(*this, axis, "unfold");
  if (step.e.is_const() && step.e.as_const() <= 0) {
    throw Error("unfold: step must be positive, got " + step.e.to_string() + " (axis " +
                std::to_string(axis) + " of a tensor of shape " + shape_str(*this) + ")");
  }
  if (size.e.is_const() && size.e.as_const() < 0) {
    throw Error("unfold: window size " + size.e.to_string() + " is negative (tensor of shape " +
                shape_str(*this) + ")");
  }
  if (size.e.is_const() && dim(a).is_const() && size.e.as_const() > dim(a).as_const()) {
    throw Error("unfold: window size " + size.e.to_string() + " is larger than axis " +
                std::to_string(axis) + " of a tensor of shape " + shape_str(*this));
  }
  Shape out = shape();
  out[a] = (dim(a) - size.e) / step.e + 1;
  out.push_back(size.e);
  return prim::gather_by_map(*this, out, [&](const std::vector<Expr>& i) {
    std::vector<Expr> src(i.begin(), i.end() - 1);
    src[a] = i[a] * step.e + i.back();
    return src;
  });
}

Tensor Tensor::repeat(const std::vector<Dim>& repeats) const {
  if (repeats.size() < static_cast<size_t>(rank())) {
    throw Error("repeat: " + std::to_string(repeats.size()) +
                " repeat counts for a tensor of shape " + shape_str(*this) +
                "; give at least one per axis");
  }
  for (const Dim& r : repeats) {
    if (r.e.is_const() && r.e.as_const() < 0) {
      throw Error("repeat: negative repeat count " + r.e.to_string() + " for a tensor of shape " +
                  shape_str(*this));
    }
  }
  View v = view_;
  while (v.rank() < static_cast<int>(repeats.size()))
    v = v.unsqueeze(0);
  for (size_t i = 0; i < repeats.size(); ++i) {
    if (repeats[i].e == Expr(1)) continue;
    v = v.dims[i] == Expr(1) ? v.broadcast_axis(static_cast<int>(i), repeats[i].e)
                             : v.repeat(static_cast<int>(i), repeats[i].e);
  }
  return with_view(*this, v);
}

namespace {

// Keeps elements whose (col - row) satisfies `keep`, zero elsewhere, over the last two axes.
Tensor triangle(const Tensor& x, bool upper, int64_t k) {
  if (x.rank() < 2)
    throw Error(std::string(upper ? "triu" : "tril") + " needs at least 2 dims, got " +
                shape_to_string(x.shape()));
  if (x.numel() == Expr(0)) return x;  // nothing to mask (and no z % 0 below)
  Expr rows = x.dim(-2), cols = x.dim(-1);
  Expr z = Expr::z();
  Expr diff = z % cols - z / cols;  // col - row of the flat index over [rows, cols]
  Expr keep = upper ? ge(diff, Expr(k)) : le(diff, Expr(k));
  Tensor mask = x.graph().iota(keep, rows * cols).reshape({rows, cols}).cast(DType::Bool);
  return mask.where(x, prim::scalar_like(x, 0));
}

}  // namespace

Tensor Tensor::triu(int64_t k) const { return triangle(*this, true, k); }
Tensor Tensor::tril(int64_t k) const { return triangle(*this, false, k); }

namespace {

/// A concat of up to four parts of one size d along axis a as elementwise selects: each part
/// broadcast over a new axis of K before a ([.., K, d, ..]), the part whose k it is chosen by
/// `where`, and [.., K * d, ..] read back. Every read is in range and a Select never mixes the
/// values of the part it does not take (exact with inf and NaN), so the backends' where fusion
/// makes it one elementwise kernel that fuses with its neighbours (rotate_half's
/// cat(-x2, x1) in rope), where the scatter form below runs a fill and a scatter a part.
bool concat_equal_parts(const std::vector<Tensor>& xs, int a, Tensor& out) {
  constexpr size_t kMaxParts = 4;
  if (xs.size() > kMaxParts) return false;
  const Expr d = xs[0].dim(a);
  for (const Tensor& x : xs)
    if (x.dim(a) != d) return false;
  const int64_t k = static_cast<int64_t>(xs.size());
  Shape split = xs[0].shape();
  split.insert(split.begin() + a, Expr(k));
  const std::vector<Dim> dims(split.begin(), split.end());
  std::vector<Dim> kshape(split.size(), Dim(1));
  kshape[static_cast<size_t>(a)] = Dim(k);
  const Tensor part = xs[0].graph().arange(Dim(k)).reshape(kshape).expand(dims);
  Tensor sel = xs.back().unsqueeze(a).expand(dims);
  for (int64_t i = k - 2; i >= 0; --i)
    sel = part.eq(static_cast<double>(i))
              .where(xs[static_cast<size_t>(i)].unsqueeze(a).expand(dims), sel);
  out = sel.merge_dims(a);
  return true;
}

}  // namespace

Tensor concat(const std::vector<Tensor>& xs, int axis) {
  if (xs.empty()) throw Error("concat: no tensors given");
  const Tensor& first = xs[0];
  int a = axis_of(first, axis, "concat");
  Expr total = 0;
  for (const Tensor& x : xs) {
    if (x.rank() != first.rank() || x.dtype() != first.dtype()) {
      throw Error("concat: " + std::string(name(x.dtype())) + shape_to_string(x.shape()) +
                  " does not match " + std::string(name(first.dtype())) +
                  shape_to_string(first.shape()) + " (rank and dtype must agree)");
    }
    for (int i = 0; i < first.rank(); ++i) {
      if (i != a && x.dim(i) != first.dim(i)) {
        throw Error("concat along axis " + std::to_string(axis) + ": shapes " +
                    shape_to_string(first.shape()) + " and " + shape_to_string(x.shape()) +
                    " differ on axis " + std::to_string(i));
      }
    }
    total = total + x.dim(a);
  }
  if (xs.size() == 1) return first;
  if (Tensor sel; concat_equal_parts(xs, a, sel)) return sel;
  Shape out = first.shape();
  out[a] = total;
  Tensor result = first.graph().full(std::vector<Dim>(out.begin(), out.end()), 0, first.dtype());
  Expr offset = 0;
  for (const Tensor& x : xs) {
    result = prim::scatter_by_map(result, x, [&](const std::vector<Expr>& i) {
      std::vector<Expr> dst = i;
      dst[a] = dst[a] + offset;
      return dst;
    });
    offset = offset + x.dim(a);
  }
  return result;
}

Tensor stack(const std::vector<Tensor>& xs, int axis) {
  if (xs.empty()) throw Error("stack: no tensors given");
  int a = axis_of(xs[0], axis, "stack", 1);
  for (const Tensor& x : xs) {
    if (x.shape() != xs[0].shape() || x.dtype() != xs[0].dtype()) {
      throw Error("stack: " + std::string(name(x.dtype())) + shape_str(x) + " does not match " +
                  std::string(name(xs[0].dtype())) + shape_str(xs[0]) +
                  " (every tensor must have the same shape and dtype)");
    }
  }
  std::vector<Tensor> ys;
  for (const Tensor& x : xs)
    ys.push_back(x.unsqueeze(a));
  return concat(ys, a);
}

}  // namespace luminal
