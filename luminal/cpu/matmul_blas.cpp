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
// A non-reduced axis whose stride is not linear but splits into two linear ones is split first
// (kernels/split_axes.hpp: grouped-query attention's k/v heads repeated by a reshape, read through
// 65536*(z/3), are a [4, 3] batch with strides 65536*z and 0).
// An operand whose view is still not linear in its axis index (a stride like 8192*(z/64) + z%64:
// the heads of an attention output laid out [h, s, d] read as [s, h*d], the input of o_proj) is
// gathered first into a workspace, row-major over its axes of non-zero stride (broadcast axes keep
// stride 0), and the gemm reads that copy. Products with one row or one column (M = 1: decode's
// x W^T; N = 1) run as sgemv/dgemv, which streams the matrix once (OpenBLAS's gemm packs it first
// and runs at a third of the memory bandwidth there).
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
#include "luminal/cpu/matmul_small_f32.hpp"
#include "luminal/cpu/primitive_util.hpp"
#include "luminal/cpu/quant/isa.hpp"
#include "luminal/cpu/thread_pool.hpp"
#include "luminal/kernels/gemm_plan.hpp"
#include "luminal/kernels/split_axes.hpp"

namespace luminal::cpu {

void ensure_single_threaded_blas() {
  static const bool once = [] {
    openblas_set_num_threads(1);
    return true;
  }();
  (void)once;
}

namespace {

const OpDef kBlasMatmul{"cpu.BlasMatmul"};
std::atomic<uint64_t> g_gemm_calls{0}, g_gemv_calls{0}, g_packs{0}, g_fallbacks{0},
    g_small_calls{0};
// Products of 2 to 4 rows up to this many elements of the other operand go to small_f32::gemm
// (AVX2): OpenBLAS packs both operands first (most of a decode step's attention time).
constexpr int64_t kSmallMax = int64_t{1} << 18;
std::atomic<BlasBatchMode> g_batch_mode{BlasBatchMode::Auto};

// ---------------------------------------------------------------- planning (kernels/gemm_plan.hpp)

// An operand's strides for the gemm planner: the coefficients of z when every stride of its view
// is linear (packed = false), else the strides of a packed copy: row-major over the axes whose
// stride is not 0, in axis order; broadcast axes keep stride 0 (packed = true).
struct OperandStrides {
  std::vector<Expr> strides;
  bool packed = false;
};

OperandStrides operand_strides(const View& v) {
  OperandStrides o;
  for (const Expr& e : v.strides) {
    std::optional<Expr> c = coefficient(e);
    if (!c) {
      o.packed = true;
      break;
    }
    o.strides.push_back(*c);
  }
  if (!o.packed) return o;
  o.strides.assign(v.strides.size(), Expr(0));
  Expr step(1);
  for (int i = v.rank() - 1; i >= 0; --i) {
    if (v.strides[i] == Expr(0)) continue;
    o.strides[i] = step;
    step = step * v.dims[i];
  }
  return o;
}

// The axes of `v` a packed copy holds (stride not 0), as a view of the operand's buffer.
View packed_source(const View& v) {
  View out;
  out.base = v.base;
  for (int i = 0; i < v.rank(); ++i) {
    if (v.strides[i] == Expr(0)) continue;
    out.dims.push_back(v.dims[i]);
    out.strides.push_back(v.strides[i]);
  }
  return out;
}

// The operands' views and the reduced axis the gemm is planned over: the node's, or with axes
// split where that makes every stride linear (kernels/split_axes.hpp: grouped-query attention's
// heads read through 65536*(z/3) are a [4, 3] batch, not an operand to gather each run).
SplitDomain gemm_domain(const Attrs& at) {
  if (std::optional<SplitDomain> d = split_for_linear_strides(at.views[0], at.views[1], at.axis))
    return *d;
  return SplitDomain{at.views[0], at.views[1], at.axis};
}

bool blas_matches(const MatmulParts& p) {
  if (p.attrs.dtype != DType::F32 && p.attrs.dtype != DType::F64) return false;
  const SplitDomain d = gemm_domain(p.attrs);
  const OperandStrides sa = operand_strides(d.a), sb = operand_strides(d.b);
  return plan_gemm<SymOps>(d.a.dims, sa.strides, sb.strides, d.axis).has_value();
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
  explicit BlasMatmulKernel(const LlirNode& n)
      : attrs_(n.attrs),
        domain_(gemm_domain(n.attrs)),
        generic_(n),
        small_(quant::active() != quant::QuantIsa::Portable) {
    if (attrs_.dtype != DType::F32 && attrs_.dtype != DType::F64)
      throw Error("cpu.BlasMatmul: dtype " + std::string(name(attrs_.dtype)) +
                  " is not f32 or f64");
    for (int o = 0; o < 2; ++o) {
      operand_[o] = operand_strides(view(o));
      if (operand_[o].packed) packed_source_[o] = packed_source(view(o));
    }
  }

  void run(const KernelContext& k) override {
    if (version_ != k.dims_version) plan(k.dyn, k.dims_version);
    if (!plan_) {
      g_fallbacks.fetch_add(1, std::memory_order_relaxed);
      return generic_.run(k);
    }
    const uint8_t* in[2] = {k.in[0], k.in[1]};
    const int64_t es = static_cast<int64_t>(size_bytes(attrs_.dtype));
    for (int o = 0; o < 2; ++o) {
      if (!operand_[o].packed) in[o] += base_[o] * es;  // the view's element offset
      // (A view whose offsets are its flat index already is its packed copy: 64*(z/64) + z%64.)
      if (!operand_[o].packed || packed_view_[o].identity()) continue;
      copy_view(in[o], packed_view_[o], workspace_[o].data(),
                static_cast<int>(size_bytes(attrs_.dtype)), k.threads);
      in[o] = workspace_[o].data();
      g_packs.fetch_add(1, std::memory_order_relaxed);
    }
    if (attrs_.dtype == DType::F32)
      gemm<float>(k, in);
    else
      gemm<double>(k, in);
  }

 private:
  void plan(const DynMap& dyn, uint64_t version) {
    std::vector<int64_t> dims = eval_shape(domain_.a.dims, dyn), sa, sb;
    for (const Expr& e : operand_[0].strides)
      sa.push_back(e.eval(dyn));
    for (const Expr& e : operand_[1].strides)
      sb.push_back(e.eval(dyn));
    plan_ = plan_gemm<IntOps>(dims, sa, sb, domain_.axis);
    for (int o = 0; o < 2; ++o)
      base_[o] = operand_[o].packed ? 0 : view(o).base.eval(dyn);
    if (plan_) {
      batches_ = 1;
      for (const Axis<int64_t>& b : plan_->batch)
        batches_ *= b.dim;
      const int64_t lim = INT32_MAX;
      if (plan_->M > lim || plan_->Nn > lim || plan_->K > lim || plan_->lda > lim ||
          plan_->ldb > lim || plan_->ldc > lim)
        plan_.reset();
    }
    for (int o = 0; o < 2 && plan_; ++o) {
      if (!operand_[o].packed) continue;
      packed_view_[o] = eval_view(packed_source_[o], dyn);
      const size_t bytes = static_cast<size_t>(packed_view_[o].numel) *
                           static_cast<size_t>(size_bytes(attrs_.dtype));
      if (workspace_[o].size() < bytes) workspace_[o].resize(bytes);
    }
    version_ = version;
  }

  template <class T>
  void gemm(const KernelContext& k, const uint8_t* const in[2]) {
    const GemmPlan<int64_t>& p = *plan_;
    const T* A = reinterpret_cast<const T*>(in[0]);
    const T* B = reinterpret_cast<const T*>(in[1]);
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
      const int mm = m1 - m0, nn = n1 - n0;
      if constexpr (std::is_same_v<T, float>) {
        if (small_ && mm >= 2 && mm <= 4 && static_cast<int64_t>(nn) * K <= kSmallMax) {
          // op(x) element (m, k), op(y) element (k, n), as the BLAS calls below read them.
          const int64_t am = p.trans_a ? 1 : lda, ak = p.trans_a ? lda : 1;
          const int64_t bk = p.trans_b ? 1 : ldb, bn = p.trans_b ? ldb : 1;
          if (small_f32::gemm(mm, nn, K, x, am, ak, y, bk, bn, c, ldc)) {
            g_small_calls.fetch_add(1, std::memory_order_relaxed);
            return;
          }
        }
      }
      if (mm == 1 || nn == 1) {
        // One row of C: c = op(y)^T x-row, y stored [n, k] (transposed) or [k, n]. One column:
        // c = op(x) y-column, x stored [m, k] or [k, m] (transposed), c strided by ldc.
        const bool row = mm == 1;
        const T* mat = row ? y : x;
        const T* vec = row ? x : y;
        const int ld = row ? ldb : lda;
        const int inc = row ? (p.trans_a ? lda : 1) : (p.trans_b ? 1 : ldb);
        const int out_inc = row ? 1 : ldc;
        const int outs = row ? nn : mm;
        // Stored rows are outputs (NoTrans) or the k axis (Trans).
        const bool rows_are_outputs = row ? p.trans_b : !p.trans_a;
        const auto t = rows_are_outputs ? CblasNoTrans : CblasTrans;
        const int r = rows_are_outputs ? outs : K, cols = rows_are_outputs ? K : outs;
        if constexpr (std::is_same_v<T, float>)
          cblas_sgemv(CblasRowMajor, t, r, cols, 1.0f, mat, ld, vec, inc, 0.0f, c, out_inc);
        else
          cblas_dgemv(CblasRowMajor, t, r, cols, 1.0, mat, ld, vec, inc, 0.0, c, out_inc);
        g_gemv_calls.fetch_add(1, std::memory_order_relaxed);
        return;
      }
      if constexpr (std::is_same_v<T, float>)
        cblas_sgemm(CblasRowMajor, ta, tb, mm, nn, K, 1.0f, x, lda, y, ldb, 0.0f, c, ldc);
      else
        cblas_dgemm(CblasRowMajor, ta, tb, mm, nn, K, 1.0, x, lda, y, ldb, 0.0, c, ldc);
    };
    g_gemm_calls.fetch_add(static_cast<uint64_t>(batches_), std::memory_order_relaxed);
    // One thread pool only: OpenBLAS runs single-threaded (two pools on the same cores compete)
    // and our pool splits the work: whole products per thread when there are
    // enough of them, else each product by rows of C (or by columns when it has few rows).
    ensure_single_threaded_blas();
    const int threads = k.threads > 0 ? k.threads : hardware_threads();
    const int64_t work = batches_ * p.M * p.Nn * p.K;
    const BlasBatchMode mode = g_batch_mode.load(std::memory_order_relaxed);
    // The small kernel has no packing to amortise: a decode step's attention (3 products of
    // 3 x 64 x c) is worth both threads from c = 32 on.
    const bool small = std::is_same_v<T, float> && small_ && p.M <= 4;
    const int64_t min_work = small ? int64_t{1} << 14 : int64_t{1} << 17;
    if (threads <= 1 || work < min_work || mode == BlasBatchMode::Sequential) {
      for (int64_t b = 0; b < batches_; ++b)
        one(b, 0, M, 0, N);
      return;
    }
    // Whole products per thread when they share out evenly: a decode step's 3 attention
    // products on 2 threads would leave one thread idle for a third of the call, so small
    // products that do not divide among the threads are split like a single one.
    const bool even = batches_ % threads == 0 || batches_ >= 4 * threads;
    if ((batches_ >= threads && (even || !small)) || mode == BlasBatchMode::PerThread) {
      parallel_for(batches_, threads, [&](int64_t b) { one(b, 0, M, 0, N); });
      return;
    }
    const bool by_rows = M >= 4 * threads || N == 1;
    const int parts = threads;
    const int len = by_rows ? M : N;
    // Column pieces in whole 8-lane vectors where there are enough of them (the small kernels'
    // tails run one column at a time).
    const int unit = !by_rows && len >= 8 * parts ? 8 : 1;
    parallel_for(batches_ * parts, threads, [&](int64_t task) {
      const int64_t b = task / parts, t = task % parts;
      const int units = (len + unit - 1) / unit;
      const int lo = std::min(len, static_cast<int>(units * t / parts) * unit);
      const int hi = std::min(len, static_cast<int>(units * (t + 1) / parts) * unit);
      if (lo == hi) return;
      if (by_rows)
        one(b, lo, hi, 0, N);
      else
        one(b, 0, M, lo, hi);
    });
  }

