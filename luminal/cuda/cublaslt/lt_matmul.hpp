#pragma once
// cuBLASLt matmuls in the search space (internal): cuda.LtMatmul (every matrix column-major, the
// operands swapped: C^T = B^T A^T) and cuda.LtMatmulRow (row-major), added by the rules of the
// "cuda.cublaslt" ruleset as alternatives of every matmul (SumReduce over a broadcast Mul) whose
// layout is one gemm per batch index with one batch count and stride (gemm_plan.hpp) and whose
// dtypes cuBLASLt takes (lt_types), reading 16-bit operands through the graph's casts to f32 and
// storing a 16-bit output through the graph's cast down. The node's attributes are a
// cuda.Matmul's (the Mul's two views over its dims, the reduced axis, the output's dtype and
// shape); the plan turns them into an LtSpec at the current dims (lt_node_gemm + lib_gemm).
#include <optional>
#include <vector>

#include "luminal/cuda/cublaslt/lt_spec.hpp"
#include "luminal/egraph/attrs.hpp"
#include "luminal/egraph/op_def.hpp"

namespace luminal::cuda {

/// The symbolic gemm of an Lt node's attributes: the Mul's dims and the coefficients of z in
/// its two views' strides.
struct LtNodeGemm {
  std::vector<Expr> dims, sa, sb;
  int k = 0;
};

/// Nothing when a stride is not c * z (an offset, a non-linear view) or the layout is not one
/// gemm per batch index with composing batch axes.
std::optional<LtNodeGemm> lt_node_gemm(const Attrs& a);

/// Whether `op` is a cuBLASLt op, and its family.
bool is_lt_op(const OpDef* op);
GemmFamily lt_family(const OpDef* op);

}  // namespace luminal::cuda
