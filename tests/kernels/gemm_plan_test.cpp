// The backend-neutral GEMM layout planner: row/column-major operands, M-axis merging, the
// transposed-output swap, batch axes collapsed to one count and stride, and refusals.
#include <gtest/gtest.h>

#include "luminal/kernels/gemm_plan.hpp"

namespace luminal {
namespace {

using V = std::vector<int64_t>;

TEST(GemmPlan, RowMajorTimesRowMajor) {
  // [m=4, n=5, k=8]: a [4, 8] row-major (strides m:8, n:0, k:1), b [8, 5] (m:0, n:1, k:5).
  auto p = plan_gemm<IntOps>(V{4, 5, 8}, V{8, 0, 1}, V{0, 1, 5}, 2);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->M, 4);
  EXPECT_EQ(p->Nn, 5);
  EXPECT_EQ(p->K, 8);
  EXPECT_FALSE(p->swap);
  EXPECT_FALSE(p->trans_a);
  EXPECT_FALSE(p->trans_b);
  EXPECT_EQ(p->lda, 8);
  EXPECT_EQ(p->ldb, 5);
  EXPECT_EQ(p->ldc, 5);
  EXPECT_TRUE(p->batch.empty());
}

TEST(GemmPlan, ColumnMajorWeightIsTransposed) {
  // b stored as [n=5, k=8] (x @ w^T): strides n:8, k:1.
  auto p = plan_gemm<IntOps>(V{4, 5, 8}, V{8, 0, 1}, V{0, 8, 1}, 2);
  ASSERT_TRUE(p);
  EXPECT_TRUE(p->trans_b);
  EXPECT_EQ(p->ldb, 8);
}

TEST(GemmPlan, MergesMAxesAndCollapsesBatches) {
  // [b=3, s=4, n=5, k=8] with a [3, 4, 8] contiguous and b [8, 5] shared: one gemm of M = 12.
  auto p = plan_gemm<IntOps>(V{3, 4, 5, 8}, V{32, 8, 0, 1}, V{0, 0, 1, 5}, 3);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->M, 12);
  EXPECT_TRUE(p->batch.empty());
  // Attention-like [b=2, h=3, s=4, n=6, k=8], both operands batched over (b, h) contiguously.
  auto q = plan_gemm<IntOps>(V{2, 3, 4, 6, 8}, V{96, 32, 8, 0, 1}, V{144, 48, 0, 1, 6}, 4);
  ASSERT_TRUE(q);
  EXPECT_EQ(q->batch.size(), 2u);
  auto b = collapse_batch<IntOps>(*q);
  ASSERT_TRUE(b);
  EXPECT_EQ(b->count, 6);
  EXPECT_EQ(b->stride_a, 32);
  EXPECT_EQ(b->stride_b, 48);
  EXPECT_EQ(b->stride_c, 24);
  // GQA: b's head axis broadcast (stride 0) is an m axis of a: merged into M (h * s = 12).
  auto g = plan_gemm<IntOps>(V{2, 3, 4, 6, 8}, V{96, 32, 8, 0, 1}, V{48, 0, 0, 1, 6}, 4);
  ASSERT_TRUE(g);
  EXPECT_EQ(g->M, 12);
  ASSERT_EQ(g->batch.size(), 1u);
  EXPECT_EQ(collapse_batch<IntOps>(*g)->count, 2);
  // Batch axes that do not compose (a's outer stride is not its inner stride times 3): no
  // single count and stride.
  auto n = plan_gemm<IntOps>(V{2, 3, 4, 6, 8}, V{200, 32, 8, 0, 1}, V{144, 48, 0, 1, 6}, 4);
  ASSERT_TRUE(n);
  EXPECT_EQ(n->batch.size(), 2u);
  EXPECT_FALSE(collapse_batch<IntOps>(*n));
}

TEST(GemmPlan, TransposedOutputSwapsOperands) {
  // Output unit stride along m only: dims [n=5, m=4, k=8] -> C (row-major over n, m) = C^T.
  auto p = plan_gemm<IntOps>(V{5, 4, 8}, V{0, 8, 1}, V{1, 0, 5}, 2);
  ASSERT_TRUE(p);
  EXPECT_TRUE(p->swap);
  EXPECT_EQ(p->M, 5);
  EXPECT_EQ(p->Nn, 4);
}

TEST(GemmPlan, RefusesNonGemmLayoutsAndWorksSymbolically) {
  // a read with stride 2 along k and along m: neither row- nor column-major.
  EXPECT_FALSE(plan_gemm<IntOps>(V{4, 5, 8}, V{16, 0, 2}, V{0, 1, 5}, 2));
  const Expr s = Expr::var("s");
  auto p = plan_gemm<SymOps>({s, Expr(5), Expr(8)}, {Expr(8), Expr(0), Expr(1)},
                             {Expr(0), Expr(1), Expr(5)}, 2);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->M, s);
  EXPECT_EQ(coefficient(Expr::z() * (s * 4)), s * 4);
  EXPECT_FALSE(coefficient(Expr::z() + 1));
}

}  // namespace
}  // namespace luminal
