#pragma once
// Matmul ops of the CPU backend (internal): what cpu.Matmul (matmul_generic.cpp) and
// cpu.BlasMatmul (matmul_blas.cpp) share.
//
// Both replace SumReduce(axis k) over Mul(a, b) through the shared matmul rule
// (luminal/kernels/matmul_rule.hpp, which describes the node).
#include <memory>
#include <optional>
#include <vector>

#include "luminal/cpu/cpu_op.hpp"
#include "luminal/cpu/strided.hpp"
#include "luminal/kernels/matmul_rule.hpp"

namespace luminal::cpu {

/// Counters of cpu.BlasMatmul kernels (process-wide; for tests and traces): products run by BLAS
/// (gemm or gemv), runs that fell back to the generic kernel because no gemm fits the layout at
/// those dims, BLAS calls that were a gemv (a block of C with one row or one column), and
/// operands gathered into a workspace first (views not linear in their index).
struct BlasStats {
  uint64_t gemm_calls = 0;
  uint64_t fallbacks = 0;
  uint64_t gemv_calls = 0;
  uint64_t packs = 0;
  uint64_t small_calls = 0;  // products of 2 to 4 rows computed by small_f32::gemm (AVX2)
};
BlasStats blas_stats();

/// How cpu.BlasMatmul spreads work over threads (OpenBLAS itself runs single-threaded, so only
/// OpenMP's threads use the cores). Auto: small products run as one call; otherwise whole products
/// per thread when there are at least as many as threads, else each product split by rows (or
/// columns) of the output. Sequential: one call per product on the calling thread. PerThread:
/// whole products per thread. Process-wide (for benchmarks).
enum class BlasBatchMode { Auto, Sequential, PerThread };
void set_blas_batch_mode(BlasBatchMode m);

/// Sets OpenBLAS to one thread, once per process: the CPU backend's own thread pool splits the
/// work, and OpenBLAS's threads would compete with it for the same cores. Every kernel calling
/// BLAS (cpu.BlasMatmul, cpu.MatmulW16's prefill panels) calls this when it is made.
void ensure_single_threaded_blas();

/// The strided dot-product kernel: any views, any dtype, numerics of the reference
/// (products rounded to the dtype, float sums accumulated in double and rounded once, integers
/// wrapped). cpu.BlasMatmul falls back to it where a layout is not a gemm. f32 outputs go in
/// groups of 8 in AVX2 (matmul_f32x8.hpp) where both operands step by 0 or 1 along the group, or
/// both are contiguous along k; the same bits.
class GenericMatmul {
 public:
  explicit GenericMatmul(const LlirNode& n);
  void run(const KernelContext& k);

 private:
  void prepare(const DynMap& dyn, uint64_t version);

  Attrs attrs_;
  uint64_t version_ = 0;            // dims version prepared for (0: never)
  StridedIndex out_a_, out_b_;      // per output element: offsets into a and b
  std::vector<int64_t> k_a_, k_b_;  // per k: offsets into a and b
  int64_t numel_ = 0;
  bool simd_ = false;    // f32 on an x86 ISA: groups of 8 outputs in AVX2 (matmul_f32x8.hpp)
  bool k_unit_ = false;  // both operands contiguous along k
};

}  // namespace luminal::cpu
