// cpu.BlasMatmul: SumReduce over Mul as OpenBLAS sgemm/dgemm calls (f32, f64).
//
// The Mul's dims are [.., k, ..] with k the reduced axis (any position). Every other axis of
// size > 1 is classified by the two views' strides:
//   m axis:  b's stride 0, a's not      n axis:  a's stride 0, b's not      batch: otherwise
// The innermost m axis (in output order) is merged with the m axes just outside it when a's
// strides allow (likewise n with b's), so [b, s, k] x [k, n] is one gemm of M = b*s. Remaining
// m / n axes become batch axes. Each operand must then be row-major (unit stride along its
// inner dim) or column-major (unit stride along its outer dim) with a leading dimension that
// BLAS accepts; the output (row-major over the non-k axes) must have a unit stride along m or n
// (when along m, the product is computed transposed: C^T = B^T A^T). Batch axes may have any
// strides; each batch is one gemm call: one after another with OpenBLAS threading inside, or, for
// at least as many small products as threads, one per OpenMP thread with OpenBLAS single-threaded
// (BlasBatchMode in matmul.hpp).
//
// The rule checks this structure symbolically (strides as expressions in the dynamic dims). The
// kernel plans again with the evaluated strides at run time (cached per dyn values) and falls back
// to the generic strided kernel (cpu.Matmul's) where a plan fails at those values (for example
// a leading dimension smaller than its row).
#include <cblas.h>

#include <algorithm>
#include <atomic>
#include <functional>

#include "luminal/core/error.hpp"
#include "luminal/cpu/matmul.hpp"
#include "luminal/cpu/thread_pool.hpp"

