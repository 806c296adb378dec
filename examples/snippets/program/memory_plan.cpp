// luminal/program/memory_plan.hpp: the memory planner every backend shares: buffer lifetimes
// from an LLIR program, then offsets into one arena.
#include <vector>

#include "luminal/compiler/build_space.hpp"
#include "luminal/cpu/cpu_backend.hpp"
#include "luminal/ir/graph.hpp"
#include "luminal/ir/tensor.hpp"
#include "luminal/program/llir.hpp"
#include "luminal/program/memory_plan.hpp"
#include "snippet.hpp"

using namespace luminal;

int main() {
  Graph g;
  auto x = g.tensor("x", {"s", 64});
  (x.exp().sqrt() * x).sum(-1).output("y");
  cpu::CpuBackend cpu(1);
  BuiltSpace b = build_search_space(g, cpu, g.dim_facts());
  LlirGraph llir = to_llir(*b.space, b.space->first_genome());

  std::vector<BufferUse> uses = buffer_uses(llir);
  MemoryPlan plan = plan_memory(uses, {{"s", 8}});  // offsets into one arena
  expect(plan.offsets.size() == llir.nodes.size(), "one offset per node");
  expect(plan.arena_bytes <= plan.naive_bytes, "reuse never needs more than no reuse");
}
