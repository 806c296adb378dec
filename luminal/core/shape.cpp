#include "luminal/core/shape.hpp"

#include <numeric>
#include <sstream>

#include "luminal/core/error.hpp"

namespace luminal {

namespace {

Expr at(const Expr& stride, const Expr& index) { return stride.substitute("z", index); }

std::string join(const std::vector<Expr>& xs) {
  std::string out;
  for (size_t i = 0; i < xs.size(); ++i) {
    if (i) out += ", ";
    out += xs[i].to_string();
  }
  return out;
}

// Stride c*z with c free of z, or nothing.
std::optional<Expr> linear_coefficient(const Expr& stride) {
  auto lin = stride.as_linear("z");
  if (!lin || lin->second != Expr(0)) return std::nullopt;
  return lin->first;
}

}  // namespace

Shape to_shape(const std::vector<Dim>& dims) {
  Shape s;
  s.reserve(dims.size());
  for (const Dim& d : dims)
    s.push_back(d.e);
  return s;
}

std::string shape_to_string(const Shape& s) { return "[" + join(s) + "]"; }

Expr storage_bytes(DType t, const Shape& shape) {
  if (!is_block(t)) return numel(shape) * Expr(size_bytes(t));
  if (shape.empty() || !shape.back().is_const())
    throw Error(std::string(name(t)) + " tensor of shape " + shape_to_string(shape) +
                ": a block-quantized tensor needs rows of a fixed length");
  const Shape outer(shape.begin(), shape.end() - 1);
  const int64_t row = static_cast<int64_t>(storage_bytes(t, shape.back().as_const()));
  return numel(outer) * Expr(row);
}

Expr numel(const Shape& s) {
  Expr n = 1;
  for (const Expr& d : s)
    n = n * d;
  return n;
}

std::vector<int64_t> eval_shape(const Shape& s, const DynMap& dyn) {
  std::vector<int64_t> out;
  out.reserve(s.size());
  for (const Expr& d : s)
    out.push_back(d.eval(dyn));
  return out;
}

namespace {

// `what` describes the tensor in the error ("rank 2", "shape [2, 3]").
int normalize(int axis, int rank, std::string_view op, const std::string& what) {
  int a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank) {
    throw Error(std::string(op) + ": axis " + std::to_string(axis) +
                " is out of range for a tensor of " + what + " (valid: " + std::to_string(-rank) +
                ".." + std::to_string(rank - 1) + ")");
  }
  return a;
}

}  // namespace

int normalize_axis(int axis, int rank, std::string_view op) {
  return normalize(axis, rank, op, "rank " + std::to_string(rank));
}

int normalize_axis(int axis, const Shape& shape, std::string_view op, int extra) {
  return normalize(axis, static_cast<int>(shape.size()) + extra, op,
                   "shape " + shape_to_string(shape));
}

View View::contiguous(Shape dims) {
  View v;
  v.strides.resize(dims.size());
  Expr step = 1;
  for (size_t i = dims.size(); i-- > 0;) {
    v.strides[i] = step * Expr::z();
    step = step * dims[i];
  }
  v.dims = std::move(dims);
  return v;
}

bool View::is_contiguous() const {
  if (has_base()) return false;
  Expr step = 1;
  for (size_t i = dims.size(); i-- > 0;) {
    if (dims[i] != Expr(1) && strides[i] != step * Expr::z()) return false;
    step = step * dims[i];
  }
  return true;
}

Expr View::offset(const std::vector<Expr>& index) const {
  LUMINAL_ASSERT(index.size() == dims.size(), "View::offset: index rank mismatch");
  Expr off = base;
  for (size_t i = 0; i < dims.size(); ++i)
    off = off + at(strides[i], index[i]);
  return off;
}

View View::permute(const std::vector<int>& order) const {
  auto bad_order = [&] {
    std::string o;
    for (size_t i = 0; i < order.size(); ++i)
      o += (i ? ", " : "") + std::to_string(order[i]);
    return Error("permute: order [" + o +
                 "] is not a permutation of the axes of a tensor of shape " +
                 shape_to_string(dims) + "; give each axis exactly once");
  };
  if (static_cast<int>(order.size()) != rank()) throw bad_order();
  std::vector<bool> seen(order.size(), false);
  View v;
  v.base = base;
  for (int a : order) {
    int n = a < 0 ? a + rank() : a;
    if (n < 0 || n >= rank() || seen[n]) throw bad_order();
    seen[n] = true;
    v.dims.push_back(dims[n]);
    v.strides.push_back(strides[n]);
  }
  return v;
}

