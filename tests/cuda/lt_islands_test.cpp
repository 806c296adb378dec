// GPU suite (skips without a GPU or cuBLASLt): how a cuBLASLt call's island in a bucket's CUDA
// graph changes. A forced change of algorithm to one that launches another number of kernels (a
// test hook picks the heuristic's n-th answer; the suite first counts each answer's kernels by
// capturing it on its own): the island is replaced, the graph re-instantiated and counted, every
// output right, at s 7 -> 9 -> 7.
#include <gtest/gtest.h>

#if __has_include(<cublasLt.h>) && defined(LUMINAL_HAVE_CUBLASLT)
#include <cmath>
#include <cstdio>
#include <memory>
#include <optional>
#include <vector>

#include "cuda/cuda_test_util.hpp"
#include "cuda/lt_util.hpp"
#include "luminal/cuda/cublaslt/lt_prepare.hpp"
#include "luminal/cuda/device.hpp"
#include "luminal/cuda/driver.hpp"
#include "luminal/cuda/plan.hpp"
#include "luminal/cuda/testing.hpp"
#include "luminal/luminal.hpp"
#include "support/llir_direct.hpp"

namespace luminal::cuda {
namespace {

using testing::lt_backend;
using testing::lt_or_skip;
using testing::values;

/// Clears the pick hook when a test leaves, however it leaves.
struct PickReset {
  ~PickReset() { TestHooks::pick_lt_algorithm(nullptr); }
};

/// The nodes cuBLASLt captures for `spec` with the heuristic's answer `pick` (-1: as a plan
/// prepares it); nullopt when the heuristic has fewer answers.
std::optional<size_t> captured_nodes(const LtHandle& h, int device, const LtSpec& spec, int pick,
                                     CUdeviceptr mem, CUdeviceptr workspace) {
  const CudaApi& cu = cuda_api();
  PickReset reset;
  TestHooks::pick_lt_algorithm([pick](const LtSpec&) { return pick; });
  std::unique_ptr<LtPrepared> p;
  try {
    p = std::make_unique<LtPrepared>(h, spec, device);
  } catch (const Error&) {
    return std::nullopt;
  }
  CUstream st = nullptr;
  CUgraph g = nullptr;
  check(cu.cuStreamCreate(&st, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  check(cu.cuGraphCreate(&g, 0), "cuGraphCreate");
  check(cu.cuStreamBeginCaptureToGraph(st, g, nullptr, nullptr, 0,
                                       CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
        "cuStreamBeginCaptureToGraph");
  p->enqueue({mem, mem, mem, mem}, workspace, st);  // captured, never run
  CUgraph ended = nullptr;
  check(cu.cuStreamEndCapture(st, &ended), "cuStreamEndCapture");
  size_t n = 0;
  check(cu.cuGraphGetNodes(g, nullptr, &n), "cuGraphGetNodes");
  cu.cuGraphDestroy(g);
  cu.cuStreamDestroy(st);
  return n;
}

/// Elements of `got` off `want` by more than rtol relative (plus rtol absolute).
size_t wrong(const testing::Compared& r, double rtol) {
  EXPECT_EQ(r.got.size(), r.want.size());
  size_t bad = 0;
  for (size_t i = 0; i < r.got.size() && i < r.want.size(); ++i)
    bad += !(std::abs(r.got[i] - r.want[i]) <= rtol * (1 + std::abs(r.want[i])));
  return bad;
}

TEST(CudaLtIslands, AForcedAlgorithmWithAnotherKernelCountReinstantiatesAndStaysCorrect) {
  LUMINAL_REQUIRE_GPU();
  const LtApi* lt = lt_or_skip();
  if (!lt) GTEST_SKIP() << "no cuBLASLt";
  PickReset reset;
  // Each change recaptured at once (the default runs a new length on the stream first).
  CudaBackend& be = lt_backend(CudaOptions::Executor::Graph, CudaOptions::NewDims::Capture);
  const int device = static_cast<int>(be.device().cu_device);
  be.device().bind_context();
  LtHandle h(*lt);
  const CudaApi& cu = cuda_api();
  CUdeviceptr mem = 0, ws = 0;
  check(cu.cuMemAlloc(&mem, uint64_t{64} << 20), "cuMemAlloc");
  check(cu.cuMemAlloc(&ws, uint64_t{32} << 20), "cuMemAlloc");
  std::string tried;
  bool ran = false;
  // Small m and n over a long k: the heuristic's answers include split-k forms (a reduction
  // kernel after the product) and single-kernel ones.
  for (DType t : {DType::F32, DType::BF16}) {
    PickReset each;  // the hooks below read this iteration's locals
    Graph g;
    g.declare_dim("s", 1, 16);
    Tensor x = g.tensor("x", {Expr::var("s"), Expr(4096)}, t);
    Tensor w = g.tensor("w", {64, 4096}, t);
    (x.matmul(w.transpose(0, 1)) * 0.5).output("y");
    const LlirGraph llir = testing::prefer_lt(g, be);
    ASSERT_EQ(testing::lt_nodes(llir).size(), 1u) << llir.to_text();
    luminal::testing::LoadedPlan lp =
        luminal::testing::load_plan(be, llir, {{{"s", 1}}, {{"s", 16}}});
    auto run = [&](int64_t s) {
      const size_t su = static_cast<size_t>(s);
      const auto r = testing::run_with_reference(
          g, lp, {{"x", values(su * 4096, 0.37)}, {"w", values(64 * 4096, 0.11, 0.05)}},
          [&](const std::string&) { return t; }, {{"s", s}}, {"y"});
      return wrong(r.at("y"), t == DType::F32 ? 1e-4 : 3e-2);
    };
    // The step's spec at s = 7 and s = 9 (a spec has m or n = s).
    std::optional<LtSpec> spec7, spec9;
    TestHooks::pick_lt_algorithm([&](const LtSpec& sp) {
      if (sp.m == 7 || sp.n == 7) spec7 = sp;
      if (sp.m == 9 || sp.n == 9) spec9 = sp;
      return -1;
    });
    EXPECT_EQ(run(7), 0u);
    EXPECT_EQ(run(9), 0u);
    ASSERT_TRUE(spec7 && spec9) << "no prepare at s = 7 and 9";
    // Each heuristic answer's kernel count; a pair (s = 7, s = 9) that differs.
    std::vector<size_t> n7, n9;
    for (int i = 0; i < 16; ++i) {
      const std::optional<size_t> a = captured_nodes(h, device, *spec7, i, mem, ws);
      const std::optional<size_t> b = captured_nodes(h, device, *spec9, i, mem, ws);
      if (a) n7.push_back(*a);
      if (b) n9.push_back(*b);
    }
    auto list = [](const std::vector<size_t>& v) {
      std::string o;
      for (size_t n : v)
        o += (o.empty() ? "" : " ") + std::to_string(n);
      return o;
    };
    std::printf("[lt-islands] %s: nodes per heuristic answer at s = 7: %s; at s = 9: %s\n",
                name(t).data(), list(n7).c_str(), list(n9).c_str());
    tried += std::string(name(t)) + ": s=7 [" + list(n7) + "], s=9 [" + list(n9) + "]; ";
    int a = -1, b = -1;
    for (size_t i = 0; i < n7.size() && a < 0; ++i)
      for (size_t j = 0; j < n9.size() && a < 0; ++j)
        if (n7[i] != n9[j]) {
          a = static_cast<int>(i);
          b = static_cast<int>(j);
        }
    if (a < 0) continue;
    TestHooks::pick_lt_algorithm([&](const LtSpec& sp) {
      if (sp.m == 7 || sp.n == 7) return a;
      if (sp.m == 9 || sp.n == 9) return b;
      return -1;
    });
    const GraphStats g0 = be.graph_stats();
    const CudaBackend::LtStats l0 = be.lt_stats();
    for (int64_t s : {7, 9, 7})
      EXPECT_EQ(run(s), 0u) << name(t) << " s=" << s;
    const GraphStats g1 = be.graph_stats();
    const CudaBackend::LtStats l1 = be.lt_stats();
    const std::string summary = dynamic_cast<const CudaPlan&>(*lp.plan).lt_summary();
    std::printf(
        "[lt-islands] %s: answer %d at s = 7 (%zu nodes), %d at s = 9 (%zu nodes): prepares %llu, "
        "re-instantiations %llu\n%s",
        name(t).data(), a, n7[static_cast<size_t>(a)], b, n9[static_cast<size_t>(b)],
        static_cast<unsigned long long>(l1.prepares - l0.prepares),
        static_cast<unsigned long long>(g1.reinstantiations - g0.reinstantiations),
        summary.c_str());
    // Each change prepares (forced answers are never kept) and, the kernel count differing,
    // re-instantiates the executable (counted).
    EXPECT_EQ(l1.prepares - l0.prepares, 3u);
    EXPECT_EQ(l1.algo_kept, l0.algo_kept);
    EXPECT_GE(g1.reinstantiations - g0.reinstantiations, 2u);
    ran = true;
    break;
  }
  cu.cuMemFree(mem);
  cu.cuMemFree(ws);
  if (!ran) GTEST_SKIP() << "every heuristic answer captured as the same node count: " << tried;
}

}  // namespace
}  // namespace luminal::cuda
#else
TEST(CudaLtIslands, NoCublasLtHeader) { GTEST_SKIP() << "built without cublasLt.h"; }
#endif
