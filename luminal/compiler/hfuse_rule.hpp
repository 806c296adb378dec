#pragma once
// Horizontal fusion: matmuls that read the same activation with the same k become one matmul
// over their weights concatenated along n, read back at column offsets.
//
// Matched on structure only. A member is a matmul class, SumReduce(Mul(x, W)) over the last
// axis (matmul_parts), whose output has one row (every axis but n is a constant 1: a decode
// step), whose x side is broadcast along n (stride 0), and whose W side reads a weight Input
// (persistent, not carried, static shape) directly or through one Cast that reads it whole.
// Members agree on x's class and view (but for n), k, dtypes and the Cast. For a group of
// two or more (at most kMaxMembers, ordered by weight label), the rule adds
//   Wc = Scatter chain over a zero Constant of [N, k] (N = sum of n_i): rows o_i .. o_i+n_i
//        are W_i's [n_i, k] (weight-only, so load-time folding computes it once; the source
//        weights are released where only that fold reads them), then Cast(Wc) for a cast group;
//   Y  = SumReduce(Mul(x, Wc)) of shape [1.., N]: one new matmul class;
// and, for every e-node E that reads member i's class C_i, a copy of E that reads Y instead
// through the same view with base += o_i (C_i's values are Y's elements o_i .. o_i + n_i, in
// order), merged into E's class. Each consumer's class is a choice: a program that takes the
// copies of every consumer computes one matmul; a mixed program computes Y and some C_i, both
// correct. Outputs, fold leaves and in-place e-nodes are not rewritten.
// Off by default: LUMINAL_HFUSE=on offers it (the compile cache's key names the setting). On the
// CPU it made f32 SmolLM2 decode 8-9% faster; one run held both the concatenations and the
// separate weights (542.9 -> 808.7 MiB: the decode bucket folded them, no prefill candidate read
// them), a later one did not (a seed read them). It also slows compiling and raises the load's
// peak, and it has not been timed on a GPU (docs/architecture.md, BENCHMARKS.md).
// Example: tests/compiler/hfuse_test.cpp (q/k/v and gate/up, every program against the
// reference).
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "luminal/egraph/rule.hpp"

namespace luminal {

/// The most matmuls one fused matmul takes.
inline constexpr size_t kHfuseMaxMembers = 8;

/// True when LUMINAL_HFUSE=on (off by default).
bool horizontal_fusion_enabled();

/// What the rule added (classes as they were when added; find() them after saturation): the
/// fused matmuls' members (whose readers got copies reading the fused one) and the concatenated
/// weights. build_search_space turns it into the search space's seed bias.
struct HfuseLog {
  std::vector<ClassId> members;  // one-row members: their readers also read the fused matmul
  std::vector<ClassId> weights;  // the members' weight-side classes
  std::vector<ClassId> concats;  // the concatenations (and, cast, what the Cast reads)
};

/// The ruleset "hfuse" (one rule, "hfuse-matmul"; none unless LUMINAL_HFUSE=on); `carried` holds
/// the labels of carried inputs (never fused: their values change between steps); `log`, when
/// given, records what the rule added.
RuleSet horizontal_fusion_rules(std::set<std::string, std::less<>> carried,
                                std::shared_ptr<HfuseLog> log = nullptr);

}  // namespace luminal
