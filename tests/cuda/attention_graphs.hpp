#pragma once
// Cached-attention graphs for the CUDA attention tests (attention_test.cpp, matmul_tiled_test.cpp)
// and the prefill check they share.
#include <cstdint>
#include <string>
#include <vector>

#include "cpu/ops_test_util.hpp"
#include "cuda/cuda_test_util.hpp"
#include "luminal/nn/attention.hpp"

namespace luminal::testing {

constexpr int64_t kAttentionSlots = 1100;

/// One step of cached attention in dtype t: q [s, kv * groups, hd], this step's k and v; s up to
/// `rows` (1: a decode step; more: a prefill's); the cache kAttentionSlots rows (output "o").
inline Graph attention_step(int64_t kv, int64_t groups, int64_t hd, DType t,
                            const nn::AttentionOptions& o, int64_t rows) {
  Graph g;
  g.declare_dim("s", 1, rows);
  g.declare_dim("c", 1, kAttentionSlots);
  Tensor q = g.tensor("q", {Expr::var("s"), Expr(kv * groups), Expr(hd)}, t);
  Tensor k = g.tensor("k", {Expr::var("s"), Expr(kv), Expr(hd)}, t);
  Tensor v = g.tensor("v", {Expr::var("s"), Expr(kv), Expr(hd)}, t);
  nn::cached_attention(g, q, k, v, "l0", static_cast<int>(kAttentionSlots), o).output("o");
  return g;
}

/// A prefill's cached attention: up to 64 query rows at once.
inline Graph prefill_step(int64_t kv, int64_t groups, int64_t hd, DType t) {
  return attention_step(kv, groups, hd, t, {}, 64);
}

/// Program `l` of a prefill_step graph `g` in dtype t against the reference on the GPU, at (s, c)
/// of (1, 1), (37, 100) and (64, 700); `seed` advances once a run.
inline void expect_prefill_matches_reference(const LlirGraph& l, const Graph& g, DType t,
                                             uint64_t& seed) {
  const std::vector<DynMap> dyns{
      {{"s", 1}, {"c", 1}}, {{"s", 37}, {"c", 100}}, {{"s", 64}, {"c", 700}}};
  LoadedPlan lp = load_plan(gpu(), l, dyns);
  const Tol tol = t == DType::F32 ? Tol{1e-5, 1e-4} : Tol{2e-2, 2e-2};
  for (const DynMap& dyn : dyns) {
    const BufferMap in = opstest::random_inputs(g, dyn, ++seed, -1, 1);
    const BufferMap want = opstest::run_reference(g, in, dyn);
    const BufferMap got = run_executable(lp, g, in, dyn);
    opstest::expect_same(got.at("o"), want.at("o"), tol,
                         std::string(name(t)) + " s " + std::to_string(dyn.at("s")) + " c " +
                             std::to_string(dyn.at("c")));
  }
}

}  // namespace luminal::testing
