#pragma once
// The epilogue half of a generated GEMV, shared by cuda.GemvEpi (gemv.cpp) and cuda.QGemvEpi
// (qgemv.cpp); the rule is kernels/epilogue_rule.hpp. The epilogue's other inputs are read into
// registers pf<c>[M] (one per output row the storing lane writes) before the k loop, so their
// latency hides behind it; the store applies the epilogue program to the GEMV's value (load 0,
// rounded to its dtype first) and those registers (load j >= 1: input j + 1). Also the GEMV's
// weight prefetch switch.
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "luminal/cuda/codegen.hpp"
#include "luminal/egraph/rule.hpp"

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

/// The paired forms' rule "<name>" (cuda.GemvGlu, cuda.QGemvQ8Glu, ...): a region (an HLIR
/// elementwise e-node or a `fused` e-node, kernels/epilogue_rule.hpp's canonical one) of exactly
/// two children, each a class holding a P e-node without a payload (for each (P, E) of `forms`),
/// the two alike but for one child, the weight (another class of the same dtype and shape, read
/// through the same view), each class read whole in element order, gets an E e-node: P's
/// children, then the second weight; P's views, then the weight's view again; the region as its
/// payload (load 0 the first child's product, load 1 the second's). SwiGLU over separate gate
/// and up weights in one GEMV. `weight_child(eg, e)`: which child of P e-node e the kernel reads
/// as the weight (input 2 is read as that one is), or -1 where e has no paired form; a pair whose
/// differing child is another is not offered.
using WeightChild = std::function<int(const EGraph& eg, ENodeId e)>;
Rule gemv_pair_rule(const std::string& name, const OpDef* fused,
                    std::vector<std::pair<const OpDef*, const OpDef*>> forms,
                    WeightChild weight_child);

/// The paired forms' store: `region` over `v0` and `v1` (the two products, C expressions; each
/// rounded to its load's dtype first, as the separate GEMVs store them) into out[`at`].
std::string gemv_pair_store(const LlirNode& n, const FusedProgram& region, const std::string& at,
                            const std::string& v0, const std::string& v1);

/// Whether a cuda.Gemv / cuda.GemvCast kernel (and their epilogue and store-into-scatter forms;
/// not the tensor-core or GemvMatmul forms) whose shared operand holds `weight_bytes` (a weight;
/// in attention's scores, the K cache) prefetches its first bytes into L2 before it waits for the
/// kernel before it (programmatic launch), so its first loads overlap that kernel: below
/// LUMINAL_CUDA_PREFETCH MiB (default 4; 0: never). Measured on the H200, same programs: SmolLM2's
/// GEMVs gain (0.83 -> 0.80 ms a token); prefetching every GEMV cost the 8B 0.03 ms, and the same
/// prefetch in cuda.QGemv lost on SmolLM2 q4_1.
bool weight_prefetch(int64_t weight_bytes);

}  // namespace luminal::cuda
