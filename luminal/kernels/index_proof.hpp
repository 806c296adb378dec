#pragma once
// Whether a scatter's indexes differ at every position when they are computed in the graph from
// iotas and a value known only at run time: torch's `cache[:, :, pos] = k` (index_copy_ /
// index_put) writes at flat index  sum_k iota_k * stride_k + pos * stride_pos, where pos is an
// input tensor broadcast over every element written. Whatever pos holds, the iota terms differ
// at each element, and adding one value to all of them keeps them different; so the writes
// never meet and may run in parallel (cuda.ScatterUnique) or be stored by the kernel that
// computes src (cuda/scatter_store.cpp). core/expr_distinct.hpp proves the same for an Iota
// read alone; this proves it for an index class built from several.
//
// The proof evaluates the index class at every position of the scatter (static shapes only,
// at most kIndexProofMaxElements positions), as a known part f and an unknown part U that is
// one value at every position: the value is f + U. It follows HLIR e-nodes only:
//   Constant, Iota (values known), Add (f and U add), Mul (one side known and equal at every
//   position: both parts scale; or neither side unknown), Cast between integer types (a known
//   value that fits the target; an unknown one only between types of one width, a bijection);
//   any class read through a view that is constant over the positions read (stride 0 on every
//   axis longer than 1) and has no known value: an unknown part (the run-time position).
// Integer arithmetic wraps modulo 2^w (w the index dtype's width), and f + U, taken modulo 2^w,
// is distinct whenever f is distinct modulo 2^w; the proof checks that, exactly, by sorting.
// Anything else (a dynamic shape, a float, a Gather, an unknown value that varies by position,
// a product of two unknowns) is "not proven".
// Example: tests/kernels/index_proof_test.cpp.
#include <cstdint>

#include "luminal/core/shape.hpp"
#include "luminal/egraph/egraph.hpp"

namespace luminal {

inline constexpr int64_t kIndexProofMaxElements = int64_t{1} << 20;

/// True when class `c`, read through `view` (its dims the positions of the scatter), is proven
/// to hold a different value at every position; false when not proven.
bool distinct_index(const EGraph& eg, ClassId c, const View& view);

}  // namespace luminal
