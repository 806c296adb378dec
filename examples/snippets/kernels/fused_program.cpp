// luminal/kernels/fused_program.hpp: the fused elementwise program, a small SSA list whose last
// instruction is the result (the payload of every backend's fused op).
#include <string>

#include "luminal/kernels/fused_program.hpp"
#include "snippet.hpp"

using namespace luminal;

int main() {
  // %0 = load 0 f16; %1 = const 0.5 f16; %2 = mul %0 %1 f16 (computed in f32, rounded to f16);
  // %3 = cast %2 f32
  FusedInst load{FusedOpcode::Load, DType::F16, 0};
  FusedInst half{FusedOpcode::Const, DType::F16};
  half.value = 0.5;
  FusedInst mul{FusedOpcode::Mul, DType::F16, 0, 1};
  FusedInst cast{FusedOpcode::Cast, DType::F32, 2};
  FusedProgram p({load, half, mul, cast});
  p.validate();  // throws when an operand is not an earlier instruction or dtypes disagree
  expect(p.num_children() == 1 && !p.has_row_reduce(), "one child, elementwise");
  auto back = FusedProgram::deserialize(p.serialize());  // the compile cache's form
  expect(back->equals(p), "serialize() reads back");
  expect(p.to_string().find("mul") != std::string::npos, "printed one instruction a step");
}