View View::expand(int axis, Expr size) const {
  int a = normalize_axis(axis, rank() + 1, "expand");
  View v = *this;
  v.dims.insert(v.dims.begin() + a, std::move(size));
  v.strides.insert(v.strides.begin() + a, Expr(0));
  return v;
}

View View::broadcast_axis(int axis, Expr size) const {
  int a = normalize_axis(axis, rank(), "broadcast");
  if (dims[a] != Expr(1)) {
    throw Error("broadcast: axis " + std::to_string(axis) + " has size " + dims[a].to_string() +
                ", only size-1 axes can be broadcast to " + size.to_string());
  }
  View v = *this;
  v.dims[a] = std::move(size);
  v.strides[a] = 0;
  return v;
}

View View::unsqueeze(int axis) const { return expand(axis, 1); }

View View::squeeze(int axis) const {
  int a = normalize_axis(axis, dims, "squeeze");
  if (dims[a] != Expr(1)) {
    throw Error("squeeze: axis " + std::to_string(axis) + " of a tensor of shape " +
                shape_to_string(dims) + " has size " + dims[a].to_string() +
                "; only size-1 axes can be squeezed");
  }
  View v = *this;
  v.dims.erase(v.dims.begin() + a);
  v.strides.erase(v.strides.begin() + a);
  return v;
}

View View::repeat(int axis, Expr times) const {
  int a = normalize_axis(axis, rank(), "repeat");
  View v = *this;
  if (dims[a] != Expr(0)) v.strides[a] = at(strides[a], Expr::z() % dims[a]);  // (empty: no z % 0)
  v.dims[a] = dims[a] * times;
  return v;
}

View View::merge(int axis) const {
  int a = normalize_axis(axis, rank(), "merge");
  if (a + 1 >= rank())
    throw Error("merge: axis " + std::to_string(axis) + " has no following axis to merge with");
  const Expr& outer = strides[a];
  const Expr& inner = strides[a + 1];
  const Expr& inner_dim = dims[a + 1];
  Expr merged;
  auto co = linear_coefficient(outer), ci = linear_coefficient(inner);
  if (inner_dim == Expr(1)) {
    merged = outer;
  } else if (inner_dim == Expr(0) || dims[a] == Expr(0)) {
    merged = 0;  // an empty axis: no element is read (and no z / 0)
  } else if (dims[a] == Expr(1)) {
    merged = inner;
  } else if (co && ci && *co == *ci * inner_dim) {
    merged = *ci * Expr::z();  // already contiguous across the pair
  } else if (co && ci && *co == Expr(0) && *ci == Expr(0)) {
    merged = 0;
  } else {
    merged = at(outer, Expr::z() / inner_dim) + at(inner, Expr::z() % inner_dim);
  }
  View v = *this;
  v.dims[a] = dims[a] * inner_dim;
  v.strides[a] = merged;
  v.dims.erase(v.dims.begin() + a + 1);
  v.strides.erase(v.strides.begin() + a + 1);
  return v;
}

std::optional<View> View::split(int axis, Expr inner) const {
  int a = normalize_axis(axis, rank(), "split");
  const Expr& s = strides[a];
  Expr outer_stride, inner_stride;
  if (auto c = linear_coefficient(s)) {
    outer_stride = *c * inner * Expr::z();
    inner_stride = *c * Expr::z();
  } else {
    // s(o*inner + i) must equal s(o*inner) + s(i) for every o >= 0, 0 <= i < inner.
    outer_stride = at(s, Expr::z() * inner);
    inner_stride = s;
    Expr o = Expr::var("luminal_split_o"), i = Expr::var("luminal_split_i");
    Facts facts;
    facts["luminal_split_o"] = Interval{0, INT64_MAX / 4};
    if (!inner.is_const()) return std::nullopt;
    facts["luminal_split_i"] = Interval{0, inner.as_const() - 1};
    Expr lhs = at(s, o * inner + i).simplify(facts);
    Expr rhs = (at(outer_stride, o) + at(inner_stride, i)).simplify(facts);
    if (lhs != rhs) return std::nullopt;
  }
  View v = *this;
  v.dims[a] = dims[a] / inner;
  v.strides[a] = outer_stride;
  v.dims.insert(v.dims.begin() + a + 1, inner);
  v.strides.insert(v.strides.begin() + a + 1, inner_stride);
  return v;
}

