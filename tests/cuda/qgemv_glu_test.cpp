// cuda.QGemvQ8Glu / cuda.QGemvQ8SGlu (luminal/cuda/qgemv.cpp), offered unless
// LUMINAL_CUDA_QGEMV_GLU=0: SiLU(x @ Wg^T) * (x @ Wu^T) over separate quantized gate and up
// weights in one kernel. On the host: not offered with the switch at 0; offered for every block
// type in both layouts, one and three activation rows; a SmolLM2-shaped q4_1 decode's seed takes it
// in every layer with fewer kernels, an 8B-shaped q4_0 one in none (its weights' seed term); its
// kernels compile for sm_90. On a GPU: its output against the
// two integer GEMVs and the region's kernel (the same sums, the same region code).
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "cpu/ops_test_util.hpp"
#include "cuda/cuda_test_util.hpp"
#include "cuda/model_seeds.hpp"
#include "cuda/swiglu_test_util.hpp"
#include "luminal/cuda/nvrtc.hpp"
#include "luminal/luminal.hpp"
#include "luminal/models/decoder.hpp"
#include "luminal/models/synthetic.hpp"
#include "support/env_scope.hpp"
#include "support/llir_direct.hpp"
#include "support/random_buffer.hpp"

namespace luminal {
namespace {

using testing::count_op;

struct GluOn : testing::EnvScope {
  GluOn() : EnvScope("LUMINAL_CUDA_QGEMV_GLU", "1") {}
};

using testing::swiglu_graph;

bool is_glu(std::string_view op) { return op == "cuda.QGemvQ8Glu" || op == "cuda.QGemvQ8SGlu"; }

/// The paired form over the split layout (`split`) or the GGUF one, and the activation's quantizer.
std::function<bool(std::string_view)> glu_ops(bool split) {
  return [split](std::string_view op) {
    return op == (split ? "cuda.QGemvQ8SGlu" : "cuda.QGemvQ8Glu") || op == "cuda.QuantizeQ8" ||
           (split && op == "cuda.QRepack");
  };
}

/// The two integer GEMVs in the same layout, and the region's kernel.
std::function<bool(std::string_view)> unfused_ops(bool split) {
  return [split](std::string_view op) {
    return op == (split ? "cuda.QGemvQ8S" : "cuda.QGemvQ8") || op == "cuda.QuantizeQ8" ||
           (split && op == "cuda.QRepack") || op == "cuda.Fused";
  };
}

struct Case {
  DType t;
  bool split;
  int64_t m;
};

std::vector<Case> cases() {
  std::vector<Case> out;
  for (DType t : {DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::Q8_0, DType::Q4_K,
                  DType::Q5_K, DType::Q6_K})
    for (bool split : {false, true})
      for (int64_t m : {1, 3})
        if (!split || (t != DType::Q4_K && t != DType::Q5_K)) out.push_back({t, split, m});
  return out;
}

std::string describe(const Case& c) {
  return std::string(name(c.t)) + (c.split ? " split" : " gguf") + " m " + std::to_string(c.m);
}

// k 512: a whole number of 256-value blocks, rows of 16-byte aligned activation blocks. (The
// split layout: every type that has one, all but Q4_K and Q5_K.)
constexpr int64_t kK = 512, kN = 96;

TEST(CudaQGemvGluRules, NotOfferedWithTheSwitchAtZero) {
  testing::EnvScope off("LUMINAL_CUDA_QGEMV_GLU", "0");
  testing::CudaRulesOnly rules;
  EXPECT_EQ(testing::prefer_ops(swiglu_graph(1, kK, kN, DType::Q4_0), rules, is_glu).second, 0);
}

TEST(CudaQGemvGluRules, OfferedForEveryTypeAndCompiles) {
  LUMINAL_REQUIRE_NVRTC();
  const GluOn on;
  testing::CudaRulesOnly rules;
  std::vector<std::string> sources, whats;
  for (const Case& c : cases()) {
    testing::EnvScope split("LUMINAL_CUDA_QGEMV_SPLIT", c.split ? "1" : "0");
    const Graph g = swiglu_graph(c.m, kK, kN, c.t);
    auto [l, hits] = testing::prefer_ops(g, rules, glu_ops(c.split));
    EXPECT_EQ(count_op(l, c.split ? "cuda.QGemvQ8SGlu" : "cuda.QGemvQ8Glu"), 1)
        << describe(c) << ": " << l.op_mix_string();
    EXPECT_EQ(count_op(l, "cuda.Fused"), 0) << describe(c) << ": " << l.op_mix_string();
    testing::add_kernels(l, testing::spec_of(g.dim_facts()), sources, whats);
    // and with 4 warps a row (their sums joined through shared memory)
    testing::EnvScope w("LUMINAL_CUDA_QGEMV_WARPS", "4");
    testing::add_kernels(l, testing::spec_of(g.dim_facts()), sources, whats);
  }
  testing::expect_compiles(sources, whats);
}

using testing::smollm2_q4_1_seed;

TEST(CudaQGemvGluRules, TheSeedTakesItInEveryLayer) {
  // (the forms alone, not inside cuda.RowGemv, which computes the norm in the GEMV)
  const testing::EnvScope no_row("LUMINAL_CUDA_ROW_PROLOGUE", "0");
  constexpr int kLayers = 3;
  size_t without = 0;
  {
    testing::EnvScope off("LUMINAL_CUDA_QGEMV_GLU", "0");
    without = testing::kernel_count(smollm2_q4_1_seed(kLayers));
  }
  const GluOn on;
  const LlirGraph l = smollm2_q4_1_seed(kLayers);
  std::printf("[glu] SmolLM2 q4_1, %d layers: %zu kernels (%zu without; %s)\n", kLayers,
              testing::kernel_count(l), without, l.op_mix_string().c_str());
  EXPECT_EQ(count_op(l, "cuda.QGemvQ8Glu") + count_op(l, "cuda.QGemvQ8SGlu"), kLayers)
      << l.op_mix_string();
  EXPECT_LE(testing::kernel_count(l) + kLayers, without) << l.op_mix_string();
}

// An 8B-shaped q4_0 step (2 layers) keeps its gate and up GEMVs apart by default: on an H100 the
// paired form made it slower (2.772 -> 2.824 ms), and its weights (31.5 MiB each) make the paired
// form's seed cost the higher.
TEST(CudaQGemvGluRules, The8BSeedKeepsGateAndUpApart) {
  const testing::EnvScope unset("LUMINAL_CUDA_QGEMV_GLU", nullptr);
  const LlirGraph l = testing::llama8b_seed(2, DType::Q4_0);
  EXPECT_EQ(count_op(l, "cuda.QGemvQ8Glu") + count_op(l, "cuda.QGemvQ8SGlu"), 0)
      << l.op_mix_string();
}

TEST(CudaQGemvGlu, MatchesTheTwoGemvsAndTheRegion) {
  LUMINAL_REQUIRE_GPU();
  const GluOn on;
  // Q4_K's separate GEMV takes its sub-blocks in pairs by default; the paired form one at a time
  // (the other summation order): compared with the separate kernel in that form.
  testing::EnvScope pairs("LUMINAL_CUDA_QGEMV_Q4K_PAIRS", "0");
  uint64_t seed = 40;
  for (const Case& c : cases())
    for (const char* warps : {"", "4"}) {  // the kernel's choice (mostly 1 warp a row here), 4
      testing::EnvScope split("LUMINAL_CUDA_QGEMV_SPLIT", c.split ? "1" : "0");
      testing::EnvScope w("LUMINAL_CUDA_QGEMV_WARPS", *warps ? warps : nullptr);
      const std::string at = describe(c) + (*warps ? " warps 4" : "");
      const Graph g = swiglu_graph(c.m, kK, kN, c.t);
      auto [fused, a] = testing::prefer_ops(g, testing::gpu(), glu_ops(c.split));
      auto [plain, b] = testing::prefer_ops(g, testing::gpu(), unfused_ops(c.split));
      ASSERT_EQ(count_op(fused, c.split ? "cuda.QGemvQ8SGlu" : "cuda.QGemvQ8Glu"), 1)
          << at << ": " << fused.op_mix_string();
      ASSERT_EQ(count_op(plain, "cuda.QGemvQ8Glu") + count_op(plain, "cuda.QGemvQ8SGlu"), 0)
          << at << ": " << plain.op_mix_string();
      const testing::BufferMap in{
          {"x", testing::random_buffer(DType::F32, c.m * kK, ++seed, -2, 2)},
          {"wg", testing::random_buffer(c.t, kN * kK, ++seed)},
          {"wu", testing::random_buffer(c.t, kN * kK, ++seed)}};
      testing::LoadedPlan pa = testing::load_plan(testing::gpu(), fused);
      testing::LoadedPlan pb = testing::load_plan(testing::gpu(), plain);
      // The products are the same sums in the same order; the region is the same program, so a
      // difference can only be the compilers' instructions for SiLU (a few ulps).
      opstest::expect_same(testing::run_plan(pa, in, {}).outputs.at("y"),
                           testing::run_plan(pb, in, {}).outputs.at("y"), testing::Tol{1e-5, 1e-6},
                           at);
    }
}

}  // namespace
}  // namespace luminal
