#pragma once
// The row rule's growth (row_rule.hpp), internal to luminal/kernels: what both forms share
// (row_rule.cpp) and the memoised form (row_rule_memo.cpp).
//
// grow() in row_rule.cpp (RowGrowth::Plain) re-reads the e-graph and copies the whole region at
// every step, and a region grows as a tree (a value read in two places is inlined twice): on the
// sampler graph of `luminal run`, about 230 steps a root, each copying up to 800 instructions and
// comparing every pair of loads, from hundreds of roots (22 s a bucket on the tiny Llama).
// grow_memo takes the same steps in the same order and ends with the same region, cheaply:
//   - a (class, view) key is interned once per domain, with what its load can grow into (the
//     reduction, or the producers' regions re-read) computed once and shared by every root of
//     an iteration;
//   - the region only grows: inlining appends the producer's instructions and forwards the
//     replaced loads to its root, O(producer) instead of O(region);
//   - the Load instructions of each load, the loads of each key, the element-level inputs and
//     the first load of each key are counted as the region changes (grow()'s dedupe_loads and
//     element_loads), and the next load to try is the lowest set bit of a bitset.
//
// The memo is per thread and lasts one iteration of the ruleset at most: memo_new_iteration()
// (the rule's guard, which the schedule runs on every match before any builder) drops it at its
// next use, and grow_memo drops it when the e-graph changed since the memo last saw it, except by
// the rule's own additions (memo_added_row): a new row e-node merged into its root class, which
// stays canonical, changes no class the growth reads.
#include <cstdint>
#include <optional>
#include <vector>

#include "luminal/egraph/egraph.hpp"
#include "luminal/kernels/fusion_detail.hpp"

namespace luminal::row_detail {

using fusion_detail::SymProgram;

/// Growth steps per variant (each inlines one producer).
inline constexpr int kMaxSteps = 400;

/// Narrow inlines a producer only when that adds no element-level input; Wide always.
enum class Variant { Narrow, Wide };

/// A region of one row reduction over (input, view) of reduction e-node s.
SymProgram reduction_region(const EGraph& eg, ENodeId s);
/// The elementwise producers of class c: its HLIR elementwise e-nodes, then its largest fused
/// e-node.
std::vector<ENodeId> producers(const OpDef* fused, const EGraph& eg, ClassId c);
/// The first reduction of the last axis of `domain` in class c (a row-broadcast load of c
/// becomes its RowSum / RowMax).
std::optional<ENodeId> row_reduction_of(const EGraph& eg, ClassId c, const Shape& domain);
/// Producer region q of class c (of `cn` elements) as a load through another view reads it: read
/// element for element (`direct`: a contiguous view of all of c), q's views stand as they are;
/// read through another view of the domain (`over`), each input q reads element for element is
/// read through that same view, and a broadcast scalar stays one. False when an input is read
/// otherwise.
bool reread(SymProgram& q, const EGraph& eg, bool direct, const std::optional<View>& over,
            const Shape& domain, const Expr& cn);

void memo_new_iteration();
/// After the rule added a row e-node and merged it into `root`: keeps the memo when that is all
/// that changed since `version_before` (the e-graph's version before the addition).
void memo_added_row(const EGraph& eg, uint64_t version_before, ClassId root);

/// grow() of row_rule.cpp through the memo: the region `base` (of root class `root`, over
/// `domain`) grown, or nothing when it outgrew the limit or holds no row reduction.
std::optional<SymProgram> grow_memo(const OpDef* fused, const EGraph& eg, ClassId root,
                                    const Shape& domain, Variant variant, const SymProgram& base);

}  // namespace luminal::row_detail
