#pragma once
// Views: how an op reads its input's contiguous buffer.
//
// A View has one dim and one stride expression per axis. A stride is a function of the reserved
// index variable `z` (the index along that axis) giving that axis' contribution to the element
// offset; the offset of a logical index (i0, i1, ...) is sum_k strides[k](z = i_k).
//
//   row-major [m, k]:       dims [m, k], strides [k*z, z]
//   transposed (permute):   dims [k, m], strides [z, k*z]
//   broadcast (expand):     stride 0
//   repeat d -> d*n:        stride s(z % d)
//   merge a,b:              stride s_a(z / d_b) + s_b(z % d_b)
//
// A view also has an element offset `base` (default 0): the element of index (0, 0, ...), so
//   offset(i0, i1, ...) = base + sum_k strides[k](z = i_k).
// A slice at a start on an axis of linear stride c*z is a view: base += c*start (slice()).
//
// So permute, expand, repeat, merge, split, unsqueeze, squeeze and such slices move no data. Every
// stride of a view satisfies s(0) = 0; padding, unfold and slices of non-linear strides are ops
// (Iota + Gather), see ir/. A consumer that reads a view either honours `base` or refuses a view
// with has_base() (specialised matchers: GEMM, GEMV, quantized matmuls).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "luminal/core/dtype.hpp"
#include "luminal/core/expr.hpp"

namespace luminal {

/// One dimension of a shape as written by users: a number, a dynamic dimension's name, or an Expr.
struct Dim {
  Expr e;
  Dim(Expr x) : e(std::move(x)) {}                      // NOLINT(google-explicit-constructor)
  Dim(int64_t v) : e(v) {}                              // NOLINT
  Dim(int v) : e(static_cast<int64_t>(v)) {}            // NOLINT
  Dim(const char* name) : e(Expr::var(name)) {}         // NOLINT
  Dim(std::string_view name) : e(Expr::var(name)) {}    // NOLINT
  Dim(const std::string& name) : e(Expr::var(name)) {}  // NOLINT
};

using Shape = std::vector<Expr>;

Shape to_shape(const std::vector<Dim>& dims);
/// "[s, 4096]"
std::string shape_to_string(const Shape& s);
/// Product of the dims (1 for rank 0).
Expr numel(const Shape& s);
/// Bytes a contiguous tensor of `shape` and `t` occupies. For a block type the last dim must be a
/// constant multiple of the block (rows of whole blocks); throws luminal::Error otherwise.
Expr storage_bytes(DType t, const Shape& shape);
/// Evaluates every dim; throws luminal::Error naming a missing dynamic dimension.
std::vector<int64_t> eval_shape(const Shape& s, const DynMap& dyn);

struct View {
  Shape dims;
  std::vector<Expr> strides;
  /// Element offset of index (0, 0, ...) (0 unless sliced at a start).
  Expr base = 0;

  /// Row-major contiguous strides for `dims`.
  static View contiguous(Shape dims);

  int rank() const { return static_cast<int>(dims.size()); }
  Expr numel() const { return luminal::numel(dims); }
  /// True when base is 0 and the strides equal the row-major contiguous strides of dims (size-1
  /// axes ignored).
  bool is_contiguous() const;
  /// True when base is not (structurally) 0.
  bool has_base() const { return base != Expr(0); }
  /// Element offset of a logical index (base included).
  Expr offset(const std::vector<Expr>& index) const;

  View permute(const std::vector<int>& order) const;
  /// Inserts a new axis of `size` at `axis` with stride 0.
  View expand(int axis, Expr size) const;
  /// Sets a size-1 axis to `size` (stride 0).
  View broadcast_axis(int axis, Expr size) const;
  /// Inserts a size-1 axis.
  View unsqueeze(int axis) const;
  /// Removes a size-1 axis.
  View squeeze(int axis) const;
  /// Tiles `axis` `times` times: dim d becomes d*times, stride s(z % d).
  View repeat(int axis, Expr times) const;
  /// Merges axis and axis+1 into one axis (always possible).
  View merge(int axis) const;
  /// Splits axis into [dim/inner, inner]; nothing when the stride cannot be split exactly.
  std::optional<View> split(int axis, Expr inner) const;
  /// Keeps the first `len` elements of an axis.
  View shrink(int axis, Expr len) const;
  /// Every `step`-th element of an axis starting at 0: dim ceil(d/step), stride s(z*step).
  View stride_by(int axis, Expr step) const;
  /// Elements start, start+step, ... (len of them) of an axis: base += s(start), stride
  /// s(z*step). Nothing unless the axis' stride is c*z (c free of z) or 0, where that is exact.
  std::optional<View> slice(int axis, Expr start, Expr len, int64_t step = 1) const;
  /// A view of the same elements with new dims; nothing when that needs a copy.
  std::optional<View> reshape(const Shape& new_dims) const;

  std::string to_string() const;
  bool operator==(const View&) const = default;
};

/// Normalises a possibly negative axis against `rank` (for `rank+1` when inserting); throws
/// luminal::Error naming the op when out of range.
int normalize_axis(int axis, int rank, std::string_view op);
/// As above for an axis of `shape` (of shape.size() + extra axes when inserting); the error
/// names the shape.
int normalize_axis(int axis, const Shape& shape, std::string_view op, int extra = 0);

}  // namespace luminal
