// bench_cuda N gemv [bf16|f32]: the decode GEMV shapes of Llama-3-8B and SmolLM2-135M (x [m, k] @
// W^T, W [n, k]), m = 1, 2, 4, 8, bf16 and f32, each as a graph of copies on distinct weights
// (together >= 2 x the L2, so every replay reads its weights from DRAM). Per GEMV: the time of
// the program whose matmuls are cuda.Gemv (gemv.cpp) and of the one whose matmuls are
// cuda.Matmul (reduce.cpp), each forced (no search), as GB/s of the bytes a GEMV must move
// (weights + x + y) and % of the copy bandwidth. Prints one line a shape and a table.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <string>
#include <vector>

#include "bench/cuda_bench.hpp"
#include "luminal/compiler/build_space.hpp"
#include "luminal/cuda/device.hpp"
#include "luminal/cuda/driver.hpp"
#include "luminal/luminal.hpp"

namespace luminal::bench_cuda {

namespace {

namespace fs = std::filesystem;
using cuda::CudaBackend;

Graph gemv_graph(int64_t m, const LinearShape& sh, int copies, DType t) {
  Graph g;
  Tensor x = g.tensor("x", {Expr(m), Expr(sh.k)}, t);
  for (int i = 0; i < copies; ++i) {
    Tensor w = g.tensor("w" + std::to_string(i), {Expr(sh.n), Expr(sh.k)}, t);
    x.matmul(w.transpose(0, 1)).output("y" + std::to_string(i));
  }
  return g;
}

/// Milliseconds of one replay of `g`'s program whose matmuls are ops named `want` (or
/// `want` + "Cast"), reading 16-bit operands directly where it can; -1 when no such program
/// exists (the op is not offered for the shape).
double forced_ms(CudaBackend& be, const Graph& g, const std::string& want, int64_t m,
                 const LinearShape& sh, DType t, int copies, int trials) {
  BuiltSpace b = build_search_space(g, be, g.dim_facts());
  const EGraph& eg = b.space->egraph();
  auto score = [&](ENodeId id) {
    const ENode& node = eg.node(id);
    const std::string op(node.op->name);
    if (op != want && op != want + "Cast") return 0.0;
    double s = 1;
    for (ClassId c : node.children)
      s += eg.dtype(c) != DType::F32 ? 1 : 0;  // the operand read in 16 bits: no cast kernel
    return s;
  };
  const LlirGraph llir = to_llir(*b.space, b.space->best_scoring_genome(score));
  int found = 0;
  for (const LlirNode& node : llir.nodes)
    found += std::string(node.op->name).rfind(want, 0) == 0;
  if (found != copies) return -1;
  const uint64_t esize = static_cast<uint64_t>(size_bytes(t));
  return forced_plan_ms(
      be, llir,
      [&](const std::string& label) {
        const uint64_t rows = static_cast<uint64_t>(label == "x" ? m : sh.n);
        return rows * static_cast<uint64_t>(sh.k) * esize;
      },
      [&](size_t) { return static_cast<uint64_t>(m * sh.n) * esize; }, trials);
}

}  // namespace

void gemv_shapes(double copy_gbs, const std::string& only) {
  const fs::path cache =
      fs::temp_directory_path() / ("luminal_bench_gemv_" + std::to_string(getpid()));
  try {
    cuda::CudaOptions opts{0, cache / "kernels", 16};
    opts.cublaslt = false;
    CudaBackend be(opts);
    const int l2 = l2_bytes(be);
    std::string table =
        "| model | GEMV | n x k | dtype | m | cuda.Gemv ms | GB/s | % copy | cuda.Matmul ms | GB/s "
        "| % copy |\n|---|---|---|---|---|---|---|---|---|---|---|\n";
    for (DType t : {DType::BF16, DType::F32}) {
      if (!only.empty() && only != name(t)) continue;
      for (const LinearShape& sh : linear_shapes()) {
        for (int64_t m : {int64_t{1}, int64_t{2}, int64_t{4}, int64_t{8}}) {
          const double wbytes = static_cast<double>(sh.n * sh.k * size_bytes(t));
          const int copies = copies_past_l2(l2, wbytes, 400);
          const Graph g = gemv_graph(m, sh, copies, t);
          const int trials = 50;
          const double gemv = forced_ms(be, g, "cuda.Gemv", m, sh, t, copies, trials) / copies;
          const double mat = forced_ms(be, g, "cuda.Matmul", m, sh, t, copies, trials) / copies;
          const double bytes = wbytes + static_cast<double>((m * sh.k + m * sh.n) * size_bytes(t));
          auto gbs = [&](double ms) { return ms > 0 ? bytes / (ms * 1e-3) / 1e9 : 0.0; };
          std::printf(
              "gemv %s %s n %lld k %lld %s m %lld, %d copies: cuda.Gemv %.4f ms %.0f GB/s "
              "(%.0f%% of copy), cuda.Matmul %.4f ms %.0f GB/s (%.0f%%)\n",
              sh.model, sh.what, static_cast<long long>(sh.n), static_cast<long long>(sh.k),
              std::string(name(t)).c_str(), static_cast<long long>(m), copies, gemv, gbs(gemv),
              100 * gbs(gemv) / copy_gbs, mat, gbs(mat), 100 * gbs(mat) / copy_gbs);
          char row[256];
          std::snprintf(
              row, sizeof row,
              "| %s | %s | %lld x %lld | %s | %lld | %.4f | %.0f | %.0f%% | %.4f | %.0f | "
              "%.0f%% |\n",
              sh.model, sh.what, static_cast<long long>(sh.n), static_cast<long long>(sh.k),
              std::string(name(t)).c_str(), static_cast<long long>(m), gemv, gbs(gemv),
              100 * gbs(gemv) / copy_gbs, mat, gbs(mat), 100 * gbs(mat) / copy_gbs);
          table += row;
        }
      }
    }
    std::printf("gemv table (copy %.0f GB/s):\n%s", copy_gbs, table.c_str());
  } catch (const std::exception& e) {
    std::printf("gemv shapes: FAILED: %s\n", e.what());
  }
  std::error_code ec;
  fs::remove_all(cache, ec);
}

}  // namespace luminal::bench_cuda
