// The shared in-place Scatter rule (see inplace_rule.hpp).
#include "luminal/kernels/inplace_rule.hpp"

#include "luminal/egraph/egraph.hpp"
#include "luminal/kernels/matmul_rule.hpp"

namespace luminal {

bool scatter_moves_elements(const EGraph& eg, const ENode& node) {
  if (node.children.size() != 3) return false;
  const Attrs& a = eg.attrs(node.attr);
  return a.views.size() == 3 && eg.dtype(node.children[0]) == a.dtype &&
         eg.dtype(node.children[2]) == a.dtype && is_integer(eg.dtype(node.children[1]));
}

Rule scatter_inplace_rule(const OpDef* op, const std::string& name) {
  return Rule{name, Pattern::op(OpKind::Scatter).bind("scatter"), nullptr,
              [op](const Match& m, EGraph& eg) {
                const ENode node = eg.node(m.root_node);
                if (!scatter_moves_elements(eg, node)) return;
                Attrs a = eg.attrs(node.attr);
                if (!a.views[0].is_contiguous()) return;
                if (a.views[0].numel() != numel(a.shape)) return;
                // Where it survives pruning (legal), the copy is never better: it dominates.
                if (std::optional<ENodeId> n = add_merged(eg, op, a, node.children, m.root))
                  eg.dominate(*n, m.root_node);
              }};
}

}  // namespace luminal
