// cuda.ExpertGemvGlu / cuda.ExpertRowsGlu (luminal/cuda/expert_gemv.cpp, opt-in with
// LUMINAL_CUDA_EXPERT_GLU=1): SwiGLU's SiLU(gate) * up over a packed gate_up expert matmul,
// stored by the matmul's kernel.
//   - CI (no GPU): not offered without the switch; with it, the program preferring it has one
//     such node, no other expert node and no region kernel, for f32 and bf16/f16 (the cast form)
//     and the rows form (9 rows); a region reading the halves the other way
//     round (up * SiLU(gate) from the second half) is taken too, and a region over two unequal
//     slices is not; the kernels compile for sm_90; the 1-layer Qwen3-MoE decode's fewest-kernels
//     program takes it (one kernel fewer).
//   - GPU: the paired form stores the same bits as the expert matmul (or its cast form) followed
//     by the region's kernel (the same sums in the same order, --fmad=false), f32, bf16 and f16,
//     gemv and rows, an odd half width, D split over one warp and over four.
#include <gtest/gtest.h>

#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "cuda/cuda_test_util.hpp"
#include "cuda/moe_seed.hpp"
#include "cuda/nn_check.hpp"
#include "luminal/luminal.hpp"
#include "luminal/nn/moe.hpp"
#include "support/env_scope.hpp"
#include "support/llir_direct.hpp"

