#pragma once
// HLIR -> e-graph: one e-node per HLIR node (views become the e-node's child views); a node and
// its declared alternatives (Graph::alternative) share one e-class, so extraction picks a form.
#include <vector>

#include "luminal/egraph/egraph.hpp"
#include "luminal/ir/graph.hpp"

namespace luminal {

struct Lowered {
  std::vector<ClassId> class_of;  // per HLIR node (canonical when lowered; find() after merges)
  std::vector<ClassId> roots;     // classes of the Output nodes, in graph order
};

/// Adds `g` to `eg`. `facts` (dim ranges of the bucket being compiled) simplify every shape and
/// stride; a dim fixed to one value (bucket [1, 1]) is substituted.
Lowered lower(const Graph& g, EGraph& eg, const Facts& facts = {});

/// The attributes of an HLIR node as an e-node (views of its operands included).
Attrs attrs_of(const Node& n);

}  // namespace luminal
