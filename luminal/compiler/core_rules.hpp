#pragma once
// Backend-independent rewrites that hold exactly (bit for bit) in every dtype. They run first,
// before the backend's rulesets, and only ever merge classes (they add no e-nodes):
//
//   cast-identity   Cast(x) to x's own dtype, read contiguously with x's shape  ==  x
//   cast-roundtrip  Cast(Cast(x) to a dtype that holds every value of x's) back to x's dtype  ==  x
//                   (bf16 -> f32 -> bf16, i32 -> i64 -> i32, ...: what 16-bit composite ops emit)
//   mul-one         x * 1 (a broadcast constant 1, x read contiguously)  ==  x
//
// Example: examples/snippets/compiler/core_rules.cpp (bf16 x cast to f32 and back, times 1, is x).
#include "luminal/egraph/rule.hpp"

namespace luminal {

RuleSet core_rules();

/// Does `v` read a whole buffer of `shape` in order (so the reader sees exactly that value)?
bool reads_whole(const View& v, const Shape& shape);

/// True when every value of `from` is exactly representable in `to`.
bool widens_exactly(DType from, DType to);

}  // namespace luminal
