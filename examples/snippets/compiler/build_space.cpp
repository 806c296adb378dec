// luminal/compiler/build_space.hpp: the compiler's front half on its own: HLIR -> e-graph ->
// saturation with the backend's rules -> pruning -> search space.
#include "luminal/compiler/build_space.hpp"
#include "luminal/cpu/cpu_backend.hpp"
#include "luminal/ir/graph.hpp"
#include "luminal/ir/tensor.hpp"
#include "luminal/program/llir.hpp"
#include "snippet.hpp"

using namespace luminal;

int main() {
  Graph g;
  auto x = g.tensor("x", {"s", 16});
  auto w = g.tensor("w", {16, 8});
  x.matmul(w).relu().output("y");
  cpu::CpuBackend cpu(1);

  BuiltSpace b = build_search_space(g, cpu, g.dim_facts());
  Genome first = b.space->first_genome();
  LlirGraph program = to_llir(*b.space, first);
  expect(b.saturation.stop == StopReason::Saturated, "saturated within the default limits");
  expect(!program.nodes.empty(), "a program to load");
}