namespace luminal::cpu {

namespace {

const OpDef kBlasMatmul{"cpu.BlasMatmul"};
std::atomic<uint64_t> g_gemm_calls{0}, g_fallbacks{0};
std::atomic<BlasBatchMode> g_batch_mode{BlasBatchMode::Auto};

// OpenBLAS's own threads would compete with OpenMP's for the same cores.
void ensure_single_threaded_blas() {
  static const bool once = [] {
    openblas_set_num_threads(1);
    return true;
  }();
  (void)once;
}

// ---------------------------------------------------------------- planning

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
};

/// A matrix operand with strides (rows, cols): its BLAS transpose flag and leading dimension.
template <class O, class N>
bool matrix_layout(const N& rows, const N& cols, const N& rs, const N& cs, bool* trans, N* ld) {
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
std::optional<GemmPlan<typename O::N>> plan_gemm(const std::vector<typename O::N>& dims,
                                                 const std::vector<typename O::N>& sa,
                                                 const std::vector<typename O::N>& sb, int k) {
  using N = typename O::N;
  // Non-k axes of size > 1, output strides row-major over the non-k axes.
  std::vector<Axis<N>> axes;
  {
    N c = N(1);
    std::vector<Axis<N>> rev;
    for (int i = static_cast<int>(dims.size()) - 1; i >= 0; --i) {
      if (i == k) continue;
      if (!O::is_one(dims[i])) rev.push_back({dims[i], sa[i], sb[i], c});
      c = c * dims[i];
    }
    axes.assign(rev.rbegin(), rev.rend());
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
  if (!matrix_layout<O>(rows_a, cols_a, ra, ca, &p.trans_a, &p.lda)) return std::nullopt;
  if (!matrix_layout<O>(rows_b, cols_b, rb, cb, &p.trans_b, &p.ldb)) return std::nullopt;
  bool trans_c = false;
  if (!matrix_layout<O>(M_, N_, rc, cc, &trans_c, &p.ldc) || trans_c) return std::nullopt;
  return p;
}

/// Linear coefficient of a stride in z (nothing when the stride is not c*z).
std::optional<Expr> coefficient(const Expr& s) {
  auto lin = s.as_linear("z");
  if (!lin || lin->second != Expr(0) || lin->first.has_var("z")) return std::nullopt;
  return lin->first;
}

bool blas_matches(const MatmulParts& p) {
  if (p.attrs.dtype != DType::F32 && p.attrs.dtype != DType::F64) return false;
  const View& va = p.attrs.views[0];
  const View& vb = p.attrs.views[1];
  std::vector<Expr> sa, sb;
  for (int i = 0; i < va.rank(); ++i) {
    std::optional<Expr> ca = coefficient(va.strides[i]), cb = coefficient(vb.strides[i]);
    if (!ca || !cb) return false;
    sa.push_back(*ca);
    sb.push_back(*cb);
  }
  return plan_gemm<SymOps>(va.dims, sa, sb, p.attrs.axis).has_value();
}

std::vector<Rule> blas_rules() {
  Rule r{"cpu.matmul-blas", matmul_pattern(),
         [](const Match& m, const EGraph& eg) {
           std::optional<MatmulParts> p = matmul_parts(eg, m);
           return p && blas_matches(*p);
         },
         [](const Match& m, EGraph& eg) {
           std::optional<MatmulParts> p = matmul_parts(eg, m);
           if (p && blas_matches(*p)) add_matmul_node(eg, &kBlasMatmul, *p, m.root);
         }};
  return {r};
}

// ---------------------------------------------------------------- kernel

class BlasMatmulKernel : public Kernel {
 public:
  explicit BlasMatmulKernel(const LlirNode& n) : attrs_(n.attrs), generic_(n) {
    if (attrs_.dtype != DType::F32 && attrs_.dtype != DType::F64)
      throw Error("cpu.BlasMatmul: dtype " + std::string(name(attrs_.dtype)) +
                  " is not f32 or f64");
  }

  void run(const KernelContext& k) override {
    if (version_ != k.dims_version) plan(k.dyn, k.dims_version);
    if (!plan_) {
      g_fallbacks.fetch_add(1, std::memory_order_relaxed);
      return generic_.run(k);
    }
    if (attrs_.dtype == DType::F32)
      gemm<float>(k);
    else
      gemm<double>(k);
  }

 private:
  void plan(const DynMap& dyn, uint64_t version) {
    const View& va = attrs_.views[0];
    const View& vb = attrs_.views[1];
    std::vector<int64_t> dims = eval_shape(va.dims, dyn), sa, sb;
    plan_.reset();
    bool linear = true;
    for (int i = 0; i < va.rank(); ++i) {
      std::optional<Expr> ca = coefficient(va.strides[i]), cb = coefficient(vb.strides[i]);
      if (!ca || !cb) {
        linear = false;
        break;
      }
      sa.push_back(ca->eval(dyn));
      sb.push_back(cb->eval(dyn));
    }
    if (linear) plan_ = plan_gemm<IntOps>(dims, sa, sb, attrs_.axis);
    if (plan_) {
      batches_ = 1;
      for (const Axis<int64_t>& b : plan_->batch)
        batches_ *= b.dim;
      const int64_t lim = INT32_MAX;
      if (plan_->M > lim || plan_->Nn > lim || plan_->K > lim || plan_->lda > lim ||
          plan_->ldb > lim || plan_->ldc > lim)
        plan_.reset();
    }
    version_ = version;
  }

  template <class T>
  void gemm(const KernelContext& k) {
    const GemmPlan<int64_t>& p = *plan_;
    const T* A = reinterpret_cast<const T*>(k.in[0]);
    const T* B = reinterpret_cast<const T*>(k.in[1]);
    T* C = reinterpret_cast<T*>(k.out);
    const int64_t total = batches_ * p.M * p.Nn;
    if (total == 0) return;
    if (p.K == 0) {
      std::fill_n(C, total, T(0));
      return;
    }
    const auto ta = p.trans_a ? CblasTrans : CblasNoTrans;
    const auto tb = p.trans_b ? CblasTrans : CblasNoTrans;
    const int M = static_cast<int>(p.M), N = static_cast<int>(p.Nn), K = static_cast<int>(p.K);
    const int lda = static_cast<int>(p.lda), ldb = static_cast<int>(p.ldb),
              ldc = static_cast<int>(p.ldc);
    // Rows [m0, m1) and columns [n0, n1) of product `batch`.
    auto one = [&](int64_t batch, int m0, int m1, int n0, int n1) {
      int64_t oa = 0, ob = 0, oc = 0;
      for (int i = static_cast<int>(p.batch.size()) - 1; i >= 0; --i) {
        const Axis<int64_t>& ax = p.batch[i];
        const int64_t idx = batch % ax.dim;
        batch /= ax.dim;
        oa += idx * ax.a;
        ob += idx * ax.b;
        oc += idx * ax.c;
      }
      const T* x = p.swap ? B + ob : A + oa;
      const T* y = p.swap ? A + oa : B + ob;
      // Row m of op(x) starts at x + m*lda (not transposed) or x + m (transposed); column n of
      // op(y) at y + n (not transposed) or y + n*ldb.
      x += p.trans_a ? m0 : static_cast<int64_t>(m0) * lda;
      y += p.trans_b ? static_cast<int64_t>(n0) * ldb : n0;
      T* c = C + oc + static_cast<int64_t>(m0) * ldc + n0;
      if constexpr (std::is_same_v<T, float>)
        cblas_sgemm(CblasRowMajor, ta, tb, m1 - m0, n1 - n0, K, 1.0f, x, lda, y, ldb, 0.0f, c, ldc);
      else
        cblas_dgemm(CblasRowMajor, ta, tb, m1 - m0, n1 - n0, K, 1.0, x, lda, y, ldb, 0.0, c, ldc);
    };
    g_gemm_calls.fetch_add(static_cast<uint64_t>(batches_), std::memory_order_relaxed);
    // One thread pool only: OpenBLAS runs single-threaded (two pools on the same cores compete)
    // and our pool splits the work: whole products per thread when there are
    // enough of them, else each product by rows of C (or by columns when it has few rows).
    ensure_single_threaded_blas();
    const int threads = k.threads > 0 ? k.threads : hardware_threads();
    const int64_t work = batches_ * p.M * p.Nn * p.K;
    const BlasBatchMode mode = g_batch_mode.load(std::memory_order_relaxed);
    if (threads <= 1 || work < (int64_t{1} << 17) || mode == BlasBatchMode::Sequential) {
      for (int64_t b = 0; b < batches_; ++b)
        one(b, 0, M, 0, N);
      return;
    }
    if (batches_ >= threads || mode == BlasBatchMode::PerThread) {
      parallel_for(batches_, threads, [&](int64_t b) { one(b, 0, M, 0, N); });
      return;
    }
    const bool by_rows = M >= 4 * threads;
    const int parts = threads;
    const int len = by_rows ? M : N;
    parallel_for(batches_ * parts, threads, [&](int64_t task) {
      const int64_t b = task / parts, t = task % parts;
      const int lo = static_cast<int>(len * t / parts);
      const int hi = static_cast<int>(len * (t + 1) / parts);
      if (lo == hi) return;
      if (by_rows)
        one(b, lo, hi, 0, N);
      else
        one(b, 0, M, lo, hi);
    });
  }

  Attrs attrs_;
  GenericMatmul generic_;
  uint64_t version_ = 0;
  std::optional<GemmPlan<int64_t>> plan_;
  int64_t batches_ = 1;
};

std::unique_ptr<Kernel> make_blas_matmul(const LlirNode& n) {
  return std::make_unique<BlasMatmulKernel>(n);
}

}  // namespace

BlasStats blas_stats() { return {g_gemm_calls.load(), g_fallbacks.load()}; }
void set_blas_batch_mode(BlasBatchMode m) { g_batch_mode.store(m); }

void register_matmul_blas_ops(std::vector<const CpuOp*>& ops) {
  static const CpuOp op{&kBlasMatmul, "cpu.library", blas_rules, make_blas_matmul};
  ops.push_back(&op);
}

}  // namespace luminal::cpu
