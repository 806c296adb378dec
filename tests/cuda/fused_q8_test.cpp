// cuda.FusedQ8 (elementwise.cpp; LUMINAL_CUDA_FUSED_Q8=0 turns it off): QuantizeQ8(Fused(...)) to
// Q8_1 or Q8_K as one kernel. Without a GPU: with the switch the rule replaces SwiGLU's region and
// the quantize before a quantized down projection (both Q8_1 layouts, and Q8_K for the K types),
// never without the switch; the seed of an 8B-shaped q4_0 decode takes it in every layer, one
// kernel fewer on the critical path a layer (two with cuda.GemvKNQ8, gemv_kn.cpp: P @ V with the
// quantize in its store); its kernels compile for sm_90. On the GPU: its bytes equal cuda.Fused
// followed by cuda.QuantizeQ8 (q8_0, q4_1 and q4_k down weights); cuda.GemvKNQ8's, cuda.GemvKN and
// the quantize; cuda.AttentionQ8's (with LUMINAL_CUDA_ATTENTION=1) cuda.Attention and the quantize.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "cpu/ops_test_util.hpp"
#include "cuda/cuda_test_util.hpp"
#include "cuda/model_seeds.hpp"
#include "cuda/quant_test_util.hpp"
#include "luminal/core/blocks.hpp"
#include "luminal/cuda/nvrtc.hpp"
#include "luminal/luminal.hpp"
#include "luminal/models/decoder.hpp"
#include "luminal/models/synthetic.hpp"
#include "luminal/nn/attention.hpp"
#include "luminal/nn/linear.hpp"
#include "luminal/program/critical_path.hpp"
#include "support/env_scope.hpp"
#include "support/llir_direct.hpp"

