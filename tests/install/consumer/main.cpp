#include <cstdio>

#include "luminal/luminal.hpp"

int main() {
  luminal::Graph g;
  auto a = g.tensor("a", {2});
  auto y = (a * 3.0).sum(0).output("y");
  luminal::ReferenceRuntime rt(g);
  rt.set(a, std::vector<float>{1, 2});
  rt.execute();
  float v = rt.get<float>(y)[0];
  // The compiler and the CPU backend (OpenMP + OpenBLAS) link from an installed package too.
  luminal::cpu::CpuBackend cpu(1);
  auto model = g.compile(cpu, luminal::CompileOptions().search_graph_limit(3).verbose(false));
  model.set(a, std::vector<float>{1, 2});
  model.execute();
  float w = model.get<float>(y)[0];
  std::printf("consumer: %g %g\n", v, w);
  return v == 9.0f && w == 9.0f ? 0 : 1;
}
