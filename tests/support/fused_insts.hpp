#pragma once
// Building fused-program instructions by hand in tests:
//
//   FusedProgram p({testing::inst(FusedOpcode::Load, DType::F32, 0),
//                   testing::cnst(DType::F32, 2.0),
//                   testing::inst(FusedOpcode::Mul, DType::F32, 0, 1)});
#include <cstdint>

#include "luminal/kernels/fused_program.hpp"

namespace luminal::testing {

/// An instruction of opcode `op` with result dtype `t` and operands (or load index) a, b, c.
inline FusedInst inst(FusedOpcode op, DType t, int a = -1, int b = -1, int c = -1) {
  FusedInst i;
  i.op = op;
  i.dtype = t;
  i.a = a;
  i.b = b;
  i.c = c;
  return i;
}

/// A constant: `v` for floats and Bool, `iv` for integers.
inline FusedInst cnst(DType t, double v, int64_t iv = 0) {
  FusedInst i = inst(FusedOpcode::Const, t);
  i.value = v;
  i.int_value = iv;
  return i;
}

}  // namespace luminal::testing
