// Gather / scatter family.
#include "luminal/core/error.hpp"
#include "luminal/ir/prim.hpp"
#include "luminal/ir/tensor.hpp"

namespace luminal {

namespace {

// Flat index into `data_shape` of every element of `over`, with axis `axis` taken from `index`
// (a tensor of shape `over`) and the other axes from the element's own position. An index
// outside [0, data_shape[axis]) gives a flat index outside the data (-1), so Gather rejects it
// and Scatter skips it instead of reaching into a neighbouring row. (On axis 0 the plain flat
// index already falls outside the data.)
Tensor flat_with_axis_index(Graph g, const Shape& data_shape, const Shape& over, int axis,
                            const Tensor& index) {
  std::vector<Expr> p = prim::row_major_products(data_shape);
  std::vector<Expr> i = prim::unflatten_index(Expr::z(), over);
  Expr base = 0;
  for (size_t k = 0; k < i.size(); ++k)
    if (static_cast<int>(k) != axis) base = base + i[k] * p[k];
  Tensor base_t = g.iota(base, numel(over)).reshape(std::vector<Dim>(over.begin(), over.end()));
  Tensor idx = index.cast(DType::I32);
  Tensor flat = base_t + idx * prim::dim_scalar(g, p[axis]);
  if (axis == 0) return flat;
  Tensor in_range = idx.ge(0).logical_and(idx.lt(prim::dim_scalar(g, data_shape[axis])));
  return (flat + 1) * in_range.cast(DType::I32) - 1;
}

// Along every axis but `axis`, `index` must not be larger than `data` (torch's rule); checked
// where both sizes are constants.
void require_fits(const Tensor& index, const Shape& data, int axis, std::string_view op,
                  std::string_view what) {
  for (int k = 0; k < index.rank(); ++k) {
    const Expr& di = index.shape()[k];
    if (k != axis && di.is_const() && data[k].is_const() && di.as_const() > data[k].as_const()) {
      throw Error(std::string(op) + ": index " + shape_to_string(index.shape()) +
                  " is larger than the " + std::string(what) + " " + shape_to_string(data) +
                  " on axis " + std::to_string(k) +
                  (axis >= 0 ? " (only the indexed axis may be larger)" : ""));
    }
  }
}

void require_int(const Tensor& index, std::string_view op) {
  if (!is_integer(index.dtype())) {
    throw Error(std::string(op) + ": the index must be an integer tensor, got " +
                std::string(name(index.dtype())));
  }
}

}  // namespace

Tensor Tensor::gather_flat(const Tensor& indexes) const { return prim::gather(indexes, *this); }

Tensor Tensor::scatter_flat(const Tensor& indexes, const Tensor& src) const {
  return prim::scatter(*this, indexes, src);
}

Tensor Tensor::gather_elements(int axis, const Tensor& index) const {
  require_int(index, "gather_elements");
  if (index.rank() != rank()) {
    throw Error("gather_elements: index " + shape_to_string(index.shape()) +
                " must have the rank of the input " + shape_to_string(shape()));
  }
  int a = normalize_axis(axis, rank(), "gather_elements");
  require_fits(index, shape(), a, "gather_elements", "input");
  return gather_flat(flat_with_axis_index(graph_, shape(), index.shape(), a, index));
}

Tensor Tensor::scatter_elements(int axis, const Tensor& index, const Tensor& src) const {
  require_int(index, "scatter_elements");
  if (index.rank() != rank() || src.rank() != rank()) {
    throw Error("scatter_elements: index " + shape_to_string(index.shape()) + " and src " +
                shape_to_string(src.shape()) + " must have the rank of the input " +
                shape_to_string(shape()));
  }
  int a = normalize_axis(axis, rank(), "scatter_elements");
  require_fits(index, shape(), a, "scatter_elements", "input");
  require_fits(index, src.shape(), -1, "scatter_elements", "src");
  // torch uses src[i] for every position i of index.
  Tensor s = src;
  for (int k = 0; k < rank(); ++k)
    if (s.dim(k) != index.dim(k)) s = s.slice(k, 0, index.dim(k));
  return scatter_flat(flat_with_axis_index(graph_, shape(), index.shape(), a, index),
                      s.cast(dtype_));
}

Tensor Tensor::index_select(int axis, const Tensor& index) const {
  int a = normalize_axis(axis, rank(), "index_select");
  require_int(index, "index_select");
  if (index.rank() != 1) {
    throw Error("index_select: the index must be 1-D, got " + shape_to_string(index.shape()));
  }
  Shape out = shape();
  out[a] = index.dim(0);
  Tensor idx = index;
  for (int k = 0; k < a; ++k)
    idx = idx.unsqueeze(0);
  while (idx.rank() < rank())
    idx = idx.unsqueeze(-1);
  idx = idx.expand(std::vector<Dim>(out.begin(), out.end()));
  return gather_flat(flat_with_axis_index(graph_, shape(), out, a, idx));
}

Tensor Tensor::embedding(const Tensor& ids) const {
  if (rank() != 2)
    throw Error("embedding: the table must be 2-D [vocab, dim], got " + shape_to_string(shape()));
  require_int(ids, "embedding");
  std::vector<Dim> out(ids.shape().begin(), ids.shape().end());
  out.push_back(dim(1));
  Tensor flat_ids = ids.rank() == 1 ? ids : ids.reshape({ids.numel()});
  return index_select(0, flat_ids).reshape(out);
}

}  // namespace luminal
