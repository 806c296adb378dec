// CI without a GPU: the search's fewest-kernels starting point over the CUDA search space of a
// SmolLM2-shaped bf16 decode step (hidden 576, 9/3 heads, FFN 1536), 14 kernels a layer. Its genome
// is a local minimum of the program's true cost (no single gene change lowers it), and the
// program's kernel count per layer stays near one layer's. A Qwen3-30B-A3B-shaped decode step (12
// layers, bf16): the router's top-k as pairwise ranks, the repeated argmax's alternative, takes
// about 45 kernels a layer fewer (853 kernels with the argmax alone, 300 with the ranks alone, 300
// with both; the experts' Casts to bf16 are their matmuls' stores, cuda.ExpertGemvCast, the
// ranks compare nn/moe.cpp's nan_as_infinity keys of the router's logits, not NaN masks, in every
// pair, each rank is one cuda.FusedSum over its pairs that computes the keys itself, and the
// renormalised weights are one row kernel: the softmax of the chosen logits, in bf16).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "cuda/cuda_test_util.hpp"
#include "cuda/model_seeds.hpp"
#include "luminal/compiler/build_space.hpp"
#include "luminal/io/hf_config.hpp"
#include "luminal/luminal.hpp"
#include "luminal/models/decoder.hpp"
#include "luminal/models/synthetic.hpp"
#include "luminal/nn/moe.hpp"
#include "luminal/program/critical_path.hpp"
#include "support/env_scope.hpp"

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
  out.kernels = testing::kernel_count(l);
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
  // One layer is 30 kernels, 14 of them per layer. Before genes picked options by kind and the
  // descent on the program's cost, 30 layers took 723 kernels (65 for 2); then 635 (51: one layer
  // more costing its 17); with the KV-cache writes stored by the projection (v) and rope's
  // product (k) themselves (scatter_store.cpp), 525 (46 for 2: 15 a layer); with SwiGLU's
  // SiLU(gate) * up in the up GEMV's store (the epilogue rule's leanest region), 499 (44 for 2);
  // then 493 (17.5 a layer from the fourth on: past the row region's limits the residual stream is
  // stored, and each norm ran as a row kernel of the f32 scaled value and a cuda.Fused of its
  // cast times the weight, the norm's class having no row that reads the stored stream); with the
  // row rule growing a region after a row op as its epilogue (row_rule.cpp, near_row), 433: 14 a
  // layer at every depth.
  EXPECT_LE(two.kernels, one.kernels + 14);
  EXPECT_LE(thirty.kernels, 435u);
  ::setenv("LUMINAL_ROW_EPILOGUE", "0", 1);  // the A/B switch gives the program of before
  const Fewest no_epilogue = fewest_kernels(30, false);
  ::unsetenv("LUMINAL_ROW_EPILOGUE");
  EXPECT_GE(no_epilogue.kernels, thirty.kernels + 30);
  // With LUMINAL_CUDA_GEMV_MATMUL=1 (gemv.cpp, GemvThen: rope's product in the q and k GEMVs'
  // kernels), 373: 12 a layer (439 before the rows' epilogues).
  ::setenv("LUMINAL_CUDA_GEMV_MATMUL", "1", 1);
  const Fewest then = fewest_kernels(30, false);
  ::unsetenv("LUMINAL_CUDA_GEMV_MATMUL");
  EXPECT_LE(then.kernels, 375u);
}

/// A `layers`-layer SmolLM2-shaped decode step with q4_1 matrices in every layer (the rest f32).
Graph smollm2_q4_1_decode(int layers) {
  const auto cfg = models::llama_config(
      {.layers = layers, .hidden = 576, .ffn = 1536, .heads = 9, .kv_heads = 3, .vocab = 1000});
  models::DecoderShape shape{.slots = 2048, .max_step = 1};
  for (int i = 0; i < layers; ++i)
    for (const char* w : {"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj",
                          "self_attn.o_proj", "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj"})
      shape.block_weights["model.layers." + std::to_string(i) + "." + w + ".weight"] = DType::Q4_1;
  return models::build_decoder(cfg, shape).graph;
}

