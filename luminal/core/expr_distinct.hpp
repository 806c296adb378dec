#pragma once
// Whether an index expression takes a different value at every position: the proof behind a
// scatter whose writes never meet (cuda.ScatterUnique and cuda.ScatterDistinct write in parallel
// instead of in order).
#include <string_view>

#include "luminal/core/expr.hpp"

namespace luminal {

/// True when `e` is proven to take a different value for every `v` in [0, len); false when it
/// is not proven (it may still be distinct). Variables other than `v` are dims: any value in
/// [0, 2^40], or [1, 2^40] for a dim that is a factor of `len` (at 0 there is nothing to
/// prove). The forms proven:
///   - linear: a * v + b with a constant a != 0;
///   - a strided layout: the sum over i of c_i * ((v / d_i) % m_i), plus terms free of v, where
///     the d_i and m_i are the place values of v in a mixed radix (d_0 = 1, d_{i+1} = d_i * m_i;
///     the last term may be c * (v / d) without a modulo, or else len <= d * m), and every
///     coefficient, taken from the smallest, is larger than the most the smaller terms can add
///     up to. This is what prim::scatter_by_map writes for concat and pad (the destination
///     offset of each source element), transposed destinations included.
bool distinct_over(const Expr& e, std::string_view v, const Expr& len);

}  // namespace luminal
