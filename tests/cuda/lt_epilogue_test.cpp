// GPU suite (skips without a GPU or cuBLASLt): cuBLASLt epilogues and options in plans.
// - Programs forced to take the cuBLASLt nodes with the most epilogue inputs (beta = 1 with a
//   residual as C, a per-feature bias, both; a batched product with both), in f32 and bf16, on
//   both executors, with the row count changing inside the bucket (down to 1) and new buffers at
//   every run:
//   every output matches the reference runtime; re-prepares keep the step's algorithm; the
//   plan's summary lists the steps. (Its first
//   plan makes the process's first cuBLASLt call inside a capture: the probe.)
// - Activation epilogues (ReLU, tanh GELU, each with and without a bias) in f32 and bf16 on both
//   executors: every output matches the reference runtime.
// - allow_tf32: an f32 product then differs from the f32 reference by TF32 rounding (and
//   without it, it does not); the device key says so.
// - The capture probe: when it fails (forced), plans with cuBLASLt steps run on the stream and
//   stay correct.
// - A warm start from the compile cache: the program with cuBLASLt steps (and epilogues) comes
//   back from the cache text, its calls are prepared again at load, and the results equal the
//   cold session's bit for bit.
#include <gtest/gtest.h>

#if __has_include(<cublasLt.h>) && defined(LUMINAL_HAVE_CUBLASLT)
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "cuda/cuda_test_util.hpp"
#include "cuda/lt_util.hpp"
#include "luminal/cuda/plan.hpp"
#include "luminal/cuda/testing.hpp"
#include "luminal/luminal.hpp"
#include "luminal/program/llir_serial.hpp"
#include "support/llir_direct.hpp"

namespace luminal::cuda {
namespace {

using testing::lt_backend;
using testing::lt_or_skip;
using testing::values;

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
      const std::string summary = dynamic_cast<const CudaPlan&>(*lp.plan).lt_summary();
      std::printf("[lt-epilogue] %s %s summary:\n%s", name(t).data(), exec, summary.c_str());
      EXPECT_NE(summary.find("4 steps"), std::string::npos) << summary;
      EXPECT_NE(summary.find("epilogue=+C+bias"), std::string::npos) << summary;
      // The first plan of this process with cuBLASLt steps probed capture with the process's
      // first cuBLASLt call, inside a capture: it worked, so the plan runs as a graph.
      if (e == CudaOptions::Executor::Graph) {
        EXPECT_TRUE(dynamic_cast<const CudaPlan&>(*lp.plan).graph_executor()) << summary;
      }
      const CudaBackend::LtStats before = be.lt_stats();
      for (int64_t sv : {7, 9, 7, 1}) {
        const size_t su = static_cast<size_t>(sv);
        const std::map<std::string, std::vector<double>> in = {
            {"x", values(su * 128, 0.37)},    {"w", values(96 * 128, 0.11)},
            {"b", values(96, 0.7)},           {"r", values(su * 96, 0.23)},
            {"q", values(2 * su * 32, 0.31)}, {"k", values(2 * 24 * 32, 0.19)},
            {"r3", values(2 * su * 24, 0.5)}, {"b3", values(24, 0.9)}};
        const auto runs =
            testing::run_with_reference(g, lp, in, [&](const std::string&) { return t; },
                                        {{"s", sv}}, {"bias", "residual", "both", "batched"});
        for (const auto& [out, r] : runs) {
          const std::vector<double>& got = r.got;
          const std::vector<double>& want = r.want;
          ASSERT_EQ(got.size(), want.size()) << out;
          // bf16: the library rounds A B + C once where the graph rounds the product first.
          const double rtol = t == DType::F32 ? 1e-4 : 3e-2;
          size_t bad = 0;
          for (size_t i = 0; i < got.size(); ++i)
            bad += !(std::abs(got[i] - want[i]) <= rtol * (1 + std::abs(want[i])));
          std::printf("[lt-epilogue] %s %s s=%lld %s: %zu of %zu elements wrong\n", name(t).data(),
                      exec, static_cast<long long>(sv), out.c_str(), bad, got.size());
          EXPECT_EQ(bad, 0u) << name(t) << " " << exec << " " << out << " s=" << sv;
        }
      }
      // s 16 (load) -> 7 -> 9 -> 7 -> 1: new specs, each prepared keeping the step's algorithm
      // where cuBLASLt accepts it for the new m (then the island's kernels stay: updated in place).
      const CudaBackend::LtStats after = be.lt_stats();
      std::printf(
          "[lt-epilogue] %s %s: prepares %llu (%llu kept the algorithm), recaptures %llu "
          "(%llu in place)\n",
          name(t).data(), exec, static_cast<unsigned long long>(after.prepares - before.prepares),
          static_cast<unsigned long long>(after.algo_kept - before.algo_kept),
          static_cast<unsigned long long>(after.recaptures - before.recaptures),
          static_cast<unsigned long long>(after.in_place - before.in_place));
      EXPECT_GE(after.algo_kept - before.algo_kept, 1u);
    }
  }
}

