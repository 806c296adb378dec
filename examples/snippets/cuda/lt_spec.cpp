// luminal/cuda/cublaslt/lt_spec.hpp: what one cuBLASLt call needs besides its pointers, from a
// library gemm (kernels/lib_gemm.hpp) and the operand types. No GPU needed.
#include <optional>
#include <string>
#include <vector>

#include "luminal/cuda/cublaslt/lt_spec.hpp"
#include "luminal/kernels/lib_gemm.hpp"
#include "snippet.hpp"

using namespace luminal;
using namespace luminal::cuda;

int main() {
  std::string why;
  std::optional<LtTypes> t = lt_types(DType::BF16, DType::BF16, DType::BF16, false, &why);
  expect(t.has_value(), "bf16 x bf16 -> bf16 is a cuBLASLt pair");
  // x [8, 16] @ w^T, w [32, 16]: the Mul over [8, 32, 16] reads x with strides [16, 0, 1] and w
  // with [0, 16, 1].
  std::optional<LibGemm<int64_t>> g =
      lib_gemm_of({8, 32, 16}, {16, 0, 1}, {0, 16, 1}, 2, GemmFamily::ColSwapped);
  LtSpec s = lt_spec(g.value(), *t, 32 << 20);
  expect(s == lt_spec(g.value(), *t, 32 << 20), "equal specs share one prepared call");
  expect(!s.to_string().empty(), "a readable spec");
}
