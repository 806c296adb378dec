#pragma once
// Matching an expert-indexed matmul (backend-neutral, like kernels/quant_rule.hpp): a matmul
// (SumReduce over Mul, kernels/matmul_rule.hpp) whose weight operand is a gather of whole rows
// of a stacked weight [E, N, D] by an expert id per row, as nn::expert_linear builds it:
//
//   Gather(Add(Iota(z % R), Mul(ids, Constant(R))), W)     (W read as [E, R], R = N*D)
//
// where the ids' view repeats one id across the R elements of a gathered row. Optionally a Cast
// to f32 sits between the Gather and the Mul (16-bit weights), and W may be Dequantize(Wq) of a
// block-quantized Wq (read as stored). Every other axis of the Mul (size > 1) is a row axis (the
// gathered side's stride a multiple of R: one expert id per row) or the one n axis (a stride
// inside a row, the activation's stride 0); row axes come before the n axis, so the output is
// [rows..., N] row-major. The parts give
//   - act:    the activation class, read as act_rows [rows..., D],
//   - ids:    the id class, read as ids_rows [rows...] (one id per row),
//   - weight: W (or Wq), read as weight_view [E, N, D] in its own elements (strides R, the n
//             stride, 1).
// A kernel computes out[r, n] = sum_d act[r, d] * W[ids[r], n, d], reading only the experts the
// ids name.
// Example: tests/cpu/expert_matmul_test.cpp (the CPU op on it, against the reference).
#include <optional>

#include "luminal/egraph/egraph.hpp"
#include "luminal/egraph/rule.hpp"

namespace luminal {

struct ExpertMatmulParts {
  ClassId act = 0, ids = 0, weight = 0;
  DType wtype = DType::F32;  // W's element type (f32, f16, bf16 or a block type)
  View act_rows;             // [rows..., D]
  View ids_rows;             // [rows...]
  View weight_view;          // [E, N, D]
  Attrs sum;                 // the SumReduce's attributes (output shape, dtype f32)
  ENodeId sum_node = 0;
};

/// The parts of a matmul_pattern() match that is an expert-indexed matmul, or nothing.
std::optional<ExpertMatmulParts> expert_matmul_parts(const EGraph& eg, const Match& m);

}  // namespace luminal
