// cuda.GemvKN / cuda.GemvKNCast (luminal/cuda/gemv_kn.cpp): a matmul whose shared operand is
// stored along n (x [m, k] @ W [k, n]; decode attention's P @ V).
//   Without a GPU (NVRTC only): the forms are offered where they apply and not elsewhere (V's
//   heads repeated by repeat_interleave only with LUMINAL_CUDA_GEMV_KN_SPLIT=1), and every forced
//   kernel compiles for sm_90 (a bf16 Llama decode step running P @ V as
//   cuda.GemvKNCast: nvrtc_test.cpp, LlamaDecodeStepRunsGemvs).
//   On the GPU: forced programs against sums in double on the host, for f32, bf16 and f16, one to
//   eight rows, n from 64 to 4,096 (a tile of several clusters, a partial tile), k from 1 to
//   4,100, each unroll the tuning switch allows at its ends, and P @ V read out of a KV cache
//   over a dynamic context (c from 1 to 2,048) in the layouts of the Llama-3-8B and SmolLM2 heads,
//   and with the heads repeated, split.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "cuda/cuda_test_util.hpp"
#include "cuda/nn_check.hpp"
#include "luminal/cuda/nvrtc.hpp"
#include "luminal/luminal.hpp"
#include "support/env_scope.hpp"
#include "support/llir_direct.hpp"
#include "support/repeated_heads.hpp"

