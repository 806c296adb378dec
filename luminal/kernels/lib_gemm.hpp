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
  // The library's A and B: the plan's X and Y in order (Row), or Y and X (ColSwapped: row-major
  // X read column-major is X^T, so C^T (N x M) = Y^T X^T takes A = Y, B = X, m = N, n = M).
  struct Operand {
    bool trans;
    N ld;
    int input;
  };
  const Operand x{p.trans_a, p.lda, x_in}, y{p.trans_b, p.ldb, y_in};
  const bool col = f == GemmFamily::ColSwapped;
  const Operand& a = col ? y : x;
  const Operand& b = col ? x : y;
  g.m = col ? p.Nn : p.M;
  g.n = col ? p.M : p.Nn;
  // op(A) is (m x k): A is stored (m x k), or (k x m) when the call transposes it; likewise B.
  auto stored = [](const N& rows, const N& cols, bool trans, const N& ld) {
    return trans ? LibMatrix<N>{cols, rows, ld} : LibMatrix<N>{rows, cols, ld};
  };
  g.op_a_t = a.trans;
  g.a = stored(g.m, p.K, a.trans, a.ld);
  g.op_b_t = b.trans;
  g.b = stored(p.K, g.n, b.trans, b.ld);
  g.d = LibMatrix<N>{g.m, g.n, p.ldc};
  g.input_a = a.input;
  g.input_b = b.input;
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
