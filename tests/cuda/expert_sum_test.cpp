// cuda.ExpertGemvSum (luminal/cuda/expert_gemv.cpp, opt-in with LUMINAL_CUDA_EXPERT_SUM=1): a
// token's chosen experts' outputs summed with the router's weights by the expert matmul's kernel.
//   - CI (no GPU): not offered without the switch; with it, the program preferring it has one
//     such node and no other expert node or matmul, for f32, bf16 and f16, one token of 8 choices
//     and two of 3; not over weights that are not broadcast along n; the kernels compile for
//     sm_90; the 1-layer Qwen3-MoE decode's fewest-kernels program takes it (one kernel fewer).
//   - GPU: against the expert matmul followed by the weighted sum as the search would otherwise
//     run it, within one rounding of the output dtype (the sums of the k products may add in
//     another order); an expert id outside [0, E) is reported.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
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
using testing::nn_check::to_doubles;
using testing::nn_check::uniform;

constexpr int64_t kE = 6;

/// LUMINAL_CUDA_EXPERT_SUM=1 for a scope (the default since 2026-12-06: the tests name it).
struct Sum : testing::EnvScope {
  Sum() : EnvScope("LUMINAL_CUDA_EXPERT_SUM", "1") {}
};

bool is_sum(std::string_view op) { return op == "cuda.ExpertGemvSum"; }
bool is_plain_expert(std::string_view op) {
  return op == "cuda.ExpertGemv" || op == "cuda.ExpertRows" || op == "cuda.ExpertGemvCast" ||
         op == "cuda.ExpertRowsCast";
}

/// o[s, n] = sum over j of wt[s, j] * y[s, j, n], y = expert_linear(x, w, ids) in t: x [S, D],
/// w [E, N, D], ids [S, K], wt [S, K] (`per_n`: wt [S, K, N], not broadcast: no sum form).
Graph sum_graph(DType t, int64_t S, int64_t K, int64_t N, int64_t D, bool per_n = false) {
  Graph g;
  Tensor x = g.tensor("x", {Expr(S), Expr(D)}, t);
  Tensor w = g.tensor("w", {Expr(kE), Expr(N), Expr(D)}, t);
  Tensor ids = g.tensor("ids", {Expr(S), Expr(K)}, DType::I32);
  Tensor y = nn::expert_linear(x, w, ids);  // [S, K, N]
  if (y.dtype() != t) y = y.cast(t);
  Tensor wt = per_n ? g.tensor("wt", {Expr(S), Expr(K), Expr(N)}, t)
                    : g.tensor("wt", {Expr(S), Expr(K)}, t)
                          .reshape({Expr(S), Expr(K), Expr(1)})
                          .expand({Expr(S), Expr(K), Expr(N)});
  (y * wt).sum(1).output("o");
  return g;
}

/// The program without the sum form: the expert op (reading 16-bit operands directly), then the
/// weighted sum as a matmul.
LlirGraph unfused(const Graph& g, Backend& be) {
  return testing::prefer_ops_16(g, be, is_plain_expert, is_sum).first;
}

// ---------------------------------------------------------------- CI

TEST(CudaExpertSumRules, OfferedWhenSwitchedOnForBroadcastWeights) {
  LUMINAL_REQUIRE_NVRTC();
  testing::CudaRulesOnly rules;
  {
    const testing::EnvScope off("LUMINAL_CUDA_EXPERT_SUM", "0");
    auto [l, n] = testing::prefer_ops_16(sum_graph(DType::BF16, 1, 8, 64, 256), rules, is_sum);
    EXPECT_EQ(n, 0) << "offered with LUMINAL_CUDA_EXPERT_SUM=0: " << l.op_mix_string();
  }
  Sum on;
  std::vector<std::string> sources, whats;
  for (DType t : {DType::F32, DType::BF16, DType::F16})
    for (auto [S, K] : {std::pair<int64_t, int64_t>{1, 8}, {2, 3}}) {
      const std::string at =
          std::string(name(t)) + " S " + std::to_string(S) + " K " + std::to_string(K) + ": ";
      const Graph g = sum_graph(t, S, K, 64, 256);
      auto [l, n] = testing::prefer_ops_16(g, rules, is_sum);
      ASSERT_EQ(n, 1) << at << l.op_mix_string();
      int plain = 0;
      for (const LlirNode& node : l.nodes)
        plain += is_plain_expert(node.op->name) ||
                 (node.op->name.find("Gemv") != std::string::npos && !is_sum(node.op->name));
      EXPECT_EQ(plain, 0) << at << l.op_mix_string();
      // (the GPU test's other program: the expert op, then the weighted sum)
      const LlirGraph lu = unfused(g, rules);
      EXPECT_EQ(count_op(lu, "cuda.ExpertGemvSum"), 0) << at << lu.op_mix_string();
      int experts = 0;
      for (const LlirNode& node : lu.nodes)
        experts += is_plain_expert(node.op->name);
      EXPECT_EQ(experts, 1) << at << lu.op_mix_string();
      testing::add_kernels(l, testing::spec_of(g.dim_facts()), sources, whats);
    }
  auto [l, n] = testing::prefer_ops_16(sum_graph(DType::BF16, 1, 8, 64, 256, true), rules, is_sum);
  EXPECT_EQ(n, 0) << "offered over weights varying along n: " << l.op_mix_string();
  testing::expect_compiles(sources, whats);
}

