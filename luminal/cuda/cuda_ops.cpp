#include "luminal/cuda/cuda_op.hpp"

namespace luminal::cuda {

// Each op family registers its ops here (one line per file).
void register_elementwise_ops(std::vector<const CudaOp*>& ops);     // elementwise.cpp
void register_row_ops(std::vector<const CudaOp*>& ops);             // row.cpp
void register_reduce_ops(std::vector<const CudaOp*>& ops);          // reduce.cpp
void register_gather_scatter_ops(std::vector<const CudaOp*>& ops);  // gather_scatter.cpp
#ifdef LUMINAL_HAVE_CUBLASLT
void register_lt_ops(std::vector<const CudaOp*>& ops);  // cublaslt/lt_matmul.cpp
#endif

const std::vector<const CudaOp*>& cuda_ops() {
  static const std::vector<const CudaOp*> ops = [] {
    std::vector<const CudaOp*> v;
    register_elementwise_ops(v);
    register_row_ops(v);
    register_reduce_ops(v);
    register_gather_scatter_ops(v);
#ifdef LUMINAL_HAVE_CUBLASLT
    register_lt_ops(v);
#endif
    return v;
  }();
  return ops;
}

const CudaOp* find_cuda_op(const OpDef* def) {
  for (const CudaOp* op : cuda_ops())
    if (op->def == def) return op;
  return nullptr;
}

}  // namespace luminal::cuda
