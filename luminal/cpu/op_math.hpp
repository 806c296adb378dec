#pragma once
// The math of the elementwise ops on compute values (internal), shared by the primitive kernels
// (elementwise.cpp, which switch on OpKind) and cpu.Fused (fused_kernel.cpp, on FusedOpcode): both
// enums name these ops alike. Each helper hands the op's function to `each`, the caller's loop
// over a block, so a kernel writes its loop once and the function inlines into it.
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "luminal/core/exp2.hpp"
#include "luminal/cpu/elem_types.hpp"
#include "luminal/cpu/vec_math.hpp"

namespace luminal::cpu {

/// Exp2, Log2, Sin, Recip or Sqrt over a float compute type R: calls each(f) with f: R -> R and
/// returns true; false for any other op. Exp2 over float is exp2_f32 (core/exp2.hpp), as the
/// reference's and unary_array's.
template <class R, class Op, class Each>
bool with_unary_math(Op op, Each&& each) {
  switch (op) {
    case Op::Exp2:
      if constexpr (std::is_same_v<R, float>)
        each([](R v) { return exp2_f32(v); });
      else
        each([](R v) { return std::exp2(v); });
      return true;
    case Op::Log2: each([](R v) { return std::log2(v); }); return true;
    case Op::Sin: each([](R v) { return std::sin(v); }); return true;
    case Op::Recip: each([](R v) { return R(1) / v; }); return true;
    case Op::Sqrt: each([](R v) { return std::sqrt(v); }); return true;
    default: return false;
  }
}

/// d[i] = op(x[i]) for i < n where a whole array has a faster form (Exp2 over float: vec::exp2,
/// the same bits as with_unary_math's): returns false, doing nothing, for any other op or type.
template <class R, class Op>
bool unary_array(Op op, const R* x, R* d, int64_t n) {
  if constexpr (std::is_same_v<R, float>) {
    if (op == Op::Exp2) {
      vec::exp2(x, d, n);
      return true;
    }
  }
  return false;
}

/// Add, Mul or (any other op) Mod over compute type R: calls each(f) with f: (R, R) -> R. int64
/// wraps (num::wrap_add, num::wrap_mul, num::int_mod); floats use +, * and std::fmod.
template <class R, class Op, class Each>
void with_binary_math(Op op, Each&& each) {
  if constexpr (std::is_same_v<R, int64_t>) {
    switch (op) {
      case Op::Add: return each([](R a, R b) { return num::wrap_add(a, b); });
      case Op::Mul: return each([](R a, R b) { return num::wrap_mul(a, b); });
      default: return each([](R a, R b) { return num::int_mod(a, b); });
    }
  } else {
    switch (op) {
      case Op::Add: return each([](R a, R b) { return a + b; });
      case Op::Mul: return each([](R a, R b) { return a * b; });
      default: return each([](R a, R b) { return std::fmod(a, b); });
    }
  }
}

}  // namespace luminal::cpu
