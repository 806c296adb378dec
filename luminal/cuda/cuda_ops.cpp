#include "luminal/cuda/cuda_op.hpp"

#include <memory>
#include <string_view>

#include "luminal/core/error.hpp"
#include "luminal/cuda/gemv_then.hpp"
#include "luminal/kernels/fused_program.hpp"
#include "luminal/program/fold.hpp"
#ifdef LUMINAL_HAVE_CUBLASLT
#include "luminal/cuda/cublaslt/lt_matmul.hpp"
#endif

namespace luminal::cuda {

// Each op family registers its ops here (one line per file).
void register_elementwise_ops(std::vector<const CudaOp*>& ops);     // elementwise.cpp
void register_row_ops(std::vector<const CudaOp*>& ops);             // row.cpp
void register_reduce_ops(std::vector<const CudaOp*>& ops);          // reduce.cpp
void register_matmul_tiled_ops(std::vector<const CudaOp*>& ops);    // matmul_tiled.cpp
void register_fused_reduce_ops(std::vector<const CudaOp*>& ops);    // fused_reduce.cpp
void register_gemv_ops(std::vector<const CudaOp*>& ops);            // gemv.cpp
void register_gemv_kn_ops(std::vector<const CudaOp*>& ops);         // gemv_kn.cpp
void register_gather_scatter_ops(std::vector<const CudaOp*>& ops);  // gather_scatter.cpp
void register_scatter_store_ops(std::vector<const CudaOp*>& ops);   // scatter_store.cpp
void register_dequantize_ops(std::vector<const CudaOp*>& ops);      // dequantize.cpp
void register_qgemv_ops(std::vector<const CudaOp*>& ops);           // qgemv.cpp
void register_qgemm_ops(std::vector<const CudaOp*>& ops);           // qgemm.cpp
void register_qgemm_bf16_ops(std::vector<const CudaOp*>& ops);      // qgemm_bf16.cpp
void register_quantize_q8_ops(std::vector<const CudaOp*>& ops);     // quantize_q8.cpp
void register_qrepack_ops(std::vector<const CudaOp*>& ops);         // quant_repack.cpp
void register_expert_ops(std::vector<const CudaOp*>& ops);          // expert_gemv.cpp
void register_row_q8_ops(std::vector<const CudaOp*>& ops);          // row.cpp (after QuantizeQ8)
void register_fused_q8_ops(std::vector<const CudaOp*>& ops);  // elementwise.cpp (after QuantizeQ8)
void register_gemv_kn_q8_ops(std::vector<const CudaOp*>& ops);  // gemv_kn.cpp (after FusedQ8)
void register_attention_ops(std::vector<const CudaOp*>& ops);   // attention.cpp
void register_row_gemv_ops(std::vector<const CudaOp*>& ops);  // row_prologue.cpp (after all GEMVs)
std::shared_ptr<const Payload> read_row_gemv_payload(std::string_view text);  // row_prologue.cpp
#ifdef LUMINAL_HAVE_CUBLASLT
void register_lt_ops(std::vector<const CudaOp*>& ops);  // cublaslt/lt_matmul.cpp
#endif

namespace {

// Load-time folding (program/fold.hpp): the search may read a weight-only value as a folded
// input; the op itself never runs (the fold programs are ordinary LLIR).
KernelGen gen_fold(const LlirNode&, const GenContext&) {
  throw Error("cuda: a Fold node cannot run; a program reads folded values as inputs");
}

}  // namespace

const std::vector<const CudaOp*>& cuda_ops() {
  static const std::vector<const CudaOp*> ops = [] {
    std::vector<const CudaOp*> v;
    register_elementwise_ops(v);
    register_row_ops(v);
    register_reduce_ops(v);
    register_matmul_tiled_ops(v);
    register_fused_reduce_ops(v);
    register_gemv_ops(v);
    register_gemv_kn_ops(v);
    register_gather_scatter_ops(v);
    register_scatter_store_ops(v);
    register_dequantize_ops(v);
    register_qgemv_ops(v);
    register_qgemm_ops(v);
    register_qgemm_bf16_ops(v);
    register_quantize_q8_ops(v);
    register_qrepack_ops(v);
    register_expert_ops(v);
    register_row_q8_ops(v);
    register_fused_q8_ops(v);
    register_gemv_kn_q8_ops(v);
    register_attention_ops(v);
    register_row_gemv_ops(v);
#ifdef LUMINAL_HAVE_CUBLASLT
    register_lt_ops(v);
#endif
    static const CudaOp fold{{fold_op(), "", nullptr}, gen_fold};
    v.push_back(&fold);
    return v;
  }();
  return ops;
}

const OpRegistry& cuda_registry() {
  static const OpRegistry registry(
      {cuda_ops().begin(), cuda_ops().end()},
      [](std::string_view kind, std::string_view text) -> std::shared_ptr<const Payload> {
        if (kind == "fused_program") return FusedProgram::deserialize(text);
        if (kind == "gemv_then") return GemvThenView::deserialize(text);
        if (kind == "row_gemv") return read_row_gemv_payload(text);
#ifdef LUMINAL_HAVE_CUBLASLT
        if (kind == "lt_epilogue") return LtEpilogue::deserialize(text);
#endif
        return nullptr;
      });
  return registry;
}

const CudaOp* find_cuda_op(const OpDef* def) {
  // The registry holds cuda_ops(): every op it finds is a CudaOp.
  return static_cast<const CudaOp*>(cuda_registry().find(def));
}

}  // namespace luminal::cuda
