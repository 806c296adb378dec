#pragma once
// How a CUDA op is defined (internal). Each op family lives in one file: its OpDefs, the rules
// that introduce them, and its source generation (codegen.hpp), tied together by a CudaOp (the
// op, its ruleset's name, its rules, its generator). The registry (cuda_ops.cpp) lists them.
// Example: examples/snippets/cuda/cuda_op.cpp (an op and its generator; the registry's lookups).
#include <string_view>
#include <vector>

#include "luminal/cuda/codegen.hpp"
#include "luminal/egraph/rule.hpp"

namespace luminal::cuda {

struct CudaOp {
  const OpDef* def;
  /// Ruleset its rules belong to ("cuda.fusion", "cuda.library", "cuda.inplace"); empty if none.
  std::string_view ruleset;
  std::vector<Rule> (*rules)();  // may be null
  KernelGen (*generate)(const LlirNode& n, const GenContext& ctx);
};

/// Every CUDA op (HLIR primitives included), in registry order.
const std::vector<const CudaOp*>& cuda_ops();
/// The CudaOp implementing `def`, or null.
const CudaOp* find_cuda_op(const OpDef* def);

}  // namespace luminal::cuda

namespace luminal::cuda {

/// Raw copy of a node's single input through views[0] into its contiguous output (Output nodes
/// that are not written in place).
KernelGen gen_view_copy(const LlirNode& n, const GenContext& ctx);
/// The fused op (its rules are in the "cuda.fusion" ruleset).
const OpDef* cuda_fused_op();

}  // namespace luminal::cuda
