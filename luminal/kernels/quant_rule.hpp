#pragma once
// The matching every backend's quantized ops share (backend-neutral, like matmul_rule.hpp).
//
// A quantized matmul is SumReduce(Mul(a, b)) (matmul_parts) where one operand's class holds
// Dequantize(W), W a block-typed value, and the product is a linear layer: every axis but k is
// either an m axis (W's stride 0: activation rows) or an n axis (the activation's stride 0:
// weight rows), k walks one whole stored row of W with stride 1, and each n index starts a row.
// The parts give
//   - the activation class and its view as rows [m axes..., k] (what an 8-bit quantizer reads),
//   - W and its view over the Mul's dims, composed through the Dequantize's row view (n axes:
//     element offsets of row starts in W; k: 1; m axes: 0).
// A quantized gather is Gather(indexes, data) where data's class holds Dequantize(W) read
// through a contiguous view: the gather's flat index addresses the dequantised tensor, which is
// W through the Dequantize's row view.
// Example: luminal/cpu/qmatmul.cpp (the CPU ops built on these).
#include <optional>
#include <vector>

#include "luminal/egraph/egraph.hpp"
#include "luminal/egraph/rule.hpp"

namespace luminal {

struct QuantMatmulParts {
  ClassId act = 0;          // the f32 activation class
  ClassId weight = 0;       // the block-typed class W
  ClassId dequantized = 0;  // the Mul's operand class holding Dequantize(W)
  DType wtype = DType::Q4_0;
  Shape dims;               // the Mul's dims (k included)
  int axis = 0;             // k
  Shape act_rows;           // [m axes' dims..., K]
  View act_rows_view;       // the activation read as act_rows
  View weight_view;         // W over `dims` (composed), as above
  std::vector<int> m_axes;  // axes of `dims` the activation walks (in order)
  View act_view;            // the activation over `dims` (the Mul's view of it)
  Attrs sum;                // the SumReduce's attributes (output shape, dtype)
  ENodeId sum_node = 0;
};

/// The parts of a matmul_pattern() match that is a quantized linear layer, or nothing.
std::optional<QuantMatmulParts> quant_matmul_parts(const EGraph& eg, const Match& m);

/// The same for a linear layer whose operand class holds Cast(W) from a bf16/f16 weight W (a
/// persistent input) to f32, a 16-bit checkpoint computed in f32: `weight` is W, `dequantized`
/// the Cast's class and `wtype` bf16 or f16; the same restrictions on the views.
std::optional<QuantMatmulParts> cast16_matmul_parts(const EGraph& eg, const Match& m);

/// `q` dominates every other live e-node of its class that reads `dequantized` (the widened
/// weight): a kernel that reads W itself wins over widening all of W for a few rows.
void dominate_widened(EGraph& eg, ENodeId q, ClassId dequantized);

/// A view over `dims` reading a contiguous [m axes..., K] buffer: the m axes get its strides, k
/// stride 1, every other axis 0.
View rows_view_over(const Shape& dims, const std::vector<int>& m_axes, int axis, const Shape& rows);

/// The integer form of a quantized linear layer (cpu.QuantizeQ8 + cpu.QMatmul, cuda.QuantizeQ8 +
/// cuda.QGemvQ8): the attributes of the node quantizing the activation rows to `fmt` and of the
/// matmul reading them as contiguous rows (rows_view_over) beside W.
struct QuantMatmulAttrs {
  Attrs quantize, matmul;
};
QuantMatmulAttrs quant_matmul_attrs(const QuantMatmulParts& p, DType fmt);

struct QuantGatherParts {
  ClassId indexes = 0;
  ClassId weight = 0;
  View index_view;
  View weight_view;  // the Dequantize's row view of W (over the dequantised shape)
  Attrs gather;      // the Gather's attributes
  ENodeId gather_node = 0;
};

/// Gather(indexes, data) with data = Dequantize(W) read contiguously, or nothing.
Pattern quant_gather_pattern();
std::optional<QuantGatherParts> quant_gather_parts(const EGraph& eg, const Match& m);

}  // namespace luminal
