#pragma once
// A sum over an axis of two, unrolled into one Add, so that it can fuse with the elementwise work
// around it (rope's rotation, nn::apply_rope, is such a sum of two products):
//
//   SumReduce over a constant axis of 2 of a float x  ==  Add(x[.., 0, ..], x[.., 1, ..])
//   and, when x is a Mul read whole:  ==  Add(Mul(a[0], b[0]), Mul(a[1], b[1]))
//
// (x[i] reads index i of the axis through a view; the second form moves the slices into the
// Mul's operands, so the Muls are read whole by the Add and fuse into it.) Exact in every float
// dtype: the sum of two values of the dtype, rounded once to it, is what the SumReduce gives
// (the reference adds in double and rounds at the end; a double holds the sum of two floats of
// 24 or fewer significant bits rounded correctly twice over, as it does for the one add here).
// The SumReduce stays in its class: the search chooses, and a matmul rule may still take it.
// Not offered for f64 sums: a program taking these adds inlined in one kernel and a matmul
// kernel elsewhere computes the sum twice, bits apart (BLAS's fma), which f64 division's exact
// splits amplify (ir/division.cpp; the division of f32 and narrower floats has no split).
// LUMINAL_SHORT_SUMS=off leaves the rule out (for A/B runs; the compile cache keys the rules).
#include "luminal/egraph/rule.hpp"

namespace luminal {

RuleSet short_sum_rules();

}  // namespace luminal
