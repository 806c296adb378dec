// The CUDA rules' greedy fused region (luminal/kernels/fusion.cpp, greedy_region), without a
// GPU: where a class's partial regions reach the limit of 12, its largest region grown greedily
// from the HLIR op is offered too. Torch's rope, x * cos + cat(-x2, x1) * sin over a GEMV's
// value, reached the limit before its whole region, and the fewest-kernels program (the search's
// seed) kept x * cos as a primitive Mul kernel: two a layer in the torch 8B step.
#include <gtest/gtest.h>

#include "cuda/cuda_test_util.hpp"
#include "luminal/compiler/build_space.hpp"
#include "luminal/luminal.hpp"

namespace luminal {
namespace {

/// q = x @ W [1, 4096] as 32 heads of 128, rotated as torch_llama.py's rope writes it, with cos
/// and sin computed from the angles (cat(cos(a), cos(a)) in f32, cast to bf16).
Graph rope_over_a_gemv() {
  Graph g;
  Tensor x = g.tensor("x", {1, 4096}, DType::BF16);
  Tensor w = g.tensor("w", {4096, 4096}, DType::BF16);
  Tensor ang = g.tensor("angles", {1, 64});
  const Tensor cos = concat({ang.cos(), ang.cos()}, 1).cast(DType::BF16);
  const Tensor sin = concat({ang.sin(), ang.sin()}, 1).cast(DType::BF16);
  const Tensor q = x.matmul(w.permute({1, 0})).reshape({1, 32, 1, 128});
  const Tensor rot = concat({-q.slice(3, 64, 128), q.slice(3, 0, 64)}, 3);
  const std::vector<Dim> heads = {1, 32, 1, 128};
  (q * cos.reshape({1, 1, 1, 128}).expand(heads) + rot * sin.reshape({1, 1, 1, 128}).expand(heads))
      .output("y");
  return g;
}

TEST(FusionGreedy, RopeOverAGemvIsOneRegionInTheFewestKernelsProgram) {
  testing::CudaRulesOnly rules;
  const Graph g = rope_over_a_gemv();
  BuiltSpace b = build_search_space(g, rules, g.dim_facts());
  const LlirGraph l = to_llir(*b.space, b.space->fewest_kernels_genome());
  const std::map<std::string, int> mix = l.op_mix();
  EXPECT_EQ(mix.count("Mul"), 0u) << l.to_text();
  int kernels = 0;
  for (const auto& [op, n] : mix)
    kernels += n;
  // The GEMV, cos, sin and the rope: 4 (5 before, with x * cos a Mul).
  EXPECT_LE(kernels - (mix.count("Iota") ? mix.at("Iota") : 0), 4) << l.op_mix_string();
}

}  // namespace
}  // namespace luminal