View View::shrink(int axis, Expr len) const {
  int a = normalize_axis(axis, rank(), "shrink");
  View v = *this;
  v.dims[a] = std::move(len);
  return v;
}

View View::stride_by(int axis, Expr step) const {
  int a = normalize_axis(axis, rank(), "stride_by");
  View v = *this;
  v.dims[a] = ceil_div(dims[a], step);
  v.strides[a] = at(strides[a], Expr::z() * step);
  return v;
}

std::optional<View> View::slice(int axis, Expr start, Expr len, int64_t step) const {
  int a = normalize_axis(axis, rank(), "slice");
  const Expr& s = strides[a];
  View v = *this;
  v.dims[a] = std::move(len);
  if (s == Expr(0)) return v;
  auto c = linear_coefficient(s);
  if (!c || c->has_var("z")) return std::nullopt;
  v.base = base + *c * start;
  v.strides[a] = *c * Expr(step) * Expr::z();
  return v;
}

std::optional<View> View::reshape(const Shape& new_dims) const {
  if (is_contiguous()) return View::contiguous(new_dims);
  // Drop size-1 axes: they carry no data.
  View src;
  for (int i = 0; i < rank(); ++i) {
    if (dims[i] == Expr(1)) continue;
    src.dims.push_back(dims[i]);
    src.strides.push_back(strides[i]);
  }
  std::vector<Expr> target;
  for (const Expr& d : new_dims)
    if (d != Expr(1)) target.push_back(d);

  // Pair up groups of source and target axes whose products are equal, then for each group merge
  // the source axes into one and split it into the target axes.
  View out;
  size_t i = 0, j = 0;
  while (i < src.dims.size() || j < target.size()) {
    if (i >= src.dims.size() || j >= target.size()) return std::nullopt;
    bool found = false;
    size_t gi = 0, gj = 0;
    Expr p = 1;
    for (size_t a = i; a < src.dims.size() && !found; ++a) {
      p = p * src.dims[a];
      Expr q = 1;
      for (size_t b = j; b < target.size(); ++b) {
        q = q * target[b];
        if (p == q) {
          found = true;
          gi = a + 1;
          gj = b + 1;
          break;
        }
      }
    }
    if (!found) return std::nullopt;
    View group;
    group.dims.assign(src.dims.begin() + i, src.dims.begin() + gi);
    group.strides.assign(src.strides.begin() + i, src.strides.begin() + gi);
    while (group.rank() > 1)
      group = group.merge(0);
    for (size_t b = j; b + 1 < gj; ++b) {
      Expr rest = 1;
      for (size_t c = b + 1; c < gj; ++c)
        rest = rest * target[c];
      auto s = group.split(group.rank() - 1, rest);
      if (!s) return std::nullopt;
      group = *s;
      group.dims[group.rank() - 2] = target[b];  // keep the user's spelling of the dim
    }
    out.dims.insert(out.dims.end(), group.dims.begin(), group.dims.end());
    out.strides.insert(out.strides.end(), group.strides.begin(), group.strides.end());
    i = gi;
    j = gj;
  }
  // Re-insert the size-1 axes of the new shape.
  View v;
  v.base = base;
  size_t k = 0;
  for (const Expr& d : new_dims) {
    if (d == Expr(1)) {
      v.dims.push_back(1);
      v.strides.push_back(0);
    } else {
      v.dims.push_back(out.dims[k]);
      v.strides.push_back(out.strides[k]);
      ++k;
    }
  }
  return v;
}

std::string View::to_string() const {
  std::ostringstream os;
  os << "dims [" << join(dims) << "] strides [" << join(strides) << "]";
  if (has_base()) os << " base " << base.to_string();
  return os.str();
}

}  // namespace luminal
