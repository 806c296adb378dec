// luminal/egraph/op_def.hpp: an op's identity is its OpDef's address. HLIR primitives have one
// each (hlir_op); a backend defines its own as static objects.
#include "luminal/egraph/op_def.hpp"
#include "snippet.hpp"

using namespace luminal;

const OpDef kBlasMatmul{"cpu.BlasMatmul"};

int main() {
  const OpDef* add = hlir_op(OpKind::Add);
  expect(add == hlir_op(OpKind::Add) && add->is_hlir, "one OpDef per primitive");
  expect(is_op(add, OpKind::Add) && !is_op(&kBlasMatmul, OpKind::Add), "compare by pointer");
  expect(!kBlasMatmul.is_hlir && kBlasMatmul.inplace_input == -1, "a backend op, not in place");
}
