#pragma once
// The graph of the paired gate/up GEMV tests (gemv_glu_test.cpp, qgemv_glu_test.cpp).
#include <cstdint>

#include "luminal/luminal.hpp"
#include "luminal/nn/linear.hpp"

namespace luminal::testing {

/// y = SiLU(x @ Wg^T) * (x @ Wu^T): x [m, k], Wg and Wu [n, k] of dtype t. Block types: x f32
/// and the weights dequantised; else everything of dtype t.
inline Graph swiglu_graph(int64_t m, int64_t k, int64_t n, DType t) {
  Graph g;
  const bool q = is_block(t);
  Tensor x = g.tensor("x", {Expr(m), Expr(k)}, q ? DType::F32 : t);
  auto weight = [&](const char* label) {
    Tensor w = g.tensor(label, {Expr(n), Expr(k)}, t);
    return q ? w.dequantize() : w;
  };
  const Tensor gate = nn::linear(x, weight("wg"));
  const Tensor up = nn::linear(x, weight("wu"));
  (gate.silu() * up).output("y");
  return g;
}

}  // namespace luminal::testing
