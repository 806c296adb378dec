// luminal/nn/rope.hpp: rotary position embeddings as Hugging Face computes them: the inverse
// frequencies on the host, the positions and the rotation in the graph.
#include <vector>

#include "luminal/ir/graph.hpp"
#include "luminal/nn/rope.hpp"
#include "luminal/runtime/reference.hpp"
#include "snippet.hpp"

using namespace luminal;

int main() {
  const int head_dim = 4;
  Graph g;
  Tensor q = g.tensor("q", {"s", 2, head_dim});  // q [s, heads, hd]

  nn::RopeScaling sc = nn::RopeScaling::llama3(8.0, 1.0, 4.0, 8192);
  std::vector<float> inv = nn::rope_inv_freq(head_dim, 500000.0, sc);  // host, like HF (f32)
  Tensor inv_freq = g.tensor("rope.inv_freq", {head_dim / 2});         // set to `inv` once
  Tensor pos = nn::step_positions(g);                                  // c - s + i, I32 [s]
  Tensor q2 = nn::apply_rope(q, pos, inv_freq).output("q2");           // q [s, heads, hd]
  expect(inv.size() == head_dim / 2 && inv[0] == 1.0f, "inv_freq[0] = base^0");

  ReferenceRuntime rt(g);
  rt.set(q, std::vector<float>(8, 1.0f));
  rt.set(inv_freq, inv);
  rt.execute({{"s", 1}, {"c", 1}});  // one token at position 0: no rotation
  expect(rt.get<float>(q2) == std::vector<float>(8, 1.0f), "position 0 leaves q unchanged");
}
