// bench_cuda N gemm: every GEMM shape of a Llama-3-8B layer and its LM head (bf16), in decode
// (m = 1) and in a 128-token prefill (m = 128), each as a graph of n copies of x @ W_i^T on
// distinct weights, n x weight bytes >= 2 x the L2 size the device reports (so every replay reads
// its weights from DRAM). Per GEMM (the median of 200 replays of the whole graph, divided by n):
//   - generated: the program a search without cuBLASLt picks;
//   - cuBLASLt in the plan: every matmul a cuBLASLt op (our plan: islands in the bucket's graph);
//   - raw cuBLASLt: the same specs' calls, with the same algorithms, captured on a stream into
//     one graph (no plan): the plan's overhead is the difference;
//   - searched: what a search with cuBLASLt among the alternatives picks, and its time;
// against the floor (weight bytes at the copy bandwidth). Then the decode step's sum of GEMM
// times (7 GEMMs x 32 layers + the LM head) for each column against the weights' floor.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "bench/cuda_bench.hpp"
#include "luminal/compiler/build_space.hpp"
#include "luminal/cuda/cublaslt/lt_islands.hpp"
#include "luminal/cuda/device.hpp"
#include "luminal/cuda/driver.hpp"
#include "luminal/luminal.hpp"
#include "luminal/models/synthetic.hpp"
#include "tests/support/llir_direct.hpp"

#ifdef LUMINAL_HAVE_CUBLASLT
#include "luminal/cuda/cublaslt/lt_matmul.hpp"
#include "luminal/cuda/cublaslt/lt_prepare.hpp"
#endif

