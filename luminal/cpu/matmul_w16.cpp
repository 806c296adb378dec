// cpu.MatmulW16: a linear layer whose weight is stored as bf16 or f16 and whose activation is f32
// (a 16-bit checkpoint computed in f32), reading the weight as stored.
//
//   cpu.MatmulW16(x, W):  out[m.., n..] = sum over k of x row m . widen(W row n), x read through
//                         its view (rows contiguous along k), W through its composed row view.
//
// Matched where one operand of SumReduce(Mul) holds Cast(W) from bf16/f16 to f32
// (kernels/quant_rule.hpp, cast16_matmul_parts) and the activation is read contiguously along k.
// With at most kFewRows activation rows (decode) it dominates the widening: widening the whole
// weight each step writes and reads it again at twice its size, while this reads its 2 bytes an
// element once, in the dot kernels of matmul_w16_dot.hpp (the same bits on every ISA). With more
// rows (prefill) each thread widens a panel of weight rows at a time into an L2-sized buffer and
// runs one sgemm of every activation row over it; Cast + BlasMatmul (the whole weight widened,
// then sgemm) stays an alternative and the search times both.
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include <cblas.h>

#include "luminal/core/error.hpp"
#include "luminal/core/expr_static.hpp"
#include "luminal/cpu/cpu_op.hpp"
#include "luminal/cpu/matmul.hpp"
#include "luminal/cpu/matmul_tiles.hpp"
#include "luminal/cpu/matmul_w16_dot.hpp"
#include "luminal/cpu/primitive_util.hpp"
#include "luminal/cpu/quant/isa.hpp"
#include "luminal/cpu/thread_pool.hpp"
#include "luminal/kernels/matmul_rule.hpp"
#include "luminal/kernels/quant_rule.hpp"

namespace luminal::cpu {

namespace {

// Below 1, as cpu.QMatmul: reading the weight once beats widening it and multiplying.
const OpDef kMatmulW16{.name = "cpu.MatmulW16", .seed_cost = 0.9};

// True when `stride` is z at every index of an axis of `len` (a merge of heads reads the
// attention output as 64*(z/64) + z%64: contiguous, though not written as z).
bool unit_along(const Expr& stride, int64_t len) {
  if (stride == Expr(1) * Expr::z()) return true;
  if (!is_static(stride)) return false;
  for (int64_t i = 0; i < len; ++i)
    if (stride.eval({}, i) != i) return false;
  return true;
}

// A match whose activation is read contiguously along k (what the kernel reads), or nothing.
std::optional<QuantMatmulParts> parts(const EGraph& eg, const Match& m) {
  std::optional<QuantMatmulParts> p = cast16_matmul_parts(eg, m);
  if (!p) return std::nullopt;
  const size_t k = static_cast<size_t>(p->axis);
  if (!p->dims[k].is_const() || !unit_along(p->act_view.strides[k], p->dims[k].as_const()))
    return std::nullopt;
  return p;
}

std::vector<Rule> matmul_w16_rules() {
  Rule r{"cpu.matmul_w16", matmul_pattern(),
         [](const Match& m, const EGraph& eg) { return parts(eg, m).has_value(); },
         [](const Match& m, EGraph& eg) {
           std::optional<QuantMatmulParts> p = parts(eg, m);
           if (!p) return;
           Attrs a;
           a.dtype = p->sum.dtype;
           a.shape = p->sum.shape;
           a.axis = p->axis;
           a.views = {p->act_view, p->weight_view};
           const std::optional<ENodeId> q =
               add_merged(eg, &kMatmulW16, a, {p->act, p->weight}, m.root);
           if (q && !eg.is_removed(*q) && few_rows(p->act_rows))
             dominate_widened(eg, *q, p->dequantized);
         }};
  return {r};
}

// Weight bytes (as f32) of one prefill panel: widened once, then sgemm passes every activation
// row over it while it stays in L2.
constexpr int64_t kPanelBytes = 256 << 10;

class MatmulW16Kernel final : public Kernel {
 public:
  explicit MatmulW16Kernel(const LlirNode& n) : wtype_(input_dtype(n, 1)), attrs_(n.attrs) {
    if (input_dtype(n, 0) != DType::F32 || (wtype_ != DType::BF16 && wtype_ != DType::F16))
      throw Error("cpu.MatmulW16: reads f32 activations and bf16/f16 weights, not " +
                  std::string(name(input_dtype(n, 0))) + " and " + std::string(name(wtype_)));
    const View& xv = attrs_.views.at(0);
    const View& wv = attrs_.views.at(1);
    axis_ = attrs_.axis;
    const Expr unit = Expr(1) * Expr::z();
    if (!xv.dims[static_cast<size_t>(axis_)].is_const() ||
        !unit_along(xv.strides[static_cast<size_t>(axis_)],
                    xv.dims[static_cast<size_t>(axis_)].as_const()) ||
        !(wv.strides[static_cast<size_t>(axis_)] == unit))
      throw Error("cpu.MatmulW16: both inputs must be read along a static k with stride 1");
    if (wv.has_base()) throw Error("cpu.MatmulW16: the weight is read at an element offset");
    k_ = xv.dims[static_cast<size_t>(axis_)].as_const();
    for (int i = 0; i < xv.rank(); ++i) {
      if (i == axis_) continue;
      if (!(wv.strides[static_cast<size_t>(i)] == Expr(0))) {
        if (!wv.dims[static_cast<size_t>(i)].is_const())
          throw Error("cpu.MatmulW16: a weight axis is dynamic");
        n_axes_.push_back(i);
      } else if (!(xv.strides[static_cast<size_t>(i)] == Expr(0))) {
        m_axes_.push_back(i);
      }
    }
    // The weight's row starts (element offsets), n in row-major order.
    std::vector<int64_t> wdims;
    for (int a : n_axes_)
      wdims.push_back(wv.dims[static_cast<size_t>(a)].as_const());
    w_rows_ = axis_offsets(wv, n_axes_, wdims, {});
    const bool avx2 = quant::active() != quant::QuantIsa::Portable;
    dot_ = w16::dot_fn(wtype_, avx2);
    widen_ = w16::widen_fn(wtype_, avx2);
    panel_rows_ = std::max<int64_t>(16, kPanelBytes / (4 * k_));
    ensure_single_threaded_blas();
  }