namespace luminal {
namespace {

using testing::count_op;

/// y = (SiLU(a) * b) @ Dequantize(W)^T: a, b [m, n] f32 (a decode step's gate and up products),
/// W [40, n] of type t.
Graph swiglu_down(int64_t m, int64_t n, DType t) {
  Graph g;
  Tensor a = g.tensor("a", {Expr(m), Expr(n)});
  Tensor b = g.tensor("b", {Expr(m), Expr(n)});
  nn::linear(a.silu() * b, g.tensor("w", {Expr(40), Expr(n)}, t).dequantize()).output("y");
  return g;
}

/// One decode step of cached attention (8 KV heads of 4 query heads, head dim 128, f32) and the o
/// projection over its output through a q4_1 weight: QuantizeQ8 reads the attention output.
Graph attention_o_proj() {
  Graph g;
  g.declare_dim("s", 1, 1);
  g.declare_dim("c", 1, 256);
  Tensor q = g.tensor("q", {Expr::var("s"), Expr(32), Expr(128)});
  Tensor k = g.tensor("k", {Expr::var("s"), Expr(8), Expr(128)});
  Tensor v = g.tensor("v", {Expr::var("s"), Expr(8), Expr(128)});
  Tensor o = nn::cached_attention(g, q, k, v, "l0", 256, {});
  nn::linear(o.reshape({Expr::var("s"), Expr(4096)}),
             g.tensor("w", {Expr(64), Expr(4096)}, DType::Q4_1).dequantize())
      .output("y");
  return g;
}

std::function<bool(std::string_view)> fused_q8_ops(bool split) {
  return
      [split](std::string_view op) { return op == "cuda.FusedQ8" || testing::gemv_op(op, split); };
}

std::function<bool(std::string_view)> unfused_ops(bool split) {
  return [split](std::string_view op) {
    return op == "cuda.Fused" || op == "cuda.QuantizeQ8" || testing::gemv_op(op, split);
  };
}

TEST(CudaFusedQ8Rules, ReplacesTheRegionAndTheQuantizeWithTheSwitch) {
  {
    testing::EnvScope on("LUMINAL_CUDA_FUSED_Q8", "1");
    testing::CudaRulesOnly rules;
    for (bool split : {false, true})
      for (int64_t n : {1536, 14336}) {
        auto [l, hits] =
            testing::prefer_ops(swiglu_down(1, n, DType::Q4_0), rules, fused_q8_ops(split));
        EXPECT_EQ(count_op(l, "cuda.FusedQ8"), 1) << n << ": " << l.op_mix_string();
        EXPECT_EQ(count_op(l, split ? "cuda.QGemvQ8S" : "cuda.QGemvQ8"), 1) << l.op_mix_string();
        EXPECT_TRUE(testing::writes_layout(l, "cuda.FusedQ8", split))
            << split << " " << l.to_text();
        EXPECT_EQ(count_op(l, "cuda.QuantizeQ8"), 0) << n << ": " << l.op_mix_string();
        EXPECT_EQ(count_op(l, "cuda.Fused"), 0) << n << ": " << l.op_mix_string();
      }
    // Q8_K (the K types' activation, 256-value blocks) too.
    auto [lk, hk] =
        testing::prefer_ops(swiglu_down(1, 1536, DType::Q4_K), rules, fused_q8_ops(false));
    EXPECT_EQ(count_op(lk, "cuda.FusedQ8"), 1) << lk.op_mix_string();
    EXPECT_EQ(count_op(lk, "cuda.QuantizeQ8"), 0) << lk.op_mix_string();
    EXPECT_TRUE(std::any_of(lk.nodes.begin(), lk.nodes.end(), [](const LlirNode& node) {
      return node.op->name == std::string_view("cuda.FusedQ8") && node.attrs.dtype == DType::Q8_K;
    })) << lk.op_mix_string();
  }
  testing::EnvScope off("LUMINAL_CUDA_FUSED_Q8", "0");
  testing::CudaRulesOnly rules;
  auto [l, hits] =
      testing::prefer_ops(swiglu_down(1, 1536, DType::Q4_0), rules, fused_q8_ops(false));
  EXPECT_EQ(count_op(l, "cuda.FusedQ8"), 0) << l.op_mix_string();
}

/// A `layers`-layer Llama-3-8B-shaped q4_0 decode step (the
/// embedding and LM head in q6_k, as bench_cuda's lt-q4_0).
Graph llama8b_q4_0(int layers) {
  const auto cfg = models::llama_config({.layers = layers,
                                         .hidden = 4096,
                                         .ffn = 14336,
                                         .heads = 32,
                                         .kv_heads = 8,
                                         .vocab = 128256});
  models::DecoderShape shape{.slots = 2048, .max_step = 1, .logits = models::Logits::Last};
  shape.block_weights = models::matrix_block_types(cfg, shape, [](std::string_view label) {
    const bool outer = label.find("embed") != std::string_view::npos ||
                       label.find("lm_head") != std::string_view::npos;
    return outer ? DType::Q6_K : DType::Q4_0;
  });
  return models::build_decoder(cfg, shape).graph;
}

/// Its fewest-kernels program.
LlirGraph llama8b_q4_0_seed(int layers) { return testing::cuda_seed_program(llama8b_q4_0(layers)); }

/// llama8b_q4_0_seed(layers) without LUMINAL_CUDA_FUSED_Q8 and with it, printed.
std::pair<LlirGraph, LlirGraph> seeds_without_and_with(int layers, const std::string& what) {
  LlirGraph before, after;
  {
    testing::EnvScope off("LUMINAL_CUDA_FUSED_Q8", "0");
    before = llama8b_q4_0_seed(layers);
  }
  {
    testing::EnvScope on("LUMINAL_CUDA_FUSED_Q8", "1");
    after = llama8b_q4_0_seed(layers);
  }
  std::printf(
      "[fused-q8] %s, %d layers: %zu kernels, %d on the critical path (%zu / %d without; "
      "%s)\n",
      what.c_str(), layers, testing::kernel_count(after), critical_path(after),
      testing::kernel_count(before), critical_path(before), after.op_mix_string().c_str());
  return {std::move(before), std::move(after)};
}

// SwiGLU's product before the integer down GEMV (cuda.FusedQ8) and attention's P @ V before the
// o projection (cuda.GemvKNQ8): the seed takes both fused forms in every layer, and the step's
// longest chain of kernels is two a layer shorter; its kernels compile for sm_90.
// (With the three attention kernels, LUMINAL_CUDA_ATTENTION=0: cuda.GemvKNQ8 is P @ V's kernel.)
TEST(CudaFusedQ8Rules, TheSeedTakesItInEveryLayerAndShortensThePath) {
  constexpr int kLayers = 2;
  const testing::EnvScope three("LUMINAL_CUDA_ATTENTION", "0");
  const auto [before, l] = seeds_without_and_with(kLayers, "8B q4_0");
  EXPECT_EQ(count_op(l, "cuda.FusedQ8"), kLayers) << l.op_mix_string();
  EXPECT_EQ(count_op(l, "cuda.GemvKNQ8"), kLayers) << l.op_mix_string();
  EXPECT_EQ(count_op(before, "cuda.GemvKN"), kLayers) << before.op_mix_string();
  EXPECT_EQ(testing::kernel_count(l) + 2 * kLayers, testing::kernel_count(before));
  EXPECT_EQ(critical_path(l) + 2 * kLayers, critical_path(before));
  LUMINAL_REQUIRE_NVRTC();
  std::vector<std::string> sources, whats;
  testing::add_kernels(l, testing::spec_of(llama8b_q4_0(kLayers).dim_facts()), sources, whats);
  testing::expect_compiles(sources, whats);
}

// The whole 32-layer 8B q4_0 step (bench_cuda lt-q4_0's graph): both fused forms in every layer and
// the path at 359 kernels, as this session's H100 A/B ran it (2.716 ms against 2.767 with 423).
// The seed's descent shares choices between alike layers, so a few layers can hide what all of
// them do (the SmolLM2 test below); this bounds the model as it runs.
TEST(CudaFusedQ8Rules, The32LayerSeedKeepsItsPath) {
  const testing::EnvScope three("LUMINAL_CUDA_ATTENTION", "0");
  const LlirGraph l = llama8b_q4_0_seed(32);
  std::printf("[fused-q8] 8B q4_0, 32 layers: %zu kernels, %d on the critical path\n",
              testing::kernel_count(l), critical_path(l));
  EXPECT_EQ(count_op(l, "cuda.FusedQ8"), 32) << l.op_mix_string();
  EXPECT_EQ(count_op(l, "cuda.GemvKNQ8"), 32) << l.op_mix_string();
  EXPECT_LE(critical_path(l), 359) << l.op_mix_string();
  // (549 before cuda.RowQGemv was on by default: k and v then compute the norm's row, q and
  // gate/up still read the row kernel's, and the seed's descent ends two kernels apart)
  EXPECT_LE(testing::kernel_count(l), 551u) << l.op_mix_string();
}

// The same step as it runs by default, with cuda.Attention (session 39): the attention output's
// quantize in its store in every layer (cuda.AttentionQ8), 485 kernels and 295 on the path (the
// H200 run of bench_cuda lt-q4_0 had 489 / 298 with the argmax's).
TEST(CudaFusedQ8Rules, The32LayerSeedWithCudaAttentionKeepsItsPath) {
  const testing::EnvScope unset("LUMINAL_CUDA_ATTENTION", nullptr);
  const LlirGraph l = llama8b_q4_0_seed(32);
  std::printf("[fused-q8] 8B q4_0, 32 layers, cuda.Attention: %zu kernels, %d on the path\n",
              testing::kernel_count(l), critical_path(l));
  EXPECT_EQ(count_op(l, "cuda.AttentionQ8"), 32) << l.op_mix_string();
  EXPECT_EQ(count_op(l, "cuda.FusedQ8"), 32) << l.op_mix_string();
  EXPECT_LE(critical_path(l), 295) << l.op_mix_string();
  EXPECT_LE(testing::kernel_count(l), 487u) << l.op_mix_string();  // (485 without cuda.RowQGemv)
}

// Where the seed kept SwiGLU's product in f32 (SmolLM2's down GEMV takes the f32 activation
// with the residual add in its store), the switch changes nothing else: no more kernels, none
// more on the path, no separate Add. At 30 layers, as the model has them: the seed's descent
// shares choices between alike layers, and before its pair step allowed two kernels a class
// (egraph/extract.cpp) this seed took an integer down GEMV and an Add in 28 of 30 layers (489
// kernels, 363 on the path against 465 / 340), where 4 layers had shown nothing.
TEST(CudaFusedQ8Rules, SmolLM2sSeedIsNoWorse) {
  constexpr int kLayers = 30;
  LlirGraph before;
  {
    testing::EnvScope off("LUMINAL_CUDA_FUSED_Q8", "0");
    before = testing::smollm2_q4_1_seed(kLayers);
  }
  testing::EnvScope on("LUMINAL_CUDA_FUSED_Q8", "1");
  const LlirGraph l = testing::smollm2_q4_1_seed(kLayers);
  std::printf(
      "[fused-q8] SmolLM2 q4_1, %d layers: %zu kernels, %d on the critical path (%zu / %d "
      "without; %s)\n",
      kLayers, testing::kernel_count(l), critical_path(l), testing::kernel_count(before),
      critical_path(before), l.op_mix_string().c_str());
  EXPECT_LE(testing::kernel_count(l), testing::kernel_count(before)) << l.op_mix_string();
  EXPECT_LE(critical_path(l), critical_path(before)) << l.op_mix_string();
  EXPECT_EQ(count_op(l, "Add"), 0) << l.op_mix_string();
}

// With cuda.Attention on too (LUMINAL_CUDA_ATTENTION=1), the quantize of the attention output
// before the o projection goes into cuda.Attention's store (cuda.AttentionQ8): with
// cuda.FusedQ8, two kernels fewer on the path a layer; the step's kernels compile for sm_90.
TEST(CudaFusedQ8Rules, AttentionQ8WithCudaAttention) {
  constexpr int kLayers = 2;
  testing::EnvScope attention("LUMINAL_CUDA_ATTENTION", "1");
  const auto [before, l] = seeds_without_and_with(kLayers, "8B q4_0 with cuda.Attention");
  EXPECT_EQ(count_op(l, "cuda.AttentionQ8"), kLayers) << l.op_mix_string();
  EXPECT_EQ(count_op(l, "cuda.FusedQ8"), kLayers) << l.op_mix_string();
  EXPECT_EQ(critical_path(l) + 2 * kLayers, critical_path(before)) << l.op_mix_string();
  LUMINAL_REQUIRE_NVRTC();
  std::vector<std::string> sources, whats;
  testing::add_kernels(l, testing::spec_of(llama8b_q4_0(kLayers).dim_facts()), sources, whats);
  testing::expect_compiles(sources, whats);
}

// The GPU test's graph builds here and offers cuda.AttentionQ8 in both layouts.
TEST(CudaFusedQ8Rules, AttentionQ8OfferedForTheGpuTestsGraph) {
  testing::EnvScope attention("LUMINAL_CUDA_ATTENTION", "1"), on("LUMINAL_CUDA_FUSED_Q8", "1");
  const Graph g = attention_o_proj();
  testing::CudaRulesOnly rules;
  for (bool split : {false, true}) {
    auto [l, hits] = testing::prefer_ops(g, rules, [split](std::string_view op) {
      return op == "cuda.AttentionQ8" || testing::gemv_op(op, split);
    });
    EXPECT_EQ(count_op(l, "cuda.AttentionQ8"), 1) << split << " " << l.op_mix_string();
    EXPECT_EQ(count_op(l, split ? "cuda.QGemvQ8S" : "cuda.QGemvQ8"), 1) << l.op_mix_string();
  }
}

// The same graph without cuda.Attention offers cuda.GemvKNQ8 (P @ V with the quantize in its
// store) in both layouts, and only with the switch.
TEST(CudaFusedQ8Rules, GemvKNQ8OfferedForTheGpuTestsGraph) {
  const Graph g = attention_o_proj();
  auto kn_q8_ops = [](bool split) {
    return [split](std::string_view op) {
      return op == "cuda.GemvKNQ8" || testing::gemv_op(op, split);
    };
  };
  {
    testing::EnvScope on("LUMINAL_CUDA_FUSED_Q8", "1");
    testing::CudaRulesOnly rules;
    for (bool split : {false, true}) {
      auto [l, hits] = testing::prefer_ops(g, rules, kn_q8_ops(split));
      EXPECT_EQ(count_op(l, "cuda.GemvKNQ8"), 1) << split << " " << l.op_mix_string();
      EXPECT_EQ(count_op(l, "cuda.QuantizeQ8"), 0) << split << " " << l.op_mix_string();
      EXPECT_TRUE(testing::writes_layout(l, "cuda.GemvKNQ8", split)) << split << " " << l.to_text();
    }
  }
  testing::EnvScope off("LUMINAL_CUDA_FUSED_Q8", "0");
  testing::CudaRulesOnly rules;
  auto [l, hits] = testing::prefer_ops(g, rules, kn_q8_ops(false));
  EXPECT_EQ(count_op(l, "cuda.GemvKNQ8"), 0) << l.op_mix_string();
}

TEST(CudaFusedQ8Rules, KernelsCompileForSm90) {
  LUMINAL_REQUIRE_NVRTC();
  testing::EnvScope on("LUMINAL_CUDA_FUSED_Q8", "1");
  testing::CudaRulesOnly rules;
  std::vector<std::string> sources;
  for (DType t : {DType::Q8_0, DType::Q4_K})
    for (bool split : {false, true})
      for (int64_t m : {1, 3}) {
        if (t == DType::Q4_K && split) continue;  // (no split layout for Q8_K)
        auto [l, hits] = testing::prefer_ops(swiglu_down(m, 1536, t), rules, fused_q8_ops(split));
        ASSERT_EQ(count_op(l, "cuda.FusedQ8"), 1) << name(t) << " " << l.op_mix_string();
        ASSERT_TRUE(testing::writes_layout(l, "cuda.FusedQ8", split))
            << name(t) << " " << l.to_text();
        for (cuda::GeneratedKernel& g : cuda::generate_kernels(l, PlanSpec{}))
          sources.push_back(g.source);
      }
  testing::expect_compiles(sources, "a cuda.FusedQ8 kernel");
}

HostBuffer floats(int64_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-3, 3);
  HostBuffer b{DType::F32, std::vector<uint8_t>(static_cast<size_t>(n) * 4)};
  for (int64_t i = 0; i < n; ++i) {
    const float v = u(rng);
    std::memcpy(b.bytes.data() + 4 * i, &v, 4);
  }
  return b;
}

// The fused kernel's output (through the GEMV that reads it) has the bits of the Fused +
// QuantizeQ8 program's: the same f32 values, quantized by the same warp code.
TEST(CudaFusedQ8, SameBitsAsTheRegionAndTheQuantize) {
  LUMINAL_REQUIRE_GPU();
  testing::EnvScope on("LUMINAL_CUDA_FUSED_Q8", "1");
  uint64_t seed = 70;
  for (DType t : {DType::Q8_0, DType::Q4_1, DType::Q4_K})
    for (bool split : {false, true})
      for (int64_t n : {1536, 14336})
        for (int64_t m : {1, 3}) {
          if (t == DType::Q4_K && split) continue;  // (no split layout for Q8_K)
          const Graph g = swiglu_down(m, n, t);
          auto [fused, a] = testing::prefer_ops(g, testing::gpu(), fused_q8_ops(split));
          auto [plain, b] = testing::prefer_ops(g, testing::gpu(), unfused_ops(split));
          const std::string at = std::string(name(t)) + (split ? " split" : "") + " n " +
                                 std::to_string(n) + " m " + std::to_string(m);
          ASSERT_EQ(count_op(fused, "cuda.FusedQ8"), 1) << at << " " << fused.op_mix_string();
          ASSERT_TRUE(testing::writes_layout(fused, "cuda.FusedQ8", split))
              << at << " " << fused.to_text();
          ASSERT_EQ(count_op(plain, "cuda.FusedQ8"), 0) << at << " " << plain.op_mix_string();
          ASSERT_EQ(count_op(plain, "cuda.QuantizeQ8"), 1) << at << " " << plain.op_mix_string();
          ASSERT_GE(count_op(plain, "cuda.Fused"), 1) << at << " " << plain.op_mix_string();
          const char* gemv = split ? "cuda.QGemvQ8S" : "cuda.QGemvQ8";
          ASSERT_EQ(count_op(plain, gemv), 1) << at << " " << plain.op_mix_string();
          std::vector<uint8_t> wbytes(static_cast<size_t>(storage_bytes(t, 40 * n)));
          blocks::fill_valid_blocks(t, wbytes, ++seed);
          const testing::BufferMap in{{"a", floats(m * n, ++seed)},
                                      {"b", floats(m * n, ++seed)},
                                      {"w", HostBuffer{t, wbytes}}};
          testing::LoadedPlan pa = testing::load_plan(testing::gpu(), fused);
          testing::LoadedPlan pb = testing::load_plan(testing::gpu(), plain);
          EXPECT_EQ(testing::run_plan(pa, in, {}).outputs.at("y").bytes,
                    testing::run_plan(pb, in, {}).outputs.at("y").bytes)
              << at;
        }
}

/// On the GPU, attention_o_proj() with `fused` (a producer with the quantize in its store) gives
/// the bytes of `producer` followed by cuda.QuantizeQ8, through the o projection's integer GEMV
/// in both Q8_1 layouts, at contexts 1, 37 and 200 (q, k, v, the caches and the position at
/// random; `seed` varies them).
void expect_bits_of_the_producer_and_the_quantize(const char* fused, const char* producer,
                                                  uint64_t seed) {
  const Graph g = attention_o_proj();
  for (bool split : {false, true}) {
    auto [with, a] = testing::prefer_ops(g, testing::gpu(), [&](std::string_view op) {
      return op == fused || testing::gemv_op(op, split);
    });
    auto [plain, b] = testing::prefer_ops(g, testing::gpu(), [&](std::string_view op) {
      return op == producer || op == "cuda.QuantizeQ8" || testing::gemv_op(op, split);
    });
    ASSERT_EQ(count_op(with, fused), 1) << split << " " << with.op_mix_string();
    ASSERT_EQ(count_op(plain, producer), 1) << split << " " << plain.op_mix_string();
    ASSERT_EQ(count_op(plain, "cuda.QuantizeQ8"), 1) << split << " " << plain.op_mix_string();
    // (the GEMV of the layout asked for, so both layouts run)
    const char* gemv = split ? "cuda.QGemvQ8S" : "cuda.QGemvQ8";
    ASSERT_EQ(count_op(with, gemv), 1) << split << " " << with.op_mix_string();
    ASSERT_EQ(count_op(plain, gemv), 1) << split << " " << plain.op_mix_string();
    // (q4_1: its GEMV reads each block's s, the sum of its values, as well as d)
    std::vector<uint8_t> wbytes(static_cast<size_t>(storage_bytes(DType::Q4_1, 64 * 4096)));
    blocks::fill_valid_blocks(DType::Q4_1, wbytes, seed + split);
    for (int64_t c : {1, 37, 200}) {
      const DynMap dims{{"s", 1}, {"c", c}};
      testing::BufferMap in = opstest::random_inputs(g, dims, seed + 1 + c, -1, 1);
      in["w"] = HostBuffer{DType::Q4_1, wbytes};
      testing::LoadedPlan pa = testing::load_plan(testing::gpu(), with, {dims});
      testing::LoadedPlan pb = testing::load_plan(testing::gpu(), plain, {dims});
      EXPECT_EQ(testing::run_plan(pa, in, dims).outputs.at("y").bytes,
                testing::run_plan(pb, in, dims).outputs.at("y").bytes)
          << fused << " split " << split << " c " << c;
    }
  }
}

// cuda.GemvKNQ8's output (through the GEMV that reads it) has the bits of cuda.GemvKN +
// cuda.QuantizeQ8's: P @ V's f32 values, quantized by the same warp code.
TEST(CudaFusedQ8, GemvKNQ8SameBitsAsTheGemvAndTheQuantize) {
  LUMINAL_REQUIRE_GPU();
  testing::EnvScope on("LUMINAL_CUDA_FUSED_Q8", "1");
  expect_bits_of_the_producer_and_the_quantize("cuda.GemvKNQ8", "cuda.GemvKN", 95);
}

// cuda.AttentionQ8's output (through the GEMV that reads it) has the bits of cuda.Attention +
// cuda.QuantizeQ8's: the same f32 values, quantized by the same warp code.
TEST(CudaFusedQ8, AttentionQ8SameBitsAsTheAttentionAndTheQuantize) {
  LUMINAL_REQUIRE_GPU();
  testing::EnvScope attention("LUMINAL_CUDA_ATTENTION", "1"), on("LUMINAL_CUDA_FUSED_Q8", "1");
  expect_bits_of_the_producer_and_the_quantize("cuda.AttentionQ8", "cuda.Attention", 90);
}

}  // namespace
}  // namespace luminal
