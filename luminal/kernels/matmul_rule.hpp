#pragma once
// The matmul rule pieces every backend shares: SumReduce(axis k) over Mul(a, b) becomes one
// backend matmul node when the SumReduce reads the Mul's class through a contiguous view (or a
// reshape of it). The new node has
//   children  = the Mul's two children,
//   views     = the Mul's two views (over the Mul's dims, the reduced axis k included),
//   axis      = k,
//   shape/dtype = the SumReduce's,
// and out[i...] = sum over k of a[i.., k, ..] * b[i.., k, ..]. It dominates the SumReduce e-node
// (which would materialise the whole product). matmul_rule() is the rule; its pieces
// (matmul_pattern, matmul_parts, add_matmul_node) serve a backend's variants.
// Example: examples/snippets/kernels/matmul_rule.cpp.
#include <optional>
#include <vector>

#include "luminal/egraph/egraph.hpp"
#include "luminal/egraph/rule.hpp"

namespace luminal {

/// A SumReduce-over-Mul match, as the matmul node's children and attributes.
struct MatmulParts {
  std::vector<ClassId> children;  // the Mul's a, b
  Attrs attrs;                    // the matmul node's attributes
  ENodeId sum_node = 0;
};

/// SumReduce(Mul(a, b)), the SumReduce bound "sum", the Mul "mul".
Pattern matmul_pattern();
/// The parts of a matmul_pattern() match, or nothing when the SumReduce's view of the Mul is not
/// a reshape of it.
std::optional<MatmulParts> matmul_parts(const EGraph& eg, const Match& m);
/// Adds the e-node (op, attrs, children) and merges its class into `root`; returns the e-node
/// (found again after hash-consing).
std::optional<ENodeId> add_merged(EGraph& eg, const OpDef* op, const Attrs& attrs,
                                  const std::vector<ClassId>& children, ClassId root);
/// Adds `op` with `parts` to the match's class; the new e-node dominates the SumReduce.
void add_matmul_node(EGraph& eg, const OpDef* op, const MatmulParts& parts, ClassId root);
/// The rule "<name>" that adds `op` for every matmul_parts() match.
Rule matmul_rule(const OpDef* op, const std::string& name);

}  // namespace luminal
