#include "luminal/cpu/seed_work.hpp"

#include "luminal/core/shape.hpp"
#include "luminal/egraph/egraph.hpp"
#include "luminal/kernels/fused_program.hpp"

namespace luminal::cpu {

namespace {

// Nanoseconds an element of wall time on two cores, roughly (2-core AMD EPYC, 2026-12-06: the
// counter hash's 12 remainders and ~30 other 64-bit operations took about 6 ns an element). The
// same prices for an instruction of a fused program and for the primitive kernel of its op, so
// the seed weighs where arithmetic runs and how often, not how it is grouped. Priced by the
// result's dtype (a comparison's is Bool: the cheap price even between 64-bit integers).
double op_ns(OpKind op, DType t) {
  const bool integral = !is_float(t) && t != DType::Bool;
  switch (op) {
    case OpKind::Mod: return integral ? 0.4 : 0.2;
    case OpKind::Exp2:
    case OpKind::Log2:
    case OpKind::Sin:
    case OpKind::Sqrt:
    case OpKind::Recip: return 0.05;
    case OpKind::Cast:
    case OpKind::Add:
    case OpKind::Mul:
    case OpKind::LessThan: return integral ? 0.1 : 0.01;
    default: return 0;
  }
}

double instruction_ns(const FusedInst& in) {
  switch (in.op) {
    case FusedOpcode::Exp2: return op_ns(OpKind::Exp2, in.dtype);
    case FusedOpcode::Log2: return op_ns(OpKind::Log2, in.dtype);
    case FusedOpcode::Sin: return op_ns(OpKind::Sin, in.dtype);
    case FusedOpcode::Recip: return op_ns(OpKind::Recip, in.dtype);
    case FusedOpcode::Sqrt: return op_ns(OpKind::Sqrt, in.dtype);
    case FusedOpcode::Cast: return op_ns(OpKind::Cast, in.dtype);
    case FusedOpcode::Add: return op_ns(OpKind::Add, in.dtype);
    case FusedOpcode::Mul: return op_ns(OpKind::Mul, in.dtype);
    case FusedOpcode::Mod: return op_ns(OpKind::Mod, in.dtype);
    case FusedOpcode::LessThan: return op_ns(OpKind::LessThan, in.dtype);
    case FusedOpcode::Select: return 0.01;
    default: return 0;  // loads, constants, row reductions
  }
}

}  // namespace

double region_seed_work(const EGraph& eg, uint32_t enode) {
  const Attrs& a = eg.attrs_of(enode);
  const Expr count = numel(a.shape);
  if (!count.is_const() || count.as_const() <= 0) return 0;
  double ns = 0;
  if (const auto* prog = dynamic_cast<const FusedProgram*>(a.payload.get())) {
    for (const FusedInst& in : prog->insts)
      ns += instruction_ns(in);
  } else {
    const OpDef* op = eg.node(enode).op;
    if (!op->is_hlir) return 0;
    ns = op_ns(op->kind, a.dtype);
  }
  return static_cast<double>(count.as_const()) * ns * 1e-3;  // a kernel a microsecond
}

}  // namespace luminal::cpu
