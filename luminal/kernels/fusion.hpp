#pragma once
// Fusion rules, generic over a backend's fused op: fusion_rules(&kFused, "cuda") gives the rules
// of a ruleset. Example: examples/snippets/kernels/fusion.cpp.
//
// An elementwise e-node E that reads a class C through a contiguous view of C's element count,
// or through one that is contiguous but for broadcast axes (F's values then computed again for
// each element reading them; the search weighs that), absorbs an elementwise producer F of C (an
// HLIR elementwise e-node or the largest fused e-node of C); rank-0 Constants become
// immediates; a Scatter-based `where` (index = (iota+1)*cond-1) becomes a Select. Programs are
// canonical (post-order from the result, common subexpressions shared, children in first-use
// order), so building the same region in different orders gives the same e-node. Regions stay
// within kFusedMaxInsts instructions and kFusedMaxChildren inputs.
#include <string>
#include <vector>

#include "luminal/egraph/op_def.hpp"
#include "luminal/egraph/rule.hpp"

namespace luminal {

/// The rules ("<prefix>.fuse-elementwise", "<prefix>.fuse-where") that add `fused` e-nodes
/// carrying FusedPrograms. `greedy_at_limit`: a class whose partial regions reach the limit
/// (12) also gets its largest region grown greedily (fusion.cpp, greedy_region): on for CUDA,
/// where it puts torch's rope in one kernel; off for the CPU, whose search chose slower programs
/// of more kernels with it on the tiny MoE decodes (0.028 -> 0.043 ms). LUMINAL_FUSION_GREEDY=all
/// offers it in every class, on every backend.
std::vector<Rule> fusion_rules(const OpDef* fused, const std::string& prefix,
                               bool greedy_at_limit = false);

}  // namespace luminal
