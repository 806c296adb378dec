#pragma once
// Helpers shared by the elementwise ops (elementwise_unary.cpp, elementwise_binary.cpp,
// elementwise_logic.cpp, division.cpp; internal to luminal/ir): dtype checks that name the op,
// broadcasting operands, and Bool logic on primitives.
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include "luminal/core/error.hpp"
#include "luminal/ir/prim.hpp"
#include "luminal/ir/tensor.hpp"

namespace luminal::elementwise {

// A float-only op; composite math on 16/8-bit floats runs in f32 and rounds once at the end.
template <class F>
Tensor in_f32(const Tensor& x, std::string_view op, F&& fn) {
  prim::require_float(x, op);
  return prim::in_f32(x, std::forward<F>(fn));
}

inline Tensor bool_not(const Tensor& b) {
  return prim::binary(OpKind::LessThan, b, prim::scalar_like(b, 1));
}
inline Tensor bool_and(const Tensor& a, const Tensor& b) { return prim::binary(OpKind::Mul, a, b); }
inline Tensor bool_or(const Tensor& a, const Tensor& b) { return prim::binary(OpKind::Add, a, b); }

inline void no_bool(const Tensor& x, std::string_view op) {
  if (x.dtype() == DType::Bool) {
    throw Error(std::string(op) +
                " is not defined for bool tensors; cast to an integer or float dtype first");
  }
}

// Both operands must have one dtype; errors name the op the caller used.
inline void same_dtype(const Tensor& a, const Tensor& b, std::string_view op) {
  if (a.dtype() != b.dtype()) {
    throw Error(std::string(op) + ": dtypes differ (" + std::string(name(a.dtype())) +
                shape_to_string(a.shape()) + " vs " + std::string(name(b.dtype())) +
                shape_to_string(b.shape()) + "); cast one side so both match");
  }
}

// Same dtype, then broadcast to the common shape.
inline std::pair<Tensor, Tensor> operands(const Tensor& a, const Tensor& b, std::string_view op) {
  same_dtype(a, b, op);
  return prim::broadcast(a, b, op);
}

// The primitive `k` over operands(a, b, op); `swapped` applies it as k(b, a).
inline Tensor apply_binary(OpKind k, const Tensor& a, const Tensor& b, std::string_view op,
                           bool swapped = false) {
  auto [x, y] = operands(a, b, op);
  return swapped ? prim::binary(k, y, x) : prim::binary(k, x, y);
}

// Integer tensors against a scalar outside their dtype's range (which would wrap as a constant):
// every element is on the same side of it. Returns the answer when s is below / above the range.
inline std::optional<bool> beyond_range(const Tensor& x, double s, bool if_below, bool if_above) {
  if (!is_integer(x.dtype())) return std::nullopt;
  if (s < min_value(x.dtype())) return if_below;
  if (s >= max_value(x.dtype()) + 1.0) return if_above;  // +1: I64's max is 2^63 as a double
  return std::nullopt;
}

}  // namespace luminal::elementwise
