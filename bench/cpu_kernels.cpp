// CPU kernel figures, each next to the memory-bandwidth baseline measured in the same run:
//
//   memcpy of 64 MiB (one thread, and split over every thread)
//   f32 add of 16M elements (the primitive Add kernel)
//   a 12-op elementwise chain over 4M f32 elements: one cpu.Fused kernel vs one kernel per op
//   f32 matmul m = k = n in {256, 512, 1024}: cpu.BlasMatmul (OpenBLAS) vs cpu.Matmul (generic)
//   batched f32 matmuls: cpu.BlasMatmul's batch modes (sequential, per thread, auto)
//
//   row programs (cpu.Row): a prefill's causal softmax and RMSNorm, ns an element, one thread
//
//   build/bench/bench_cpu_kernels [threads=0 (all)]
//   build/bench/bench_cpu_kernels rows        (the row programs alone)
//
// Programs are built the way the compiler builds them (build_search_space, then one choice per
// class), loaded as a Plan for one bucket and timed with Backend::time (median of the trials
// after a warm-up) on buffers bound once: only the kernels are timed, never uploads.
// Bandwidth counts bytes read plus bytes written.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "bench/timing.hpp"
#include "luminal/compiler/build_space.hpp"
#include "luminal/cpu/cpu_backend.hpp"
#include "luminal/cpu/fused.hpp"
#include "luminal/cpu/matmul.hpp"
#include "luminal/luminal.hpp"
#include "tests/support/llir_direct.hpp"

