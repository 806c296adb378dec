// luminal/runtime/runtime.hpp: the data API every runtime offers (reference, CPU, CUDA): set
// inputs by tensor or label, execute with dyn values, get outputs as a host type.
#include <vector>

#include "luminal/ir/graph.hpp"
#include "luminal/ir/tensor.hpp"
#include "luminal/runtime/reference.hpp"
#include "snippet.hpp"

int main() {
  luminal::Graph g;
  auto x = g.tensor("x", {"s", 2});
  auto out = (x * 2.0).output("y");

  luminal::ReferenceRuntime rt(g);
  rt.set(x, std::vector<float>{1, 2, 3, 4, 5, 6});  // or rt.set("x", ...)
  rt.execute({{"s", 3}});                           // dyn values (merged over g.set_dim values)
  std::vector<float> y = rt.get<float>(out);
  expect(y == std::vector<float>{2, 4, 6, 8, 10, 12}, "y = 2x");
}
