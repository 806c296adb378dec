#pragma once
// Whether an expression reads no dim: its value depends on the index variable `z` alone, the same
// for every value of the dynamic dims (load-time folding, horizontal fusion and the CPU's 16-bit
// matmul ask this of shapes, strides and offsets).
#include <string>

#include "luminal/core/expr.hpp"

namespace luminal {

/// True when `e` mentions no variable but `z`.
inline bool is_static(const Expr& e) {
  for (const std::string& v : e.vars())
    if (v != "z") return false;
  return true;
}

}  // namespace luminal
