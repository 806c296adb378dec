// Matmul operands cast up from 16-bit floats (see matmul_operands.hpp).
#include "luminal/cuda/matmul_operands.hpp"

#include <vector>

namespace luminal::cuda {

std::optional<View> compose(const View& outer, const Shape& shape, const View& inner,
                            bool inner_base) {
  if (inner.dims != shape) return std::nullopt;
  // (element offsets: the cast's own only where asked for, kept as the composed view's)
  if (outer.has_base() || (inner.has_base() && !inner_base)) return std::nullopt;
  const View c = View::contiguous(shape);
  View out{outer.dims, std::vector<Expr>(outer.dims.size(), Expr(0))};
  out.base = inner.base;
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

std::optional<std::pair<ClassId, View>> uncast(const EGraph& eg, ClassId c, const View& v, bool fp8,
                                               bool inner_base) {
  if (eg.dtype(c) != DType::F32) return std::nullopt;
  for (ENodeId id : eg.nodes_of(c)) {
    const ENode& n = eg.node(id);
    if (!is_op(n.op, OpKind::Cast) || n.children.size() != 1) continue;
    const Attrs& a = eg.attrs_of(id);
    const DType from = eg.dtype(n.children[0]);
    const bool ok = from == DType::BF16 || from == DType::F16 ||
                    (fp8 && (from == DType::F8E4M3 || from == DType::F8E5M2));
    if (!ok || a.views.size() != 1) continue;
    if (std::optional<View> w = compose(v, eg.shape(c), a.views[0], inner_base))
      return std::pair{eg.find(n.children[0]), *w};
  }
  return std::nullopt;
}

std::optional<MatmulParts> uncast_operands(const EGraph& eg, const MatmulParts& p, bool fp8) {
  MatmulParts q = p;
  bool any = false;
  for (size_t k = 0; k < 2; ++k)
    if (auto u = uncast(eg, p.children[k], p.attrs.views[k], fp8)) {
      q.children[k] = u->first;
      q.attrs.views[k] = u->second;
      any = true;
    }
  if (!any) return std::nullopt;
  return q;
}

Rule matmul_parts_rule(const std::string& name,
                       std::function<void(EGraph&, const MatmulParts&, ClassId)> add) {
  return Rule{name, matmul_pattern(),
              [](const Match& m, const EGraph& eg) { return matmul_parts(eg, m).has_value(); },
              [add = std::move(add)](const Match& m, EGraph& eg) {
                std::optional<MatmulParts> p = matmul_parts(eg, m);
                if (p) add(eg, *p, m.root);
              }};
}

std::vector<Rule> matmul_op_rules(const std::string& name, const OpDef* op, const OpDef* cast_op,
                                  std::function<bool(const EGraph&, MatmulParts&)> takes) {
  auto offer = [op, takes](EGraph& eg, MatmulParts p, ClassId root) {
    if (takes(eg, p)) add_merged(eg, op, p.attrs, p.children, root);
  };
  Rule r = matmul_parts_rule(name, [offer](EGraph& eg, const MatmulParts& p, ClassId root) {
    offer(eg, p, root);
    if (std::optional<MatmulParts> q = uncast_operands(eg, p)) offer(eg, *q, root);
  });
  Rule cast = cast_down_rule(name + "-cast", op,
                             [cast_op](EGraph& eg, const Attrs& a, const std::vector<ClassId>& ch,
                                       ClassId root) { eg.merge(eg.add(cast_op, a, ch), root); });
  return {std::move(r), std::move(cast)};
}

std::optional<Copy16> copy_in_16_bits(const EGraph& eg, ClassId c) {
  if (eg.dtype(c) != DType::F32) return std::nullopt;
  for (ENodeId id : eg.nodes_of(c)) {
    const ENode& n = eg.node(id);
    if (!is_op(n.op, OpKind::Cast) || n.children.size() != 1) continue;
    const DType from = eg.dtype(n.children[0]);
    if (from != DType::BF16 && from != DType::F16) continue;
    Attrs a = eg.attrs_of(id);
    if (a.views.size() != 1) continue;
    a.dtype = from;
    return Copy16{std::move(a), eg.find(n.children[0])};
  }
  return std::nullopt;
}

Rule cast_down_rule(
    const std::string& name, const OpDef* op,
    std::function<void(EGraph&, const Attrs&, const std::vector<ClassId>&, ClassId)> add) {
  return Rule{name, Pattern::op(OpKind::Cast).bind("cast"), nullptr,
              [op, add = std::move(add)](const Match& m, EGraph& eg) {
                const ENodeId c = m.node("cast");
                const ENode cn = eg.node(c);
                const Attrs ca = eg.attrs_of(c);
                if (cn.children.size() != 1 || ca.views.size() != 1) return;
                if (ca.dtype != DType::BF16 && ca.dtype != DType::F16) return;
                const ClassId src = eg.find(cn.children[0]);
                if (eg.dtype(src) != DType::F32 || !ca.views[0].is_contiguous() ||
                    !(ca.views[0].numel() == numel(eg.shape(src))))
                  return;
                std::vector<std::pair<Attrs, std::vector<ClassId>>> found;
                for (ENodeId id : eg.nodes_of(src)) {
                  if (eg.node(id).op != op) continue;
                  std::vector<ClassId> ch;
                  for (ClassId k : eg.node(id).children)
                    ch.push_back(eg.find(k));
                  Attrs a = eg.attrs_of(id);
                  a.dtype = ca.dtype;
                  a.shape = ca.shape;
                  found.emplace_back(std::move(a), std::move(ch));
                }
                for (auto& [a, ch] : found)
                  add(eg, a, ch, m.root);
              }};
}

}  // namespace luminal::cuda
