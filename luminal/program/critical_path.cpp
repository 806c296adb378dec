#include "luminal/program/critical_path.hpp"

#include <algorithm>
#include <vector>

namespace luminal {

int critical_path(const LlirGraph& g) {
  // Nodes come children first (to_llir), so one pass gives each node's longest chain.
  std::vector<int> depth(g.nodes.size(), 0);
  int most = 0;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const LlirNode& n = g.nodes[i];
    int before = 0;
    for (int j : n.inputs)
      if (j >= 0 && static_cast<size_t>(j) < i)
        before = std::max(before, depth[static_cast<size_t>(j)]);
    const bool kernel = !is_op(n.op, OpKind::Input) && !is_op(n.op, OpKind::Output);
    depth[i] = before + (kernel ? 1 : 0);
    most = std::max(most, depth[i]);
  }
  return most;
}

}  // namespace luminal