  void run(const KernelContext& k) override {
    if (version_ != k.dims_version) plan(k.dyn, k.dims_version);
    const int64_t N = static_cast<int64_t>(w_rows_.size()), M = static_cast<int64_t>(m_off_.size());
    if (N == 0 || M == 0) return;
    const auto* w = reinterpret_cast<const uint16_t*>(k.in[1]);
    const auto* x = reinterpret_cast<const float*>(k.in[0]);
    float* out = reinterpret_cast<float*>(k.out);
    const int threads = k.threads > 0 ? k.threads : hardware_threads();
    int64_t chunk = std::max<int64_t>(16, N / (2 * static_cast<int64_t>(threads)));
    chunk = (chunk + 3) / 4 * 4;
    const int64_t tasks = (N + chunk - 1) / chunk;
    const w16::DotFn dot = dot_;
    // Prefill: each panel of weight rows widened once into the thread's buffer, then one sgemm
    // of every activation row over it (the decode dot kernels would pass over the panel once
    // per 4 rows, at a third of sgemm's rate).
    const bool panels = M > kFewRows && gemm_layout_;
    auto task = [&](int64_t t) {
      const int64_t begin = t * chunk, end = std::min(N, (t + 1) * chunk);
      const uint16_t* wr[4];
      const float* xr[4];
      if (panels) {
        thread_local std::vector<float> buf;
        thread_local std::vector<const uint16_t*> rows;
        buf.resize(static_cast<size_t>(panel_rows_ * k_));
        rows.resize(static_cast<size_t>(panel_rows_));
        for (int64_t p0 = begin; p0 < end; p0 += panel_rows_) {
          const int np = static_cast<int>(std::min(end, p0 + panel_rows_) - p0);
          for (int j = 0; j < np; ++j)
            rows[static_cast<size_t>(j)] = w + w_rows_[static_cast<size_t>(p0 + j)];
          widen_(k_, rows.data(), np, buf.data());
          cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(M), np,
                      static_cast<int>(k_), 1.0f, x + x_off_[0], static_cast<int>(x_step_),
                      buf.data(), static_cast<int>(k_), 0.0f, out + m_off_[0] + n_off_[p0],
                      static_cast<int>(m_step_));
        }
        return;
      }
      for_each_tile(begin, end, n_off_, m_off_,
                    [&](int64_t n0, int rows, int64_t ns, int64_t m0, int mm, int64_t ms) {
                      for (int r = 0; r < rows; ++r)
                        wr[r] = w + w_rows_[static_cast<size_t>(n0 + r)];
                      for (int j = 0; j < mm; ++j)
                        xr[j] = x + x_off_[static_cast<size_t>(m0 + j)];
                      dot(k_, wr, rows, xr, mm, out + m_off_[m0] + n_off_[n0], ns, ms);
                    });
    };
    if (tasks <= 1 || threads <= 1 || N * M * k_ < kParallelMin) {
      for (int64_t t = 0; t < tasks; ++t)
        task(t);
      return;
    }
    parallel_for(tasks, threads, task);
  }