// Activation epilogues: ReLU and the tanh GELU after a product, with and without a bias
// (RELU, GELU, RELU_BIAS, GELU_BIAS), f32 and bf16, both executors, the row count changing
// inside the bucket: every output matches the reference runtime.
TEST(CudaLtEpilogue, ActivationEpiloguesOnBothExecutors) {
  LUMINAL_REQUIRE_GPU();
  if (!lt_or_skip()) GTEST_SKIP() << "no cuBLASLt";
  for (DType t : {DType::F32, DType::BF16}) {
    Graph g;
    g.declare_dim("s", 1, 16);
    const Expr s = Expr::var("s");
    Tensor x = g.tensor("x", {s, Expr(128)}, t);
    Tensor w = g.tensor("w", {96, 128}, t);
    Tensor b = g.tensor("b", {96}, t);
    Tensor y = x.matmul(w.transpose(0, 1));
    y.relu().output("relu");
    y.gelu_tanh().output("gelu");
    (y + b).relu().output("bias_relu");
    (y + b).gelu_tanh().output("bias_gelu");
    for (CudaOptions::Executor e : {CudaOptions::Executor::Graph, CudaOptions::Executor::Stream}) {
      CudaBackend& be = lt_backend(e);
      const char* exec = e == CudaOptions::Executor::Graph ? "graph" : "stream";
      const LlirGraph llir = testing::prefer(g, be, [](const EGraph& eg, ENodeId n) {
        if (!is_lt_op(eg.node(n).op)) return 0.0;
        const bool act = lt_epilogue(eg.attrs_of(n)).act != LtActivation::None;
        return 1.0 + (act ? 10.0 : 0.0) + static_cast<double>(eg.node(n).children.size());
      });
      std::vector<std::string> kinds;
      for (const LlirNode& n : llir.nodes)
        if (is_lt_op(n.op)) kinds.push_back(lt_epilogue(n.attrs).serialize());
      std::sort(kinds.begin(), kinds.end());
      EXPECT_EQ(kinds, (std::vector<std::string>{"bg", "br", "g", "r"})) << llir.to_text();
      luminal::testing::LoadedPlan lp =
          luminal::testing::load_plan(be, llir, {{{"s", 1}}, {{"s", 16}}});
      std::printf("[lt-epilogue] activations %s %s:\n%s", name(t).data(), exec,
                  dynamic_cast<const CudaPlan&>(*lp.plan).lt_summary().c_str());
      for (int64_t sv : {7, 9, 1}) {
        const size_t su = static_cast<size_t>(sv);
        const std::map<std::string, std::vector<double>> in = {
            {"x", values(su * 128, 0.37)}, {"w", values(96 * 128, 0.11)}, {"b", values(96, 0.7)}};
        const auto runs =
            testing::run_with_reference(g, lp, in, [&](const std::string&) { return t; },
                                        {{"s", sv}}, {"relu", "gelu", "bias_relu", "bias_gelu"});
        for (const auto& [out, r] : runs) {
          const std::vector<double>& got = r.got;
          const std::vector<double>& want = r.want;
          ASSERT_EQ(got.size(), want.size()) << out;
          // f32: cuBLASLt's GELU evaluates tanh its own way (measured within 1e-5 here);
          // bf16: the epilogue rounds act(A B + bias) once where the graph rounds the product.
          const double rtol = t == DType::F32 ? 1e-4 : 3e-2;
          size_t bad = 0, zeros = 0;
          double worst = 0;
          for (size_t i = 0; i < got.size(); ++i) {
            const double err = std::abs(got[i] - want[i]) / (1 + std::abs(want[i]));
            worst = std::max(worst, err);
            bad += !(err <= rtol);
            zeros += want[i] == 0;
          }
          std::printf(
              "[lt-epilogue] %s %s s=%lld %s: %zu of %zu elements wrong (worst %.2e, %zu zeros)\n",
              name(t).data(), exec, static_cast<long long>(sv), out.c_str(), bad, got.size(), worst,
              zeros);
          EXPECT_EQ(bad, 0u) << name(t) << " " << exec << " " << out << " s=" << sv;
        }
      }
    }
  }
}

