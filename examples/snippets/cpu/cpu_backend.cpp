// luminal/cpu/cpu_backend.hpp: the CPU backend (strided kernels, fused regions, OpenBLAS
// matmuls, its own thread pool), compiled for and run through a Session.
#include <vector>

#include "luminal/compiler/options.hpp"
#include "luminal/cpu/cpu_backend.hpp"
#include "luminal/ir/graph.hpp"
#include "luminal/ir/tensor.hpp"
#include "luminal/runtime/session.hpp"
#include "snippet.hpp"

int main() {
  luminal::Graph g;
  auto x = g.tensor("x", {2, 3});
  auto w = g.tensor("w", {3, 2});
  x.matmul(w).output("y");

  luminal::cpu::CpuBackend cpu;  // threads: all hardware threads
  luminal::Session model =
      luminal::compile(g, cpu, luminal::CompileOptions().search_graph_limit(20));
  model.set(x, std::vector<float>{1, 2, 3, 4, 5, 6});
  model.set(w, std::vector<float>{7, 8, 9, 10, 11, 12});
  model.execute();
  expect(model.get<float>("y") == std::vector<float>{58, 64, 139, 154}, "x @ w");
}
