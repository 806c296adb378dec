// luminal/kernels/gemm_plan.hpp: the layout of a broadcast Mul reduced over k as one gemm per
// batch index, symbolically (Expr strides, at rule time) or with known strides (at run time).
#include <optional>
#include <vector>

#include "luminal/core/expr.hpp"
#include "luminal/kernels/gemm_plan.hpp"
#include "snippet.hpp"

using namespace luminal;

int main() {
  // x [s, 5] @ w [5, 4]: the Mul over [s, 4, 5] reads x with strides [5, 0, 1] and w with
  // [0, 1, 4]; k is axis 2.
  const Expr s = Expr::var("s");
  std::vector<Expr> dims{s, 4, 5}, strides_a{5, 0, 1}, strides_b{0, 1, 4};
  std::optional<GemmPlan<Expr>> p = plan_gemm<SymOps>(dims, strides_a, strides_b, 2);  // rules
  expect(p && p->M == s && p->Nn == Expr(4) && p->K == Expr(5), "one gemm of M = s");

  // A batch of 2: a [2, 3, 5], b [2, 5, 4] (the Mul over [2, 3, 4, 5]).
  std::vector<int64_t> d{2, 3, 4, 5}, sa{15, 5, 0, 1}, sb{20, 0, 1, 4};
  std::optional<GemmPlan<int64_t>> q = plan_gemm<IntOps>(d, sa, sb, 3);  // kernels
  expect(q && q->M == 3 && q->Nn == 4 && !q->trans_a && !q->trans_b, "row-major operands");
  std::optional<BatchLayout<int64_t>> b = collapse_batch<IntOps>(*q);  // one count and stride
  expect(b && b->count == 2 && b->stride_a == 15 && b->stride_b == 20 && b->stride_c == 12,
         "the batch as one count and a stride per matrix");
}