namespace luminal::bench_cuda {

#ifdef LUMINAL_HAVE_CUBLASLT
namespace {

namespace fs = std::filesystem;
using cuda::CudaBackend;

struct Shape {
  const char* what;
  int64_t n, k;   // W is [n, k]
  int per_layer;  // how many a decode step runs per layer (0: once, the LM head)
};

const Shape kShapes[] = {{"q/o proj", 4096, 4096, 2},
                         {"k/v proj", 1024, 4096, 2},
                         {"gate/up proj", 14336, 4096, 2},
                         {"down proj", 4096, 14336, 1},
                         {"lm head", 128256, 4096, 0}};

/// The graph: x [m, k] and n weights [nn, k] ("act.weight", "g<i>.weight": random_weights
/// fills them), outputs y<i> = x @ W_i^T.
Graph copies_graph(int64_t m, const Shape& sh, int n) {
  Graph g;
  Tensor x = g.tensor("act.weight", {Expr(m), Expr(sh.k)}, DType::BF16);
  for (int i = 0; i < n; ++i) {
    Tensor w = g.tensor("g" + std::to_string(i) + ".weight", {Expr(sh.n), Expr(sh.k)}, DType::BF16);
    x.matmul(w.transpose(0, 1)).output("y" + std::to_string(i));
  }
  return g;
}

/// Milliseconds of one replay of a session's plan (median of `trials`), and its op mix.
double session_ms(CudaBackend& be, Session& s, int trials, std::string* mix) {
  s.execute();
  s.sync();
  std::vector<int64_t> dims = s.dims();
  *mix = s.llir().op_mix_string();
  return be.time(s.plan(), 0, dims.data(), trials, 30.0) * 1e3;
}

struct Row {
  double generated = 0, lt_plan = 0, raw = 0, searched = 0;
};

/// The forced cuBLASLt program of `g` loaded, bound (inputs filled) and timed; then the same
/// calls captured raw. Returns {plan ms, raw ms} for the whole graph.
std::pair<double, double> lt_plan_and_raw(CudaBackend& be, const Graph& g, int64_t m,
                                          const Shape& sh, int n, int trials) {
  BuiltSpace b = build_search_space(g, be, g.dim_facts());
  const EGraph& eg = b.space->egraph();
  // Every matmul as cuda.LtMatmul (the column-major family: W^T needs no copy there).
  const LlirGraph llir = to_llir(*b.space, b.space->best_scoring_genome([&](ENodeId id) {
    const OpDef* op = eg.node(id).op;
    return cuda::is_lt_op(op) && cuda::lt_family(op) == GemmFamily::ColSwapped ? 1.0 : 0.0;
  }));
  int lt = 0;
  for (const LlirNode& node : llir.nodes)
    lt += cuda::is_lt_op(node.op);
  if (lt != n)
    throw Error("the forced program has " + std::to_string(lt) +
                " cuBLASLt calls: " + llir.op_mix_string());
  int other = 0;  // a kernel beside the calls (an output copy) would count against the plan
  for (const LlirNode& node : llir.nodes)
    other += !cuda::is_lt_op(node.op) && !is_op(node.op, OpKind::Input) &&
             !is_op(node.op, OpKind::Output);
  if (other) std::printf("gemm: the forced program also runs %s\n", llir.op_mix_string().c_str());
  luminal::testing::LoadedPlan lp = luminal::testing::load_plan(be, llir);
  std::vector<Buffer> owned;
  Bindings bind;
  for (const std::string& label : lp->io().inputs) {
    owned.push_back(
        be.allocate(static_cast<uint64_t>(label == "act.weight" ? m : sh.n) * sh.k * 2));
    fill_pattern(be, owned.back());
    bind.inputs.push_back(owned.back());
  }
  for (size_t i = 0; i < lp->io().outputs.size(); ++i) {
    owned.push_back(be.allocate(static_cast<uint64_t>(m * sh.n * 2)));
    bind.outputs.push_back(owned.back());
  }
  owned.push_back(be.allocate(std::max<uint64_t>(lp->arena_bytes(), 256)));
  bind.arena = owned.back();
  lp->bind(0, bind);
  const double plan_ms = be.time(*lp.plan, 0, nullptr, trials, 30.0) * 1e3;

  // Raw: the same spec (the plan's family and types at these dims), one prepare, n calls on
  // the weights captured into one graph on a stream of our own.
  const std::optional<LibGemm<int64_t>> lg =
      lib_gemm_of({m, sh.n, sh.k}, {sh.k, 0, 1}, {0, sh.k, 1}, 2, GemmFamily::ColSwapped);
  const std::optional<cuda::LtTypes> types =
      cuda::lt_types(DType::BF16, DType::BF16, DType::BF16, false);
  if (!lg || !types) throw Error("no cuBLASLt spec for the raw calls");
  cuda::Device& im = be.device();
  const cuda::CudaApi& cu = *im.cu;
  const uint64_t ws = uint64_t{32} << 20;
  const cuda::LtSpec spec = cuda::lt_spec(*lg, *types, ws);
  cuda::LtPrepared prep(cuda::lt_handle(im), spec, static_cast<int>(im.cu_device));
  Buffer work = be.allocate(ws);
  owned.push_back(work);
  im.bind_context();
  CUstream st = nullptr;
  cuda::check(cu.cuStreamCreate(&st, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  CUgraph graph = nullptr;
  CUgraphExec exec = nullptr;
  be.sync();
  cuda::check(cu.cuGraphCreate(&graph, 0), "cuGraphCreate");
  cuda::check(cu.cuStreamBeginCaptureToGraph(st, graph, nullptr, nullptr, 0,
                                             CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
              "cuStreamBeginCaptureToGraph");
  // Inputs in binding order: the activation and the weights (labels say which).
  Buffer act{};
  std::vector<Buffer> weights;
  for (size_t i = 0; i < lp->io().inputs.size(); ++i) {
    if (lp->io().inputs[i] == "act.weight")
      act = bind.inputs[i];
    else
      weights.push_back(bind.inputs[i]);
  }
  for (int i = 0; i < n; ++i) {
    const CUdeviceptr in[2] = {dptr(act), dptr(weights[static_cast<size_t>(i)])};
    const CUdeviceptr out = dptr(bind.outputs[static_cast<size_t>(i)]);
    prep.enqueue({in[lg->input_a], in[lg->input_b], out, out}, dptr(work), st);
  }
  CUgraph captured = nullptr;  // the graph capture went into
  cuda::check(cu.cuStreamEndCapture(st, &captured), "cuStreamEndCapture");
  cuda::check(cu.cuGraphInstantiateWithFlags(&exec, graph, 0), "cuGraphInstantiateWithFlags");
  CUevent e0 = nullptr, e1 = nullptr;
  cuda::check(cu.cuEventCreate(&e0, CU_EVENT_DEFAULT), "cuEventCreate");
  cuda::check(cu.cuEventCreate(&e1, CU_EVENT_DEFAULT), "cuEventCreate");
  std::vector<double> ms;
  for (int t = 0; t < trials + 1; ++t) {
    cuda::check(cu.cuEventRecord(e0, st), "cuEventRecord");
    cuda::check(cu.cuGraphLaunch(exec, st), "cuGraphLaunch");
    cuda::check(cu.cuEventRecord(e1, st), "cuEventRecord");
    cuda::check(cu.cuEventSynchronize(e1), "cuEventSynchronize");
    float v = 0;
    cuda::check(cu.cuEventElapsedTime(&v, e0, e1), "cuEventElapsedTime");
    if (t > 0) ms.push_back(v);
  }
  cu.cuEventDestroy(e0);
  cu.cuEventDestroy(e1);
  cu.cuGraphExecDestroy(exec);
  cu.cuGraphDestroy(graph);
  cu.cuStreamDestroy(st);
  lp.plan.reset();
  for (Buffer x : owned)
    be.release(x);
  return {plan_ms, median(ms)};
}

}  // namespace

void gemm_shapes(double copy_gbs, int limit) {
  const fs::path cache =
      fs::temp_directory_path() / ("luminal_bench_gemm_" + std::to_string(getpid()));
  try {
    cuda::CudaOptions plain_opts{0, cache / "kernels", 16};
    plain_opts.cublaslt = false;  // (their device keys differ: the two searches cache apart)
    CudaBackend plain(plain_opts);
    cuda::CudaOptions lt_opts = plain_opts;
    lt_opts.cublaslt = true;
    CudaBackend with_lt(lt_opts);
    std::string why;
    if (!with_lt.cublaslt(&why)) {
      std::printf("gemm shapes: skipped (%s)\n", why.c_str());
      return;
    }
    if (plain.cublaslt()) {
      std::printf(
          "gemm shapes: skipped (LUMINAL_CUDA_CUBLASLT=1 puts cuBLASLt in the generated "
          "column's search)\n");
      return;
    }
    const int l2 = l2_bytes(plain);
    const int trials = 200;
    for (int64_t m : {int64_t{1}, int64_t{128}}) {
      Row sum;  // the decode step's GEMMs (m = 1) or the prefill's (m = 128)
      double floor_sum = 0;
      for (const Shape& sh : kShapes) {
        const double wbytes = static_cast<double>(sh.n * sh.k * 2);
        const int n = copies_past_l2(l2, wbytes, std::numeric_limits<int>::max());
        const Graph g = copies_graph(m, sh, n);
        auto opts =
            CompileOptions().search_graph_limit(limit).seed(1).verbose(false).cache_dir(cache);
        Row r;
        std::string gen_mix, search_mix;
        {
          Session s(g, plain, opts);
          models::random_weights(s, 7, opts);
          s.compile();
          r.generated = session_ms(plain, s, trials, &gen_mix) / n;
        }
        {
          Session s(g, with_lt, opts);
          models::random_weights(s, 7, opts);
          s.compile();
          r.searched = session_ms(with_lt, s, trials, &search_mix) / n;
        }
        const auto [plan_ms, raw_ms] = lt_plan_and_raw(with_lt, g, m, sh, n, trials);
        r.lt_plan = plan_ms / n;
        r.raw = raw_ms / n;
        const double floor_ms = wbytes / (copy_gbs * 1e9) * 1e3;
        std::printf(
            "gemm %s m %lld (n %lld, k %lld) bf16, %d copies: generated %.4f ms (%.0f%% of the "
            "copy floor %.4f ms; %s), cuBLASLt in the plan %.4f ms (%.0f%%), raw cuBLASLt %.4f "
            "ms (plan / raw %.3f), search with cuBLASLt %.4f ms (%s)\n",
            sh.what, static_cast<long long>(m), static_cast<long long>(sh.n),
            static_cast<long long>(sh.k), n, r.generated, 100 * floor_ms / r.generated, floor_ms,
            gen_mix.c_str(), r.lt_plan, 100 * floor_ms / r.lt_plan, r.raw, r.lt_plan / r.raw,
            r.searched, search_mix.c_str());
        const double times = sh.per_layer ? 32.0 * sh.per_layer : 1.0;
        sum.generated += times * r.generated;
        sum.lt_plan += times * r.lt_plan;
        sum.raw += times * r.raw;
        sum.searched += times * r.searched;
        floor_sum += times * floor_ms;
      }
      std::printf(
          "gemm sum of a Llama-3-8B %s step's GEMMs (7 x 32 layers + lm head), m %lld: generated "
          "%.3f ms, cuBLASLt in the plan %.3f ms, raw cuBLASLt %.3f ms, searched %.3f ms; floor "
          "%.3f ms (generated %.2fx, cuBLASLt %.2fx of it)\n",
          m == 1 ? "decode" : "prefill", static_cast<long long>(m), sum.generated, sum.lt_plan,
          sum.raw, sum.searched, floor_sum, sum.generated / floor_sum, sum.lt_plan / floor_sum);
    }
  } catch (const std::exception& e) {
    std::printf("gemm shapes: FAILED: %s\n", e.what());
  }
  std::error_code ec;
  fs::remove_all(cache, ec);
}

#else
void gemm_shapes(double, int) { std::printf("gemm shapes: skipped (built without cuBLASLt)\n"); }
#endif

}  // namespace luminal::bench_cuda
