#include "luminal/cpu/cpu_op.hpp"

#include <memory>
#include <string_view>

#include "luminal/core/error.hpp"
#include "luminal/kernels/fused_program.hpp"
#include "luminal/program/fold.hpp"

namespace luminal::cpu {

// Each op family registers its ops here (one line per file).
void register_primitive_ops(std::vector<const CpuOp*>& ops);        // primitives.cpp
void register_fused_ops(std::vector<const CpuOp*>& ops);            // fused.cpp
void register_row_ops(std::vector<const CpuOp*>& ops);              // row.cpp
void register_matmul_generic_ops(std::vector<const CpuOp*>& ops);   // matmul_generic.cpp
void register_matmul_blas_ops(std::vector<const CpuOp*>& ops);      // matmul_blas.cpp
void register_scatter_inplace_ops(std::vector<const CpuOp*>& ops);  // scatter_inplace.cpp
void register_qgather_ops(std::vector<const CpuOp*>& ops);          // qgather.cpp
void register_qmatmul_ops(std::vector<const CpuOp*>& ops);          // qmatmul.cpp
void register_matmul_w16_ops(std::vector<const CpuOp*>& ops);       // matmul_w16.cpp
void register_expert_matmul_ops(std::vector<const CpuOp*>& ops);    // expert_matmul.cpp
void register_iota_index_ops(std::vector<const CpuOp*>& ops);       // iota_index.cpp
void register_attention_ops(std::vector<const CpuOp*>& ops);        // attention.cpp

namespace {

// Load-time folds (program/fold.hpp): the CPU runs fold programs; a program never holds the Fold
// op itself (to_llir writes a chosen one as an Input).
std::unique_ptr<Kernel> make_fold(const LlirNode&) {
  throw Error("cpu: a Fold node cannot run; a program reads folded values as inputs");
}

}  // namespace

const std::vector<const CpuOp*>& cpu_ops() {
  static const std::vector<const CpuOp*> ops = [] {
    std::vector<const CpuOp*> v;
    register_primitive_ops(v);
    register_fused_ops(v);
    register_row_ops(v);
    register_matmul_generic_ops(v);
    register_matmul_blas_ops(v);
    register_scatter_inplace_ops(v);
    register_qgather_ops(v);
    register_qmatmul_ops(v);
    register_matmul_w16_ops(v);
    register_expert_matmul_ops(v);
    register_iota_index_ops(v);
    register_attention_ops(v);
    static const CpuOp fold{{fold_op(), "", nullptr}, make_fold};
    v.push_back(&fold);
    return v;
  }();
  return ops;
}

const OpRegistry& cpu_registry() {
  static const OpRegistry registry(
      {cpu_ops().begin(), cpu_ops().end()},
      [](std::string_view kind, std::string_view text) -> std::shared_ptr<const Payload> {
        if (kind == "fused_program") return FusedProgram::deserialize(text);
        return nullptr;
      });
  return registry;
}

const CpuOp* find_cpu_op(const OpDef* def) {
  // The registry holds cpu_ops(): every op it finds is a CpuOp.
  return static_cast<const CpuOp*>(cpu_registry().find(def));
}

}  // namespace luminal::cpu
