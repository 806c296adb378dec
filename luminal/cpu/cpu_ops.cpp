#include "luminal/cpu/cpu_op.hpp"

namespace luminal::cpu {

// Each op family registers its ops here (one line per file).
void register_primitive_ops(std::vector<const CpuOp*>& ops);        // primitives.cpp
void register_fused_ops(std::vector<const CpuOp*>& ops);            // fused.cpp
void register_matmul_generic_ops(std::vector<const CpuOp*>& ops);   // matmul_generic.cpp
void register_matmul_blas_ops(std::vector<const CpuOp*>& ops);      // matmul_blas.cpp
void register_scatter_inplace_ops(std::vector<const CpuOp*>& ops);  // scatter_inplace.cpp

const std::vector<const CpuOp*>& cpu_ops() {
  static const std::vector<const CpuOp*> ops = [] {
    std::vector<const CpuOp*> v;
    register_primitive_ops(v);
    register_fused_ops(v);
    register_matmul_generic_ops(v);
    register_matmul_blas_ops(v);
    register_scatter_inplace_ops(v);
    return v;
  }();
  return ops;
}

const CpuOp* find_cpu_op(const OpDef* def) {
  for (const CpuOp* op : cpu_ops())
    if (op->def == def) return op;
  return nullptr;
}

}  // namespace luminal::cpu
