// Matmul operands cast up from 16-bit floats (see matmul_operands.hpp).
#include "luminal/cuda/matmul_operands.hpp"

#include <vector>

namespace luminal::cuda {

std::optional<View> compose(const View& outer, const Shape& shape, const View& inner) {
  if (inner.dims != shape) return std::nullopt;
  const View c = View::contiguous(shape);
  View out{outer.dims, std::vector<Expr>(outer.dims.size(), Expr(0))};
  std::vector<bool> used(shape.size(), false);
  for (int d = 0; d < outer.rank(); ++d) {
    if (outer.strides[d] == Expr(0) || outer.dims[d] == Expr(1)) continue;
    const auto lin = outer.strides[d].as_linear("z");
    if (!lin || !(lin->second == Expr(0))) return std::nullopt;
    int axis = -1;
    for (int a = 0; a < static_cast<int>(shape.size()); ++a)
      if (!used[a] && shape[a] == outer.dims[d] && c.strides[a] == Expr::z() * lin->first) axis = a;
    if (axis < 0) return std::nullopt;
    used[axis] = true;
    out.strides[d] = inner.strides[axis];
  }
  return out;
}

std::optional<std::pair<ClassId, View>> uncast(const EGraph& eg, ClassId c, const View& v) {
  if (eg.dtype(c) != DType::F32) return std::nullopt;
  for (ENodeId id : eg.nodes_of(c)) {
    const ENode& n = eg.node(id);
    if (!is_op(n.op, OpKind::Cast) || n.children.size() != 1) continue;
    const Attrs& a = eg.attrs_of(id);
    const DType from = eg.dtype(n.children[0]);
    if ((from != DType::BF16 && from != DType::F16) || a.views.size() != 1) continue;
    if (std::optional<View> w = compose(v, eg.shape(c), a.views[0]))
      return std::pair{eg.find(n.children[0]), *w};
  }
  return std::nullopt;
}

}  // namespace luminal::cuda
