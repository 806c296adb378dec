#pragma once
// The epilogue half of a generated GEMV, shared by cuda.GemvEpi (gemv.cpp) and cuda.QGemvEpi
// (qgemv.cpp); the rule is kernels/epilogue_rule.hpp. The epilogue's other inputs are read into
// registers pf<c>[M] (one per output row the storing lane writes) before the k loop, so their
// latency hides behind it; the store applies the epilogue program to the GEMV's value (load 0,
// rounded to its dtype first) and those registers (load j >= 1: input j + 1). Also the GEMV's
// weight prefetch switch.
#include <cstdint>
#include <string>

#include "luminal/cuda/codegen.hpp"

namespace luminal::cuda {

struct GemvPrefetch {
  std::string decl;  // the pf<c> arrays
  std::string load;  // fills them (lane 0 of part 0) for output element `out_at` of row mi
};

/// The prefetch of `epi`'s other inputs of node `n` for `rows` output rows; `out_at` is the C
/// expression of the output element of row mi. A load past the node's inputs is an error naming
/// the op.
GemvPrefetch gemv_epilogue_prefetch(const LlirNode& n, const FusedProgram& epi, Codegen& cg,
                                    int rows, const std::string& out_at);

/// The statements storing `value` (a C expression) at out[`at`]: through `epi` when given
/// (reading the prefetched registers of row mi), else converted to the node's dtype.
std::string gemv_store(const LlirNode& n, const FusedProgram* epi, const std::string& at,
                       const std::string& value);

/// Whether a cuda.Gemv / cuda.GemvCast kernel (and their epilogue and store-into-scatter forms;
/// not the tensor-core or GemvMatmul forms) whose shared operand holds `weight_bytes` (a weight;
/// in attention's scores, the K cache) prefetches its first bytes into L2 before it waits for the
/// kernel before it (programmatic launch), so its first loads overlap that kernel: below
/// LUMINAL_CUDA_PREFETCH MiB (default 4; 0: never). Measured on the H200, same programs: SmolLM2's
/// GEMVs gain (0.83 -> 0.80 ms a token); prefetching every GEMV cost the 8B 0.03 ms, and the same
/// prefetch in cuda.QGemv lost on SmolLM2 q4_1.
bool weight_prefetch(int64_t weight_bytes);

}  // namespace luminal::cuda
