// The GEMM planner's library-call form (lib_gemm.hpp): random matmul layouts (row- and
// column-major operands, padded leading dimensions, batch axes, k anywhere, the output's axes in
// any order) planned, mapped to both families and run through an emulation of a BLAS-Lt call
// (column- or row-major stored matrices, op transposes, strided batches): the result equals the
// product computed from the views. The GPU suite (tests/cuda/lt_test.cpp) runs the same cases
// through cuBLASLt.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "luminal/kernels/lib_gemm.hpp"
#include "support/gemm_cases.hpp"

namespace luminal {
namespace {

using testing::GemmCase;

/// D = op(A) op(B) per batch index, as a BLAS-Lt library computes it from the stored matrices.
std::vector<double> emulate(const LibGemm<int64_t>& g, const std::vector<double>& in0,
                            const std::vector<double>& in1, int64_t out_elems) {
  const std::vector<double>& A = g.input_a == 0 ? in0 : in1;
  const std::vector<double>& B = g.input_b == 0 ? in0 : in1;
  const bool col = g.family == GemmFamily::ColSwapped;
  auto at = [&](const LibMatrix<int64_t>& s, int64_t i, int64_t j) {
    EXPECT_LT(i, s.rows);
    EXPECT_LT(j, s.cols);
    return col ? i + j * s.ld : i * s.ld + j;
  };
  // The library's own argument checks: ld at least the stored row (row-major) or column length.
  for (const LibMatrix<int64_t>* s : {&g.a, &g.b, &g.d})
    EXPECT_GE(s->ld, std::max<int64_t>(1, col ? s->rows : s->cols));
  EXPECT_EQ(g.op_a_t ? g.a.cols : g.a.rows, g.m);
  EXPECT_EQ(g.op_a_t ? g.a.rows : g.a.cols, g.k);
  EXPECT_EQ(g.op_b_t ? g.b.cols : g.b.rows, g.k);
  EXPECT_EQ(g.op_b_t ? g.b.rows : g.b.cols, g.n);
  EXPECT_EQ(g.d.rows, g.m);
  EXPECT_EQ(g.d.cols, g.n);
  std::vector<double> D(static_cast<size_t>(out_elems), std::numeric_limits<double>::quiet_NaN());
  for (int64_t bi = 0; bi < g.count; ++bi)
    for (int64_t i = 0; i < g.m; ++i)
      for (int64_t j = 0; j < g.n; ++j) {
        double s = 0;
        for (int64_t kk = 0; kk < g.k; ++kk) {
          const int64_t ia = bi * g.stride_a + (g.op_a_t ? at(g.a, kk, i) : at(g.a, i, kk));
          const int64_t ib = bi * g.stride_b + (g.op_b_t ? at(g.b, j, kk) : at(g.b, kk, j));
          s += A.at(static_cast<size_t>(ia)) * B.at(static_cast<size_t>(ib));
        }
        const int64_t id = bi * g.stride_d + at(g.d, i, j);
        EXPECT_TRUE(std::isnan(D.at(static_cast<size_t>(id)))) << "element written twice";
        D.at(static_cast<size_t>(id)) = s;
      }
  return D;
}

TEST(LibGemm, EveryPlannedLayoutComputesTheProductInBothFamilies) {
  int planned = 0, swapped = 0, batched = 0, transposed = 0;
  for (uint64_t seed = 0; seed < 3000; ++seed) {
    const GemmCase c = testing::random_gemm_case(seed);
    const std::vector<double> a = testing::gemm_values(c.a_elems, seed),
                              b = testing::gemm_values(c.b_elems, seed + 1);
    const std::vector<double> want = testing::gemm_reference(c, a, b);
    for (GemmFamily f : {GemmFamily::ColSwapped, GemmFamily::Row}) {
      const std::optional<LibGemm<int64_t>> g = lib_gemm_of(c.dims, c.sa, c.sb, c.k, f);
      if (!g) continue;
      const std::vector<double> got = emulate(*g, a, b, c.out_elems);
      ASSERT_EQ(got, want) << family_name(f) << " " << c.what;
      if (f == GemmFamily::Row) {
        ++planned;
        const auto p = plan_gemm<IntOps>(c.dims, c.sa, c.sb, c.k);
        swapped += p->swap;
        batched += g->count > 1;
        transposed += g->op_a_t || g->op_b_t;
      }
    }
  }
  // The cases cover the planner's branches (most random layouts are gemms).
  EXPECT_GT(planned, 1500);
  EXPECT_GT(swapped, 100);
  EXPECT_GT(batched, 300);
  EXPECT_GT(transposed, 300);
}

TEST(LibGemm, DecodeProjectionInBothFamilies) {
  // x [1, 4096] @ W^T with W [1024, 4096] row-major (k_proj): dims [m=1, n=1024, k=4096].
  const std::vector<int64_t> dims{1, 1024, 4096}, sa{4096, 0, 1}, sb{0, 4096, 1};
  const auto col = lib_gemm_of(dims, sa, sb, 2, GemmFamily::ColSwapped);
  ASSERT_TRUE(col);
  // Column-major: D^T (1024 x 1) = W (op T of the stored 4096 x 1024) x^T (4096 x 1): the
  // weight is the library's A, transposed, ld 4096: cuBLASLt's "TN" form.
  EXPECT_EQ(col->m, 1024);
  EXPECT_EQ(col->n, 1);
  EXPECT_EQ(col->k, 4096);
  EXPECT_EQ(col->input_a, 1);
  EXPECT_TRUE(col->op_a_t);
  EXPECT_FALSE(col->op_b_t);
  EXPECT_EQ(col->a.ld, 4096);
  EXPECT_EQ(col->b.ld, 4096);
  EXPECT_EQ(col->d.ld, 1024);
  const auto row = lib_gemm_of(dims, sa, sb, 2, GemmFamily::Row);
  ASSERT_TRUE(row);
  EXPECT_EQ(row->m, 1);
  EXPECT_EQ(row->n, 1024);
  EXPECT_EQ(row->input_a, 0);
  EXPECT_FALSE(row->op_a_t);
  EXPECT_TRUE(row->op_b_t);
  EXPECT_EQ(row->b.ld, 4096);
  EXPECT_EQ(row->count, 1);
}

}  // namespace
}  // namespace luminal
