// luminal/nn/mlp.hpp: the SwiGLU feed-forward block, down(silu(gate(x)) * up(x)), with Hugging
// Face's weight layout ([out, in]).
#include <cmath>
#include <vector>

#include "luminal/ir/graph.hpp"
#include "luminal/nn/mlp.hpp"
#include "luminal/runtime/reference.hpp"
#include "snippet.hpp"

using namespace luminal;

int main() {
  Graph g;
  Tensor x = g.tensor("x", {1, 2});
  Tensor w_gate = g.tensor("gate", {3, 2});
  Tensor w_up = g.tensor("up", {3, 2});
  Tensor w_down = g.tensor("down", {2, 3});
  Tensor y = nn::swiglu_mlp(x, w_gate, w_up, w_down).output("y");  // down(silu(gate(x)) * up(x))

  ReferenceRuntime rt(g);
  rt.set(x, std::vector<float>{1, 0});
  rt.set(w_gate, std::vector<float>{1, 0, 0, 0, 0, 0});  // gate(x) = [1, 0, 0]
  rt.set(w_up, std::vector<float>{2, 0, 0, 0, 0, 0});    // up(x) = [2, 0, 0]
  rt.set(w_down, std::vector<float>{1, 0, 0, 0, 0, 0});  // down(h) = [h0, 0]
  rt.execute();
  const double want = 2.0 / (1.0 + std::exp(-1.0));  // silu(1) * 2
  expect(std::fabs(rt.get<float>(y)[0] - want) < 1e-5, "silu(1) * 2 in the first output");
}
