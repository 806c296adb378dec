// luminal/runtime/session.hpp: a graph's resident state on one backend and the plans that run
// it: compile once per dim bucket, then execute with dims by name or, on the hot path, with a
// dims array in slot order and inputs and outputs by handle.
#include <cstdint>
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
  auto w = g.tensor("w", {4, 2});
  x.matmul(w).output("y");

  cpu::CpuBackend cpu(1);
  Session s(
      g, cpu,
      CompileOptions().search_graph_limit(4).dim_buckets("s", {DimBucket(1, 1), DimBucket(2, 16)}));
  s.set(w, std::vector<float>{1, 0, 0, 1, 0, 0, 0, 0});  // uploaded once, resident from now on
  s.compile();                                           // searches each bucket on the bound data
  s.set(x, std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8});
  s.execute({{"s", 2}});  // convenience: dims by name
  expect(s.get<float>("y") == std::vector<float>{1, 2, 5, 6}, "y = x @ w");
  const void* x_buffer = s.buffer_address("x");

  // The hot path: dims as a flat array in slot order, inputs and outputs by handle, no string or
  // map work.
  DimSlot slot = s.dim("s");
  std::vector<int64_t> dims = s.dims();
  Session::InputHandle xs = s.input(x);
  Session::OutputHandle ys = s.output("y");
  dims[slot] = 1;
  const std::vector<float> row = {9, 8, 7, 6};
  s.write(xs, row.data(), row.size() * sizeof(float));
  s.execute(dims);
  std::vector<float> y(s.output_bytes(ys) / sizeof(float));
  s.read(ys, y.data(), y.size() * sizeof(float));  // synchronises, then downloads
  expect(y == std::vector<float>{9, 8}, "one row through the s = 1 bucket");
  expect(s.buffer_address("x") == x_buffer, "an input's buffer never moves");
}
