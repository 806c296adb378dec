// bench_cuda N qgemm [TYPE]: the prefill GEMMs over GGUF blocks (cuda.QGemmQ8, qgemm.cpp, and
// cuda.QGemmBF16, qgemm_bf16.cpp) on the
// linear-layer shapes of Llama-3-8B and SmolLM2-135M (x [m, k] @ W^T, W [n, k] of block type
// TYPE, default q4_0; q4_k, q5_k and q6_k need LUMINAL_CUDA_QGEMM_K=1), m = 16, 128 and 512, each
// as a graph of copies on distinct weights reading one activation (together >= 2 x the L2, so a
// replay reads its weights from DRAM; the one cuda.QuantizeQ8 is shared by the copies). Per shape
// and kernel: the ms of one GEMM, its TOPS (2 m n k over the time) and the GB/s of its weight
// bytes.
// Prints one line a shape and a table; LUMINAL_CUDA_QGEMM_SLICES / _I2F are the kernel's A/B
// switches.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <exception>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "bench/cuda_bench.hpp"
#include "luminal/compiler/build_space.hpp"
#include "luminal/cuda/device.hpp"
#include "luminal/luminal.hpp"
#include "luminal/nn/linear.hpp"

namespace luminal::bench_cuda {

namespace {

namespace fs = std::filesystem;
using cuda::CudaBackend;

/// Milliseconds of one replay of `copies` GEMMs x [m, k] @ W_i^T forced to `op` (and the shared
/// cuda.QuantizeQ8); -1 when the op is not offered for the shape.
double qgemm_ms(CudaBackend& be, const std::string& op, const LinearShape& sh, int64_t m, DType t,
                int copies, int trials) {
  Graph g;
  Tensor x = g.tensor("x", {Expr(m), Expr(sh.k)});
  for (int i = 0; i < copies; ++i)
    nn::linear(x, g.tensor("w" + std::to_string(i), {Expr(sh.n), Expr(sh.k)}, t).dequantize())
        .output("y" + std::to_string(i));
  BuiltSpace b = build_search_space(g, be, g.dim_facts());
  const EGraph& eg = b.space->egraph();
  auto score = [&](ENodeId id) {
    const std::string_view o = eg.node(id).op->name;
    return o == op || o == "cuda.QuantizeQ8" ? 1.0 : 0.0;
  };
  const LlirGraph llir = to_llir(*b.space, b.space->best_scoring_genome(score));
  int found = 0;
  for (const LlirNode& node : llir.nodes)
    found += node.op->name == op;
  if (found != copies) return -1;
  return forced_plan_ms(
      be, llir,
      [&](const std::string& label) {
        return label == "x" ? static_cast<uint64_t>(m * sh.k * 4) : storage_bytes(t, sh.n * sh.k);
      },
      [&](size_t) { return static_cast<uint64_t>(m * sh.n * 4); }, trials);
}

}  // namespace

void qgemm_shapes(const std::string& type) {
  const fs::path cache =
      fs::temp_directory_path() / ("luminal_bench_qgemm_" + std::to_string(getpid()));
  try {
    DType t = DType::Q4_0;
    bool known = type.empty();
    for (DType c : kWeightBlockDTypes)
      if (name(c) == type) t = c, known = true;
    if (!known) throw Error("unknown block type '" + type + "'; give q4_0 .. q6_k");
    cuda::CudaOptions opts{0, cache / "kernels", 16};
    opts.cublaslt = false;
    CudaBackend be(opts);
    const int l2 = l2_bytes(be);
    std::string table =
        "| model | GEMM | n x k | type | m | int8 ms | int8 TOPS | bf16 ms | bf16 TFLOPS | "
        "bf16 weight GB/s |\n|---|---|---|---|---|---|---|---|---|---|\n";
    for (const LinearShape& sh : linear_shapes())
      for (int64_t m : {int64_t{16}, int64_t{128}, int64_t{512}}) {
        if (std::string_view(sh.what) == "lm head") continue;  // (the projections only)
        const double wbytes = static_cast<double>(storage_bytes(t, sh.n * sh.k));
        const int copies = copies_past_l2(l2, wbytes, 200);
        double ms[2], tops[2], gbs[2];
        const char* ops[2] = {"cuda.QGemmQ8", "cuda.QGemmBF16"};
        for (int i = 0; i < 2; ++i) {
          const double all = qgemm_ms(be, ops[i], sh, m, t, copies, 20);
          ms[i] = all > 0 ? all / copies : -1;
          tops[i] = ms[i] > 0 ? 2.0 * m * sh.n * sh.k / (ms[i] * 1e-3) / 1e12 : 0;
          gbs[i] = ms[i] > 0 ? wbytes / (ms[i] * 1e-3) / 1e9 : 0;
          std::printf(
              "qgemm %s %s %s n %lld k %lld %s m %lld, %d copies: %.4f ms, %.1f TOPS, %.0f "
              "GB/s\n",
              ops[i], sh.model, sh.what, static_cast<long long>(sh.n), static_cast<long long>(sh.k),
              std::string(name(t)).c_str(), static_cast<long long>(m), copies, ms[i], tops[i],
              gbs[i]);
        }
        char row[240];
        std::snprintf(row, sizeof row,
                      "| %s | %s | %lld x %lld | %s | %lld | %.4f | %.1f | %.4f | %.1f | %.0f |\n",
                      sh.model, sh.what, static_cast<long long>(sh.n), static_cast<long long>(sh.k),
                      std::string(name(t)).c_str(), static_cast<long long>(m), ms[0], tops[0],
                      ms[1], tops[1], gbs[1]);
        table += row;
      }
    std::printf("qgemm table:\n%s", table.c_str());
  } catch (const std::exception& e) {
    std::printf("qgemm shapes: FAILED: %s\n", e.what());
  }
  std::error_code ec;
  fs::remove_all(cache, ec);
}

}  // namespace luminal::bench_cuda
