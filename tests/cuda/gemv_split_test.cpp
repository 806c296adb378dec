// cuda.Gemv over a split domain (luminal/cuda/gemv.cpp, gemv_domain; LUMINAL_CUDA_GEMV_SPLIT=1):
// decode attention's Q @ K^T with the KV heads repeated for their query heads as torch's
// repeat_interleave leaves them (K read through the stride hd*(z/groups) along the heads).
//   Without a GPU (NVRTC only): unsplit the product gets no cuda.Gemv (it runs as cuda.Matmul,
//   each query head reading its KV head again); split into [kv, groups] it does, and the kernel
//   compiles for sm_90.
//   On the GPU: the split GEMV against sums in double on the host, f32 and bf16, over a dynamic
//   context (c from 1 to 1,024) in the Llama-3-8B, SmolLM2-like and 8-group layouts.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "cuda/cuda_test_util.hpp"
#include "cuda/nn_check.hpp"
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

bool is_gemv(std::string_view op) { return op == "cuda.Gemv" || op == "cuda.GemvCast"; }

/// The program of `g` on `be` with the most cuda.Gemv / cuda.GemvCast nodes, and how many.
std::pair<LlirGraph, int> forced(const Graph& g, Backend& be) {
  return testing::prefer_ops_16(g, be, is_gemv);
}

/// Q @ K^T with the KV heads repeated: q [kv * groups, 1, hd] times the first c rows of a cache
/// [slots, kv * hd], expanded to [kv, groups, c, hd] and merged to [kv * groups, c, hd].
Graph repeated_qk(int64_t kv, int64_t groups, int64_t hd, int64_t slots, DType t) {
  Graph g;
  g.declare_dim("c", 1, slots);
  const Expr c = Expr::var("c");
  Tensor q = g.tensor("q", {Expr(kv * groups), Expr(1), Expr(hd)}, t);
  Tensor cache = g.tensor("cache", {Expr(slots), Expr(kv * hd)}, t);
  q.matmul(testing::repeated_kv_heads(cache, kv, groups, hd, c).permute({0, 2, 1})).output("y");
  return g;
}

/// LUMINAL_CUDA_GEMV_SPLIT=1 (the default) or 0 for a scope.
struct GemvSplit : testing::EnvScope {
  explicit GemvSplit(const char* v = "1") : EnvScope("LUMINAL_CUDA_GEMV_SPLIT", v) {}
};

TEST(GemvSplitHost, RepeatedHeadsAreRowsOfOneGemvWhenSplit) {
  LUMINAL_REQUIRE_NVRTC();
  testing::CudaRulesOnly rules;
  const Graph g = repeated_qk(8, 4, 128, 2048, DType::BF16);
  {
    GemvSplit off("0");
    EXPECT_EQ(forced(g, rules).second, 0);
  }
  GemvSplit on;
  auto [l, gemvs] = forced(g, rules);
  ASSERT_EQ(gemvs, 1) << l.op_mix_string();
  std::vector<std::string> sources, whats;
  testing::add_kernels(l, testing::spec_of(g.dim_facts()), sources, whats);
  testing::expect_compiles(sources, whats);
}

TEST(CudaGemvSplit, RepeatedHeadsMatchTheReference) {
  LUMINAL_REQUIRE_GPU();
  struct Case {
    int64_t kv, groups, hd;
  };
  const Case cases[] = {{8, 4, 128}, {3, 3, 64}, {2, 8, 64}};
  const int64_t slots = 1024;
  uint64_t seed = 291;
  GemvSplit on;  // (unsplit, no cuda.Gemv is offered)
  for (DType t : {DType::F32, DType::BF16})
    for (const Case& c : cases) {
      auto [l, gemvs] = forced(repeated_qk(c.kv, c.groups, c.hd, slots, t), testing::gpu());
      ASSERT_EQ(gemvs, 1) << l.op_mix_string();
      std::vector<DynMap> buckets;
      for (int64_t ctx : {1, 33, 1024})
        buckets.push_back({{"c", ctx}});
      testing::LoadedPlan lp = testing::load_plan(testing::gpu(), l, buckets);
      const int64_t heads = c.kv * c.groups;
      const std::vector<double> cache = uniform(t, slots * c.kv * c.hd, ++seed, -1, 1);
      for (const DynMap& dyn : buckets) {
        const int64_t ctx = dyn.at("c");
        const std::vector<double> qs = uniform(t, heads * c.hd, ++seed, -1, 1);
        const testing::PlanRun r = testing::run_plan(
            lp, {{"q", from_doubles(t, qs)}, {"cache", from_doubles(t, cache)}}, dyn);
        const std::vector<double> got = to_doubles(t, r.outputs.at("y").bytes);
        std::vector<double> want(static_cast<size_t>(heads * ctx)), tol(want.size());
        for (int64_t h = 0; h < heads; ++h)
          for (int64_t j = 0; j < ctx; ++j) {
            double sum = 0, a = 0;
            for (int64_t e = 0; e < c.hd; ++e) {
              const double pr =
                  qs[static_cast<size_t>(h * c.hd + e)] *
                  cache[static_cast<size_t>(j * c.kv * c.hd + h / c.groups * c.hd + e)];
              sum += pr;
              a += std::fabs(pr);
            }
            const size_t o = static_cast<size_t>(h * ctx + j);
            want[o] = sum;
            tol[o] = dot_tolerance(t, sum, a, c.hd);
          }
        const auto d = compare_values(got, want, tol);
        EXPECT_EQ(d.bad, 0) << name(t) << " kv " << c.kv << " groups " << c.groups << " hd " << c.hd
                            << " c " << ctx << ": " << describe(d, got.size());
      }
    }
}

}  // namespace
}  // namespace luminal
