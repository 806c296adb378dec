#pragma once
// A matmul's domain with axes split so that every stride is linear in its index.
//
// A view reads an axis through a stride linear in z (c*z) when the tensor steps evenly along it.
// Merging a broadcast axis into its neighbour breaks that: the k/v heads of grouped-query
// attention repeated for each query head (torch's repeat_interleave, an expand then a reshape)
// read 12 query heads through the stride 65536*(z/3). A library gemm cannot take such an operand
// (cpu.BlasMatmul gathered it into a workspace on every run: a whole KV cache a layer). Split
// [12] into [4, 3] and the strides are 65536*z and 0: a batch of 4 x 3 plain products. The
// output, row-major over the domain's other axes, keeps its layout.
#include <optional>

#include "luminal/core/shape.hpp"

namespace luminal {

struct SplitDomain {
  View a, b;  // the two operands' views over the split domain
  int axis;   // the reduced axis in the split domain
};

/// The views of a matmul's operands (over its domain; `axis` the reduced one) with every
/// non-reduced axis whose stride is not linear in either view split in two, [d/g, g] for a
/// constant g that divides d (taken from the divisions and remainders by constants in those
/// strides), where that makes all four strides linear. Nothing when no axis needs a split or
/// some stride stays non-linear.
std::optional<SplitDomain> split_for_linear_strides(const View& a, const View& b, int axis);

}  // namespace luminal