/// The largest |got - want| / (1 + |want|) of y = x @ w^T (f32, k = 1024) on `be`, forced onto
/// cuBLASLt.
double f32_product_error(CudaBackend& be) {
  Graph g;
  Tensor x = g.tensor("x", {64, 1024});
  Tensor w = g.tensor("w", {256, 1024});
  x.matmul(w.transpose(0, 1)).output("y");
  const LlirGraph llir = testing::prefer_lt(g, be);
  luminal::testing::LoadedPlan lp = luminal::testing::load_plan(be, llir);
  const auto runs = testing::run_with_reference(
      g, lp, {{"x", values(64 * 1024, 0.37)}, {"w", values(256 * 1024, 0.11)}},
      [](const std::string&) { return DType::F32; }, {}, {"y"});
  const std::vector<double>& got = runs.at("y").got;
  const std::vector<double>& want = runs.at("y").want;
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i)
    worst = std::max(worst, std::abs(got[i] - want[i]) / (1 + std::abs(want[i])));
  return worst;
}

TEST(CudaLtEpilogue, Tf32OnlyWhenAllowed) {
  LUMINAL_REQUIRE_GPU();
  if (!lt_or_skip()) GTEST_SKIP() << "no cuBLASLt";
  CudaOptions o;
  o.allow_tf32 = true;
  CudaBackend tf32(o);
  CudaBackend& plain = lt_backend(CudaOptions::Executor::Graph);
  ASSERT_TRUE(tf32.allow_tf32());
  EXPECT_FALSE(plain.allow_tf32());
  EXPECT_NE(tf32.device_key(), plain.device_key());
  EXPECT_NE(tf32.device_key().find(" tf32"), std::string::npos) << tf32.device_key();
  const double e32 = f32_product_error(plain), etf32 = f32_product_error(tf32);
  std::printf("[lt-epilogue] f32 product k=1024: worst relative error %.2e (f32), %.2e (tf32)\n",
              e32, etf32);
  // f32: k * eps; TF32 rounds each operand to 10 mantissa bits (2^-11 relative) first.
  EXPECT_LT(e32, 1024 * 1.2e-7);
  EXPECT_GT(etf32, 10 * e32);
  EXPECT_LT(etf32, 4 * std::sqrt(1024.0) * std::ldexp(1.0, -11));
}