// SmolLM2's shape with Q4_1 projections (as its GGUF; f32 activations): the residual adds are
// stored by the o and down projections' kernels. Neither change pays alone (the down kernel read
// the stream's two pieces, so the o projection's plain value stayed needed), so the one-gene
// descent kept a primitive Add and a QuantizeQ8 a layer: 615 kernels; the pair descent
// (SearchSpace::pair_descent) finds the two changes together: 555; with the quantized GEMVs
// storing v into its cache (scatter_store.cpp, cuda.QGemvQ8Scatter), 525.
TEST(FewestKernels, SmolLM2ShapedQ4_1DecodeStoresTheResidualInTheProjections) {
  constexpr int kLayers = 30;
  const LlirGraph l = testing::cuda_seed_program(smollm2_q4_1_decode(kLayers));
  const size_t kernels = testing::kernel_count(l);
  std::printf("[fewest] SmolLM2 Q4_1, %d layers: %zu kernels, %d on the critical path (%s)\n",
              kLayers, kernels, critical_path(l), l.op_mix_string().c_str());
  EXPECT_LE(kernels, 530u);
  // 340 on 2026-12-06 (11.3 a layer: the k and v projections and their cache writes run beside
  // q's chain); a step's time followed this more than the count on an H100 (docs/cuda.md).
  EXPECT_LE(critical_path(l), 345);
  EXPECT_LT(static_cast<size_t>(critical_path(l)), kernels);
  EXPECT_EQ(l.op_mix()["Add"], 0);
  EXPECT_EQ(l.op_mix()["cuda.ScatterUnique"], 0);
}

// The seed that prefers library calls keeps a quantized decode step's GEMVs: a library call in
// their place would read each weight widened to f32 by a Dequantize at every step (it did: 12
// Dequantize and 17 f32 cuBLASLt calls for these 2 layers, before 2026-12-06).
TEST(FewestKernels, TheLibraryPreferringSeedKeepsTheQuantizedGemvs) {
#if !defined(LUMINAL_HAVE_CUBLASLT)
  GTEST_SKIP() << "built without cuBLASLt: no library calls to prefer";
#endif
  // (one GEMV a projection: not the paired gate/up form)
  testing::EnvScope no_pairs("LUMINAL_CUDA_QGEMV_GLU", "0");
  // (the forms alone, not inside cuda.RowGemv, which computes the norm in the GEMV)
  const testing::EnvScope no_row("LUMINAL_CUDA_ROW_PROLOGUE", "0");
  constexpr int kLayers = 2;
  const Graph g = smollm2_q4_1_decode(kLayers);
  testing::CudaRulesOnly rules(/*cublaslt=*/true);
  BuiltSpace b = build_search_space(g, rules, g.dim_facts());
  const LlirGraph l =
      to_llir(*b.space, b.space->fewest_kernels_genome(SearchSpace::LibrarySeed::Prefer));
  std::printf("[fewest] SmolLM2 Q4_1, %d layers, library-preferring seed: %s\n", kLayers,
              l.op_mix_string().c_str());
  EXPECT_EQ(l.op_mix()["Dequantize"], 0) << l.op_mix_string();
  int quantized = 0;
  for (const auto& [op, count] : l.op_mix())
    if (op.rfind("cuda.QGemv", 0) == 0) quantized += count;
  EXPECT_EQ(quantized, 7 * kLayers) << l.op_mix_string();
}

/// Qwen3-30B-A3B (its config.json) with 12 of its 48 layers, as bench_cuda's qwen3moe.
const char* kQwen3Moe12 = R"({"architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe",
  "hidden_size": 2048, "intermediate_size": 6144, "moe_intermediate_size": 768,
  "num_hidden_layers": 12, "num_attention_heads": 32, "num_key_value_heads": 4, "head_dim": 128,
  "num_experts": 128, "num_experts_per_tok": 8, "norm_topk_prob": true, "vocab_size": 151936,
  "decoder_sparse_step": 1, "mlp_only_layers": [], "max_position_embeddings": 40960,
  "rms_norm_eps": 1e-6, "rope_theta": 1000000.0, "hidden_act": "silu",
  "tie_word_embeddings": false, "torch_dtype": "bfloat16"})";

size_t moe_fewest_kernels(nn::TopKForm form, int* sum_reduces = nullptr) {
  const io::ModelConfig cfg = io::parse_config_json(kQwen3Moe12, "qwen3moe12");
  models::DecoderShape shape{.slots = 2048, .max_step = 1};
  shape.dtype = DType::BF16;
  shape.logits = models::Logits::Last;
  shape.router = form;
  const LlirGraph l = testing::cuda_seed_program(models::build_decoder(cfg, shape).graph);
  const size_t kernels = testing::kernel_count(l);
  if (sum_reduces) *sum_reduces = l.op_mix()["SumReduce"];
  std::printf("[fewest] qwen3moe12 router %s: %zu kernels (%s)\n",
              form == nn::TopKForm::Argmax  ? "argmax"
              : form == nn::TopKForm::Ranks ? "ranks"
                                            : "searched",
              kernels, l.op_mix_string().c_str());
  return kernels;
}

