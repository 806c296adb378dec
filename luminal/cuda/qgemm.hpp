#pragma once
// What the prefill GEMM kernels over block weights share (internal to luminal/cuda):
// cuda.QGemmQ8 (qgemm.cpp, int8 MMAs over 8-bit activation rows) and cuda.QGemmBF16
// (qgemm_bf16.cpp, bf16 MMAs over bf16 activation rows, the weight dequantised into shared
// memory).
#include <cstdint>
#include <string>

#include "luminal/cuda/codegen.hpp"
#include "luminal/cuda/quant_device.hpp"
#include "luminal/egraph/egraph.hpp"
#include "luminal/program/llir.hpp"

namespace luminal::cuda {

/// A prefill GEMM node's operands, checked: contiguous activation rows [M, K] of `tx` (the
/// product's m axes before its n axes), block weight rows of `tw` (in the GGUF layout, or the
/// split layout of cuda.QRepack), the output [M, N] in f32.
struct GemmOperands {
  DType tx = DType::Q8_1, tw = DType::Q4_0;
  bool split = false;
  Expr M, N, K;
  int64_t units = 0;  // K / 32
  View wrow;          // W's view with the m axes at 0: weight row p's first value at p
  int axis = 0;
  SplitLayout layout;  // (split) bytes of a body and a head
  int64_t blocks = 0;  // (split) the weight's blocks: the heads follow all the bodies
};

/// Checks `n` (`split`: the weight in the split layout, legacy types only); `x_ok` says whether
/// an activation type goes with a weight type, `x_names` names those pairs for the error.
GemmOperands gemm_operands(const LlirNode& n, bool split, bool (*x_ok)(DType x, DType w),
                           const std::string& x_names);

/// Statements (appended to `body`) that point wr[j] at weight row `p`'s first block, null when
/// p >= N, and for the split layout wh[j] at its first head.
void weight_row_pointer(Codegen& cg, const GemmOperands& g, const std::string& p, int j,
                        std::string& body);

/// cuda.QGemmBF16 (qgemm_bf16.cpp) over the GGUF layout, or with `split` cuda.QGemmBF16S over
/// the split layout: x [rows, K] as bf16 rows (cuda.QuantizeQ8 in BF16) @ W^T. (Mutable:
/// qgemm_rules() sets its library_replaces.)
OpDef* qgemm_bf16_op(bool split);

/// The block types with a 32-value block (one MMA step): q4_0, q4_1, q5_0, q5_1, q8_0.
bool legacy_type(DType t);

/// Whether a prefill GEMM e-node's weight (child 1) is large for the seeds: 2^22 values or more
/// (an 8B model's 1024 x 4096 up), where the bf16 form beat the int8 one (qgemm_bf16.cpp); small:
/// fewer; neither when its size is not static. The seeds' extras on both forms (small_weight_extra,
/// large_weight_extra) ask it, so they cannot disagree at the threshold.
enum class WeightSize { Unknown, Small, Large };
WeightSize gemm_weight_size(const EGraph& eg, uint32_t enode);

}  // namespace luminal::cuda