namespace luminal {
namespace {

using testing::nn_check::compare_values;
using testing::nn_check::describe;
using testing::nn_check::dot_tolerance;
using testing::nn_check::from_doubles;
using testing::nn_check::to_doubles;
using testing::nn_check::uniform;

bool is_kn(std::string_view op) { return op.rfind("cuda.GemvKN", 0) == 0; }

/// The program of `g` on `be` with the most cuda.GemvKN* nodes, each reading its 16-bit operands
/// directly where it can (not through the graph's casts up to f32), and how many it has.
std::pair<LlirGraph, int> forced(const Graph& g, Backend& be) {
  return testing::prefer_ops_16(g, be, is_kn);
}

/// x [m, k] @ w [k, n].
Graph plain(int64_t m, int64_t n, int64_t k, DType t) {
  Graph g;
  Tensor x = g.tensor("x", {Expr(m), Expr(k)}, t);
  Tensor w = g.tensor("w", {Expr(k), Expr(n)}, t);
  x.matmul(w).output("y");
  return g;
}

/// Decode attention's P @ V: p [kv, groups, 1, c] times the first c rows of a cache [slots, kv *
/// hd], each KV head's V shared by its group (cached_attention's layout), c dynamic.
Graph attention_pv(int64_t kv, int64_t groups, int64_t hd, int64_t slots, DType t) {
  Graph g;
  g.declare_dim("c", 1, slots);
  const Expr c = Expr::var("c");
  Tensor p = g.tensor("p", {Expr(kv), Expr(groups), Expr(1), c}, t);
  Tensor cache = g.tensor("cache", {Expr(slots), Expr(kv * hd)}, t);
  const Tensor v = cache.slice(0, 0, c)
                       .reshape({c, Expr(kv), Expr(hd)})
                       .permute({1, 0, 2})
                       .reshape({Expr(kv), Expr(1), c, Expr(hd)})
                       .expand({Expr(kv), Expr(groups), c, Expr(hd)});
  p.matmul(v).output("y");
  return g;
}

/// The same P @ V with the KV heads repeated for their query heads as torch's repeat_interleave
/// leaves them (an expand, then a reshape merging [kv, groups]): p [kv * groups, 1, c], and V
/// read through the stride hd*(z/groups) along the heads.
Graph repeated_pv(int64_t kv, int64_t groups, int64_t hd, int64_t slots, DType t) {
  Graph g;
  g.declare_dim("c", 1, slots);
  const Expr c = Expr::var("c");
  Tensor p = g.tensor("p", {Expr(kv * groups), Expr(1), c}, t);
  Tensor cache = g.tensor("cache", {Expr(slots), Expr(kv * hd)}, t);
  p.matmul(testing::repeated_kv_heads(cache, kv, groups, hd, c)).output("y");
  return g;
}

/// LUMINAL_CUDA_GEMV_KN_SPLIT=1 (the default) or 0 for a scope.
struct KnSplit : testing::EnvScope {
  explicit KnSplit(const char* v = "1") : EnvScope("LUMINAL_CUDA_GEMV_KN_SPLIT", v) {}
};

/// The kernels of each program (with its graph's dim facts) compiled for sm_90 through the
/// backend's batching.
void compile_all(const std::vector<std::pair<LlirGraph, Facts>>& programs) {
  std::vector<std::string> sources, whats;
  for (const auto& [l, facts] : programs)
    testing::add_kernels(l, testing::spec_of(facts), sources, whats);
  testing::expect_compiles(sources, whats);
}

class GemvKnHost : public ::testing::Test {
 protected:
  void SetUp() override { LUMINAL_REQUIRE_NVRTC(); }
};

TEST_F(GemvKnHost, OfferedWhereTheWeightRunsAlongN) {
  testing::CudaRulesOnly rules;
  std::vector<std::pair<LlirGraph, Facts>> programs;
  for (DType t : {DType::F32, DType::BF16, DType::F16})
    for (int64_t m : {1, 4, 8}) {
      auto [l, kn] = forced(plain(m, 128, 1024, t), rules);
      EXPECT_EQ(kn, 1) << name(t) << " m " << m << ": " << l.op_mix_string();
      if (t != DType::F32) {
        EXPECT_EQ(l.op_mix(), (std::map<std::string, int>{{"cuda.GemvKNCast", 1}}))
            << l.op_mix_string();
      }
      programs.emplace_back(std::move(l), Facts{});
    }
  for (DType t : {DType::F32, DType::BF16}) {
    const Graph g = attention_pv(8, 4, 128, 2048, t);
    auto [l, kn] = forced(g, rules);
    EXPECT_EQ(kn, 1) << l.op_mix_string();
    programs.emplace_back(std::move(l), g.dim_facts());
  }
  // Not offered: nine rows; n not in 4-byte pieces of the row.
  EXPECT_EQ(testing::prefer_ops(plain(9, 128, 64, DType::BF16), rules, is_kn).second, 0);
  EXPECT_EQ(testing::prefer_ops(plain(2, 127, 64, DType::BF16), rules, is_kn).second, 0);
  ::setenv("LUMINAL_CUDA_GEMV_KN", "0", 1);
  const int off = testing::prefer_ops(plain(2, 128, 64, DType::BF16), rules, is_kn).second;
  ::unsetenv("LUMINAL_CUDA_GEMV_KN");
  EXPECT_EQ(off, 0) << "LUMINAL_CUDA_GEMV_KN=0 offers no cuda.GemvKN";
  compile_all(programs);
  for (const char* cluster : {"1", "2"}) {  // without a cluster, and a cluster of 2
    ::setenv("LUMINAL_CUDA_GEMV_KN_CLUSTER", cluster, 1);
    compile_all(programs);
    ::unsetenv("LUMINAL_CUDA_GEMV_KN_CLUSTER");
  }
}

TEST_F(GemvKnHost, RepeatedHeadsShareOneReadWhenSplit) {
  // Unsplit, V's heads stride hd*(z/groups): no GemvKN (the program reads V as cuda.Matmul, a
  // warp down each column for every query head: the torch 8B step's slow MatmulCast). Split, a
  // KV head's groups are the rows of one GEMV over it (acc[groups]).
  testing::CudaRulesOnly rules;
  const Graph g = repeated_pv(8, 4, 128, 2048, DType::BF16);
  {
    KnSplit off("0");
    EXPECT_EQ(forced(g, rules).second, 0);
  }
  KnSplit on;
  auto [l, kn] = forced(g, rules);
  ASSERT_EQ(kn, 1) << l.op_mix_string();
  std::vector<std::string> sources, whats;
  testing::add_kernels(l, testing::spec_of(g.dim_facts()), sources, whats);
  int rows4 = 0;
  for (const std::string& src : sources)
    if (src.find("lmn_gemv_kn") != std::string::npos)
      rows4 += src.find("double acc[4][") != std::string::npos;
  EXPECT_EQ(rows4, 1);
  testing::expect_compiles(sources, whats);
}

/// LUMINAL_CUDA_GEMV_KN_UNROLL and LUMINAL_CUDA_GEMV_KN_CLUSTER for a scope ("": unset).
struct KnEnv {
  KnEnv(const char* unroll, const char* cluster) {
    if (*unroll) ::setenv("LUMINAL_CUDA_GEMV_KN_UNROLL", unroll, 1);
    if (*cluster) ::setenv("LUMINAL_CUDA_GEMV_KN_CLUSTER", cluster, 1);
  }
  ~KnEnv() {
    ::unsetenv("LUMINAL_CUDA_GEMV_KN_UNROLL");
    ::unsetenv("LUMINAL_CUDA_GEMV_KN_CLUSTER");
  }
};

TEST(CudaGemvKn, RowsTimesWeightAlongNMatchTheReference) {
  LUMINAL_REQUIRE_GPU();
  struct Case {
    int64_t n, k;
  };
  const Case cases[] = {{128, 1024}, {64, 100}, {576, 576}, {4096, 33}, {8, 4100}, {200, 1}};
  uint64_t seed = 7;
  for (DType t : {DType::F32, DType::BF16, DType::F16})
    for (const Case& c : cases)
      for (int64_t m : {1, 3, 4, 8})
        for (const char* unroll : {"", "1", "16"})
          for (const char* cluster : {"", "1", "2", "4"}) {
            if ((*unroll || *cluster) && (c.k != 1024 || m != 4)) continue;
            const std::string at = std::string(name(t)) + " m " + std::to_string(m) + " n " +
                                   std::to_string(c.n) + " k " + std::to_string(c.k) + " unroll '" +
                                   unroll + "' cluster '" + cluster + "': ";
            KnEnv env(unroll, cluster);
            const Graph g = plain(m, c.n, c.k, t);
            auto [l, kn] = forced(g, testing::gpu());
            ASSERT_EQ(kn, 1) << at << l.op_mix_string();
            const std::vector<double> xs = uniform(t, m * c.k, ++seed, -1, 1);
            const std::vector<double> ws = uniform(t, c.k * c.n, ++seed, -1, 1);
            testing::LoadedPlan lp = testing::load_plan(testing::gpu(), l);
            const testing::PlanRun r =
                testing::run_plan(lp, {{"x", from_doubles(t, xs)}, {"w", from_doubles(t, ws)}}, {});
            const std::vector<double> got = to_doubles(t, r.outputs.at("y").bytes);
            std::vector<double> want(static_cast<size_t>(m * c.n)), tol(want.size());
            for (int64_t i = 0; i < m; ++i)
              for (int64_t j = 0; j < c.n; ++j) {
                double s = 0, a = 0;
                for (int64_t q = 0; q < c.k; ++q) {
                  const double p =
                      xs[static_cast<size_t>(i * c.k + q)] * ws[static_cast<size_t>(q * c.n + j)];
                  s += p;
                  a += std::fabs(p);
                }
                const size_t o = static_cast<size_t>(i * c.n + j);
                want[o] = s;
                tol[o] = dot_tolerance(t, s, a, c.k);
              }
            const auto d = compare_values(got, want, tol);
            EXPECT_EQ(d.bad, 0) << at << describe(d, got.size());
          }
}

/// P @ V of `g` (attention_pv or repeated_pv: query head q reads KV head q / groups) forced to
/// one cuda.GemvKN and run at each context against sums in double.
void expect_pv_matches(const Graph& g, DType t, int64_t kv, int64_t groups, int64_t hd,
                       int64_t slots, const std::vector<int64_t>& contexts, uint64_t& seed,
                       const std::string& what) {
  auto [l, kn] = forced(g, testing::gpu());
  ASSERT_EQ(kn, 1) << what << l.op_mix_string();
  std::vector<DynMap> buckets;
  for (int64_t ctx : contexts)
    buckets.push_back({{"c", ctx}});
  testing::LoadedPlan lp = testing::load_plan(testing::gpu(), l, buckets);
  const std::vector<double> cache = uniform(t, slots * kv * hd, ++seed, -1, 1);
  for (const DynMap& dyn : buckets) {
    const int64_t ctx = dyn.at("c");
    const std::vector<double> ps = uniform(t, kv * groups * ctx, ++seed, 0, 1);
    const testing::PlanRun r =
        testing::run_plan(lp, {{"p", from_doubles(t, ps)}, {"cache", from_doubles(t, cache)}}, dyn);
    const std::vector<double> got = to_doubles(t, r.outputs.at("y").bytes);
    std::vector<double> want(static_cast<size_t>(kv * groups * hd)), tol(want.size());
    for (int64_t q = 0; q < kv * groups; ++q)
      for (int64_t e = 0; e < hd; ++e) {
        double sum = 0, a = 0;
        for (int64_t j = 0; j < ctx; ++j) {
          const double pr = ps[static_cast<size_t>(q * ctx + j)] *
                            cache[static_cast<size_t>(j * kv * hd + q / groups * hd + e)];
          sum += pr;
          a += std::fabs(pr);
        }
        const size_t o = static_cast<size_t>(q * hd + e);
        want[o] = sum;
        tol[o] = dot_tolerance(t, sum, a, ctx);
      }
    const auto d = compare_values(got, want, tol);
    EXPECT_EQ(d.bad, 0) << what << name(t) << " kv " << kv << " groups " << groups << " hd " << hd
                        << " c " << ctx << ": " << describe(d, got.size());
  }
}

TEST(CudaGemvKn, AttentionPvOverADynamicContextMatchesTheReference) {
  LUMINAL_REQUIRE_GPU();
  struct Case {
    int64_t kv, groups, hd;
  };
  const Case cases[] = {{8, 4, 128}, {3, 3, 64}, {1, 8, 256}};
  const int64_t slots = 2048;
  uint64_t seed = 91;
  for (DType t : {DType::F32, DType::BF16})
    for (const Case& c : cases)
      for (const char* cluster : {"", "1"}) {
        KnEnv env("", cluster);
        expect_pv_matches(attention_pv(c.kv, c.groups, c.hd, slots, t), t, c.kv, c.groups, c.hd,
                          slots, {1, 7, 128, 1025, 2048}, seed,
                          std::string("cluster '") + cluster + "' ");
      }
}

TEST(CudaGemvKn, RepeatedHeadsSplitMatchTheReference) {
  LUMINAL_REQUIRE_GPU();
  struct Case {
    int64_t kv, groups, hd;
  };
  const Case cases[] = {{8, 4, 128}, {3, 3, 64}, {2, 8, 64}};
  const int64_t slots = 1024;
  uint64_t seed = 191;
  KnSplit on;  // (unsplit, no GemvKN is offered)
  for (DType t : {DType::F32, DType::BF16})
    for (const Case& c : cases)
      expect_pv_matches(repeated_pv(c.kv, c.groups, c.hd, slots, t), t, c.kv, c.groups, c.hd, slots,
                        {1, 33, 1024}, seed, "split ");
}

}  // namespace
}  // namespace luminal
