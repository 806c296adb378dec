#include "luminal/ir/op.hpp"

namespace luminal {

std::string_view op_name(OpKind op) {
  switch (op) {
    case OpKind::Input: return "Input";
    case OpKind::Constant: return "Constant";
    case OpKind::Iota: return "Iota";
    case OpKind::Cast: return "Cast";
    case OpKind::Exp2: return "Exp2";
    case OpKind::Log2: return "Log2";
    case OpKind::Sin: return "Sin";
    case OpKind::Recip: return "Recip";
    case OpKind::Sqrt: return "Sqrt";
    case OpKind::Add: return "Add";
    case OpKind::Mul: return "Mul";
    case OpKind::Mod: return "Mod";
    case OpKind::LessThan: return "LessThan";
    case OpKind::SumReduce: return "SumReduce";
    case OpKind::MaxReduce: return "MaxReduce";
    case OpKind::Gather: return "Gather";
    case OpKind::Scatter: return "Scatter";
    case OpKind::Dequantize: return "Dequantize";
    case OpKind::Output: return "Output";
  }
  return "?";
}

bool is_unary(OpKind op) {
  return op == OpKind::Cast || op == OpKind::Exp2 || op == OpKind::Log2 || op == OpKind::Sin ||
         op == OpKind::Recip || op == OpKind::Sqrt;
}

bool is_binary(OpKind op) {
  return op == OpKind::Add || op == OpKind::Mul || op == OpKind::Mod || op == OpKind::LessThan;
}

bool is_reduce(OpKind op) { return op == OpKind::SumReduce || op == OpKind::MaxReduce; }

}  // namespace luminal
