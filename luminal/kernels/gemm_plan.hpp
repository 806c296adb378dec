#pragma once
// The GEMM layout planner, backend-neutral: from the views of a broadcast Mul reduced over axis
// k (the matmul pattern), one gemm per batch index C (M x N) = A (M x K) * B (K x N) in
// row-major BLAS conventions, or nothing when the layout is not a gemm. Rules plan with Expr
// strides (SymOps), kernels with known ones (IntOps); collapse_batch gives the batch as one count
// and a stride per matrix. Example: examples/snippets/kernels/gemm_plan.cpp.
//
// Every non-k axis of size > 1 is classified by the two views' strides: m (b's stride 0, a's
// not), n (a's stride 0, b's not) or batch. The innermost m axis (in output order) is merged
// with the m axes just outside it when a's strides allow (likewise n with b's), so
// [b, s, k] x [k, n] is one gemm of M = b*s. Remaining m / n axes become batch axes. Each operand
// must be row-major (unit stride along its inner dim) or column-major (unit stride along its
// outer dim) with a leading dimension a BLAS accepts; the output (row-major over the non-k axes)
// must have a unit stride along m or n (when along m, the product is computed transposed:
// C^T = B^T A^T, `swap`). Strides are the coefficients of z in the views' stride expressions.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

#include "luminal/core/expr.hpp"

