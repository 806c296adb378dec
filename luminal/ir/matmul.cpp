// matmul as broadcast multiply + sum over k (the pattern backends turn into GEMM calls).
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
    throw Error("matmul: dtypes differ (" + std::string(name(a.dtype())) + " vs " + std::string(name(b.dtype())) +
                "); cast one side");
  }
  if (a.rank() == 1 && b.rank() == 1) {
    if (a.dim(0) != b.dim(0)) throw Error("matmul: inner dimensions differ in " + shapes());
    return (a * b).sum(0);
  }
  if (a.rank() == 1) return a.unsqueeze(0).matmul(b).squeeze(-2);
  if (b.rank() == 1) return a.matmul(b.unsqueeze(-1)).squeeze(-1);
  if (a.dim(-1) != b.dim(-2)) {
    throw Error("matmul: inner dimensions differ in " + shapes() + " (" + a.dim(-1).to_string() + " vs " +
                b.dim(-2).to_string() + ")");
  }
  // a [..., m, k] -> [..., m, 1, k];  b [..., k, n] -> [..., 1, n, k];  product summed over k.
  Tensor x = a.unsqueeze(-2);
  Tensor y = b.transpose(-1, -2).unsqueeze(-3);
  return (x * y).sum(-1);
}

}  // namespace luminal
