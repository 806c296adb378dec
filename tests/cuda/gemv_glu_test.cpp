// cuda.GemvGlu / cuda.GemvCastGlu (luminal/cuda/gemv.cpp), offered under LUMINAL_CUDA_GEMV_GLU=1:
// SiLU(x @ Wg^T) * (x @ Wu^T) over separate f32, bf16 or f16 gate and up weights in one GEMV
// kernel. On the host: not offered without the switch; offered for each dtype, one and three
// rows, and compiling for sm_90 (one warp a row and four); a SmolLM2-shaped bf16 decode's seed
// takes it in every layer with fewer kernels. On a GPU: its output against the two GEMVs (or a
// GEMV and an epilogue form) it replaces: the same sums, the same region.
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "cpu/ops_test_util.hpp"
#include "cuda/cuda_test_util.hpp"
#include "cuda/swiglu_test_util.hpp"
#include "luminal/cuda/nvrtc.hpp"
#include "luminal/luminal.hpp"
#include "luminal/models/decoder.hpp"
#include "luminal/models/synthetic.hpp"
#include "luminal/nn/linear.hpp"
#include "support/env_scope.hpp"
#include "support/llir_direct.hpp"
#include "support/random_buffer.hpp"

namespace luminal {
namespace {

using testing::count_op;

struct GluOn : testing::EnvScope {
  GluOn() : EnvScope("LUMINAL_CUDA_GEMV_GLU", "1") {}
};

using testing::swiglu_graph;

bool is_glu(std::string_view op) { return op == "cuda.GemvGlu" || op == "cuda.GemvCastGlu"; }

bool unfused_ops(std::string_view op) {
  return op == "cuda.Gemv" || op == "cuda.GemvCast" || op == "cuda.Fused";
}

struct Case {
  DType t;
  int64_t m;
};

std::vector<Case> cases() {
  std::vector<Case> out;
  for (DType t : {DType::F32, DType::BF16, DType::F16})
    for (int64_t m : {1, 3})
      out.push_back({t, m});
  return out;
}

std::string describe(const Case& c) { return std::string(name(c.t)) + " m " + std::to_string(c.m); }

constexpr int64_t kK = 576, kN = 96;

TEST(CudaGemvGluRules, NotOfferedWithoutTheSwitch) {
  testing::EnvScope off("LUMINAL_CUDA_GEMV_GLU", nullptr);
  testing::CudaRulesOnly rules;
  EXPECT_EQ(testing::prefer_ops(swiglu_graph(1, kK, kN, DType::BF16), rules, is_glu).second, 0);
}

// Two activations through one weight are no pair: the kernel reads a second weight.
TEST(CudaGemvGluRules, NotOfferedForTwoActivationsOfOneWeight) {
  const GluOn on;
  testing::CudaRulesOnly rules;
  for (DType t : {DType::F32, DType::BF16}) {
    Graph g;
    const Tensor w = g.tensor("w", {Expr(kN), Expr(kK)}, t);
    const Tensor a = nn::linear(g.tensor("x1", {Expr(1), Expr(kK)}, t), w);
    const Tensor b = nn::linear(g.tensor("x2", {Expr(1), Expr(kK)}, t), w);
    (a.silu() * b).output("y");
    EXPECT_EQ(testing::prefer_ops(g, rules, is_glu).second, 0) << name(t);
  }
}

TEST(CudaGemvGluRules, OfferedForEachDtypeAndCompiles) {
  LUMINAL_REQUIRE_NVRTC();
  const GluOn on;
  testing::CudaRulesOnly rules;
  std::vector<std::string> sources, whats;
  for (const Case& c : cases()) {
    const Graph g = swiglu_graph(c.m, kK, kN, c.t);
    auto [l, hits] = testing::prefer_ops(g, rules, is_glu);
    EXPECT_EQ(hits, 1) << describe(c) << ": " << l.op_mix_string();
    EXPECT_EQ(count_op(l, "cuda.Fused"), 0) << describe(c) << ": " << l.op_mix_string();
    testing::add_kernels(l, testing::spec_of(g.dim_facts()), sources, whats);
    testing::EnvScope w("LUMINAL_CUDA_GEMV_WARPS", "4");
    testing::add_kernels(l, testing::spec_of(g.dim_facts()), sources, whats);
  }
  testing::expect_compiles(sources, whats);
}

TEST(CudaGemvGluRules, TheSeedTakesItInEveryLayer) {
  // (the forms alone, not inside cuda.RowGemv, which computes the norm in the GEMV)
  const testing::EnvScope no_row("LUMINAL_CUDA_ROW_PROLOGUE", "0");
  constexpr int kLayers = 3;
  const auto cfg = models::llama_config(
      {.layers = kLayers, .hidden = 576, .ffn = 1536, .heads = 9, .kv_heads = 3, .vocab = 1000});
  models::DecoderShape shape{.slots = 2048, .max_step = 1};
  shape.dtype = DType::BF16;
  size_t without = 0;
  {
    testing::EnvScope off("LUMINAL_CUDA_GEMV_GLU", nullptr);
    without =
        testing::kernel_count(testing::cuda_seed_program(models::build_decoder(cfg, shape).graph));
  }
  const GluOn on;
  const LlirGraph l = testing::cuda_seed_program(models::build_decoder(cfg, shape).graph);
  std::printf("[glu] SmolLM2 bf16, %d layers: %zu kernels (%zu without; %s)\n", kLayers,
              testing::kernel_count(l), without, l.op_mix_string().c_str());
  EXPECT_EQ(count_op(l, "cuda.GemvGlu") + count_op(l, "cuda.GemvCastGlu"), kLayers)
      << l.op_mix_string();
  EXPECT_LE(testing::kernel_count(l) + kLayers, without) << l.op_mix_string();
}

TEST(CudaGemvGlu, MatchesTheSeparateKernels) {
  LUMINAL_REQUIRE_GPU();
  const GluOn on;
  uint64_t seed = 70;
  for (const Case& c : cases())
    for (const char* warps : {"", "4"}) {
      testing::EnvScope w("LUMINAL_CUDA_GEMV_WARPS", *warps ? warps : nullptr);
      const std::string at = describe(c) + (*warps ? " warps 4" : "");
      const Graph g = swiglu_graph(c.m, kK, kN, c.t);
      auto [fused, a] = testing::prefer_ops(g, testing::gpu(), is_glu);
      auto [plain, b] = testing::prefer_ops(g, testing::gpu(), unfused_ops);
      ASSERT_EQ(a, 1) << at << ": " << fused.op_mix_string();
      ASSERT_EQ(count_op(plain, "cuda.GemvGlu") + count_op(plain, "cuda.GemvCastGlu"), 0)
          << at << ": " << plain.op_mix_string();
      const testing::BufferMap in{{"x", testing::random_buffer(c.t, c.m * kK, ++seed, -1, 1)},
                                  {"wg", testing::random_buffer(c.t, kN * kK, ++seed, -1, 1)},
                                  {"wu", testing::random_buffer(c.t, kN * kK, ++seed, -1, 1)}};
      testing::LoadedPlan pa = testing::load_plan(testing::gpu(), fused);
      testing::LoadedPlan pb = testing::load_plan(testing::gpu(), plain);
      // The same sums in the same order, each rounded to the GEMV's dtype before the region; the
      // region the same program: a difference is the compilers' SiLU instructions, at most an
      // ulp of the output's dtype (bf16 2^-7 relative, f16 2^-10), well below a missed rounding.
      const testing::Tol tol = c.t == DType::F32    ? testing::Tol{1e-5, 1e-6}
                               : c.t == DType::BF16 ? testing::Tol{0.008, 1e-4}
                                                    : testing::Tol{0.001, 1e-5};
      opstest::expect_same(testing::run_plan(pa, in, {}).outputs.at("y"),
                           testing::run_plan(pb, in, {}).outputs.at("y"), tol, at);
    }
}

}  // namespace
}  // namespace luminal