TEST(CudaLtEpilogue, AFailedCaptureProbeRunsThePlanOnTheStream) {
  LUMINAL_REQUIRE_GPU();
  if (!lt_or_skip()) GTEST_SKIP() << "no cuBLASLt";
  TestHooks::fail_lt_capture_probe(true);
  CudaOptions o;
  o.executor = CudaOptions::Executor::Graph;
  CudaBackend be(o);
  const double err = f32_product_error(be);
  EXPECT_LT(err, 1024 * 1.2e-7);
  const CudaBackend::LtStats st = be.lt_stats();
  EXPECT_EQ(st.captures, 0u);
  EXPECT_GE(st.calls, 1u);
  // A backend made after it probes again (and captures).
  CudaBackend again(o);
  EXPECT_LT(f32_product_error(again), 1024 * 1.2e-7);
  EXPECT_GE(again.lt_stats().captures, 1u);
  EXPECT_EQ(again.lt_stats().calls, 0u);
}

TEST(CudaLtEpilogue, AWarmStartFromTheCompileCachePreparesAgainWithTheSameResults) {
  LUMINAL_REQUIRE_GPU();
  if (!lt_or_skip()) GTEST_SKIP() << "no cuBLASLt";
  namespace fs = std::filesystem;
  const fs::path dir = fs::temp_directory_path() / "luminal_lt_warm_start";
  fs::remove_all(dir);
  const char* was = std::getenv("LUMINAL_CACHE");
  const std::string saved = was ? was : "";
  setenv("LUMINAL_CACHE", "on", 1);
  Graph g;
  g.declare_dim("s", 1, 64);
  const Expr s = Expr::var("s");
  Tensor x = g.tensor("x", {s, Expr(256)}, DType::BF16);
  Tensor w = g.tensor("w", {512, 256}, DType::BF16);
  Tensor b = g.tensor("b", {512}, DType::BF16);
  Tensor r = g.tensor("r", {s, Expr(512)}, DType::BF16);
  ((x.matmul(w.transpose(0, 1)) + b) + r).output("y");
  const CompileOptions opts = CompileOptions().search_graph_limit(8).verbose(false).cache_dir(dir);
  CudaBackend& be = lt_backend(CudaOptions::Executor::Graph);
  const std::vector<double> xv = values(48 * 256, 0.37), wv = values(512 * 256, 0.11),
                            bv = values(512, 0.7), rv = values(48 * 512, 0.23);
  auto run = [&](Session& sess) {
    sess.set("x", xv);
    sess.set("w", wv);
    sess.set("b", bv);
    sess.set("r", rv);
    sess.execute({{"s", 48}});
    return sess.get<float>("y");
  };
  Session cold(g, be, opts);
  cold.compile();
  ASSERT_FALSE(cold.reports()[0].cached);
  const std::vector<float> want = run(cold);
  const uint64_t prepares = be.lt_stats().prepares;
  Session warm(g, be, opts);
  warm.compile();
  ASSERT_TRUE(warm.reports()[0].cached) << warm.report();
  const std::vector<float> got = run(warm);
  int lt = 0;
  for (const LlirNode& n : warm.llir({{"s", 48}}).nodes)
    lt += is_lt_op(n.op);
  std::printf("[lt-epilogue] warm start: %d cuBLASLt steps, %llu prepares at load and run\n", lt,
              static_cast<unsigned long long>(be.lt_stats().prepares - prepares));
  if (lt > 0) {
    EXPECT_GT(be.lt_stats().prepares, prepares);
  }
  EXPECT_EQ(write_llir(warm.llir({{"s", 48}})), write_llir(cold.llir({{"s", 48}})));
  EXPECT_EQ(got, want);
  if (was) {
    setenv("LUMINAL_CACHE", saved.c_str(), 1);
  } else {
    unsetenv("LUMINAL_CACHE");
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace luminal::cuda
#else
TEST(CudaLtEpilogue, NoCublasLtHeader) { GTEST_SKIP() << "built without cublasLt.h"; }
#endif
