#pragma once
// How a CUDA op is defined (internal). Each op family lives in one file: its OpDefs, the rules
// that introduce them, and its source generation (codegen.hpp), tied together by a CudaOp (the
// op, its ruleset's name, its rules, its generator). The registry (cuda_ops.cpp) lists them.
// Example: examples/snippets/cuda/cuda_op.cpp (an op and its generator; the registry's lookups).
#include <string_view>
#include <vector>

#include "luminal/cuda/codegen.hpp"
#include "luminal/egraph/rule.hpp"
#include "luminal/program/op_registry.hpp"

namespace luminal::cuda {

/// A CUDA op: the op and its rules (RegisteredOp; rulesets "cuda.fusion", "cuda.library",
/// "cuda.inplace", ...), and its source generation.
struct CudaOp : RegisteredOp {
  KernelGen (*generate)(const LlirNode& n, const GenContext& ctx);
};

/// Every CUDA op (HLIR primitives included), in registry order.
const std::vector<const CudaOp*>& cuda_ops();
/// cuda_ops() with the payload kinds they carry (fused_program, lt_epilogue with cuBLASLt), as
/// CudaBackend and the cuda_* functions of cuda_backend.hpp answer from it.
const OpRegistry& cuda_registry();
/// The CudaOp implementing `def`, or null.
const CudaOp* find_cuda_op(const OpDef* def);

}  // namespace luminal::cuda

namespace luminal::cuda {

/// Raw copy of a node's single input through views[0] into its contiguous output (Output nodes
/// that are not written in place).
KernelGen gen_view_copy(const LlirNode& n, const GenContext& ctx);
/// The fused op (its rules are in the "cuda.fusion" ruleset).
const OpDef* cuda_fused_op();
/// The row op, cuda.Row (row.cpp; its rules are in the "cuda.rows" ruleset).
const OpDef* cuda_row_op();
/// cuda.RowQ8: a row kernel writing Q8_1 blocks (row.cpp).
const OpDef* cuda_row_q8_op();
/// cuda.ScatterUnique (gather_scatter.cpp): the in-place scatter whose indexes are distinct.
const OpDef* scatter_unique_op();

}  // namespace luminal::cuda
