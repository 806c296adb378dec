#include "luminal/ir/tensor.hpp"

#include "luminal/core/error.hpp"
#include "luminal/ir/prim.hpp"

namespace luminal {

Tensor::Tensor(Graph g, NodeId id, View view, DType dtype)
    : graph_(std::move(g)), id_(id), view_(std::move(view)), dtype_(dtype) {}

Expr Tensor::dim(int axis) const { return view_.dims[normalize_axis(axis, rank(), "dim")]; }

Tensor Tensor::output(std::string_view label) const {
  Node n;
  n.op = OpKind::Output;
  n.dtype = dtype_;
  n.shape = view_.dims;
  n.inputs = {{id_, view_}};
  n.label = label.empty() ? "output" + std::to_string(graph_.outputs().size()) : std::string(label);
  Graph g = graph_;
  NodeId id = g.add_node(std::move(n));
  return Tensor(g, id, View::contiguous(view_.dims), dtype_);
}

Tensor Tensor::persist() const {
  Graph g = graph_;
  Node& n = g.mutable_node(id_);
  if (n.op != OpKind::Input && n.op != OpKind::Output) {
    throw Error("persist: only inputs and outputs can persist, but this tensor is the result of " +
                std::string(op_name(n.op)) + "; call output() first");
  }
  n.persist = true;
  return *this;
}

Tensor Tensor::contiguous() const { return prim::unary(OpKind::Cast, *this, dtype_); }

}  // namespace luminal
