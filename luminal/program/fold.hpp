#pragma once
// Load-time folding as backends and programs see it. A value computed from weights alone (a
// transpose, a concatenation, a repacked or dequantised copy) may be computed once when the
// weights are bound instead of in every step: the compiler adds a `Fold` e-node to its class
// (compiler/fold.hpp), and a program that chooses it reads the value as an ordinary Input whose
// label starts with "#fold/". A backend takes part by listing fold_op() among the ops it executes
// (its registry); it never runs the op itself, only the fold programs, which are ordinary LLIR.
#include <string_view>

#include "luminal/egraph/op_def.hpp"

namespace luminal {

/// The op of a fold leaf: no children, the class's dtype and shape, a placeholder label.
const OpDef* fold_op();

/// Labels of folded values: "#fold/class<id>" while a bucket is searched, "#fold/<16 hex digits>"
/// (a hash of the fold program's text) in a chosen program, the compile cache and a session.
inline constexpr std::string_view kFoldPrefix = "#fold/";
inline bool is_fold_label(std::string_view label) { return label.starts_with(kFoldPrefix); }

}  // namespace luminal
