// The shared in-place Scatter rule (see inplace_rule.hpp).
#include "luminal/kernels/inplace_rule.hpp"

#include "luminal/egraph/egraph.hpp"

namespace luminal {

Rule scatter_inplace_rule(const OpDef* op, const std::string& name) {
  return Rule{name, Pattern::op(OpKind::Scatter).bind("scatter"), nullptr,
              [op](const Match& m, EGraph& eg) {
                const ENode node = eg.node(m.root_node);
                if (node.children.size() != 3) return;
                Attrs a = eg.attrs(node.attr);
                if (a.views.size() != 3 || !a.views[0].is_contiguous()) return;
                if (a.views[0].numel() != numel(a.shape)) return;
                if (eg.dtype(node.children[0]) != a.dtype || eg.dtype(node.children[2]) != a.dtype)
                  return;
                if (!is_integer(eg.dtype(node.children[1]))) return;
                const ClassId c = eg.add(op, a, node.children);
                eg.merge(c, m.root);
              }};
}

}  // namespace luminal
