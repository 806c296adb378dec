// luminal/program/llir_serial.hpp: an LLIR program as exact text (the compile cache's form),
// read back with the backend that names its ops and payloads.
#include <string>

#include "luminal/compiler/build_space.hpp"
#include "luminal/cpu/cpu_backend.hpp"
#include "luminal/ir/graph.hpp"
#include "luminal/ir/tensor.hpp"
#include "luminal/program/llir.hpp"
#include "luminal/program/llir_serial.hpp"
#include "snippet.hpp"

using namespace luminal;

int main() {
  Graph g;
  auto x = g.tensor("x", {"s", 4});
  (x.exp() * 2.0).output("y");
  cpu::CpuBackend backend(1);
  BuiltSpace b = build_search_space(g, backend, g.dim_facts());
  LlirGraph program = to_llir(*b.space, b.space->first_genome());

  std::string text = write_llir(program);
  LlirGraph back = read_llir(text, backend);  // ops by name, payloads by kind
  expect(write_llir(back) == text, "the text reads back to the same program");
}
