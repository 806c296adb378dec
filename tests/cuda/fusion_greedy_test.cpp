// The CUDA rules' greedy fused region (luminal/kernels/fusion.cpp, greedy_region), without a
// GPU: where a class's partial regions reach the limit of 12, its largest region grown greedily
// from the HLIR op is offered too. Torch's rope, x * cos + cat(-x2, x1) * sin over a GEMV's
// value, reached the limit before its whole region, and the fewest-kernels program (the search's
// seed) kept x * cos as a primitive Mul kernel: two a layer in the torch 8B step.
#include <gtest/gtest.h>

#include "cuda/cuda_test_util.hpp"
#include "luminal/compiler/build_space.hpp"
#include "luminal/luminal.hpp"
#include "support/rope_graph.hpp"

namespace luminal {
namespace {

TEST(FusionGreedy, RopeOverAGemvIsOneRegionInTheFewestKernelsProgram) {
  const LlirGraph l =
      testing::cuda_seed_program(testing::rope_over_a_product(32, 4096));  // q = x @ W^T: a GEMV
  const std::map<std::string, int> mix = l.op_mix();
  EXPECT_EQ(mix.count("Mul"), 0u) << l.to_text();
  const int kernels = static_cast<int>(testing::kernel_count(l));
  // The GEMV, cos, sin and the rope: 4 (5 before, with x * cos a Mul).
  EXPECT_LE(kernels - (mix.count("Iota") ? mix.at("Iota") : 0), 4) << l.op_mix_string();
}

}  // namespace
}  // namespace luminal