namespace luminal {
namespace {

using testing::count_op;
using testing::nn_check::from_doubles;
using testing::nn_check::uniform;

constexpr int64_t kE = 6, kK = 3;

/// LUMINAL_CUDA_EXPERT_GLU=1 for a scope (the default since 2026-12-06: the tests name it).
struct Glu : testing::EnvScope {
  Glu() : EnvScope("LUMINAL_CUDA_EXPERT_GLU", "1") {}
};

bool is_glu(std::string_view op) {
  return op == "cuda.ExpertGemvGlu" || op == "cuda.ExpertRowsGlu";
}
bool is_plain_expert(std::string_view op) {
  return op == "cuda.ExpertGemv" || op == "cuda.ExpertRows" || op == "cuda.ExpertGemvCast" ||
         op == "cuda.ExpertRowsCast";
}

/// o = SiLU(y[..., :F]) * y[..., F:] (or, `swapped`, y[..., F:] * SiLU(y[..., :F])) for
/// y = expert_linear(x, w, ids) cast to t: x [s, D] of t, w [E, 2F, D] of t, ids [s, k]; s 1
/// (one token's k = 3 rows: cuda.ExpertGemv) or 3 (9 rows: cuda.ExpertRows). `skew` reads the up
/// half from one element early (no glu form).
Graph glu_graph(bool rows, DType t, int64_t F, int64_t D, bool swapped = false, bool skew = false) {
  Graph g;
  const Expr S = rows ? Expr(3) : Expr(1);  // 9 rows: cuda.ExpertRows
  Tensor x = g.tensor("x", {S, Expr(D)}, t);
  Tensor w = g.tensor("w", {Expr(kE), Expr(2 * F), Expr(D)}, t);
  Tensor ids = g.tensor("ids", {S, Expr(kK)}, DType::I32);
  Tensor y = nn::expert_linear(x, w, ids);
  if (y.dtype() != t) y = y.cast(t);
  const Tensor gate = y.slice(2, 0, F).silu();
  const Tensor up = skew ? y.slice(2, F - 1, 2 * F - 1) : y.slice(2, F, 2 * F);
  (swapped ? up * gate : gate * up).output("o");
  return g;
}

std::pair<LlirGraph, int> forced_glu(const Graph& g, Backend& be) {
  return testing::prefer_ops_16(g, be, is_glu);
}

/// The program without the paired form: the expert matmul (its cast form where the value is
/// 16-bit) and the region as kernels of their own (one or more: each region rounds every op to
/// its dtype, so the bits do not depend on where it is cut).
std::pair<LlirGraph, int> forced_unpaired(const Graph& g, Backend& be) {
  auto [l, hits] = testing::prefer_ops_16(
      g, be, [](std::string_view op) { return is_plain_expert(op) || op == "cuda.Fused"; },
      is_glu);  // never the paired form
  int n = 0;
  for (const LlirNode& node : l.nodes)
    n += is_plain_expert(node.op->name);
  return {std::move(l), n};
}

// ---------------------------------------------------------------- CI

TEST(CudaExpertGluRules, OfferedWhenSwitchedOnOverTheTwoHalves) {
  LUMINAL_REQUIRE_NVRTC();
  testing::CudaRulesOnly rules;
  {
    const testing::EnvScope off("LUMINAL_CUDA_EXPERT_GLU", "0");
    auto [l, n] = forced_glu(glu_graph(false, DType::BF16, 40, 256), rules);
    EXPECT_EQ(n, 0) << "offered with LUMINAL_CUDA_EXPERT_GLU=0: " << l.op_mix_string();
  }
  Glu on;
  std::vector<std::string> sources, whats;
  for (DType t : {DType::F32, DType::BF16, DType::F16})
    for (bool rows : {false, true})
      for (bool swapped : {false, true}) {
        const std::string at =
            std::string(name(t)) + (rows ? " rows" : " gemv") + (swapped ? " swapped" : "") + ": ";
        const Graph g = glu_graph(rows, t, 40, 256, swapped);
        auto [l, n] = forced_glu(g, rules);
        ASSERT_EQ(n, 1) << at << l.op_mix_string();
        EXPECT_EQ(count_op(l, rows ? "cuda.ExpertRowsGlu" : "cuda.ExpertGemvGlu"), 1) << at;
        int plain = 0;
        for (const LlirNode& node : l.nodes)
          plain += is_plain_expert(node.op->name);
        EXPECT_EQ(plain, 0) << at << l.op_mix_string();
        EXPECT_EQ(count_op(l, "cuda.Fused"), 0) << at << l.op_mix_string();
        // (the GPU test's other program: the matmul, then the region's kernel)
        auto [lu, nu] = forced_unpaired(g, rules);
        EXPECT_EQ(nu, 1) << at << lu.op_mix_string();
        EXPECT_GE(count_op(lu, "cuda.Fused"), 1) << at << lu.op_mix_string();
        testing::add_kernels(l, testing::spec_of(g.dim_facts()), sources, whats);
        testing::EnvScope warps("LUMINAL_CUDA_EXPERT_WARPS", "4");  // D split over 4 warps
        testing::add_kernels(l, testing::spec_of(g.dim_facts()), sources, whats);
      }
  auto [skewed, n] = forced_glu(glu_graph(false, DType::BF16, 40, 256, false, true), rules);
  EXPECT_EQ(n, 0) << "offered over unequal slices: " << skewed.op_mix_string();
  testing::expect_compiles(sources, whats);
}

TEST(CudaExpertGluRules, TheMoeDecodeSeedTakesIt) {
  const auto [before, none] = [] {
    const testing::EnvScope off("LUMINAL_CUDA_EXPERT_GLU", "0");
    return testing::tiny_moe_seed("cuda.ExpertGemvGlu");
  }();
  EXPECT_EQ(none, 0);
  Glu on;
  const auto [after, paired] = testing::tiny_moe_seed("cuda.ExpertGemvGlu");
  EXPECT_EQ(paired, 1);
  EXPECT_EQ(after + 1, before);
}

// ---------------------------------------------------------------- GPU

TEST(CudaExpertGlu, StoresTheBitsOfTheMatmulThenTheRegion) {
  LUMINAL_REQUIRE_GPU();
  Glu on;
  uint64_t seed = 313;
  for (DType t : {DType::F32, DType::BF16, DType::F16})
    for (bool rows : {false, true})
      for (int64_t F : {int64_t{40}, int64_t{77}})
        for (const char* warps : {"", "4"}) {
          testing::EnvScope w("LUMINAL_CUDA_EXPERT_WARPS", warps);
          const std::string at =
              std::string(name(t)) + (rows ? " rows" : " gemv") + " F " + std::to_string(F) + ": ";
          const int64_t D = 512;
          const Graph g = glu_graph(rows, t, F, D);
          auto [lg, ng] = forced_glu(g, testing::gpu());
          ASSERT_EQ(ng, 1) << at << lg.op_mix_string();
          auto [lu, nu] = forced_unpaired(g, testing::gpu());
          ASSERT_EQ(nu, 1) << at << lu.op_mix_string();
          ASSERT_GE(count_op(lu, "cuda.Fused"), 1) << at << lu.op_mix_string();
          const int64_t sv = rows ? 3 : 1;
          std::vector<int32_t> idv;
          for (int64_t i = 0; i < sv * kK; ++i)
            idv.push_back(static_cast<int32_t>((i * 5 + 1) % kE));
          HostBuffer ids{DType::I32, std::vector<uint8_t>(idv.size() * 4)};
          std::memcpy(ids.bytes.data(), idv.data(), ids.bytes.size());
          const testing::BufferMap in{
              {"x", from_doubles(t, uniform(t, sv * D, ++seed, -1, 1))},
              {"w", from_doubles(t, uniform(t, kE * 2 * F * D, ++seed, -0.2, 0.2))},
              {"ids", ids}};
          const DynMap dyn;
          const std::vector<DynMap> buckets{dyn};
          testing::LoadedPlan pg = testing::load_plan(testing::gpu(), lg, buckets);
          testing::LoadedPlan pu = testing::load_plan(testing::gpu(), lu, buckets);
          const std::vector<uint8_t> a = testing::run_plan(pg, in, dyn).outputs.at("o").bytes;
          const std::vector<uint8_t> b = testing::run_plan(pu, in, dyn).outputs.at("o").bytes;
          ASSERT_EQ(a.size(), static_cast<size_t>(sv * kK * F * size_bytes(t))) << at;
          EXPECT_EQ(a, b) << at << "warps " << warps
                          << ": the paired form's bits differ from the matmul then the region";
        }
}

}  // namespace
}  // namespace luminal