  const View& view(int o) const { return o == 0 ? domain_.a : domain_.b; }

  Attrs attrs_;
  SplitDomain domain_;  // the views and reduced axis the gemm is planned over
  GenericMatmul generic_;
  bool small_;  // AVX2 + FMA: products of 2 to 4 rows in small_f32::gemm
  uint64_t version_ = 0;
  std::optional<GemmPlan<int64_t>> plan_;
  int64_t batches_ = 1;
  // Per operand: strides for the planner, and for a packed one its source view and workspace.
  OperandStrides operand_[2];
  View packed_source_[2];
  EvalView packed_view_[2];
  int64_t base_[2] = {0, 0};  // element offsets of the unpacked operands
  std::vector<uint8_t> workspace_[2];
};

std::unique_ptr<Kernel> make_blas_matmul(const LlirNode& n) {
  return std::make_unique<BlasMatmulKernel>(n);
}

}  // namespace

BlasStats blas_stats() {
  return {g_gemm_calls.load(), g_fallbacks.load(), g_gemv_calls.load(), g_packs.load(),
          g_small_calls.load()};
}
void set_blas_batch_mode(BlasBatchMode m) { g_batch_mode.store(m); }

void register_matmul_blas_ops(std::vector<const CpuOp*>& ops) {
  static const CpuOp op{&kBlasMatmul, "cpu.library", blas_rules, make_blas_matmul};
  ops.push_back(&op);
}

}  // namespace luminal::cpu
