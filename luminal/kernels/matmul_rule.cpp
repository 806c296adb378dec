// The shared matmul rule (see matmul_rule.hpp).
#include "luminal/kernels/matmul_rule.hpp"

namespace luminal {

Pattern matmul_pattern() {
  return Pattern::op(OpKind::SumReduce,
                     {Pattern::op(OpKind::Mul, {Pattern::var("a"), Pattern::var("b")}).bind("mul")})
      .bind("sum");
}

std::optional<MatmulParts> matmul_parts(const EGraph& eg, const Match& m) {
  const ENodeId sum_id = m.node("sum");
  const ENodeId mul_id = m.node("mul");
  const Attrs& sum = eg.attrs_of(sum_id);
  const Attrs& mul = eg.attrs_of(mul_id);
  const ENode& mul_node = eg.node(mul_id);
  if (sum.views.size() != 1 || mul.views.size() != 2 || mul_node.children.size() != 2)
    return std::nullopt;
  const View& sv = sum.views[0];
  if (!sv.is_contiguous()) return std::nullopt;
  View va = mul.views[0], vb = mul.views[1];
  if (sv.dims != mul.shape) {  // the SumReduce reads the product reshaped
    if (sv.numel() != numel(mul.shape)) return std::nullopt;
    std::optional<View> ra = va.reshape(sv.dims), rb = vb.reshape(sv.dims);
    if (!ra || !rb) return std::nullopt;
    va = *ra;
    vb = *rb;
  }
  if (sum.axis < 0 || sum.axis >= va.rank()) return std::nullopt;
  if (sum.dtype != mul.dtype) return std::nullopt;
  for (ClassId c : mul_node.children)
    if (eg.dtype(c) != sum.dtype) return std::nullopt;
  MatmulParts p;
  p.children = {eg.find(mul_node.children[0]), eg.find(mul_node.children[1])};
  p.attrs.dtype = sum.dtype;
  p.attrs.shape = sum.shape;
  p.attrs.views = {va, vb};
  p.attrs.axis = sum.axis;
  p.sum_node = sum_id;
  return p;
}

std::optional<ENodeId> add_merged(EGraph& eg, const OpDef* op, const Attrs& attrs,
                                  const std::vector<ClassId>& children, ClassId root) {
  const ClassId c = eg.add(op, attrs, children);
  eg.merge(c, root);
  const AttrId attr = eg.intern(attrs);
  for (ENodeId n : eg.nodes_of(c)) {
    const ENode& node = eg.node(n);
    if (node.op != op || node.attr != attr || node.children.size() != children.size()) continue;
    bool same = true;
    for (size_t i = 0; i < node.children.size(); ++i)
      same = same && eg.find(node.children[i]) == eg.find(children[i]);
    if (same) return n;
  }
  return std::nullopt;
}

void add_matmul_node(EGraph& eg, const OpDef* op, const MatmulParts& parts, ClassId root) {
  if (std::optional<ENodeId> n = add_merged(eg, op, parts.attrs, parts.children, root))
    eg.dominate(*n, parts.sum_node);
}

Rule matmul_rule(const OpDef* op, const std::string& name) {
  return Rule{name, matmul_pattern(),
              [](const Match& m, const EGraph& eg) { return matmul_parts(eg, m).has_value(); },
              [op](const Match& m, EGraph& eg) {
                if (std::optional<MatmulParts> p = matmul_parts(eg, m))
                  add_matmul_node(eg, op, *p, m.root);
              }};
}

}  // namespace luminal
