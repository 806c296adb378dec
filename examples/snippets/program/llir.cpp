// luminal/program/llir.hpp: one extracted program, the form a backend loads: nodes in execution
// order, each reading earlier nodes' outputs through its views.
#include <string>

#include "luminal/compiler/build_space.hpp"
#include "luminal/cpu/cpu_backend.hpp"
#include "luminal/ir/graph.hpp"
#include "luminal/ir/tensor.hpp"
#include "luminal/program/llir.hpp"
#include "snippet.hpp"

using namespace luminal;

int main() {
  Graph g;
  auto x = g.tensor("x", {"s", 4});
  (x.exp() + 1.0).output("y");
  cpu::CpuBackend cpu(1);
  BuiltSpace b = build_search_space(g, cpu, g.dim_facts());
  LlirGraph program = to_llir(*b.space, b.space->first_genome());
  for (size_t i = 0; i < program.nodes.size(); ++i)
    for (int in : program.nodes[i].inputs)
      expect(in < static_cast<int>(i), "every node reads earlier nodes");
  expect(program.op_mix().count("Input") == 0, "op_mix leaves out Input and Output");
  expect(program.to_text().find("Output") != std::string::npos, "one line per node");
}
