// CI without a GPU: the search's fewest-kernels starting point over the CUDA search space of a
// SmolLM2-shaped bf16 decode step (hidden 576, 9/3 heads, FFN 1536). Its genome is a local
// minimum of the program's true cost (no single gene change lowers it), and the program's kernel
// count per layer stays near one layer's.
#include <gtest/gtest.h>

#include <cstdio>

#include "cuda/cuda_test_util.hpp"
#include "luminal/compiler/build_space.hpp"
#include "luminal/luminal.hpp"
#include "luminal/models/decoder.hpp"
#include "luminal/models/synthetic.hpp"

namespace luminal {
namespace {

struct Fewest {
  size_t kernels = 0;
  bool local_minimum = true;
};

/// Kernels (LLIR nodes other than inputs and outputs) of the fewest-kernels program of a
/// `layers`-layer decode step, and whether no single gene change lowers its program cost.
Fewest fewest_kernels(int layers, bool check_minimum) {
  const auto cfg = models::llama_config(
      {.layers = layers, .hidden = 576, .ffn = 1536, .heads = 9, .kv_heads = 3, .vocab = 1000});
  models::DecoderShape shape{.slots = 2048, .max_step = 1};
  shape.dtype = DType::BF16;
  const models::Decoder d = models::build_decoder(cfg, shape);
  testing::CudaRulesOnly rules;
  BuiltSpace b = build_search_space(d.graph, rules, d.graph.dim_facts());
  Genome g = b.space->fewest_kernels_genome();
  Fewest out;
  const LlirGraph l = to_llir(*b.space, g);
  for (const auto& [op, count] : l.op_mix())
    out.kernels += static_cast<size_t>(count);
  if (check_minimum) {
    const double cost = b.space->program_cost(g);
    for (size_t i = 0; i < g.size() && out.local_minimum; ++i) {
      const uint32_t keep = g[i];
      for (uint32_t v = 0; v < b.space->gene_sizes()[i]; ++v) {
        g[i] = v;
        if (b.space->program_cost(g) < cost - 1e-9) out.local_minimum = false;
      }
      g[i] = keep;
    }
  }
  std::printf("[fewest] %d layers: %zu kernels (%s)\n", layers, out.kernels,
              l.op_mix_string().c_str());
  return out;
}

TEST(FewestKernels, SmolLM2ShapedDecodeIsALocalMinimumAndGrowsByALayerAtATime) {
  const Fewest one = fewest_kernels(1, true), two = fewest_kernels(2, true);
  EXPECT_TRUE(one.local_minimum);
  EXPECT_TRUE(two.local_minimum);
  const Fewest thirty = fewest_kernels(30, false);
  // One layer is 34 kernels, about 17 of them per layer. Before genes picked options by kind and
  // the descent on the program's cost, 30 layers took 723 kernels (65 for 2); now 635 (51: one
  // layer more costs exactly its 17). The descent is a local search: deep models still end above
  // 17 a layer.
  EXPECT_LE(two.kernels, one.kernels + 17);
  EXPECT_LE(thirty.kernels, 640u);
}

}  // namespace
}  // namespace luminal