TEST(FewestKernels, Qwen3MoeRouterRanksTakeFewerKernels) {
  const size_t argmax = moe_fewest_kernels(nn::TopKForm::Argmax);
  int ranks_sum_reduces = -1;
  const size_t ranks = moe_fewest_kernels(nn::TopKForm::Ranks, &ranks_sum_reduces);
  const size_t searched = moe_fewest_kernels(nn::TopKForm::Searched);
  EXPECT_LE(ranks + 12 * 30, argmax);
  // No Cast kernel after the experts' matmuls (cuda.ExpertGemvCast; 419 before), the ranks'
  // pairs without NaN masks (395 before), each rank one cuda.FusedSum over the pairs (335 before:
  // a cuda.Fused, then a primitive SumReduce), which computes the keys from the router's GEMV
  // (323 before: a kernel stored them).
  EXPECT_LE(ranks, 302u);
  EXPECT_EQ(ranks_sum_reduces, 0);
  // Both forms in the space: about as few as with the ranks alone (at most a kernel a layer more
  // before session 29). Each form renormalises its own weights (a division by their sum) before the
  // forms meet (nn::router_topk): when the merged weights were divided, their class held the argmax
  // form's masked sums, the division's row kernel grew through them, and the seed ran it as six
  // kernels a layer (383 with both forms). (Counts: 300 ranks, 300 both, 853 argmax; before the
  // weights were the softmax of the chosen logits cast by each form (nn::router_softmax_topk), 312,
  // 324, 890; before the rows' epilogues (row_rule.cpp) 311, 323, 889; before the keys were the
  // logits' (nn::router_softmax_topk), computed in the ranks' kernel (fusion.cpp, cheap_to_repeat),
  // 323, 335, 865; before the rank's FusedSum over any region 335, 395, 877; before the greedy
  // regions 336, 408, 901; before the NaN keys 395, 467 and 889; before cuda.ExpertGemvCast 419,
  // 491 and 913; with the division before that, a Veltkamp split of 28 instructions, 416, 428 and
  // 910.) The search times the rest.
  EXPECT_LE(searched, ranks + 2);
}

// LUMINAL_CUDA_SEED_PATH=w (opt-in): the seed's program cost also counts w per kernel on the
// program's longest chain (SearchSpace::set_seed_path_weight). At w = 1: the SmolLM2-shaped q4_1
// seed's layers 0 and 1 run o and down as f32-activation GEMVs instead of a QuantizeQ8 and an
// integer GEMV (285 kernels / 219 on the path -> 281 / 215); the 12-layer Qwen3-MoE's residual adds
// go into the o projections' kernels (cuda.GemvEpi; path 159 -> 149, one kernel more); the 8B q4_0
// seed takes the k projection with rope and the cache write in one kernel (484 -> 452, path 293
// either way). Not yet timed on a GPU.
TEST(FewestKernels, ThePathWeightShortensTheLongestChain) {
  std::string moe_json = kQwen3Moe12;
  moe_json.replace(moe_json.find("151936"), 6, "1000");
  auto moe = [&] {
    const io::ModelConfig cfg = io::parse_config_json(moe_json, "qwen3moe12");
    models::DecoderShape shape{.slots = 2048, .max_step = 1};
    shape.dtype = DType::BF16;
    shape.logits = models::Logits::Last;
    shape.router = nn::TopKForm::Ranks;
    return testing::cuda_seed_program(models::build_decoder(cfg, shape).graph);
  };
  const LlirGraph moe_plain = moe();
  const testing::EnvScope on("LUMINAL_CUDA_SEED_PATH", "1");
  const LlirGraph moe_path = moe();
  const LlirGraph smol = testing::smollm2_q4_1_seed(30);
  std::printf(
      "[fewest] path weight 1: SmolLM2 q4_1 %zu kernels (%d on the path); qwen3moe12 %zu "
      "(%d) against %zu (%d)\n",
      testing::kernel_count(smol), critical_path(smol), testing::kernel_count(moe_path),
      critical_path(moe_path), testing::kernel_count(moe_plain), critical_path(moe_plain));
  EXPECT_LE(critical_path(smol), 215);
  EXPECT_LE(testing::kernel_count(smol), 285u);
  EXPECT_LE(critical_path(moe_path), critical_path(moe_plain) - 8);
  EXPECT_LE(testing::kernel_count(moe_path), testing::kernel_count(moe_plain) + 2);
}

TEST(FewestKernels, ABadPathWeightIsNamed) {
  for (const char* bad : {"abc", "-1", "17", "1x"}) {
    const testing::EnvScope on("LUMINAL_CUDA_SEED_PATH", bad);
    EXPECT_THROW(
        try { cuda::cuda_seed_path_weight(); } catch (const Error& e) {
          EXPECT_NE(std::string(e.what()).find("LUMINAL_CUDA_SEED_PATH"), std::string::npos);
          throw;
        },
        Error)
        << bad;
  }
}

}  // namespace
}  // namespace luminal
