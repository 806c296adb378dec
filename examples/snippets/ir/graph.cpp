// luminal/ir/graph.hpp: a Graph holds the HLIR nodes of one model and its dynamic dims; the
// ReferenceRuntime runs it as written.
#include <vector>

#include "luminal/ir/graph.hpp"
#include "luminal/ir/tensor.hpp"
#include "luminal/runtime/reference.hpp"
#include "snippet.hpp"

int main() {
  luminal::Graph g;
  auto x = g.tensor("x", {"s", 4}, luminal::DType::F32);  // input with a dynamic dim s
  auto w = g.tensor("w", {4, 8});
  auto y = x.matmul(w).relu().output("y");
  g.set_dim("s", 3);

  // A Graph is a handle: copies share the nodes. Nodes are in a valid execution order.
  luminal::Graph same = g;
  expect(same == g && same.nodes().size() == g.nodes().size(), "copies share the nodes");
  expect(g.find("y") == g.outputs().back(), "find() by label");

  luminal::ReferenceRuntime rt(g);
  rt.set(x, std::vector<float>(12, 1.0f));
  rt.set(w, std::vector<float>(32, 0.5f));
  rt.execute();  // s = 3, from set_dim
  std::vector<float> out = rt.get<float>(y);
  expect(out.size() == 24 && out[0] == 2.0f, "y = relu(x @ w) is [3, 8] of 2");
}
