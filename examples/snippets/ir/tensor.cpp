// luminal/ir/tensor.hpp: the conventions of the Tensor API (negative axes, numpy broadcasting,
// one dtype per binary op, Bool comparisons, I32 indexes, C's % and Python's remainder, and
// errors that name the op and the shapes).
#include <string>
#include <vector>

#include "luminal/core/error.hpp"
#include "luminal/ir/graph.hpp"
#include "luminal/ir/tensor.hpp"
#include "luminal/runtime/reference.hpp"
#include "snippet.hpp"

using luminal::DType;

int main() {
  luminal::Graph g;
  auto x = g.tensor("x", {2, 3});
  auto row = g.tensor("row", {3});
  auto sum = (x + row).sum(-1).output("sum");  // broadcast, then the last axis
  expect(sum.shape().size() == 1, "sum over axis -1 drops the last axis");
  auto big = x.gt(0.5).output("big");  // comparisons return Bool
  expect(big.dtype() == DType::Bool, "comparisons return Bool");
  auto idx = x.argmax(1).output("idx");  // index-producing ops return I32
  expect(idx.dtype() == DType::I32, "argmax returns I32");
  auto rem = (x % 2.0).output("fmod");  // C's truncated remainder (sign of the dividend)
  auto py = x.remainder(g.constant(2.0)).output("remainder");  // Python's (sign of the divisor)

  // Both operands of a binary op have one dtype: cast() first.
  auto n = g.tensor("n", {2, 3}, DType::I32);
  bool threw = false;
  try {
    (x + n).output("bad");
  } catch (const luminal::Error& e) {
    threw = std::string(e.what()).find("dtypes differ") != std::string::npos;
  }
  expect(threw, "adding f32 and i32 throws, naming the problem");
  auto ok = (x + n.cast(DType::F32)).output("ok");

  luminal::ReferenceRuntime rt(g);
  rt.set(x, std::vector<float>{-3, 1, 2, 0, 5, -1});
  rt.set(row, std::vector<float>{1, 1, 1});
  rt.set(n, std::vector<int32_t>{1, 1, 1, 1, 1, 1});
  rt.execute();
  expect(rt.get<float>(sum) == std::vector<float>{3, 7}, "row sums of x + row");
  expect(rt.get<float>(rem)[0] == -1 && rt.get<float>(py)[0] == 1, "-3 % 2 is -1, remainder 1");
  expect(rt.get<int32_t>(idx) == std::vector<int32_t>{2, 1}, "argmax per row");
  expect(rt.get<float>(ok)[1] == 2, "1 + 1 after the cast");
}
