#pragma once
// The row rule: a reduction over the last axis and the elementwise work around it as one e-node
// of a backend's row op (softmax, RMSNorm, layer norm, log-softmax, ... in one kernel):
// row_rules(&kRow, &kFused, "cuda") gives the rules of a ruleset.
// Example: examples/snippets/kernels/row_rule.cpp (softmax as one row e-node).
//
// A row e-node has the shape D = [rows..., L] of its class and a FusedProgram payload whose
// loads read its children at each element of D (child i through attrs.views[i], by the flat
// index, as in a fused elementwise program) and whose RowSum / RowMax instructions reduce an
// element value over the last axis of D, giving a value shared by the row. The result is the
// last instruction, at every element of D.
//
// Starting from an elementwise e-node E (an HLIR op, or the largest fused e-node of its class)
// that reads a value of the row broadcast along it, or a class holding a row e-node (directly or
// through up to two elementwise ops: E is then the row's epilogue, such as a norm's cast times
// its weight), the rule grows E's region over the loads it reads:
//   - a class read broadcast along the row (stride 0 along L, the rows in order) that holds a
//     SumReduce / MaxReduce of the last axis of D becomes a RowSum / RowMax of its input;
//   - such a class that holds an elementwise e-node over the rows (mean's scaling, eps,
//     rsqrt, reciprocal) is inlined with its inputs read the same way;
//   - a class read contiguously that holds an elementwise e-node is inlined (in the "narrow"
//     variant only when that adds no element-level input: softmax's exp, RMSNorm's x*x; in the
//     "wide" variant always, e.g. a residual add before a norm), and so is one read through any
//     other view of D whose producer reads its inputs element for element (a weight's cast,
//     broadcast down the rows);
//   - loads of one class through one view are grown once.
// A rowsum equals the SumReduce it replaces up to the order and width of the additions (the
// kernels add in different orders, and a backend may add a few values in f32 before its double
// accumulator): within rounding for f32 and narrower sums, which round the difference away
// almost always; not for f64, whose downstream math (a correctly rounded division) can turn a
// last-bit difference into a wrong result, so f64 reductions are left alone.
// A variant is added when it holds at least one row reduction and fits the limits below. The
// search then picks between the row kernel and the unfused kernels.
#include <string>
#include <vector>

#include "luminal/egraph/op_def.hpp"
#include "luminal/egraph/rule.hpp"

namespace luminal {

inline constexpr int kRowMaxInsts = 192;
inline constexpr int kRowMaxChildren = 8;
inline constexpr int kRowMaxReductions = 6;

/// How the rule grows a region. Plain rebuilds the region and re-reads the e-graph at every
/// step (quadratic in the region; the specification). Memo takes the same steps with the same
/// result, sharing what a (class, view) can grow into between the roots of an iteration and
/// growing the region in place (row_rule_memo.hpp); tests/kernels/row_rule_memo_test compares the
/// two.
enum class RowGrowth { Memo, Plain };

/// The rule "<prefix>.fuse-rows" ("<prefix>.fuse-rows-no-epilogue" under LUMINAL_ROW_EPILOGUE=0,
/// which starts no region from a row op's value alone: an A/B switch), adding `row` e-nodes
/// (regions read through `fused` e-nodes
/// too, the backend's fused elementwise op).
std::vector<Rule> row_rules(const OpDef* row, const OpDef* fused, const std::string& prefix,
                            RowGrowth growth = RowGrowth::Memo);

/// True when `v` reads a tensor of numel(domain) / L elements at element (r..., l) of
/// `domain` = [r..., L] as its row r in row-major order: stride 0 along the last axis and the
/// contiguous strides of domain[0:-1] elsewhere (size-1 axes ignored).
bool is_row_broadcast(const View& v, const Shape& domain);
/// `v` with the dims of `domain` (the same elements by flat index), if it can be expressed so.
std::optional<View> view_over(const View& v, const Shape& domain);

}  // namespace luminal