TEST(CudaExpertSumRules, TheMoeDecodeSeedTakesIt) {
  const auto [before, none] = [] {
    const testing::EnvScope off("LUMINAL_CUDA_EXPERT_SUM", "0");
    return testing::tiny_moe_seed("cuda.ExpertGemvSum");
  }();
  EXPECT_EQ(none, 0);
  Sum on;
  const auto [after, summed] = testing::tiny_moe_seed("cuda.ExpertGemvSum");
  EXPECT_EQ(summed, 1);
  EXPECT_EQ(after + 1, before);
}

// ---------------------------------------------------------------- GPU

HostBuffer ids_of(int64_t rows, int64_t bad_at = -1) {
  std::vector<int32_t> v;
  for (int64_t i = 0; i < rows; ++i)
    v.push_back(i == bad_at ? static_cast<int32_t>(kE) : static_cast<int32_t>((i * 5 + 2) % kE));
  HostBuffer b{DType::I32, std::vector<uint8_t>(v.size() * 4)};
  std::memcpy(b.bytes.data(), v.data(), b.bytes.size());
  return b;
}

TEST(CudaExpertSum, MatchesTheMatmulThenTheWeightedSum) {
  LUMINAL_REQUIRE_GPU();
  Sum on;
  uint64_t seed = 411;
  for (DType t : {DType::F32, DType::BF16, DType::F16})
    for (auto [S, K] : {std::pair<int64_t, int64_t>{1, 8}, {2, 3}}) {
      const std::string at =
          std::string(name(t)) + " S " + std::to_string(S) + " K " + std::to_string(K) + ": ";
      const int64_t N = 200, D = 768;
      const Graph g = sum_graph(t, S, K, N, D);
      auto [ls, ns] = testing::prefer_ops_16(g, testing::gpu(), is_sum);
      ASSERT_EQ(ns, 1) << at << ls.op_mix_string();
      const LlirGraph lu = unfused(g, testing::gpu());
      ASSERT_EQ(count_op(lu, "cuda.ExpertGemvSum"), 0) << at << lu.op_mix_string();
      const testing::BufferMap in{{"x", from_doubles(t, uniform(t, S * D, ++seed, -1, 1))},
                                  {"w", from_doubles(t, uniform(t, kE * N * D, ++seed, -0.1, 0.1))},
                                  {"ids", ids_of(S * K)},
                                  {"wt", from_doubles(t, uniform(t, S * K, ++seed, 0, 1))}};
      testing::LoadedPlan ps = testing::load_plan(testing::gpu(), ls, {DynMap{}});
      testing::LoadedPlan pu = testing::load_plan(testing::gpu(), lu, {DynMap{}});
      const std::vector<double> a =
          to_doubles(t, testing::run_plan(ps, in, {}).outputs.at("o").bytes);
      const std::vector<double> b =
          to_doubles(t, testing::run_plan(pu, in, {}).outputs.at("o").bytes);
      ASSERT_EQ(a.size(), static_cast<size_t>(S * N)) << at;
      // One rounding of the output apart at most, with the f32 sums' order (K terms) beside it.
      const double ulp = t == DType::BF16 ? 0x1p-7 : t == DType::F16 ? 0x1p-10 : 0x1p-22;
      int bad = 0;
      for (size_t i = 0; i < a.size(); ++i)
        bad += !(std::fabs(a[i] - b[i]) <= ulp * std::max(std::fabs(a[i]), std::fabs(b[i])) + 1e-6);
      EXPECT_EQ(bad, 0) << at << "of " << a.size() << " outputs differ by more than a rounding";
    }
  // An expert id outside [0, E) is reported (the row's value counts as 0).
  const Graph g = sum_graph(DType::BF16, 1, 8, 64, 256);
  auto [ls, ns] = testing::prefer_ops_16(g, testing::gpu(), is_sum);
  ASSERT_EQ(ns, 1);
  testing::LoadedPlan ps = testing::load_plan(testing::gpu(), ls, {DynMap{}});
  const testing::BufferMap in{
      {"x", from_doubles(DType::BF16, uniform(DType::BF16, 256, 5, -1, 1))},
      {"w", from_doubles(DType::BF16, uniform(DType::BF16, kE * 64 * 256, 6, -1, 1))},
      {"ids", ids_of(8, 3)},
      {"wt", from_doubles(DType::BF16, uniform(DType::BF16, 8, 7, 0, 1))}};
  try {
    testing::run_plan(ps, in, {});
    ADD_FAILURE() << "an expert id of " << kE << " with " << kE << " experts was not reported";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("expert"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace luminal