namespace {

using namespace luminal;

/// The program that takes, in every class, the option of op `op` (cpu.Fused: the region computing
/// the most ops) where there is one, else the first option.
LlirGraph choose_op(const BuiltSpace& b, const std::string& op) {
  const SearchSpace& space = *b.space;
  const EGraph& eg = space.egraph();
  auto score = [&](ENodeId n) -> double {
    if (eg.node(n).op->name != op) return 0;
    double ops = 0;
    if (const auto* p = dynamic_cast<const FusedProgram*>(eg.attrs_of(n).payload.get()))
      for (const FusedInst& i : p->insts)
        ops += i.op != FusedOpcode::Load && i.op != FusedOpcode::Const;
    return 1 + ops;
  };
  return to_llir(space, space.best_scoring_genome(score));
}

LlirGraph program_with(const Graph& g, Backend& be, const std::string& op) {
  BuiltSpace b = build_search_space(g, be, {});
  return choose_op(b, op);
}

/// Median seconds of one execute of `program` at `dyn`: a plan loaded for that bucket, inputs of
/// random values in [-1, 1] uploaded once, every buffer bound once.
double time_program(Backend& be, const Graph& g, const LlirGraph& program, const DynMap& dyn,
                    int trials) {
  testing::LoadedPlan lp = testing::load_plan(be, program, {dyn});
  std::vector<Buffer> owned;
  auto alloc = [&](uint64_t bytes) {
    owned.push_back(be.allocate(std::max<uint64_t>(bytes, 1)));
    return owned.back();
  };
  Bindings b;
  std::mt19937_64 rng(1);
  for (const std::string& label : lp->io().inputs) {
    for (NodeId id : g.inputs()) {
      const Node& n = g.node(id);
      if (n.label != label) continue;
      const int64_t count = numel(n.shape).eval(dyn);
      HostBuffer h{n.dtype, std::vector<uint8_t>(static_cast<size_t>(count) * size_bytes(n.dtype))};
      std::uniform_real_distribution<double> d(-1, 1);
      for (int64_t i = 0; i < count; ++i)
        store_from_double(n.dtype, h.bytes.data(), i, d(rng));
      b.inputs.push_back(alloc(h.bytes.size()));
      be.upload(b.inputs.back(), 0, h.bytes.data(), h.bytes.size());
    }
  }
  for (const LlirNode& n : lp.llir.nodes) {
    if (!is_op(n.op, OpKind::Output)) continue;
    int64_t count = 1;
    for (int64_t d : eval_shape(n.attrs.shape, dyn))
      count *= d;
    b.outputs.push_back(alloc(static_cast<uint64_t>(count) * size_bytes(n.attrs.dtype)));
  }
  b.arena = alloc(lp->arena_bytes());
  lp->bind(0, b);
  std::vector<int64_t> dims;
  for (const std::string& d : lp.spec.dim_names)
    dims.push_back(dyn.at(d));
  const double s = be.time(*lp.plan, 0, dims.data(), trials, 60.0);
  for (Buffer buf : owned)
    be.release(buf);
  return s;
}

/// Median seconds of a memcpy of `bytes`, split over `threads` threads.
double time_memcpy(size_t bytes, int threads, int trials) {
  std::vector<uint8_t> src(bytes, 1), dst(bytes, 0);
  auto once = [&] {
    std::vector<std::thread> pool;
    const size_t part = bytes / static_cast<size_t>(threads);
    for (int t = 1; t < threads; ++t)
      pool.emplace_back([&, t] {
        const size_t lo = part * static_cast<size_t>(t);
        std::memcpy(dst.data() + lo, src.data() + lo, t + 1 == threads ? bytes - lo : part);
      });
    std::memcpy(dst.data(), src.data(), threads == 1 ? bytes : part);
    for (std::thread& th : pool)
      th.join();
  };
  return bench::median_seconds(once, 1, trials);
}

/// Row programs (cpu.Row) in a 128-token prefill's shapes: a causal softmax over 9 heads of
/// 128 x 130 scaled scores (the mask from the positions), and an RMSNorm of a residual sum,
/// 128 x 576; ns an element of the result, one thread (the evaluator's own speed).
void bench_rows(cpu::CpuBackend& one, cpu::CpuBackend& all) {
  const DynMap dyn{{"s", 128}, {"c", 130}};
  auto rows = [&](const char* what, const Graph& g, int64_t elements) {
    const LlirGraph p = program_with(g, all, "cpu.Row");
    const double t = time_program(one, g, p, dyn, 30);
    std::printf("  %-40s 1 thr: %7.3f ms  %5.2f ns an element (%s)\n", what, t * 1e3,
                t * 1e9 / double(elements), p.op_mix_string().c_str());
  };
  std::printf("\nrow programs (cpu.Row), s = 128, c = 130:\n");
  {
    Graph g;
    const Expr s = Expr::var("s"), c = Expr::var("c");
    Tensor sc = g.tensor("scores", {3, 3, "s", "c"});  // [kv heads, groups, s, c]
    // As nn::cached_attention masks it: query p at position c - s + p hides keys after p.
    Tensor pos = g.iota(c - s + Expr::z(), s).reshape({1, 1, s, 1}).expand({3, 3, s, c});
    Tensor keys = g.arange(c).reshape({1, 1, 1, c}).expand({3, 3, s, c});
    (sc * 0.125).masked_fill(pos.lt(keys), -INFINITY).softmax(3).output("p");
    rows("causal softmax [3, 3, s, c]", g, 9 * 128 * 130);
  }
  {
    Graph g;
    Tensor x = g.tensor("x", {"s", 576}) + g.tensor("r", {"s", 576});
    x.rms_norm(g.tensor("w", {576}), 1e-5).output("y");
    rows("rms_norm(x + r) [s, 576]", g, 128 * 576);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const bool rows_only = argc > 1 && std::string(argv[1]) == "rows";
  const int threads_arg = argc > 1 && !rows_only ? std::atoi(argv[1]) : 0;
  cpu::CpuBackend all(threads_arg);
  cpu::CpuBackend one(1);
  if (rows_only) {
    bench_rows(one, all);
    return 0;
  }
  const int n_threads = all.threads();
  std::printf("bench_cpu_kernels: %d threads (and 1), f32, median of the trials\n\n", n_threads);

  // Baseline: memory bandwidth, 64 MiB copied (128 MiB moved).
  const size_t kBytes = size_t{64} << 20;
  const double mc1 = time_memcpy(kBytes, 1, 10);
  const double mcn = time_memcpy(kBytes, n_threads, 10);
  std::printf("memcpy 64 MiB, 1 thread:            %7.2f ms  %6.1f GB/s\n", mc1 * 1e3,
              2.0 * double(kBytes) / mc1 / 1e9);
  std::printf("memcpy 64 MiB, %d threads:           %7.2f ms  %6.1f GB/s\n", n_threads, mcn * 1e3,
              2.0 * double(kBytes) / mcn / 1e9);

  // f32 add of 16M elements: the primitive Add kernel (two reads, one write).
  {
    const int64_t n = int64_t{1} << 24;
    Graph g;
    (g.tensor("x", {n}) + g.tensor("y", {n})).output("z");
    const LlirGraph prims = testing::llir_direct(g);
    const double moved = 3.0 * 4.0 * double(n);
    for (cpu::CpuBackend* be : {&one, &all}) {
      const double s = time_program(*be, g, prims, {}, 10);
      std::printf("add f32 16M (Add kernel), %d thr:    %7.2f ms  %6.1f GB/s\n", be->threads(),
                  s * 1e3, moved / s / 1e9);
    }
  }

  // A 12-op elementwise chain over s x 1024 f32 (s = 4096: 4M elements), fused vs one kernel
  // per op.
  {
    Graph g;
    Tensor x = g.tensor("x", {"s", 1024});
    Tensor y = g.tensor("y", {1024});
    ((x * y).sigmoid() * x + 1.0).relu().sqrt().output("o");
    const DynMap dyn{{"s", 4096}};
    const LlirGraph fused = program_with(g, all, "cpu.Fused");
    const LlirGraph prims = testing::llir_direct(g);
    int ops = 0;  // kernels that compute (not inputs, outputs or constants)
    for (const LlirNode& n : prims.nodes)
      ops += !is_op(n.op, OpKind::Input) && !is_op(n.op, OpKind::Output) &&
             !is_op(n.op, OpKind::Constant);
    std::printf("\nelementwise chain ((x*y).sigmoid()*x+1).relu().sqrt(), 4M f32 (%d ops):\n", ops);
    for (cpu::CpuBackend* be : {&one, &all}) {
      const double f = time_program(*be, g, fused, dyn, 10);
      const double p = time_program(*be, g, prims, dyn, 10);
      std::printf("  %d thr: fused %7.2f ms (%s) | one kernel per op %7.2f ms (%.1fx)\n",
                  be->threads(), f * 1e3, fused.op_mix_string().c_str(), p * 1e3, p / f);
    }
  }

  bench_rows(one, all);

  // Square f32 matmuls: OpenBLAS vs the generic strided kernel.
  std::printf("\nmatmul f32 [m,k] @ [k,n], m = k = n:\n");
  for (int64_t size : {256, 512, 1024}) {
    Graph g;
    g.tensor("a", {size, size}).matmul(g.tensor("b", {size, size})).output("c");
    const double flops = 2.0 * double(size) * double(size) * double(size);
    for (const char* op : {"cpu.BlasMatmul", "cpu.Matmul"}) {
      if (size == 1024 && std::string(op) == "cpu.Matmul") continue;  // seconds per run
      const LlirGraph p = program_with(g, all, op);
      for (cpu::CpuBackend* be : {&one, &all}) {
        const double s = time_program(*be, g, p, {}, 3);
        std::printf("  %4lld^3 %-15s %d thr: %8.2f ms  %6.1f GFLOP/s\n",
                    static_cast<long long>(size), op, be->threads(), s * 1e3, flops / s / 1e9);
      }
    }
  }

  // Batched products: one gemm after another vs one gemm per thread.
  std::printf("\nbatched matmul f32 (cpu.BlasMatmul, %d threads):\n", n_threads);
  struct Shape3 {
    int64_t batch, m, k, n;
  };
  for (Shape3 sh : {Shape3{64, 128, 64, 128}, Shape3{32, 64, 64, 64}, Shape3{8, 256, 256, 256},
                    Shape3{4, 512, 512, 512}}) {
    Graph g;
    g.tensor("a", {sh.batch, sh.m, sh.k}).matmul(g.tensor("b", {sh.batch, sh.k, sh.n})).output("c");
    const LlirGraph p = program_with(g, all, "cpu.BlasMatmul");
    const double flops = 2.0 * double(sh.batch * sh.m * sh.k * sh.n);
    std::printf("  %3lld x %lldx%lldx%lld:", static_cast<long long>(sh.batch),
                static_cast<long long>(sh.m), static_cast<long long>(sh.k),
                static_cast<long long>(sh.n));
    for (auto [mode, label] : {std::pair{cpu::BlasBatchMode::Sequential, "sequential"},
                               std::pair{cpu::BlasBatchMode::PerThread, "per-thread"},
                               std::pair{cpu::BlasBatchMode::Auto, "auto"}}) {
      cpu::set_blas_batch_mode(mode);
      const double s = time_program(all, g, p, {}, 5);
      std::printf("  %s %.2f ms (%.1f GFLOP/s)", label, s * 1e3, flops / s / 1e9);
    }
    cpu::set_blas_batch_mode(cpu::BlasBatchMode::Auto);
    std::printf("\n");
  }
  return 0;
}
