#pragma once
// A GemmPlan (gemm_plan.hpp) as the arguments of a BLAS-Lt style library call (cuBLASLt; hipBLASLt
// takes the same): D (m x n) = op(A) (m x k) * op(B) (k x n) for each of `count` batch indices,
// every matrix stored in one order with its own leading dimension. Two families, both offered to
// the search (libraries support different layouts in each, and the faster one depends on the
// shape):
//
//   ColSwapped  every matrix column-major. The plan's row-major C = X Y is the column-major
//               C^T = Y^T X^T: the library's A is the plan's second operand Y, its B is X,
//               m = the plan's N, n = the plan's M. (A per-feature bias of x @ W^T runs along
//               the library's m here, which is why this family carries bias epilogues.)
//   Row         every matrix row-major: the plan's operands in order, m = M, n = N.
//
// A stored matrix is (rows, cols, ld) in the family's order: element (i, j) at i + j * ld
// (column-major) or i * ld + j (row-major). op_a_t says the library transposes A: op(A) is
// (m x k) while A is stored (k x m). `input_a` / `input_b` say which of the matmul's two inputs
// (0: the Mul's first view, 1: its second) is the library's A / B, after the plan's own swap
// (GemmPlan::swap: the output has a unit stride along m) and the family's.
#include <optional>

#include "luminal/kernels/gemm_plan.hpp"

namespace luminal {

enum class GemmFamily { ColSwapped, Row };

inline const char* family_name(GemmFamily f) {
  return f == GemmFamily::ColSwapped ? "col-swapped" : "row";
}

template <class N>
struct LibMatrix {
  N rows, cols, ld;
};

template <class N>
struct LibGemm {
  GemmFamily family = GemmFamily::ColSwapped;
  N m, n, k;
  bool op_a_t = false, op_b_t = false;
  LibMatrix<N> a, b, d;                   // as stored (d is also C when the call accumulates)
  int input_a = 0, input_b = 1;           // which matmul input is the library's A / B
  N count, stride_a, stride_b, stride_d;  // batch: count and each stored matrix's stride
};

/// The library call for plan `p` with batch layout `bl` (collapse_batch) in family `f`.
template <class N>
LibGemm<N> lib_gemm(const GemmPlan<N>& p, const BatchLayout<N>& bl, GemmFamily f) {
  // The plan's row-major product: X (M x K) stored row-major when !trans_a (ld lda: element
  // (m, k) at m * lda + k) or column-major when trans_a (m + k * lda); Y (K x N) likewise with
  // trans_b / ldb; C (M x N) row-major with ldc. X is input 0 unless the plan swapped.
  const int x_in = p.swap ? 1 : 0, y_in = p.swap ? 0 : 1;
  auto stride_of = [&](int input) { return input == 0 ? bl.stride_a : bl.stride_b; };
  LibGemm<N> g;
  g.family = f;
  g.k = p.K;
  g.count = bl.count;
  g.stride_d = bl.stride_c;
  if (f == GemmFamily::ColSwapped) {
    // Column-major reading of the same memory: row-major X is X^T column-major, so
    // C^T (N x M) = Y^T X^T takes A = Y (op N when Y is row-major: stored N x K), B = X (op N
    // when X is row-major: stored K x M).
    g.m = p.Nn;
    g.n = p.M;
    g.op_a_t = p.trans_b;
    g.a = p.trans_b ? LibMatrix<N>{p.K, p.Nn, p.ldb} : LibMatrix<N>{p.Nn, p.K, p.ldb};
    g.op_b_t = p.trans_a;
    g.b = p.trans_a ? LibMatrix<N>{p.M, p.K, p.lda} : LibMatrix<N>{p.K, p.M, p.lda};
    g.d = LibMatrix<N>{p.Nn, p.M, p.ldc};
    g.input_a = y_in;
    g.input_b = x_in;
  } else {
    g.m = p.M;
    g.n = p.Nn;
    g.op_a_t = p.trans_a;
    g.a = p.trans_a ? LibMatrix<N>{p.K, p.M, p.lda} : LibMatrix<N>{p.M, p.K, p.lda};
    g.op_b_t = p.trans_b;
    g.b = p.trans_b ? LibMatrix<N>{p.Nn, p.K, p.ldb} : LibMatrix<N>{p.K, p.Nn, p.ldb};
    g.d = LibMatrix<N>{p.M, p.Nn, p.ldc};
    g.input_a = x_in;
    g.input_b = y_in;
  }
  g.stride_a = stride_of(g.input_a);
  g.stride_b = stride_of(g.input_b);
  return g;
}

/// plan_gemm, collapse_batch and lib_gemm in one step, for known dims and strides: nothing when
/// the layout is not a gemm or its batch axes do not compose.
inline std::optional<LibGemm<int64_t>> lib_gemm_of(const std::vector<int64_t>& dims,
                                                   const std::vector<int64_t>& sa,
                                                   const std::vector<int64_t>& sb, int k,
                                                   GemmFamily f) {
  const std::optional<GemmPlan<int64_t>> p = plan_gemm<IntOps>(dims, sa, sb, k);
  if (!p) return std::nullopt;
  const std::optional<BatchLayout<int64_t>> bl = collapse_batch<IntOps>(*p);
  if (!bl) return std::nullopt;
  return lib_gemm(*p, *bl, f);
}

}  // namespace luminal
