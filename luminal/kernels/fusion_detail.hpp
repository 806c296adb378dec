#pragma once
// The region algebra behind the fusion rules (fusion.hpp) and the row rule (row_rule.hpp):
// programs whose loads still name e-classes, built from e-nodes, spliced into each other and
// brought to canonical form. Internal to luminal/kernels.
#include <cstddef>
#include <optional>
#include <vector>

#include "luminal/egraph/egraph.hpp"
#include "luminal/egraph/pattern.hpp"
#include "luminal/kernels/fused_program.hpp"

namespace luminal::fusion_detail {

/// A child of a region under construction: a class read through a view.
struct ChildKey {
  ClassId cls;
  View view;
};

/// A region whose loads name classes directly (before canonicalisation).
struct SymProgram {
  std::vector<FusedInst> insts;
  std::vector<ChildKey> loads;  // Load.a indexes this
  int root = -1;
};

/// A canonical region: its program and the (class, view) each load reads.
struct Built {
  FusedProgram program;
  std::vector<ClassId> children;
  std::vector<View> views;
};

bool is_elementwise_kind(OpKind k);
/// The e-nodes a region starts from, bound "e": an HLIR elementwise e-node or a `fop` e-node (the
/// pattern of the fusion, row, epilogue and expert glu rules).
Pattern region_pattern(const OpDef* fop);
/// The region an e-node computes, if it is one we can fuse: an HLIR elementwise op whose
/// semantics the program models, or an e-node of `fop` (its program and children).
std::optional<SymProgram> region_of(const OpDef* fop, const EGraph& eg, ENodeId id);
/// The HLIR Constant of a class, if it holds one.
const Attrs* constant_of(const EGraph& eg, ClassId c);
/// The program of a `fop` e-node of the class that reads no input, if any.
const FusedProgram* constant_program_of(const OpDef* fop, const EGraph& eg, ClassId c);
/// Canonical form: post-order from the root (operands in order), equal instructions shared,
/// constants inlined, children numbered by first use. Nothing when over the limits.
std::optional<Built> canonicalize(const OpDef* fop, const EGraph& eg, const SymProgram& p,
                                  int max_insts, int max_children);
/// p with every load of p.loads[target] replaced by the region q.
SymProgram inline_region(const SymProgram& p, int target, const SymProgram& q);
/// The ops a region computes (loads and constants not counted).
size_t region_ops(const FusedProgram& p);
/// The `fop` e-node of a class computing the most ops (on ties, the one with fewer children,
/// then the earliest); `count` receives the number of `fop` e-nodes in the class.
std::optional<ENodeId> largest_fused(const OpDef* fop, const EGraph& eg, ClassId c,
                                     size_t* count = nullptr);
/// The `fop` e-node of a class reading the fewest inputs (on ties, computing the most ops, then
/// the earliest). The largest region can read a value twice, as itself and as a cast of it
/// (SiLU's x * sigmoid(x) reading a GEMV's f32 value and its bf16 class); the epilogue rule
/// takes this one too.
std::optional<ENodeId> leanest_fused(const OpDef* fop, const EGraph& eg, ClassId c);

}  // namespace luminal::fusion_detail
