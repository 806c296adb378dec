#pragma once
// The epilogue rule, generic over a backend's ops: an elementwise region (an HLIR elementwise
// e-node or the backend's fused e-node, fusion.hpp) that reads the value of a kernel P (say a
// GEMV) element for element becomes one e-node of P's epilogue form E, which computes P's value
// and applies the region to it before storing: one kernel instead of two, and P's value never
// goes through memory.
//
// Matched on structure: the region reads a class C through a contiguous view of the region's
// element count (so region element i reads C's element i), C has an e-node of P, P's e-node
// carries no payload, and the region reads C through no other view. Of a class's fused e-nodes
// only the largest region takes part; regions of fewer than 32 elements or with more than 4
// other inputs get none (they would grow the e-graph for nothing), and so do regions whose
// element count is not a constant (a GEMV epilogue over a dynamic count gave a wrong row in the
// GPU fuzz) and regions computing in f64 (exact arithmetic such as an RMSNorm's Dekker split
// needs every reader of the value to see the same bits; the epilogue recomputes it in P's
// order while other readers may take it from another kernel). The new e-node
// has
//   children = P's children, then the region's other children,
//   views    = P's views, then the region's views of its other children,
//   the region's dtype and shape, P's other attributes (axis), and
//   payload  = the region's FusedProgram where Load 0 is P's value (in C's dtype, rounded as P
//              stores it) and Load j >= 1 reads child (P's child count + j - 1).
// The search times it against P plus the region (C may have other readers; then P runs twice
// or the unfused form wins).
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "luminal/egraph/op_def.hpp"
#include "luminal/egraph/rule.hpp"
#include "luminal/kernels/fusion_detail.hpp"

namespace luminal {

/// The rule "<name>": for each (P, E) of `forms`, regions (HLIR elementwise e-nodes and `fused`
/// e-nodes) reading a P value become E e-nodes as above.
/// The canonical region an epilogue form may take from e-node `id` (of region_pattern): nothing
/// when `id` is a `fused` e-node other than its class's largest and leanest, when the region is
/// over kFusedMaxInsts or `max_children`, or when it holds a row reduction or computes in f64.
/// The epilogue rule and a backend's own epilogue forms (cuda.ExpertGemvGlu) take it.
std::optional<fusion_detail::Built> epilogue_region(const OpDef* fused, const EGraph& eg,
                                                    ENodeId id, int max_children);

Rule epilogue_rule(const std::string& name, const OpDef* fused,
                   std::vector<std::pair<const OpDef*, const OpDef*>> forms);

}  // namespace luminal
