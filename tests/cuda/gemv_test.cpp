// GPU: the decode alternatives of gemv.cpp and reduce.cpp, forced into programs and checked
// against the reference on random data:
//   - cuda.Gemv / cuda.GemvCast: x [m, k] @ W^T for m = 1 to 8, the SmolLM2 and 8B widths of k,
//     f32, bf16 and f16, each split-k width (LUMINAL_CUDA_GEMV_WARPS 1, 2, 4, 8) and the default,
//     both forms (LUMINAL_CUDA_GEMV_MMA 0: CUDA cores, 1: mma.sync);
//   - cuda.SumSplit / cuda.MaxSplit (a thread block cluster per output): sums and maxima over
//     rows of 4,096 to 128,256 elements (aligned: 16-byte loads; odd lengths: one element at a
//     time), NaN propagation, and the greedy argmax over 128,256 logits (ties to the lowest index)
//     with every reduction split.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include "cuda/cuda_test_util.hpp"
#include "cuda/nn_check.hpp"
#include "luminal/luminal.hpp"
#include "luminal/nn/sampling.hpp"
#include "support/llir_direct.hpp"

namespace luminal {
namespace {

using testing::nn_check::compare_values;
using testing::nn_check::describe;
using testing::nn_check::from_doubles;
using testing::nn_check::to_doubles;
using testing::nn_check::uniform;

/// The program of `g` with the most e-nodes whose op name starts with one of `prefer` (reading
/// 16-bit operands directly), and how many of its nodes do.
std::pair<LlirGraph, int> forced(const Graph& g, const std::vector<std::string>& prefer) {
  return testing::prefer_ops_16(g, testing::gpu(), [&](std::string_view op) {
    if (op.rfind("cuda.GemvKN", 0) == 0) return false;  // gemv_kn_test.cpp's
    for (const std::string& p : prefer)
      if (op.rfind(p, 0) == 0) return true;
    return false;
  });
}

/// LUMINAL_CUDA_GEMV_WARPS and LUMINAL_CUDA_GEMV_MMA for a scope ("": unset).
struct GemvEnv {
  GemvEnv(const char* warps, const char* mma) {
    if (*warps) ::setenv("LUMINAL_CUDA_GEMV_WARPS", warps, 1);
    if (*mma) ::setenv("LUMINAL_CUDA_GEMV_MMA", mma, 1);
  }
  ~GemvEnv() {
    ::unsetenv("LUMINAL_CUDA_GEMV_WARPS");
    ::unsetenv("LUMINAL_CUDA_GEMV_MMA");
  }
};

TEST(CudaGemv, RowsTimesWeightMatchTheReference) {
  LUMINAL_REQUIRE_GPU();
  struct Case {
    int64_t n, k;
  };
  const Case cases[] = {{72, 576}, {40, 4096}, {24, 1536}, {3, 14336}};
  uint64_t seed = 1;
  int runs = 0;
  for (DType t : {DType::F32, DType::BF16, DType::F16})
    for (const Case& c : cases)
      for (int64_t m : {1, 2, 5, 8})
        for (const char* warps : {"", "1", "2", "4", "8"})
          for (const char* mma : {"", "0", "1"}) {
            if (c.k == 14336 && *warps && std::string(warps) != "8") continue;
            if (*mma && (t == DType::F32 || (*warps && std::string(warps) != "2"))) continue;
            Graph g;
            Tensor x = g.tensor("x", {Expr(m), Expr(c.k)}, t);
            Tensor w = g.tensor("w", {Expr(c.n), Expr(c.k)}, t);
            x.matmul(w.transpose(0, 1)).output("y");
            const std::string at = std::string(name(t)) + " m " + std::to_string(m) + " n " +
                                   std::to_string(c.n) + " k " + std::to_string(c.k) + " warps '" +
                                   warps + "' mma '" + mma + "': ";
            GemvEnv env(warps, mma);
            auto [l, gemvs] = forced(g, {"cuda.Gemv"});
            ASSERT_EQ(gemvs, 1) << at << l.op_mix_string();
            const std::vector<double> xs = uniform(t, m * c.k, ++seed, -1, 1);
            const std::vector<double> ws = uniform(t, c.n * c.k, ++seed, -1, 1);
            testing::LoadedPlan lp = testing::load_plan(testing::gpu(), l);
            const testing::PlanRun r =
                testing::run_plan(lp, {{"x", from_doubles(t, xs)}, {"w", from_doubles(t, ws)}}, {});
            const std::vector<double> got = to_doubles(t, r.outputs.at("y").bytes);
            std::vector<double> want(static_cast<size_t>(m * c.n)), tol(want.size());
            const double ulp = t == DType::BF16 ? 0x1p-7 : t == DType::F16 ? 0x1p-10 : 0x1p-22;
            for (int64_t i = 0; i < m; ++i)
              for (int64_t j = 0; j < c.n; ++j) {
                double s = 0, a = 0;
                for (int64_t q = 0; q < c.k; ++q) {
                  const double p =
                      xs[static_cast<size_t>(i * c.k + q)] * ws[static_cast<size_t>(j * c.k + q)];
                  s += p;
                  a += std::fabs(p);
                }
                const size_t o = static_cast<size_t>(i * c.n + j);
                want[o] = s;
                // the output's rounding, and f32 chunk sums (eps * sqrt(k) of sum |x w|)
                tol[o] = ulp * std::fabs(s) + 0x1p-23 * std::sqrt(static_cast<double>(c.k)) * a;
              }
            const auto d = compare_values(got, want, tol);
            EXPECT_EQ(d.bad, 0) << at << describe(d, got.size());
            ++runs;
          }
  EXPECT_GT(runs, 200);
}

/// The program of `g` using the most e-nodes named exactly one of `ops`.
std::pair<LlirGraph, int> forced_exact(const Graph& g, const std::vector<std::string>& ops) {
  return testing::prefer_ops(g, testing::gpu(), [&](std::string_view op) {
    return std::find(ops.begin(), ops.end(), op) != ops.end();
  });
}

// cuda.GemvEpi / cuda.GemvCastEpi: a residual add and SwiGLU's SiLU(gate) * up computed in the
// GEMV's store give the same bits as the GEMV followed by the elementwise kernel (both round the
// GEMV's value to its dtype first), and match the reference.
TEST(CudaGemvEpilogue, SameBitsAsTheGemvAndItsRegion) {
  LUMINAL_REQUIRE_GPU();
  uint64_t seed = 40;
  int runs = 0;
  for (DType t : {DType::F32, DType::BF16})
    for (int64_t m : {1, 3, 8})
      for (int64_t k : {576, 4096})
        for (int which = 0; which < 2; ++which) {
          const int64_t n = 136;
          Graph g;
          Tensor x = g.tensor("x", {Expr(m), Expr(k)}, t);
          Tensor w = g.tensor("w", {Expr(n), Expr(k)}, t);
          Tensor r = g.tensor("r", {Expr(m), Expr(n)}, t);
          const Tensor y = x.matmul(w.transpose(0, 1));
          const Tensor out = (which == 0 ? r + y : r.silu() * y).output("y");
          const std::string at = std::string(name(t)) + " m " + std::to_string(m) + " k " +
                                 std::to_string(k) + (which ? " swiglu" : " residual") + ": ";
          auto [fused, epi] = forced_exact(g, {"cuda.GemvEpi", "cuda.GemvCastEpi"});
          ASSERT_EQ(epi, 1) << at << fused.op_mix_string();
          auto [plain, gemv] = forced_exact(g, {"cuda.Gemv", "cuda.GemvCast", "cuda.Fused"});
          ASSERT_GE(gemv, 1) << at << plain.op_mix_string();
          ASSERT_EQ(plain.op_mix_string().find("Epi"), std::string::npos)
              << at << plain.op_mix_string();
          const std::vector<double> xs = uniform(t, m * k, ++seed, -1, 1);
          const std::vector<double> ws = uniform(t, n * k, ++seed, -1, 1);
          const std::vector<double> rs = uniform(t, m * n, ++seed, -2, 2);
          const testing::BufferMap in{
              {"x", from_doubles(t, xs)}, {"w", from_doubles(t, ws)}, {"r", from_doubles(t, rs)}};
          testing::LoadedPlan lf = testing::load_plan(testing::gpu(), fused);
          testing::LoadedPlan lpl = testing::load_plan(testing::gpu(), plain);
          const HostBuffer a = testing::run_plan(lf, in, {}).outputs.at("y");
          const HostBuffer b = testing::run_plan(lpl, in, {}).outputs.at("y");
          ASSERT_EQ(a.bytes, b.bytes) << at << "epilogue and GEMV + region differ";
          ReferenceRuntime ref(g);
          for (const auto& [label, buf] : in)
            ref.set_bytes(label, buf.bytes.data(), buf.bytes.size());
          ref.execute({});
          const std::vector<double> want = to_doubles(t, ref.get_bytes(out));
          const std::vector<double> got = to_doubles(t, a.bytes);
          std::vector<double> tol(want.size());
          for (size_t i = 0; i < want.size(); ++i)
            tol[i] = (t == DType::BF16 ? 0x1p-6 : 0x1p-18) * (1 + std::fabs(want[i])) *
                     std::sqrt(static_cast<double>(k));
          const auto d = compare_values(got, want, tol);
          EXPECT_EQ(d.bad, 0) << at << describe(d, got.size());
          ++runs;
        }
  EXPECT_EQ(runs, 24);
}

TEST(CudaReduceSplit, SumsAndMaximaMatchTheReference) {
  LUMINAL_REQUIRE_GPU();
  uint64_t seed = 100;
  for (DType t : {DType::F32, DType::BF16})
    for (int64_t rows : {1, 3, 40})
      for (int64_t len : {4096, 5003, 128256}) {
        Graph g;
        Tensor x = g.tensor("x", {Expr(rows), Expr(len)}, t);
        x.sum(-1).output("sum");
        x.max(-1).output("max");
        auto [l, splits] = forced(g, {"cuda.SumSplit", "cuda.MaxSplit"});
        const std::string at =
            std::string(name(t)) + " " + std::to_string(rows) + " x " + std::to_string(len) + ": ";
        ASSERT_EQ(splits, 2) << at << l.op_mix_string();
        std::vector<double> xs = uniform(t, rows * len, ++seed, -2, 2);
        if (rows == 3) xs[static_cast<size_t>(len + len / 2)] = std::nan("");  // row 1
        testing::LoadedPlan lp = testing::load_plan(testing::gpu(), l);
        const testing::PlanRun r = testing::run_plan(lp, {{"x", from_doubles(t, xs)}}, {});
        const std::vector<double> sum = to_doubles(t, r.outputs.at("sum").bytes);
        const std::vector<double> mx = to_doubles(t, r.outputs.at("max").bytes);
        std::vector<double> want_sum(static_cast<size_t>(rows)), want_max(want_sum.size()),
            tol(want_sum.size()), zero(want_sum.size(), 0.0);
        const double ulp = t == DType::BF16 ? 0x1p-8 : 0x1p-23;
        for (int64_t i = 0; i < rows; ++i) {
          double s = 0, m = -std::numeric_limits<double>::infinity();
          for (int64_t q = 0; q < len; ++q) {
            const double v = xs[static_cast<size_t>(i * len + q)];
            s += v;
            m = std::isnan(v) || std::isnan(m) ? std::nan("") : std::max(m, v);
          }
          want_sum[static_cast<size_t>(i)] = s;
          want_max[static_cast<size_t>(i)] = m;
          tol[static_cast<size_t>(i)] = ulp * std::fabs(s) + 1e-12;
        }
        const auto ds = compare_values(sum, want_sum, tol);
        EXPECT_EQ(ds.bad, 0) << at << "sum: " << describe(ds, sum.size());
        const auto dm = compare_values(mx, want_max, zero);
        EXPECT_EQ(dm.bad, 0) << at << "max: " << describe(dm, mx.size());
      }
}

TEST(CudaReduceSplit, GreedyArgmaxOver128kLogits) {
  LUMINAL_REQUIRE_GPU();
  const int64_t V = 128256;
  Graph g;
  Tensor logits = g.tensor("logits", {Expr(V)}, DType::BF16);
  nn::greedy_token(logits).output("token");
  auto [l, splits] = forced(g, {"cuda.SumSplit", "cuda.MaxSplit"});
  ASSERT_GE(splits, 2) << l.op_mix_string();
  testing::LoadedPlan lp = testing::load_plan(testing::gpu(), l);
  for (int variant = 0; variant < 3; ++variant) {
    std::vector<double> xs = uniform(DType::BF16, V, 500 + static_cast<uint64_t>(variant), -8, 8);
    int64_t want = 0;
    if (variant == 0) {  // a unique maximum near the end
      xs[V - 7] = 30;
      want = V - 7;
    } else if (variant == 1) {  // ties: the lowest index
      xs[90001] = 30;
      xs[4242] = 30;
      xs[127000] = 30;
      want = 4242;
    } else {  // every logit equal: index 0
      xs.assign(static_cast<size_t>(V), -1.5);
      want = 0;
    }
    const testing::PlanRun r =
        testing::run_plan(lp, {{"logits", from_doubles(DType::BF16, xs)}}, {});
    const std::vector<double> tok = to_doubles(DType::I32, r.outputs.at("token").bytes);
    ASSERT_EQ(tok.size(), 1u);
    EXPECT_EQ(static_cast<int64_t>(tok[0]), want) << "variant " << variant;
  }
}

}  // namespace
}  // namespace luminal
