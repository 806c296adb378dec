#pragma once
// Builders for primitive HLIR nodes, shared by the high-level ops (internal to luminal/ir).
// They check dtypes and shapes and name the op in every error.
#include <functional>
#include <string_view>

#include "luminal/ir/tensor.hpp"

namespace luminal::prim {

/// Unary primitive (Cast, Exp2, Log2, Sin, Recip, Sqrt); output dtype `out` (input dtype if not
/// Cast).
Tensor unary(OpKind op, const Tensor& x, DType out);
/// Binary primitive on two tensors of the same shape (already broadcast) and dtype.
Tensor binary(OpKind op, const Tensor& a, const Tensor& b);
/// SumReduce / MaxReduce over one axis (the axis disappears).
Tensor reduce(OpKind op, const Tensor& x, int axis);
/// Gather: out[i] = flat(data)[indexes[i]].
Tensor gather(const Tensor& indexes, const Tensor& data);
/// Scatter: copy of dest; flat(out)[indexes[i]] = src[i] (indexes and src of the same shape).
Tensor scatter(const Tensor& dest, const Tensor& indexes, const Tensor& src);
/// Dequantize: x (a block dtype, read through a view that keeps whole rows) decoded to `out`.
Tensor dequantize(const Tensor& x, DType out);
/// Throws unless `v`, a view of a block-quantized tensor of `shape` and dtype `t`, reads whole
/// rows: its innermost axis walks one stored row with stride 1 and every other axis moves by
/// whole rows. `what` names the caller and the tensor in the message.
void require_row_view(const View& v, const Shape& shape, DType t, const std::string& what);

/// Both tensors broadcast to their common shape; `op` names the caller in errors.
std::pair<Tensor, Tensor> broadcast(const Tensor& a, const Tensor& b, std::string_view op);
/// The common broadcast shape of two shapes; throws naming both shapes.
Shape broadcast_shape(const Shape& a, const Shape& b, std::string_view op);
/// A scalar constant of x's dtype broadcast to x's shape.
Tensor scalar_like(const Tensor& x, double value);
/// A scalar constant of x's dtype checked to be representable (integral for integer dtypes).
Tensor scalar_for(const Tensor& x, double value, std::string_view op);
/// Flat row-major element index of every element of `shape`, as an I32 tensor of that shape.
Tensor flat_index(Graph g, const Shape& shape);
/// Requires a float dtype.
void require_float(const Tensor& x, std::string_view op);
/// f16, bf16, tf32 and the fp8 formats: composite math on them runs in f32.
bool computes_in_f32(DType t);
/// fn(x) evaluated in f32 and cast back once for those dtypes; fn(x) as is otherwise.
template <class F>
Tensor in_f32(const Tensor& x, F&& fn) {
  if (!computes_in_f32(x.dtype())) return fn(x);
  return fn(x.cast(DType::F32)).cast(x.dtype());
}

}  // namespace luminal::prim

namespace luminal::prim {

/// A rank-0 I32 tensor holding the value of `e` (a Constant, or an Iota when e is dynamic).
Tensor dim_scalar(Graph g, const Expr& e);
/// Row-major strides (products of the following dims) of `shape`.
std::vector<Expr> row_major_products(const Shape& shape);
/// The row-major multi-index of flat index `z` over `shape`.
std::vector<Expr> unflatten_index(const Expr& z, const Shape& shape);
/// Gathers from x (flat logical index) with an index computed per output element from its
/// multi-index: out[i...] = x[src(i...)], where src returns x's multi-index.
Tensor gather_by_map(const Tensor& x, const Shape& out_shape,
                     const std::function<std::vector<Expr>(const std::vector<Expr>&)>& src);
/// Scatters x into dest: dest[dst(i...)] = x[i...] for every element of x.
Tensor scatter_by_map(const Tensor& dest, const Tensor& x,
                      const std::function<std::vector<Expr>(const std::vector<Expr>&)>& dst);

}  // namespace luminal::prim
