// GPU suite (skips without a GPU or cuBLASLt): the library-call form of the GEMM planner run
// through cuBLASLt. Random matmul layouts (tests/support/gemm_cases.hpp: row- and column-major
// operands, padded leading dimensions, strided batches, the output's axes in any order) are
// planned, mapped to both families (lib_gemm), prepared (lt_prepare) and enqueued on the
// backend's stream; every result matches the product computed from the views, in f32, bf16,
// bf16 -> f32 and f16, and FP8 in its column-major TN form. The heuristic cache answers a
// repeated spec without a query.
#include <gtest/gtest.h>

#if __has_include(<cublasLt.h>) && defined(LUMINAL_HAVE_CUBLASLT)
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>

#include "cuda/cuda_test_util.hpp"
#include "cuda/lt_util.hpp"
#include "luminal/compiler/build_space.hpp"
#include "luminal/cuda/cublaslt/lt_matmul.hpp"
#include "luminal/cuda/cublaslt/lt_prepare.hpp"
#include "luminal/cuda/device.hpp"
#include "luminal/cuda/driver.hpp"
#include "luminal/cuda/plan.hpp"
#include "luminal/luminal.hpp"
#include "luminal/models/causal_lm.hpp"
#include "luminal/models/synthetic.hpp"
#include "support/env_scope.hpp"
#include "support/gemm_cases.hpp"
#include "support/llir_direct.hpp"

