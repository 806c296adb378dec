#pragma once
// LLIR: one extracted program, the form a backend loads.
//
// Nodes are in execution order; each reads earlier nodes' contiguous outputs through
// attrs.views (one per input). Input nodes (attrs.label) read user data; Output nodes
// (attrs.label) expose their single input. An op with OpDef::inplace_input >= 0 writes into
// that input's buffer. Example: examples/snippets/program/llir.cpp.
#include <map>
#include <string>
#include <vector>

#include "luminal/egraph/attrs.hpp"
#include "luminal/egraph/extract.hpp"
#include "luminal/egraph/op_def.hpp"

namespace luminal {

struct LlirNode {
  const OpDef* op = nullptr;
  Attrs attrs;
  std::vector<int> inputs;
  std::vector<DType> input_dtypes;  // one per input (filled by to_llir / fill_input_dtypes)
};

struct LlirGraph {
  std::vector<LlirNode> nodes;

  /// One line per node, stable across runs (diffable):
  /// "%4 = cpu.Fused(%1, %3) f32[s, 64] ..."
  std::string to_text() const;
  /// How many nodes of each op ("Add": 3, "cpu.BlasMatmul": 2), Input/Output excluded.
  std::map<std::string, int> op_mix() const;
  /// "3 Add, 2 cpu.BlasMatmul, ..." in descending count.
  std::string op_mix_string() const;
  /// Sets every node's input_dtypes from its inputs' output dtypes.
  void fill_input_dtypes();
};

/// The program chosen by `g` (one node per reachable class, children first). A chosen Fold
/// e-node (program/fold.hpp) becomes an Input of its placeholder label.
LlirGraph to_llir(const SearchSpace& space, const Genome& g);

}  // namespace luminal