 private:
  // Element offsets of `v` (plus its base) at every index of `axes` (dims `dims`), row-major:
  // the weight's row starts and the activation's.
  static std::vector<int64_t> axis_offsets(const View& v, const std::vector<int>& axes,
                                           const std::vector<int64_t>& dims, const DynMap& dyn) {
    int64_t count = 1;
    for (int64_t d : dims)
      count *= d;
    std::vector<std::vector<int64_t>> step(axes.size());
    for (size_t j = 0; j < axes.size(); ++j)
      for (int64_t i = 0; i < dims[j]; ++i)
        step[j].push_back(v.strides[static_cast<size_t>(axes[j])].eval(dyn, i));
    const int64_t base = v.base.eval(dyn);
    std::vector<int64_t> out(static_cast<size_t>(count), base);
    std::vector<int64_t> idx(axes.size(), 0);
    for (int64_t f = 0; f < count; ++f) {
      for (size_t j = 0; j < axes.size(); ++j)
        out[static_cast<size_t>(f)] += step[j][static_cast<size_t>(idx[j])];
      for (size_t j = axes.size(); j-- > 0;) {
        if (++idx[j] < dims[j]) break;
        idx[j] = 0;
      }
    }
    return out;
  }

  // Output offsets of every m and n index, and the activation's row starts, at these dims (the
  // output is row-major over the non-k axes).
  void plan(const DynMap& dyn, uint64_t version) {
    const View& xv = attrs_.views[0];
    std::vector<int64_t> dims = eval_shape(xv.dims, dyn);
    auto dims_of = [&](const std::vector<int>& axes) {
      std::vector<int64_t> d;
      for (int a : axes)
        d.push_back(dims[static_cast<size_t>(a)]);
      return d;
    };
    // A decode step bumps the version every step (the context grows): the n offsets (the
    // weight's rows, thousands) change only with this node's dims; the m offsets and the
    // activation's row starts (a few rows; a base may read s) are evaluated again.
    if (dims != dims_ || n_off_.empty()) {
      n_off_ = output_offsets(dims, axis_, n_axes_);
      if (n_off_.size() != w_rows_.size())
        throw Error("cpu.MatmulW16: the weight rows and the output disagree");
      dims_ = dims;
    }
    m_off_ = output_offsets(dims, axis_, m_axes_);
    x_off_ = axis_offsets(xv, m_axes_, dims_of(m_axes_), dyn);
    // sgemm's layout: activation rows and output rows evenly spaced (a leading dimension of at
    // least k and of at least n), output columns contiguous.
    const int64_t M = static_cast<int64_t>(m_off_.size()), N = static_cast<int64_t>(n_off_.size());
    m_step_ = M > 1 ? m_off_[1] - m_off_[0] : N;
    x_step_ = M > 1 ? x_off_[1] - x_off_[0] : k_;
    gemm_layout_ = M > 1 && linear_offsets(m_off_, 0, static_cast<int>(M), m_step_) &&
                   linear_offsets(x_off_, 0, static_cast<int>(M), x_step_) &&
                   linear_offsets(n_off_, 0, static_cast<int>(N), 1) && m_step_ >= N &&
                   x_step_ >= k_;
    version_ = version;
  }

  DType wtype_;
  Attrs attrs_;
  int axis_ = 0;
  int64_t k_ = 0;
  std::vector<int> m_axes_, n_axes_;
  std::vector<int64_t> w_rows_;      // element offset of each weight row (n in row-major order)
  w16::DotFn dot_ = nullptr;         // the active ISA's, taken at load
  w16::WidenFn widen_ = nullptr;     // its widening of a prefill panel
  int64_t panel_rows_ = 16;          // weight rows of about kPanelBytes as f32
  bool gemm_layout_ = false;         // the layout sgemm takes (plan)
  int64_t m_step_ = 0, x_step_ = 0;  // output and activation row steps (with gemm_layout_)
  uint64_t version_ = 0;
  std::vector<int64_t> dims_;           // the dims n_off_ is for
  std::vector<int64_t> m_off_, n_off_;  // output offsets per m and per n index
  std::vector<int64_t> x_off_;          // the activation's row starts per m index
};

std::unique_ptr<Kernel> make_matmul_w16(const LlirNode& n) {
  return std::make_unique<MatmulW16Kernel>(n);
}

}  // namespace

void register_matmul_w16_ops(std::vector<const CpuOp*>& ops) {
  static const CpuOp op{&kMatmulW16, "cpu.library", matmul_w16_rules, make_matmul_w16};
  ops.push_back(&op);
}

}  // namespace luminal::cpu
