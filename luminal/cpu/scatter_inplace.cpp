// cpu.ScatterInPlace: Scatter that writes into its dest's buffer instead of copying it.
//
// Rule (ruleset "cpu.inplace"): an HLIR Scatter whose dest view (views[0]) is contiguous with the
// output's element count gets an alternative with the same children and views under this op
// (OpDef::inplace_input = 0); pruning keeps it only where overwriting dest is legal (nothing
// else reads it).
//
// Kernel: the primitive Scatter's; the output buffer already holds dest (it is dest's buffer),
// so it only writes src[i] at flat index indexes[i], in order (the last duplicate wins),
// out-of-range indices skipped.
#include <cstring>
#include <sstream>

#include "luminal/core/error.hpp"
#include "luminal/cpu/cpu_op.hpp"
#include "luminal/cpu/elem_types.hpp"
#include "luminal/cpu/primitive_util.hpp"
#include "luminal/cpu/strided.hpp"

namespace luminal::cpu {

namespace {

const OpDef kScatterInPlace{"cpu.ScatterInPlace", OpKind::Input, false, /*inplace_input=*/0};

void apply_inplace(const Match& m, EGraph& eg) {
  const ENode node = eg.node(m.root_node);
  if (node.children.size() != 3) return;
  Attrs a = eg.attrs(node.attr);
  if (a.views.size() != 3 || !a.views[0].is_contiguous()) return;
  if (a.views[0].numel() != numel(a.shape)) return;
  if (eg.dtype(node.children[0]) != a.dtype || eg.dtype(node.children[2]) != a.dtype) return;
  if (!is_integer(eg.dtype(node.children[1]))) return;
  const ClassId c = eg.add(&kScatterInPlace, a, node.children);
  eg.merge(c, m.root);
}

std::vector<Rule> inplace_rules() {
  return {Rule{"cpu.scatter-inplace", Pattern::op(OpKind::Scatter).bind("scatter"), nullptr,
               apply_inplace}};
}

// The Scatter kernel already writes into dest's buffer without a copy when it is handed that
// buffer as its output (and dest is read contiguously, as the rule requires).
std::unique_ptr<Kernel> make_scatter_inplace(const LlirNode& n) { return make_scatter_kernel(n); }

}  // namespace

void register_scatter_inplace_ops(std::vector<const CpuOp*>& ops) {
  static const CpuOp op{&kScatterInPlace, "cpu.inplace", inplace_rules, make_scatter_inplace};
  ops.push_back(&op);
}

}  // namespace luminal::cpu
