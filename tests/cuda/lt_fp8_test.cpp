// GPU suite (skips without a GPU or cuBLASLt): FP8 products on cuBLASLt in plans. A scaled FP8
// linear layer, y = ((x / s_in) cast to E4M3) @ W^T * (s_in * s_w), with W in E4M3 or E5M2, read
// by cuBLASLt straight from the FP8 tensors with s_in * s_w as its scale pointer (D in f32, and
// in bf16 through the graph's cast, with a bf16 bias after it; a ReLU after that stays a kernel),
// forced into the program on both executors while the row count changes inside the bucket: every
// output matches the reference runtime (which rounds x / s_in to FP8 the same way and
// multiplies the FP8 values exactly).
#include <gtest/gtest.h>

#if __has_include(<cublasLt.h>) && defined(LUMINAL_HAVE_CUBLASLT)
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "cuda/cuda_test_util.hpp"
#include "cuda/lt_util.hpp"
#include "luminal/cuda/plan.hpp"
#include "luminal/luminal.hpp"
#include "support/llir_direct.hpp"

namespace luminal::cuda {
namespace {

using testing::lt_backend;
using testing::lt_or_skip;
using testing::values;

TEST(CudaLtFp8, AScaledFp8LinearLayerOnBothExecutors) {
  LUMINAL_REQUIRE_GPU();
  if (!lt_or_skip()) GTEST_SKIP() << "no cuBLASLt";
  for (DType wt : {DType::F8E4M3, DType::F8E5M2}) {
    Graph g;
    g.declare_dim("s", 1, 32);
    const Expr s = Expr::var("s");
    Tensor x = g.tensor("x", {s, Expr(128)});
    Tensor s_in = g.tensor("s_in", {1});
    Tensor w = g.tensor("w", {96, 128}, wt);
    Tensor s_w = g.tensor("s_w", {1});
    Tensor b = g.tensor("b", {96});
    Tensor b16 = g.tensor("b16", {96}, DType::BF16);
    Tensor q = (x / s_in).cast(DType::F8E4M3);
    Tensor y = q.cast(DType::F32).matmul(w.cast(DType::F32).transpose(0, 1)) * (s_in * s_w);
    y.output("y");
    y.cast(DType::BF16).output("y16");
    (y + b).output("yb");                        // (a separate Add: an f32 D takes no f32 bias)
    (y.cast(DType::BF16) + b16).output("yb16");  // a bias epilogue on the bf16 D
    // A ReLU after the bias: no epilogue yet (the fused ReLU's program also takes in the scale
    // multiply, so no program reads the biased product alone); correct as a kernel.
    (y.cast(DType::BF16) + b16).relu().output("ybr16");
    for (CudaOptions::Executor e : {CudaOptions::Executor::Graph, CudaOptions::Executor::Stream}) {
      CudaBackend& be = lt_backend(e);
      const char* exec = e == CudaOptions::Executor::Graph ? "graph" : "stream";
      // cuBLASLt nodes on FP8 operands with the most inputs (scale, bias) wherever offered.
      const LlirGraph llir = testing::prefer(g, be, [](const EGraph& eg, ENodeId id) {
        const ENode& n = eg.node(id);
        if (!is_lt_op(n.op)) return 0.0;
        return 1.0 + (testing::lt_reads_fp8(eg, id) ? 10.0 : 0.0) +
               static_cast<double>(n.children.size());
      });
      std::vector<std::string> kinds;
      for (const LlirNode& n : llir.nodes)
        if (is_lt_op(n.op)) kinds.push_back(lt_epilogue(n.attrs).serialize());
      std::sort(kinds.begin(), kinds.end());
      EXPECT_EQ(kinds, (std::vector<std::string>{"bs", "s", "s"})) << llir.to_text();
      luminal::testing::LoadedPlan lp =
          luminal::testing::load_plan(be, llir, {{{"s", 1}}, {{"s", 32}}});
      const std::string summary = dynamic_cast<const CudaPlan&>(*lp.plan).lt_summary();
      std::printf("[lt-fp8] %s %s summary:\n%s", name(wt).data(), exec, summary.c_str());
      EXPECT_NE(summary.find("scaled"), std::string::npos) << summary;
      for (int64_t sv : {7, 9, 7, 1}) {
        const size_t su = static_cast<size_t>(sv);
        const std::map<std::string, std::vector<double>> in = {
            {"x", values(su * 128, 0.37, 3.0)}, {"s_in", {0.5}},
            {"w", values(96 * 128, 0.11, 2.0)}, {"s_w", {0.125}},
            {"b", values(96, 0.7, 1.0)},        {"b16", values(96, 0.9, 1.0)}};
        const auto runs = testing::run_with_reference(
            g, lp, in,
            [&](const std::string& nm) {
              return nm == "w" ? wt : nm == "b16" ? DType::BF16 : DType::F32;
            },
            {{"s", sv}}, {"y", "y16", "yb", "yb16", "ybr16"});
        for (const auto& [out, r] : runs) {
          const std::vector<double>& got = r.got;
          const std::vector<double>& want = r.want;
          ASSERT_EQ(got.size(), want.size()) << out;
          double peak = 0;
          for (double v : want)
            peak = std::max(peak, std::abs(v));
          // The FP8 values multiply exactly and sum in f32 on both sides; a quantisation of
          // x / s_in one FP8 step apart moves an output by at most ~6% of one term (of 128):
          // 1% of the largest output. bf16 adds its rounding of the result.
          const double bf16 = out.back() == '6' ? 8e-3 : 0.0;  // (the 16-bit ones)
          size_t bad = 0, first = 0;
          for (size_t i = 0; i < got.size(); ++i)
            if (!(std::abs(got[i] - want[i]) <= 1e-2 * peak + bf16 * std::abs(want[i]))) {
              if (bad++ == 0) first = i;
            }
          std::printf("[lt-fp8] %s %s s=%lld %s: %zu of %zu elements wrong (peak %.3g)%s\n",
                      name(wt).data(), exec, static_cast<long long>(sv), out.c_str(), bad,
                      got.size(), peak,
                      bad ? (" first [" + std::to_string(first) + "]: got " +
                             std::to_string(got[first]) + ", want " + std::to_string(want[first]))
                                .c_str()
                          : "");
          EXPECT_EQ(bad, 0u) << name(wt) << " " << exec << " " << out << " s=" << sv;
        }
      }
    }
  }
}

}  // namespace
}  // namespace luminal::cuda
#else
TEST(CudaLtFp8, NoCublasLtHeader) { GTEST_SKIP() << "built without cublasLt.h"; }
#endif
