#pragma once
// The in-place Scatter rule every backend shares: an HLIR Scatter whose dest (views[0]) is read
// contiguously with the output's element count gets an alternative e-node of `op` (same
// children, same attributes), whose OpDef::inplace_input is 0: it writes src into dest's buffer
// instead of copying dest first. Pruning keeps it only where overwriting dest is legal (nothing
// else reads it), so a KV-cache update costs the new rows, not the whole cache; there it
// dominates the copying Scatter (a search never picks the copy where the update can be in place).
// Example: examples/snippets/kernels/inplace_rule.cpp.
#include <string>

#include "luminal/egraph/egraph.hpp"
#include "luminal/egraph/rule.hpp"

namespace luminal {

Rule scatter_inplace_rule(const OpDef* op, const std::string& name);

/// Whether a Scatter e-node moves elements as they are: three children read through three views,
/// dest and src of the Scatter's dtype, integer indexes. The in-place rule and the backends'
/// parallel scatters (cuda.ScatterUnique) ask this first.
bool scatter_moves_elements(const EGraph& eg, const ENode& node);

}  // namespace luminal
