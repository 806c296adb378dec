#pragma once
// Test helper: rope's rotate-half form over a product's value, as torch writes it
// (scripts/bench/torch_llama.py): q = x @ W^T as `heads` heads of 128, then
// q * cos + cat(-q2, q1) * sin, with cos and sin computed from the angles (cat(cos(a), cos(a))
// in f32, cast to bf16). Fusion's greedy region puts the rope in one region
// (tests/cpu/fused_test.cpp, tests/cuda/fusion_greedy_test.cpp).
#include <cstdint>
#include <vector>

#include "luminal/luminal.hpp"

namespace luminal::testing {

/// Inputs x [1, k], w [heads * 128, k] (bf16) and angles [1, 64] (f32); output "y".
inline Graph rope_over_a_product(int64_t heads, int64_t k) {
  Graph g;
  Tensor x = g.tensor("x", {1, k}, DType::BF16);
  Tensor w = g.tensor("w", {heads * 128, k}, DType::BF16);
  Tensor ang = g.tensor("angles", {1, 64});
  const Tensor cos = concat({ang.cos(), ang.cos()}, 1).cast(DType::BF16);
  const Tensor sin = concat({ang.sin(), ang.sin()}, 1).cast(DType::BF16);
  const Tensor q = x.matmul(w.permute({1, 0})).reshape({1, heads, 1, 128});
  const Tensor rot = concat({-q.slice(3, 64, 128), q.slice(3, 0, 64)}, 3);
  const std::vector<Dim> shape = {1, heads, 1, 128};
  (q * cos.reshape({1, 1, 1, 128}).expand(shape) + rot * sin.reshape({1, 1, 1, 128}).expand(shape))
      .output("y");
  return g;
}

}  // namespace luminal::testing
