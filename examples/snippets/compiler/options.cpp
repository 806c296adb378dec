// luminal/compiler/options.hpp: how the compiler searches: limits, the seed, and the buckets of
// each dynamic dim (each searched at its representative value).
#include <vector>

#include "luminal/compiler/options.hpp"
#include "luminal/cpu/cpu_backend.hpp"
#include "luminal/ir/graph.hpp"
#include "luminal/ir/tensor.hpp"
#include "luminal/runtime/session.hpp"
#include "snippet.hpp"

using namespace luminal;

int main() {
  Graph g;
  auto x = g.tensor("x", {"s", 4});
  (x * x).output("y");
  cpu::CpuBackend cpu(1);

  auto opts = CompileOptions().search_graph_limit(20).seed(7).dim_buckets(
      "s", {DimBucket(1, 1), DimBucket(2, 512).representative(16)});
  Session model = compile(g, cpu, opts);  // luminal/runtime/session.hpp
  model.set(x, std::vector<float>{1, 2, 3, 4});
  model.execute({{"s", 1}});
  expect(model.get<float>("y") == std::vector<float>{1, 4, 9, 16}, "y = x * x");
}
