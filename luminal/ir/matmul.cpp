// matmul as broadcast multiply + sum over k (the pattern backends turn into GEMM calls).
// 16/8-bit floats multiply and sum in f32 between casts.
#include "luminal/core/error.hpp"
#include "luminal/ir/prim.hpp"
#include "luminal/ir/tensor.hpp"

namespace luminal {

Tensor Tensor::matmul(const Tensor& b) const {
  const Tensor& a = *this;
  auto shapes = [&] { return shape_to_string(a.shape()) + " @ " + shape_to_string(b.shape()); };
  if (a.rank() == 0 || b.rank() == 0 || a.rank() > 5 || b.rank() > 5) {
    throw Error("matmul: operands must be 1-D to 5-D, got " + shapes());
  }
  if (a.dtype() != b.dtype()) {
    throw Error("matmul: dtypes differ (" + std::string(name(a.dtype())) + " vs " +
                std::string(name(b.dtype())) + "); cast one side");
  }
  // Checked on the caller's shapes (before 1-D operands get their unit axis).
  Expr ka = a.dim(-1), kb = b.rank() == 1 ? b.dim(0) : b.dim(-2);
  if (ka != kb) {
    throw Error("matmul: inner dimensions differ in " + shapes() + " (" + ka.to_string() + " vs " +
                kb.to_string() + ")");
  }
  // 16/8-bit floats: products and sums in f32, rounded once to the dtype (as torch and GPU
  // libraries: exact products, f32 accumulation), so the pattern is Cast, Mul + SumReduce, Cast.
  if (prim::computes_in_f32(a.dtype()))
    return a.cast(DType::F32).matmul(b.cast(DType::F32)).cast(a.dtype());
  if (a.rank() == 1 && b.rank() == 1) return (a * b).sum(0);
  if (a.rank() == 1) return a.unsqueeze(0).matmul(b).squeeze(-2);
  if (b.rank() == 1) return a.matmul(b.unsqueeze(-1)).squeeze(-1);
  // Batch dims broadcast (checked here so the error names matmul, not mul).
  Shape batch_a(a.shape().begin(), a.shape().end() - 2),
      batch_b(b.shape().begin(), b.shape().end() - 2);
  try {
    prim::broadcast_shape(batch_a, batch_b, "matmul");
  } catch (const Error& e) {
    throw Error(std::string(e.what()) + " (batch dims of " + shapes() + ")");
  }
  // a [..., m, k] -> [..., m, 1, k];  b [..., k, n] -> [..., 1, n, k];  product summed over k.
  Tensor x = a.unsqueeze(-2);
  Tensor y = b.transpose(-1, -2).unsqueeze(-3);
  return (x * y).sum(-1);
}

}  // namespace luminal
