#pragma once
// Whether a view reads its input whole and in order (internal to luminal/cuda): the rules that put
// a QuantizeQ8 into its producer's store (cuda.FusedQ8, cuda.AttentionQ8) need its flat index to
// be the producer's. View::is_contiguous compares strides structurally; a reshape that merged
// axes reads in order through strides such as 128*(z/128) + z%128, which it does not recognise.
#include "luminal/core/shape.hpp"

namespace luminal::cuda {

/// True when `v` has no base and reads element i at offset i for every flat index i: either
/// View::is_contiguous, or static dims (at most 2^16 elements) whose offsets, evaluated, are.
bool reads_in_order(const View& v);

}  // namespace luminal::cuda
