// GPU suite (skips without a GPU or cuBLASLt): cuBLASLt epilogues in plans. Programs forced to
// take the cuBLASLt nodes with the most epilogue inputs (beta = 1 with a residual as C, a
// per-feature bias, both; a batched product with both), in f32 and bf16, on both executors,
// with the row count changing inside the bucket and new buffers at every run: every output
// matches the reference runtime.
#include <gtest/gtest.h>

#if __has_include(<cublasLt.h>) && defined(LUMINAL_HAVE_CUBLASLT)
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "cuda/cuda_test_util.hpp"
#include "cuda/lt_util.hpp"
#include "luminal/luminal.hpp"
#include "support/llir_direct.hpp"

namespace luminal::cuda {
namespace {

using testing::lt_backend;
using testing::lt_or_skip;

/// Values for an input of `n` elements (seeded by its name's length and `salt`).
std::vector<double> values(size_t n, double salt) {
  std::vector<double> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = std::sin(salt * static_cast<double>(i + 1));
  return v;
}

TEST(CudaLtEpilogue, ResidualAndBiasEpiloguesOnBothExecutors) {
  LUMINAL_REQUIRE_GPU();
  if (!lt_or_skip()) GTEST_SKIP() << "no cuBLASLt";
  for (DType t : {DType::F32, DType::BF16}) {
    Graph g;
    g.declare_dim("s", 1, 16);
    const Expr s = Expr::var("s");
    Tensor x = g.tensor("x", {s, Expr(128)}, t);
    Tensor w = g.tensor("w", {96, 128}, t);
    Tensor b = g.tensor("b", {96}, t);
    Tensor r = g.tensor("r", {s, Expr(96)}, t);
    Tensor q = g.tensor("q", {Expr(2), s, Expr(32)}, t);
    Tensor k = g.tensor("k", {2, 24, 32}, t);
    Tensor r3 = g.tensor("r3", {Expr(2), s, Expr(24)}, t);
    Tensor b3 = g.tensor("b3", {24}, t);
    Tensor y = x.matmul(w.transpose(0, 1));
    (y + b).output("bias");
    (y + r).output("residual");
    ((y + b) + r).output("both");
    ((q.matmul(k.transpose(1, 2)) + r3) + b3).output("batched");
    for (CudaOptions::Executor e : {CudaOptions::Executor::Graph, CudaOptions::Executor::Stream}) {
      CudaBackend& be = lt_backend(e);
      const char* exec = e == CudaOptions::Executor::Graph ? "graph" : "stream";
      const LlirGraph llir = testing::prefer(g, be, [](const EGraph& eg, ENodeId n) {
        return is_lt_op(eg.node(n).op) ? 1.0 + static_cast<double>(eg.node(n).children.size())
                                       : 0.0;
      });
      std::vector<std::string> kinds;
      for (const LlirNode& n : llir.nodes)
        if (is_lt_op(n.op)) kinds.push_back(lt_epilogue(n.attrs).serialize());
      EXPECT_EQ(std::count(kinds.begin(), kinds.end(), "b"), 1) << llir.to_text();
      EXPECT_EQ(std::count(kinds.begin(), kinds.end(), "c"), 1) << llir.to_text();
      EXPECT_EQ(std::count(kinds.begin(), kinds.end(), "cb"), 2) << llir.to_text();
      luminal::testing::LoadedPlan lp =
          luminal::testing::load_plan(be, llir, {{{"s", 1}}, {{"s", 16}}});
      for (int64_t sv : {7, 9, 7}) {
        const size_t su = static_cast<size_t>(sv);
        const std::map<std::string, std::vector<double>> in = {
            {"x", values(su * 128, 0.37)},    {"w", values(96 * 128, 0.11)},
            {"b", values(96, 0.7)},           {"r", values(su * 96, 0.23)},
            {"q", values(2 * su * 32, 0.31)}, {"k", values(2 * 24 * 32, 0.19)},
            {"r3", values(2 * su * 24, 0.5)}, {"b3", values(24, 0.9)}};
        ReferenceRuntime rt(g);
        luminal::testing::BufferMap host;
        for (const auto& [name, v] : in) {
          rt.set(name, v);
          host[name] = to_host_buffer(v.data(), v.size(), t, name);
        }
        rt.execute({{"s", sv}});
        const luminal::testing::PlanRun run = luminal::testing::run_plan(lp, host, {{"s", sv}});
        for (const char* out : {"bias", "residual", "both", "batched"}) {
          const std::vector<double> want = rt.get<double>(out);
          const std::vector<double> got =
              from_host_buffer<double>(run.outputs.at(out), out, "double");
          ASSERT_EQ(got.size(), want.size()) << out;
          // bf16: the library rounds A B + C once where the graph rounds the product first.
          const double rtol = t == DType::F32 ? 1e-4 : 3e-2;
          size_t bad = 0;
          for (size_t i = 0; i < got.size(); ++i)
            bad += !(std::abs(got[i] - want[i]) <= rtol * (1 + std::abs(want[i])));
          std::printf("[lt-epilogue] %s %s s=%lld %s: %zu of %zu elements wrong\n", name(t).data(),
                      exec, static_cast<long long>(sv), out, bad, got.size());
          EXPECT_EQ(bad, 0u) << name(t) << " " << exec << " " << out << " s=" << sv;
        }
      }
    }
  }
}

}  // namespace
}  // namespace luminal::cuda
#else
TEST(CudaLtEpilogue, NoCublasLtHeader) { GTEST_SKIP() << "built without cublasLt.h"; }
#endif
