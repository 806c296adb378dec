// cuda.MatmulTiled (luminal/cuda/matmul_tiled.cpp), offered under LUMINAL_CUDA_MATMUL_TILED=1: a
// batched matmul with many rows and columns as 64 x 64 output tiles.
//   On the host: not offered without the switch; offered for a batched A B^T (f32, and bf16
//   through the graph's casts) and a GQA prefill's attention scores, not for a GEMV-shaped
//   product of one row; the kernels compile for sm_90.
//   On a GPU: within the kernel's bound of the reference runtime (products added in f32 over a
//   stage of 32 k values, the stages in double: 36 f32 units of sum |a b| plus the output's
//   rounding), at row and column counts across the tiles and k across the stages; a GQA
//   prefill's attention through it matches the reference.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <iomanip>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "cpu/ops_test_util.hpp"
#include "cuda/attention_graphs.hpp"
#include "cuda/cuda_test_util.hpp"
#include "luminal/core/dtype.hpp"
#include "luminal/cuda/nvrtc.hpp"
#include "luminal/luminal.hpp"
#include "support/env_scope.hpp"
#include "support/llir_direct.hpp"

namespace luminal {
namespace {

using testing::count_op;

struct TiledOn : testing::EnvScope {
  TiledOn() : EnvScope("LUMINAL_CUDA_MATMUL_TILED", "1") {}
};

bool is_tiled(std::string_view op) { return op == "cuda.MatmulTiled"; }

/// Whether `l` has a cuda.MatmulTiled node and each reads its operands in `t` (a 16-bit graph's
/// casts up to f32 read through, not written out).
bool tiled_reads(const LlirGraph& l, DType t) {
  bool any = false;
  for (const LlirNode& n : l.nodes)
    if (is_tiled(n.op->name)) {
      any = true;
      for (DType d : n.input_dtypes)
        if (d != t) return false;
    }
  return any;
}

/// y [b, s, c] = a [b, s, k] @ w [b, c, k]^T, s and c dynamic (up to 300).
Graph batched(int64_t b, int64_t k, DType t) {
  Graph g;
  g.declare_dim("s", 1, 300);
  g.declare_dim("c", 1, 300);
  Tensor a = g.tensor("a", {Expr(b), Expr::var("s"), Expr(k)}, t);
  Tensor w = g.tensor("w", {Expr(b), Expr::var("c"), Expr(k)}, t);
  a.matmul(w.transpose(1, 2)).output("y");
  return g;
}

using testing::prefill_step;

/// `in` with every float's sign cleared: the reference over it computes sum |a b|.
testing::BufferMap magnitudes(testing::BufferMap in) {
  for (auto& [name, buf] : in) {
    const size_t w = static_cast<size_t>(size_bytes(buf.dtype));
    for (size_t i = w - 1; i < buf.bytes.size(); i += w)
      buf.bytes[i] &= 0x7f;
  }
  return in;
}

TEST(CudaMatmulTiledRules, NotOfferedWithoutTheSwitch) {
  const testing::EnvScope off("LUMINAL_CUDA_MATMUL_TILED", nullptr);
  testing::CudaRulesOnly rules;
  EXPECT_EQ(testing::prefer_ops(batched(4, 64, DType::F32), rules, is_tiled).second, 0);
}

TEST(CudaMatmulTiledRules, OfferedForBatchesAndScoresAndCompiles) {
  LUMINAL_REQUIRE_NVRTC();
  const TiledOn on;
  testing::CudaRulesOnly rules;
  std::vector<std::string> sources, whats;
  for (DType t : {DType::F32, DType::BF16, DType::F16})
    for (const Graph& g : {batched(4, 64, t), batched(2, 100, t), prefill_step(2, 4, 64, t)}) {
      auto [l, hits] = testing::prefer_ops_16(g, rules, is_tiled);
      EXPECT_GE(hits, 1) << name(t) << ": " << l.op_mix_string();
      EXPECT_TRUE(tiled_reads(l, t)) << name(t) << ": " << l.to_text();
      testing::add_kernels(l, testing::spec_of(g.dim_facts()), sources, whats);
    }
  testing::expect_compiles(sources, whats);
  // Not a projection (no batch axis that both operands step through: a weight's product, which
  // the tiles would only slow down), of many rows or of one.
  for (int64_t rows : {int64_t{1}, int64_t{128}}) {
    Graph g;
    Tensor x = g.tensor("x", {Expr(rows), Expr(256)});
    Tensor w = g.tensor("w", {Expr(512), Expr(256)});
    x.matmul(w.transpose(0, 1)).output("y");
    EXPECT_EQ(testing::prefer_ops(g, rules, is_tiled).second, 0) << rows << " rows";
  }
}

TEST(CudaMatmulTiled, WithinItsBoundOfTheReference) {
  LUMINAL_REQUIRE_GPU();
  const TiledOn on;
  uint64_t seed = 90;
  struct Case {
    DType t;
    int64_t b, k;
  };
  // (70,000 batches: past the grid's 65,535 in z, so blocks loop over batches)
  for (const Case& c :
       {Case{DType::F32, 3, 64}, Case{DType::F32, 3, 100}, Case{DType::F32, 3, 33},
        Case{DType::BF16, 3, 64}, Case{DType::F16, 2, 100}, Case{DType::F32, 70000, 33}}) {
    const Graph g = batched(c.b, c.k, c.t);
    auto [l, hits] = testing::prefer_ops_16(g, testing::gpu(), is_tiled);
    ASSERT_EQ(hits, 1) << l.op_mix_string();
    ASSERT_TRUE(tiled_reads(l, c.t)) << l.to_text();
    std::vector<DynMap> dyns{{{"s", 1}, {"c", 1}},
                             {{"s", 64}, {"c", 64}},
                             {{"s", 65}, {"c", 130}},
                             {{"s", 300}, {"c", 7}}};
    if (c.b > 1000) dyns = {{{"s", 1}, {"c", 17}}};
    testing::LoadedPlan lp = testing::load_plan(testing::gpu(), l, dyns);
    for (const DynMap& dyn : dyns) {
      const testing::BufferMap in = opstest::random_inputs(g, dyn, ++seed, -2, 2);
      const testing::BufferMap want = opstest::run_reference(g, in, dyn);
      const testing::BufferMap mag = opstest::run_reference(g, magnitudes(in), dyn);
      const testing::BufferMap got = testing::run_executable(lp, g, in, dyn);
      const std::string what = std::string(name(c.t)) + " b " + std::to_string(c.b) + " k " +
                               std::to_string(c.k) + " s " + std::to_string(dyn.at("s")) + " c " +
                               std::to_string(dyn.at("c"));
      const HostBuffer &y = got.at("y"), &r = want.at("y"), &m = mag.at("y");
      ASSERT_EQ(y.bytes.size(), r.bytes.size()) << what;
      int64_t bad = 0, inexact = 0;
      std::string first_bad;  // (the first output past the bound: where, what, by how much)
      for (int64_t i = 0; i < static_cast<int64_t>(y.bytes.size() / 4); ++i) {
        const double a = load_as_double(DType::F32, y.bytes.data(), i);
        const double b = load_as_double(DType::F32, r.bytes.data(), i);
        const double mi = load_as_double(DType::F32, m.bytes.data(), i);
        const double bound = 36 * 0x1p-24 * mi + 0x1p-23 * std::fabs(b);
        if (!(std::fabs(a - b) <= bound) && bad++ == 0) {
          std::ostringstream o;
          o << std::setprecision(9) << "; output " << i << ": " << a << " against the reference's "
            << b << " (sum |a b| " << mi << ", bound " << bound << ")";
          first_bad = o.str();
        }
        inexact += a != b;
      }
      EXPECT_EQ(bad, 0) << what << " (" << inexact << " outputs differ from the reference"
                        << first_bad << ")";
    }
  }
}

TEST(CudaMatmulTiled, PrefillAttentionMatchesTheReference) {
  LUMINAL_REQUIRE_GPU();
  const TiledOn on;
  uint64_t seed = 95;
  for (DType t : {DType::F32, DType::BF16}) {
    const Graph g = prefill_step(2, 4, 64, t);
    auto [l, hits] = testing::prefer_ops_16(g, testing::gpu(), is_tiled);
    ASSERT_GE(hits, 1) << l.op_mix_string();
    testing::expect_prefill_matches_reference(l, g, t, seed);
  }
}

}  // namespace
}  // namespace luminal