namespace luminal::cuda {
namespace {

using luminal::testing::GemmCase;
using luminal::testing::gpu;
using testing::lt_backend;
using testing::lt_or_skip;
using testing::prefer_lt;

/// Device memory holding `v` (doubles stored as dtype t).
Buffer device_values(DType t, const std::vector<double>& v) {
  std::vector<uint8_t> bytes(v.size() * static_cast<size_t>(size_bytes(t)));
  for (size_t i = 0; i < v.size(); ++i)
    store_from_double(t, bytes.data(), static_cast<int64_t>(i), v[i]);
  Buffer b = gpu().allocate(std::max<uint64_t>(bytes.size(), 16));
  gpu().upload(b, 0, bytes.data(), bytes.size());
  return b;
}

/// Runs case `c` through cuBLASLt with operand dtypes (ta, tb), output td, in family f; checks
/// the result. Returns false when cuBLASLt has no algorithm for the spec.
bool run_case(const LtHandle& h, const GemmCase& c, DType ta, DType tb, DType td, GemmFamily f,
              Buffer workspace, uint64_t seed, bool* ran) {
  *ran = false;
  const std::optional<LibGemm<int64_t>> g = lib_gemm_of(c.dims, c.sa, c.sb, c.k, f);
  if (!g) return true;
  const std::optional<LtTypes> t = lt_types(ta, tb, td, false);
  if (!t) {
    ADD_FAILURE() << "no cuBLASLt types for " << name(ta) << " x " << name(tb);
    return true;
  }
  LtSpec spec = lt_spec(*g, *t, workspace.bytes);
  std::unique_ptr<LtPrepared> p;
  try {
    p = std::make_unique<LtPrepared>(h, spec, static_cast<int>(gpu().device().cu_device));
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no algorithm"), std::string::npos) << e.what();
    return false;
  }
  const std::vector<double> a = luminal::testing::gemm_values(c.a_elems, seed),
                            b = luminal::testing::gemm_values(c.b_elems, seed + 1);
  const std::vector<double> want = luminal::testing::gemm_reference(c, a, b);
  Buffer ba = device_values(ta, a), bb = device_values(tb, b);
  const uint64_t out_bytes = static_cast<uint64_t>(c.out_elems) * size_bytes(td);
  Buffer bd = gpu().allocate(std::max<uint64_t>(out_bytes, 16));
  std::vector<uint8_t> got(out_bytes, 0xFF);  // NaN: an element never written shows
  gpu().upload(bd, 0, got.data(), out_bytes);
  auto dp = [](Buffer x) { return static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(x.ptr)); };
  const CUdeviceptr in[2] = {dp(ba), dp(bb)};
  p->enqueue({in[g->input_a], in[g->input_b], dp(bd), dp(bd)}, dp(workspace),
             static_cast<CUstream>(gpu().stream()));
  gpu().download(got.data(), bd, 0, out_bytes);
  for (int64_t i = 0; i < c.out_elems; ++i) {
    std::vector<uint8_t> one(static_cast<size_t>(size_bytes(td)));
    store_from_double(td, one.data(), 0, want[static_cast<size_t>(i)]);
    const double wr = load_as_double(td, one.data(), 0);  // the reference rounded to td
    const double v = load_as_double(td, got.data(), i);
    EXPECT_LE(std::abs(v - wr), std::abs(wr) * 2 * epsilon(td) + 1e-9)
        << family_name(f) << " " << name(ta) << " x " << name(tb) << " -> " << name(td) << " "
        << c.what << " element " << i << ": got " << v << ", want " << wr << "\n"
        << spec.to_string();
  }
  for (Buffer x : {ba, bb, bd})
    gpu().release(x);
  *ran = true;
  return true;
}

TEST(CudaLt, RandomLayoutsInBothFamiliesAndEveryFloatType) {
  LUMINAL_REQUIRE_GPU();
  const LtApi* lt = lt_or_skip();
  if (!lt) GTEST_SKIP() << "no cuBLASLt";
  gpu().device().bind_context();
  LtHandle h(*lt);
  Buffer ws = gpu().allocate(uint64_t{32} << 20);
  struct Types {
    DType a, b, d;
  };
  const Types types[] = {{DType::F32, DType::F32, DType::F32},
                         {DType::BF16, DType::BF16, DType::BF16},
                         {DType::BF16, DType::BF16, DType::F32},
                         {DType::F16, DType::F16, DType::F16}};
  for (GemmFamily f : {GemmFamily::ColSwapped, GemmFamily::Row}) {
    for (const Types& t : types) {
      int ran = 0, unsupported = 0;
      for (uint64_t seed = 0; seed < 120; ++seed) {
        const GemmCase c = luminal::testing::random_gemm_case(seed);
        bool did = false;
        if (!run_case(h, c, t.a, t.b, t.d, f, ws, seed, &did)) {
          ++unsupported;
          // The column-major family is cuBLASLt's native one: every layout has an algorithm.
          EXPECT_NE(f, GemmFamily::ColSwapped) << name(t.a) << " " << c.what;
        }
        ran += did;
        if (::testing::Test::HasFailure()) break;
      }
      std::printf("[lt] %s %s x %s -> %s: %d layouts ran, %d without an algorithm\n",
                  family_name(f), name(t.a).data(), name(t.b).data(), name(t.d).data(), ran,
                  unsupported);
      if (f == GemmFamily::ColSwapped) {
        EXPECT_GT(ran, 60);
      }
    }
  }
  gpu().release(ws);
}

TEST(CudaLt, Fp8InTheColumnMajorTnForm) {
  LUMINAL_REQUIRE_GPU();
  const LtApi* lt = lt_or_skip();
  if (!lt) GTEST_SKIP() << "no cuBLASLt";
  if (gpu().arch() < "sm_89") GTEST_SKIP() << "FP8 needs sm_89 or later";
  gpu().device().bind_context();
  LtHandle h(*lt);
  Buffer ws = gpu().allocate(uint64_t{32} << 20);
  // x [m=16, k=64] row-major @ W^T, W [n=32, k=64] row-major: dims [m, n, k].
  GemmCase c;
  c.dims = {16, 32, 64};
  c.sa = {64, 0, 1};
  c.sb = {0, 64, 1};
  c.k = 2;
  c.a_elems = 16 * 64;
  c.b_elems = 32 * 64;
  c.out_elems = 16 * 32;
  c.what = "x @ W^T 16x32x64";
  for (auto [a, b] : {std::pair{DType::F8E4M3, DType::F8E4M3},
                      {DType::F8E4M3, DType::F8E5M2},
                      {DType::F8E5M2, DType::F8E4M3}})
    for (DType d : {DType::F32, DType::BF16}) {
      bool did = false;
      EXPECT_TRUE(run_case(h, c, a, b, d, GemmFamily::ColSwapped, ws, 3, &did))
          << name(a) << " x " << name(b) << " -> " << name(d) << ": no algorithm";
      EXPECT_TRUE(did);
    }
  gpu().release(ws);
}

TEST(CudaLt, TheHeuristicCacheAnswersARepeatedSpec) {
  LUMINAL_REQUIRE_GPU();
  const LtApi* lt = lt_or_skip();
  if (!lt) GTEST_SKIP() << "no cuBLASLt";
  gpu().device().bind_context();
  LtHandle h(*lt);
  const auto g = lib_gemm_of({7, 96, 128}, {128, 0, 1}, {0, 128, 1}, 2, GemmFamily::ColSwapped);
  const LtSpec spec =
      lt_spec(*g, *lt_types(DType::BF16, DType::BF16, DType::BF16, false), uint64_t{32} << 20);
  const int dev = static_cast<int>(gpu().device().cu_device);
  const LtHeuristicStats before = lt_heuristic_stats();
  LtPrepared first(h, spec, dev);
  LtPrepared second(h, spec, dev);
  const LtHeuristicStats after = lt_heuristic_stats();
  EXPECT_LE(after.queries - before.queries, 1u);  // 0 when an earlier test asked already
  EXPECT_GE(after.hits - before.hits, 1u);
  EXPECT_LE(first.algo_workspace(), spec.workspace);
  // A spec no algorithm fits (an alignment of 1 byte for bf16 data) fails with a clear error.
  LtSpec odd = spec;
  odd.align[0] = 1;
  try {
    LtPrepared p(h, odd, dev);
    std::printf("[lt] an A alignment of 1 byte was accepted\n");
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no algorithm"), std::string::npos) << e.what();
  }
}

/// The nodes strictly between `entry` and `exit` (an island captured between two empty nodes).
std::vector<CUgraphNode> island_nodes(const CudaApi& cu, CUgraphNode entry, CUgraphNode exit) {
  std::vector<CUgraphNode> seen, todo = {entry};
  while (!todo.empty()) {
    CUgraphNode n = todo.back();
    todo.pop_back();
    size_t count = 0;
    check(cu.cuGraphNodeGetDependentNodes(n, nullptr, nullptr, &count), "dependents");
    std::vector<CUgraphNode> next(count);
    if (count)
      check(cu.cuGraphNodeGetDependentNodes(n, next.data(), nullptr, &count), "dependents");
    for (CUgraphNode x : next)
      if (x != exit && std::find(seen.begin(), seen.end(), x) == seen.end()) {
        seen.push_back(x);
        todo.push_back(x);
      }
  }
  return seen;
}

// The mechanism of cuBLASLt steps in a plan's graph: a call captured (thread-local mode, on a
// side stream) into an existing graph after an empty entry node, its last nodes joined to an
// empty exit node; launched, it computes the product. Recaptured with a new output pointer
// (the old island's nodes destroyed first), the executable takes it through cuGraphExecUpdate.
TEST(CudaLt, CapturedIntoAGraphBetweenEmptyNodesAndRecaptured) {
  LUMINAL_REQUIRE_GPU();
  const LtApi* lt = lt_or_skip();
  if (!lt) GTEST_SKIP() << "no cuBLASLt";
  const CudaApi& cu = cuda_api();
  gpu().device().bind_context();
  LtHandle h(*lt);
  GemmCase c;
  c.dims = {7, 96, 128};
  c.sa = {128, 0, 1};
  c.sb = {0, 128, 1};
  c.k = 2;
  c.a_elems = 7 * 128;
  c.b_elems = 96 * 128;
  c.out_elems = 7 * 96;
  const auto g = lib_gemm_of(c.dims, c.sa, c.sb, c.k, GemmFamily::ColSwapped);
  const LtSpec spec =
      lt_spec(*g, *lt_types(DType::F32, DType::F32, DType::F32, false), uint64_t{32} << 20);
  LtPrepared p(h, spec, static_cast<int>(gpu().device().cu_device));
  const std::vector<double> a = luminal::testing::gemm_values(c.a_elems, 1),
                            b = luminal::testing::gemm_values(c.b_elems, 2);
  const std::vector<double> want = luminal::testing::gemm_reference(c, a, b);
  Buffer ba = device_values(DType::F32, a), bb = device_values(DType::F32, b);
  Buffer d1 = gpu().allocate(static_cast<uint64_t>(c.out_elems) * 4);
  Buffer d2 = gpu().allocate(static_cast<uint64_t>(c.out_elems) * 4);
  Buffer ws = gpu().allocate(uint64_t{32} << 20);
  auto dp = [](Buffer x) { return static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(x.ptr)); };
  const CUdeviceptr in[2] = {dp(ba), dp(bb)};
  CUstream side = nullptr;
  check(cu.cuStreamCreate(&side, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  CUgraph graph = nullptr;
  check(cu.cuGraphCreate(&graph, 0), "cuGraphCreate");
  CUgraphNode entry = nullptr, exit = nullptr;
  check(cu.cuGraphAddEmptyNode(&entry, graph, nullptr, 0), "cuGraphAddEmptyNode");
  check(cu.cuGraphAddEmptyNode(&exit, graph, &entry, 1), "cuGraphAddEmptyNode");
  auto capture = [&](CUdeviceptr d) {
    for (CUgraphNode n : island_nodes(cu, entry, exit))
      check(cu.cuGraphDestroyNode(n), "cuGraphDestroyNode");
    check(cu.cuStreamBeginCaptureToGraph(side, graph, &entry, nullptr, 1,
                                         CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
          "cuStreamBeginCaptureToGraph");
    p.enqueue({in[g->input_a], in[g->input_b], d, d}, dp(ws), side);
    CUstreamCaptureStatus status{};
    const CUgraphNode* deps = nullptr;
    size_t ndeps = 0;
    check(cu.cuStreamGetCaptureInfo(side, &status, nullptr, nullptr, &deps, nullptr, &ndeps),
          "cuStreamGetCaptureInfo");
    const std::vector<CUgraphNode> last(deps, deps + ndeps);
    CUgraph captured = nullptr;
    check(cu.cuStreamEndCapture(side, &captured), "cuStreamEndCapture");
    EXPECT_EQ(captured, graph);
    for (CUgraphNode n : last)
      check(cu.cuGraphAddDependencies(graph, &n, &exit, nullptr, 1), "cuGraphAddDependencies");
    return island_nodes(cu, entry, exit).size();
  };
  const size_t nodes = capture(dp(d1));
  std::printf("[lt] captured island: %zu nodes\n", nodes);
  EXPECT_GE(nodes, 1u);
  CUgraphExec exec = nullptr;
  check(cu.cuGraphInstantiateWithFlags(&exec, graph, 0), "cuGraphInstantiateWithFlags");
  const CUstream stream = static_cast<CUstream>(gpu().stream());
  auto expect_product = [&](Buffer d, const char* what) {
    std::vector<float> got(static_cast<size_t>(c.out_elems));
    gpu().download(got.data(), d, 0, got.size() * 4);
    for (size_t i = 0; i < got.size(); ++i)
      ASSERT_EQ(got[i], static_cast<float>(want[i])) << what << " element " << i;
  };
  check(cu.cuGraphLaunch(exec, stream), "cuGraphLaunch");
  expect_product(d1, "first capture");
  capture(dp(d2));
  CUgraphExecUpdateResultInfo info{};
  const CUresult r = cu.cuGraphExecUpdate(exec, graph, &info);
  EXPECT_EQ(r, CUDA_SUCCESS) << "exec update refused: result " << static_cast<int>(info.result);
  check(cu.cuGraphLaunch(exec, stream), "cuGraphLaunch");
  expect_product(d2, "recaptured with a new output");
  cu.cuGraphExecDestroy(exec);
  cu.cuGraphDestroy(graph);
  cu.cuStreamDestroy(side);
  for (Buffer x : {ba, bb, d1, d2, ws})
    gpu().release(x);
}

// Plans with cuBLASLt steps, forced into the program, on both executors: f32 and bf16 matmuls
// (16-bit operands read through the graph's casts, the output stored through its cast down)
// between kernels, with the row count s changing 7 -> 9 -> 7 inside the bucket (a new spec each
// time: prepared again, islands captured again) and new buffers at every run (pointers moved),
// then a run with only new buffers (the islands' parameters updated in place): every output
// matches the reference.
TEST(CudaLt, PlanStepsOnBothExecutorsWithChangingDims) {
  LUMINAL_REQUIRE_GPU();
  if (!lt_or_skip()) GTEST_SKIP() << "no cuBLASLt";
  for (DType t : {DType::F32, DType::BF16}) {
    const Graph g = testing::two_products(t);
    for (CudaOptions::Executor e : {CudaOptions::Executor::Graph, CudaOptions::Executor::Stream}) {
      // Each change recaptured at once (the default runs a new length on the stream first:
      // GraphRunsNewDimsOnTheStreamAndCapturesThemWhenKept).
      CudaBackend& be = lt_backend(e, CudaOptions::NewDims::Capture);
      std::string why;
      ASSERT_TRUE(be.cublaslt(&why)) << why;
      const LlirGraph llir = prefer_lt(g, be);
      const int lt = testing::lt_count(llir);
      ASSERT_GE(lt, 2) << llir.to_text();
      luminal::testing::LoadedPlan lp =
          luminal::testing::load_plan(be, llir, {{{"s", 1}}, {{"s", 16}}});
      EXPECT_EQ(lp->workspace_bytes(), uint64_t{32} << 20);
      const CudaBackend::LtStats before = be.lt_stats();
      const std::vector<int64_t> runs = {7, 9, 7, 7};
      for (size_t r = 0; r < runs.size(); ++r) {
        const int64_t s = runs[r];
        const CudaBackend::LtStats run_before = be.lt_stats();
        // The last run: the same s, and a block held where x was, so the new buffers land
        // elsewhere (pointers moved, spec unchanged).
        Buffer hold{};
        if (r == 3) hold = be.allocate(static_cast<uint64_t>(s) * 128 * size_bytes(t));
        std::vector<double> xv(static_cast<size_t>(s * 128)), wv(96 * 128), vv(32 * 96);
        for (size_t i = 0; i < xv.size(); ++i)
          xv[i] = std::sin(0.37 * static_cast<double>(i));
        for (size_t i = 0; i < wv.size(); ++i)
          wv[i] = std::cos(0.11 * static_cast<double>(i));
        for (size_t i = 0; i < vv.size(); ++i)
          vv[i] = std::sin(0.07 * static_cast<double>(i));
        ReferenceRuntime rt(g);
        rt.set("x", xv);
        rt.set("w", wv);
        rt.set("v", vv);
        rt.execute({{"s", s}});
        luminal::testing::BufferMap in;
        in["x"] = to_host_buffer(xv.data(), xv.size(), t, "x");
        in["w"] = to_host_buffer(wv.data(), wv.size(), t, "w");
        in["v"] = to_host_buffer(vv.data(), vv.size(), t, "v");
        const luminal::testing::PlanRun run = luminal::testing::run_plan(lp, in, {{"s", s}});
        const CudaBackend::LtStats run_after = be.lt_stats();
        if (hold) be.release(hold);
        // The last run changes only pointers: an island whose pointers moved is captured again
        // as the same kernels, and only their parameters change in the graph. (Not every island:
        // one that holds a node other than a kernel, or whose second capture pairs its nodes
        // in another order, is replaced instead. On the H200: 2 of 2 in bf16, 1 of 2 in f32.)
        if (r == 3 && e == CudaOptions::Executor::Graph) {
          EXPECT_EQ(run_after.prepares, run_before.prepares);
          EXPECT_GT(run_after.recaptures - run_before.recaptures, 0u);
          EXPECT_GE(run_after.in_place - run_before.in_place, 1u);
        }
        // Every (dtype, executor, s, output) is checked and reported before the test stops, so
        // one run shows the whole pattern of any failure.
        for (const char* out : {"y", "z"}) {
          const std::vector<double> want = rt.get<double>(out);
          const std::vector<double> got =
              from_host_buffer<double>(run.outputs.at(out), out, "double");
          ASSERT_EQ(got.size(), want.size());
          const double rtol = t == DType::F32 ? 1e-4 : 2e-2;
          size_t bad = 0, first = 0;
          for (size_t i = 0; i < got.size(); ++i)
            if (!(std::abs(got[i] - want[i]) <= rtol * (1 + std::abs(want[i])))) {
              if (bad++ == 0) first = i;
            }
          std::printf(
              "[lt] %s %s s=%lld %s: %zu of %zu elements wrong%s\n", name(t).data(),
              e == CudaOptions::Executor::Graph ? "graph" : "stream", static_cast<long long>(s),
              out, bad, got.size(),
              bad ? (" (first [" + std::to_string(first) + "]: got " + std::to_string(got[first]) +
                     ", want " + std::to_string(want[first]) + ")")
                        .c_str()
                  : "");
          EXPECT_EQ(bad, 0u) << name(t) << " " << out << " s=" << s;
        }
      }
      const CudaBackend::LtStats after = be.lt_stats();
      std::printf(
          "[lt] %s %s: %d cuBLASLt steps; prepares %llu, captures %llu (recaptures %llu, in "
          "place %llu), stream calls %llu\n",
          name(t).data(), e == CudaOptions::Executor::Graph ? "graph" : "stream", lt,
          static_cast<unsigned long long>(after.prepares - before.prepares),
          static_cast<unsigned long long>(after.captures - before.captures),
          static_cast<unsigned long long>(after.recaptures - before.recaptures),
          static_cast<unsigned long long>(after.in_place - before.in_place),
          static_cast<unsigned long long>(after.calls - before.calls));
      // s changed three times (from the bucket's upper bound 16 used at load): new specs.
      EXPECT_GE(after.prepares - before.prepares, 2u);
      if (e == CudaOptions::Executor::Graph) {
        EXPECT_GT(after.recaptures - before.recaptures, 0u);
        EXPECT_EQ(after.calls, before.calls);
      } else {
        EXPECT_EQ(after.captures, before.captures);
        EXPECT_EQ(after.calls - before.calls, 4u * static_cast<unsigned>(lt));
      }
    }
  }
}

// The default at new dims (CudaOptions::NewDims::Stream): a graph-executor plan whose s changes
// runs that execute on the stream (each cuBLASLt call enqueued), runs the graph again when the
// next execute keeps s, and prepares nothing for an s it prepared before; every output matches
// the reference. (run_plan binds new buffers each run, so islands are also captured again at
// bind: counted here are the stream runs, the stream calls and the prepares.)
TEST(CudaLt, GraphRunsNewDimsOnTheStreamAndCapturesThemWhenKept) {
  LUMINAL_REQUIRE_GPU();
  if (!lt_or_skip()) GTEST_SKIP() << "no cuBLASLt";
  // Plain launches, then launches with programmatic stream serialization (LUMINAL_CUDA_STREAM_PDL).
  for (const char* pdl : {"0", "1"})
    for (DType t : {DType::F32, DType::BF16}) {
      luminal::testing::EnvScope pdl_env("LUMINAL_CUDA_STREAM_PDL", pdl);
      const Graph g = testing::two_products(t);
      CudaBackend& be = lt_backend(CudaOptions::Executor::Graph, CudaOptions::NewDims::Stream);
      const LlirGraph llir = prefer_lt(g, be);
      const int lt = testing::lt_count(llir);
      ASSERT_GE(lt, 2) << llir.to_text();
      luminal::testing::LoadedPlan lp =
          luminal::testing::load_plan(be, llir, {{{"s", 1}}, {{"s", 16}}});
      ASSERT_TRUE(dynamic_cast<const CudaPlan&>(*lp.plan).graph_executor());
      // s 16 at load; then 7 (new), 7 (kept), 9 (new), 9 (kept), 7 (new again, prepared before).
      struct Want {
        int64_t s;
        bool on_stream, prepares;
      };
      for (const Want w : {Want{7, true, true}, Want{7, false, false}, Want{9, true, true},
                           Want{9, false, false}, Want{7, true, false}}) {
        const size_t su = static_cast<size_t>(w.s);
        const CudaBackend::LtStats before = be.lt_stats();
        const auto runs = testing::run_with_reference(g, lp,
                                                      {{"x", testing::values(su * 128, 0.37)},
                                                       {"w", testing::values(96 * 128, 0.11)},
                                                       {"v", testing::values(32 * 96, 0.07)}},
                                                      [&](const std::string&) { return t; },
                                                      {{"s", w.s}}, {"y", "z"});
        const CudaBackend::LtStats after = be.lt_stats();
        for (const auto& [out, r] : runs) {
          ASSERT_EQ(r.got.size(), r.want.size()) << out;
          const double rtol = t == DType::F32 ? 1e-4 : 2e-2;
          size_t bad = 0;
          for (size_t i = 0; i < r.got.size(); ++i)
            bad += !(std::abs(r.got[i] - r.want[i]) <= rtol * (1 + std::abs(r.want[i])));
          EXPECT_EQ(bad, 0u) << name(t) << " " << out << " s=" << w.s;
        }
        std::printf(
            "[lt] new dims, %s s=%lld, stream PDL %s: stream runs %llu, calls %llu, prepares %llu, "
            "captures %llu (recaptures %llu)\n",
            name(t).data(), static_cast<long long>(w.s), pdl,
            static_cast<unsigned long long>(after.stream_runs - before.stream_runs),
            static_cast<unsigned long long>(after.calls - before.calls),
            static_cast<unsigned long long>(after.prepares - before.prepares),
            static_cast<unsigned long long>(after.captures - before.captures),
            static_cast<unsigned long long>(after.recaptures - before.recaptures));
        EXPECT_EQ(after.stream_runs - before.stream_runs, w.on_stream ? 1u : 0u) << "s=" << w.s;
        EXPECT_EQ(after.calls - before.calls, w.on_stream ? static_cast<uint64_t>(lt) : 0u)
            << "s=" << w.s;
        if (!w.prepares) {
          EXPECT_EQ(after.prepares, before.prepares) << "s=" << w.s;
        }
        if (!w.on_stream) {
          EXPECT_GE(after.captures - before.captures, 1u) << "s=" << w.s;
        }
      }
    }
}

// Attention's products whose bf16 operands are no gemm as they stand (regrouped GQA heads with
// K broadcast; a permuted, merged output before o_proj), run with 16-bit copies of those operands
// (the program preferring calls that read both operands in 16 bits) on both executors at s 7,
// 9, 1: every element matches the reference.
TEST(CudaLt, OperandsCopiedIn16BitsMatchTheReference) {
  LUMINAL_REQUIRE_GPU();
  if (!lt_or_skip()) GTEST_SKIP() << "no cuBLASLt";
  const Graph g = testing::attention_products();
  for (CudaOptions::Executor e : {CudaOptions::Executor::Graph, CudaOptions::Executor::Stream}) {
    CudaBackend& be = lt_backend(e);
    const LlirGraph llir = testing::prefer(g, be, [](const EGraph& eg, ENodeId n) {
      if (!is_lt_op(eg.node(n).op)) return 0.0;
      return testing::lt_reads_16_bits(eg, n) ? 2.0 : 1.0;
    });
    int lt16 = 0;
    for (const LlirNode& n : llir.nodes)
      lt16 +=
          is_lt_op(n.op) && n.input_dtypes[0] == DType::BF16 && n.input_dtypes[1] == DType::BF16;
    ASSERT_EQ(lt16, 2) << llir.to_text();
    luminal::testing::LoadedPlan lp =
        luminal::testing::load_plan(be, llir, {{{"s", 1}}, {{"s", 16}}});
    for (int64_t sv : {7, 9, 1}) {
      const size_t su = static_cast<size_t>(sv);
      const auto runs = testing::run_with_reference(g, lp,
                                                    {{"q", testing::values(su * 64, 0.37)},
                                                     {"k", testing::values(2 * 24 * 16, 0.19)},
                                                     {"o", testing::values(4 * su * 16, 0.31)},
                                                     {"w", testing::values(48 * 64, 0.11)}},
                                                    [](const std::string&) { return DType::BF16; },
                                                    {{"s", sv}}, {"scores", "proj"});
      for (const auto& [out, r] : runs) {
        ASSERT_EQ(r.got.size(), r.want.size()) << out;
        size_t bad = 0;
        for (size_t i = 0; i < r.got.size(); ++i)
          bad += !(std::abs(r.got[i] - r.want[i]) <= 2e-2 * (1 + std::abs(r.want[i])));
        std::printf("[lt] 16-bit copies, %s s=%lld %s: %zu of %zu elements wrong\n",
                    e == CudaOptions::Executor::Graph ? "graph" : "stream",
                    static_cast<long long>(sv), out.c_str(), bad, r.got.size());
        EXPECT_EQ(bad, 0u) << out << " s=" << sv;
      }
    }
  }
}

// A session on a backend with cuBLASLt searches with the alternatives (it picks what times
// fastest) and stays correct: a small bf16 Llama decodes against the reference.
TEST(CudaLt, SessionSearchWithCublasLtDecodes) {
  LUMINAL_REQUIRE_GPU();
  if (!lt_or_skip()) GTEST_SKIP() << "no cuBLASLt";
  const io::ModelConfig cfg = models::llama_config(
      {.layers = 2, .hidden = 128, .ffn = 256, .heads = 4, .kv_heads = 2, .vocab = 97});
  const models::DecoderShape shape{.slots = 64, .max_step = 8};
  const CompileOptions opts = CompileOptions().search_graph_limit(6).verbose(false);
  models::CausalLM lm =
      models::CausalLM::random(cfg, lt_backend(CudaOptions::Executor::Graph), shape, opts, 5);
  models::CausalLM ref = models::CausalLM::random_reference(cfg, shape, 5);
  auto close = [](const std::vector<float>& a, const std::vector<float>& b, int step) {
    ASSERT_EQ(a.size(), b.size());
    for (size_t k = 0; k < a.size(); ++k)
      ASSERT_NEAR(a[k], b[k], 1e-3 * (1 + std::abs(b[k]))) << "step " << step << " logit " << k;
  };
  close(lm.forward({5, 17, 2, 90, 33}), ref.forward({5, 17, 2, 90, 33}), -1);
  for (int step = 0; step < 8; ++step) {
    const int32_t id = static_cast<int32_t>((step * 31 + 3) % 97);
    close(lm.forward({id}), ref.forward({id}), step);
  }
  const CudaBackend::LtStats st = lt_backend(CudaOptions::Executor::Graph).lt_stats();
  std::printf("[lt] session: prepares %llu, captures %llu, recaptures %llu\n",
              static_cast<unsigned long long>(st.prepares),
              static_cast<unsigned long long>(st.captures),
              static_cast<unsigned long long>(st.recaptures));
}

}  // namespace
}  // namespace luminal::cuda
#else
TEST(CudaLt, NoCublasLtHeader) { GTEST_SKIP() << "built without cublasLt.h"; }
#endif