namespace luminal {

/// Arithmetic on strides/dims: Expr at rule time (known only symbolically), int64_t at run time.
struct SymOps {
  using N = Expr;
  static bool is_zero(const N& x) { return x == Expr(0); }
  static bool is_one(const N& x) { return x == Expr(1); }
  static bool eq(const N& x, const N& y) { return x == y; }
  static bool known(const N& x) { return x.is_const(); }
  static int64_t value(const N& x) { return x.as_const(); }
};
struct IntOps {
  using N = int64_t;
  static bool is_zero(N x) { return x == 0; }
  static bool is_one(N x) { return x == 1; }
  static bool eq(N x, N y) { return x == y; }
  static bool known(N) { return true; }
  static int64_t value(N x) { return x; }
};

template <class N>
struct Axis {
  N dim, a, b, c;  // size, strides in a, b and the output
};

/// One gemm per batch index: C (M x N) = A (M x K) * B (K x N), row-major BLAS conventions.
template <class N>
struct GemmPlan {
  N M, Nn, K;
  bool swap = false;  // computes C^T = B^T A^T: the first gemm operand is b, the second a
  bool trans_a = false, trans_b = false;
  N lda, ldb, ldc;
  std::vector<Axis<N>> batch;
  // The axes (indices into plan_gemm's dims) of the plan's N, along which C has its unit stride
  // (the original m axes after a swap), innermost last: a library's per-row bias of the
  // column-major C^T runs along them.
  std::vector<int> n_axes;
};

/// A matrix operand with strides (rows, cols): its BLAS transpose flag and leading dimension.
template <class O, class N>
inline bool matrix_layout(const N& rows, const N& cols, const N& rs, const N& cs, bool* trans,
                          N* ld) {
  const bool rows1 = O::is_one(rows), cols1 = O::is_one(cols);
  if (O::is_one(cs) || cols1) {
    *trans = false;
    *ld = rows1 ? cols : rs;
    if (rows1 && cols1) *ld = N(1);
  } else if (O::is_one(rs) || rows1) {
    *trans = true;
    *ld = cols1 ? rows : cs;
  } else {
    return false;
  }
  // BLAS needs ld >= the stored row length (checked where the values are known).
  const N& row_len = *trans ? rows : cols;
  if (O::known(*ld) && O::known(row_len) && O::value(*ld) < std::max<int64_t>(1, O::value(row_len)))
    return false;
  return true;
}

template <class O>
inline std::optional<GemmPlan<typename O::N>> plan_gemm(const std::vector<typename O::N>& dims,
                                                        const std::vector<typename O::N>& sa,
                                                        const std::vector<typename O::N>& sb,
                                                        int k) {
  using N = typename O::N;
  // Non-k axes of size > 1, output strides row-major over the non-k axes.
  std::vector<Axis<N>> axes;
  std::vector<int> dim_of;  // the index in dims of each axis
  {
    N c = N(1);
    std::vector<Axis<N>> rev;
    std::vector<int> rev_dim;
    for (int i = static_cast<int>(dims.size()) - 1; i >= 0; --i) {
      if (i == k) continue;
      if (!O::is_one(dims[i])) {
        rev.push_back({dims[i], sa[i], sb[i], c});
        rev_dim.push_back(i);
      }
      c = c * dims[i];
    }
    axes.assign(rev.rbegin(), rev.rend());
    dim_of.assign(rev_dim.rbegin(), rev_dim.rend());
  }
  enum Kind { M, Nk, Batch };
  std::vector<Kind> kind(axes.size());
  for (size_t i = 0; i < axes.size(); ++i) {
    const bool az = O::is_zero(axes[i].a), bz = O::is_zero(axes[i].b);
    kind[i] = (bz && !az) ? M : (az && !bz) ? Nk : Batch;
  }
  // Group the innermost axis of a kind with the axes just outside it while strides allow.
  auto group = [&](Kind want, bool use_a, int* lo, int* hi, N* size, N* stride) {
    *lo = *hi = -1;
    for (int i = static_cast<int>(axes.size()) - 1; i >= 0; --i)
      if (kind[i] == want) {
        *lo = *hi = i;
        break;
      }
    if (*hi < 0) return;
    *size = axes[*hi].dim;
    *stride = use_a ? axes[*hi].a : axes[*hi].b;
    while (*lo > 0 && kind[*lo - 1] == want) {
      const N& s = use_a ? axes[*lo - 1].a : axes[*lo - 1].b;
      if (!O::eq(s, *size * *stride)) break;
      *size = *size * axes[*lo - 1].dim;
      --*lo;
    }
  };
  int mlo, mhi, nlo, nhi;
  N Msz = N(1), Nsz = N(1), am = N(0), bn = N(0);
  group(M, true, &mlo, &mhi, &Msz, &am);
  group(Nk, false, &nlo, &nhi, &Nsz, &bn);
  const N cm = mhi >= 0 ? axes[mhi].c : N(0);
  const N cn = nhi >= 0 ? axes[nhi].c : N(0);

  GemmPlan<N> p;
  for (size_t i = 0; i < axes.size(); ++i) {
    const int ii = static_cast<int>(i);
    if ((ii >= mlo && ii <= mhi && mhi >= 0) || (ii >= nlo && ii <= nhi && nhi >= 0)) continue;
    p.batch.push_back(axes[i]);
  }
  N K = dims[k], ak = sa[k], bk = sb[k];
  // A: M x K strides (am, ak); B: K x N strides (bk, bn); C: M x N strides (cm, cn).
  N rows_a = Msz, cols_a = K, ra = am, ca = ak;
  N rows_b = K, cols_b = Nsz, rb = bk, cb = bn;
  N M_ = Msz, N_ = Nsz, rc = cm, cc = cn;
  if (!(O::is_one(cn) || O::is_one(Nsz))) {
    if (!(O::is_one(cm) || O::is_one(Msz))) return std::nullopt;
    // C^T = B^T A^T: A' = B^T (N x K), B' = A^T (K x M), C' = C^T (N x M).
    rows_a = Nsz, cols_a = K, ra = bn, ca = bk;
    rows_b = K, cols_b = Msz, rb = ak, cb = am;
    M_ = Nsz, N_ = Msz, rc = cn, cc = cm;
    p.swap = true;
  }
  p.M = M_;
  p.Nn = N_;
  p.K = K;
  const int ulo = p.swap ? mlo : nlo, uhi = p.swap ? mhi : nhi;
  for (int i = ulo; i <= uhi && uhi >= 0; ++i)
    p.n_axes.push_back(dim_of[static_cast<size_t>(i)]);
  if (!matrix_layout<O>(rows_a, cols_a, ra, ca, &p.trans_a, &p.lda)) return std::nullopt;
  if (!matrix_layout<O>(rows_b, cols_b, rb, cb, &p.trans_b, &p.ldb)) return std::nullopt;
  bool trans_c = false;
  if (!matrix_layout<O>(M_, N_, rc, cc, &trans_c, &p.ldc) || trans_c) return std::nullopt;
  return p;
}

/// Linear coefficient of a stride in z (nothing when the stride is not c*z).
inline std::optional<Expr> coefficient(const Expr& s) {
  auto lin = s.as_linear("z");
  if (!lin || lin->second != Expr(0) || lin->first.has_var("z")) return std::nullopt;
  return lin->first;
}

/// The batch axes of a plan as one count and one stride per operand, when they compose (each
/// outer axis's stride is the inner one's stride times its size, in a, b and c alike); an empty
/// batch is count 1 with strides 0. Nothing when they do not compose.
template <class N>
struct BatchLayout {
  N count, stride_a, stride_b, stride_c;
};

template <class O>
inline std::optional<BatchLayout<typename O::N>> collapse_batch(const GemmPlan<typename O::N>& p) {
  using N = typename O::N;
  if (p.batch.empty()) return BatchLayout<N>{N(1), N(0), N(0), N(0)};
  const Axis<N>& inner = p.batch.back();
  BatchLayout<N> b{inner.dim, inner.a, inner.b, inner.c};
  for (int i = static_cast<int>(p.batch.size()) - 2; i >= 0; --i) {
    const Axis<N>& ax = p.batch[static_cast<size_t>(i)];
    if (!O::eq(ax.a, b.stride_a * b.count) || !O::eq(ax.b, b.stride_b * b.count) ||
        !O::eq(ax.c, b.stride_c * b.count))
      return std::nullopt;
    b.count = b.count * ax.dim;
  }
  return b;
}

}  // namespace luminal
