// cpu.ScatterInPlace: Scatter that writes into its dest's buffer instead of copying it.
//
// Rule (ruleset "cpu.inplace"): the shared scatter_inplace_rule (luminal/kernels/inplace_rule.hpp);
// a cpu.ScatterIotaInPlace of the class dominates it.
//
// Kernel: the primitive Scatter's; the output buffer already holds dest (it is dest's buffer),
// so it only writes src[i] at flat index indexes[i], in order (the last duplicate wins),
// out-of-range indices skipped.
#include <cstring>
#include <optional>
#include <sstream>

#include "luminal/core/error.hpp"
#include "luminal/cpu/cpu_op.hpp"
#include "luminal/cpu/elem_types.hpp"
#include "luminal/cpu/primitive_util.hpp"
#include "luminal/cpu/strided.hpp"
#include "luminal/kernels/inplace_rule.hpp"

namespace luminal::cpu {

namespace {

const OpDef kScatterInPlace{"cpu.ScatterInPlace", OpKind::Input, false, /*inplace_input=*/0,
                            /*seed_cost=*/0.9};  // skips the copy of dest

// The shared rule, then: a cpu.ScatterIotaInPlace of the same class (iota_index.cpp: the same
// writes without the index buffer) dominates the e-node it added.
std::vector<Rule> inplace_rules() {
  Rule r = scatter_inplace_rule(&kScatterInPlace, "cpu.scatter-inplace");
  r.apply = [shared = r.apply](const Match& m, EGraph& eg) {
    shared(m, eg);
    std::optional<ENodeId> iota;
    for (ENodeId n : eg.nodes_of(eg.find(m.root)))
      if (!eg.is_removed(n) && eg.node(n).op->name == "cpu.ScatterIotaInPlace") iota = n;
    if (!iota) return;
    for (ENodeId n : eg.nodes_of(eg.find(m.root)))
      if (!eg.is_removed(n) && eg.node(n).op == &kScatterInPlace) eg.dominate(*iota, n);
  };
  return {r};
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
