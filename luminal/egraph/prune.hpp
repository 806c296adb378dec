#pragma once
// Pruning: after saturation, keep only what a backend can execute, legally and usefully.
// Example: examples/snippets/egraph/prune.cpp.
//
// In order, until nothing changes:
//   1. e-nodes whose op the backend does not execute are removed (HLIR-only alternatives);
//   2. dominated e-nodes (EGraph::dominate) are removed where their class keeps another option;
//   3. in-place e-nodes (OpDef::inplace_input) are removed unless that child class is consumed
//      by nothing outside the e-node's own class, and, when the child holds an Input, that input
//      is carried to this class's Output (InplaceInputs);
//   4. e-nodes with a child class that has no e-node left are removed (cascade).
// A root class left with no e-node throws luminal::Error naming the op that could not be
// executed. Finally cycles are cut: inside each strongly connected set of classes an e-node may
// only read classes of smaller depth (depth = height of the shallowest extraction), so every
// choice of one e-node per class is acyclic; each class keeps its shallowest e-node.
//
// Details of the implementation (prune.cpp):
//   - Dominance runs after steps 1, 3 and 4 have reached their fixpoint, so a winner is never
//     removed after its loser (which could empty the class). Removing e-nodes never makes an
//     in-place e-node illegal or empties a class, so dominance needs no second pass.
//   - Step 3 counts only consumers in classes reachable from the roots (dead e-nodes never run),
//     and an in-place e-node may not overwrite a root class.
//   - An e-node reading a class that has no finite extraction (every e-node left in it depends on
//     its own result) is removed too, counted in `cycles`, and cascades like step 4.
//   - The e-graph is rebuilt first if merges are pending.
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "luminal/egraph/egraph.hpp"

namespace luminal {

struct PruneOptions {
  /// Does the backend execute this op?
  std::function<bool(const OpDef*)> executable;
  /// May an in-place e-node of class `self` overwrite the Input e-node `input` of its child?
  /// (true only when the graph carries self's output into that input after each run.)
  std::function<bool(ENodeId input, ClassId self)> inplace_input_ok;
};

struct PruneReport {
  size_t unsupported = 0;
  size_t dominated = 0;
  size_t inplace = 0;
  size_t cascade = 0;
  size_t cycles = 0;
  size_t live_nodes = 0;
  size_t live_classes = 0;
  std::string to_string() const;
};

PruneReport prune(EGraph& eg, const std::vector<ClassId>& roots, const PruneOptions& opts);

}  // namespace luminal
