// luminal/program/plan_layout.hpp: the backend-neutral part of a Plan: the program checked, the
// arena laid out at the bucket's upper bounds, and each node's address resolved at bind.
#include <cstdint>
#include <vector>

#include "luminal/compiler/build_space.hpp"
#include "luminal/cpu/cpu_backend.hpp"
#include "luminal/ir/graph.hpp"
#include "luminal/ir/tensor.hpp"
#include "luminal/program/llir.hpp"
#include "luminal/program/plan_layout.hpp"
#include "snippet.hpp"

using namespace luminal;

int main() {
  Graph g;
  auto x = g.tensor("x", {"s", 64});
  (x.exp() * x).sum(-1).output("y");
  cpu::CpuBackend cpu(1);
  BuiltSpace b = build_search_space(g, cpu, g.dim_facts());
  LlirGraph llir = to_llir(*b.space, b.space->first_genome());
  const PlanSpec spec{.facts = {{"s", {1, 8}}}, .dim_names = {"s"}};

  // In a backend's load():
  check_llir(llir, "cpu", LlirChecks{.output_dtypes = true});  // throws "cpu: node %3 ..."
  llir.fill_input_dtypes();
  PlanLayout layout(llir, spec, {.backend = "cpu", .alignment = 256});
  expect(layout.io().inputs.size() == 1 && layout.io().outputs.size() == 1, "x in, y out");

  // At bind: one buffer per input and output, and the arena.
  std::vector<uint8_t> xs(8 * 64 * 4), ys(8 * 4), arena(layout.arena_bytes() + 256);
  uint8_t* arena_start =
      arena.data() + (256 - reinterpret_cast<uintptr_t>(arena.data()) % 256) % 256;
  const Bindings bindings{.inputs = {{xs.data(), xs.size()}},
                          .outputs = {{ys.data(), ys.size()}},
                          .arena = {arena_start, layout.arena_bytes()}};
  std::vector<uint8_t*> ptr;
  layout.addresses(bindings, ptr);  // per node; a CUdeviceptr on CUDA
  expect(ptr.size() == llir.nodes.size(), "an address per node");
  for (size_t i = 0; i < llir.nodes.size(); ++i) {
    if (is_input(llir.nodes[i])) expect(ptr[i] == xs.data(), "an Input reads its bound buffer");
    if (is_output(llir.nodes[i])) expect(ptr[i] == ys.data(), "an Output writes its own");
  }
  expect(error_of([&] { layout.addresses(Bindings{}, ptr); }).starts_with("cpu: "),
         "bindings without the program's buffers are refused, naming the backend");
}
