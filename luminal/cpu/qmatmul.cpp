// cpu.QuantizeQ8 and cpu.QMatmul: a linear layer over block-quantized weights as integer dot
// products (kernels/quant_rule.hpp matches it; cpu/quant/ has the per-ISA kernels).
//
//   cpu.QuantizeQ8(a):  the activation rows [m axes..., K] (read through any view) quantized to
//                       the weight type's 8-bit format (Q8_0, Q8_1 or Q8_K), once per row.
//   cpu.QMatmul(xq, W): out[m.., n..] = sum over k of W row n . activation row m, W read in
//                       place through its composed row view (row slices, permuted rows).
//
// Matmuls that read one activation through one view in one format (q/k/v, gate/up) share one
// QuantizeQ8 node: the e-graph hash-conses it. The rule dominates nothing: BlasMatmul over the
// Dequantize stays an alternative (it may win in prefill) and the search times both.
//
// QMatmul splits the weight rows over the thread pool in chunks of a multiple of 4 rows; each
// task hands its whole chunk to the kernel per 4 activation rows (the kernel streams 4 rows at a
// time and unpacks each weight block once per 4 activation rows), or, where the output offsets
// are not linear, tiles of up to 4 x 4. With more than 4 activation rows a chunk goes in panels;
// the ISA's GEMM (Q4_0, Q5_0, Q8_0 on the VNNI paths, the K types on avx512vnni, every type on
// avx2) takes a panel with every activation row.
#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "luminal/core/blocks.hpp"
#include "luminal/core/error.hpp"
#include "luminal/cpu/cpu_op.hpp"
#include "luminal/cpu/matmul_tiles.hpp"
#include "luminal/cpu/primitive_util.hpp"
#include "luminal/cpu/qmatmul_split.hpp"
#include "luminal/cpu/quant/isa.hpp"
#include "luminal/cpu/quant/kernels.hpp"
#include "luminal/cpu/quant/quant_index.hpp"
#include "luminal/cpu/quant_rows.hpp"
#include "luminal/cpu/thread_pool.hpp"
#include "luminal/kernels/matmul_rule.hpp"
#include "luminal/kernels/quant_rule.hpp"

namespace luminal::cpu {

namespace {

// Seed costs below 1: reading the blocks does less work than dequantising the weight and
// multiplying in f32 (the dequantised copy is N x K f32 written and read again), so the
// fewest-kernels seed takes QMatmul where the two tie (an unshared QuantizeQ8 + QMatmul against
// Dequantize + BlasMatmul) and the search times that program from its first generation.
const OpDef kQuantizeQ8{.name = "cpu.QuantizeQ8", .seed_cost = 0.9};
const OpDef kQMatmul{.name = "cpu.QMatmul", .seed_cost = 0.9};

// ---------------------------------------------------------------- rule

// At most kFewRows activation rows (decode; matmul_tiles.hpp), reading the blocks once beats
// dequantising the whole weight every step (N x K f32 written, then read again): the QMatmul
// dominates every other e-node of its class that reads the Dequantize. With more rows (prefill)
// both stay and the search times them.

std::vector<Rule> qmatmul_rules() {
  Rule r{"cpu.qmatmul", matmul_pattern(),
         [](const Match& m, const EGraph& eg) { return quant_matmul_parts(eg, m).has_value(); },
         [](const Match& m, EGraph& eg) {
           std::optional<QuantMatmulParts> p = quant_matmul_parts(eg, m);
           if (!p) return;
           const QuantMatmulAttrs a = quant_matmul_attrs(*p, blocks::activation_format(p->wtype));
           const ClassId xq = eg.add(&kQuantizeQ8, a.quantize, {p->act});
           const std::optional<ENodeId> q =
               add_merged(eg, &kQMatmul, a.matmul, {xq, p->weight}, m.root);
           if (q && !eg.is_removed(*q) && few_rows(p->act_rows))
             dominate_widened(eg, *q, p->dequantized);
         }};
  return {r};
}

// ---------------------------------------------------------------- QuantizeQ8

class QuantizeKernel final : public Kernel {
 public:
  explicit QuantizeKernel(const LlirNode& n) : fmt_(n.attrs.dtype), view_(n.attrs.views.at(0)) {
    if (fmt_ != DType::Q8_0 && fmt_ != DType::Q8_1 && fmt_ != DType::Q8_K)
      throw Error("cpu.QuantizeQ8: " + std::string(name(fmt_)) + " is not an activation format");
    if (!n.attrs.shape.back().is_const())
      throw Error("cpu.QuantizeQ8: the row length must be static");
    k_ = n.attrs.shape.back().as_const();
    row_bytes_ = storage_bytes(fmt_, k_);
    fn_ = quant::active_kernels().quantize[quant::act_index(fmt_)];
  }

  void run(const KernelContext& k) override {
    const quant::QuantizeRowFn fn = fn_;
    views_.update({view_}, k.dyn, k.dims_version);
    const EvalView& v = views_[0];
    const int64_t rows = v.numel / k_;
    const float* in = reinterpret_cast<const float*>(k.in[0]);
    auto row = [&](int64_t m, std::vector<float>& tmp) {
      const float* src;
      if (v.identity()) {
        src = in + m * k_;
      } else {
        tmp.resize(static_cast<size_t>(k_));
        // Run by run (a merged-heads view is rows of head_dim consecutive values).
        v.idx.for_runs(m * k_, (m + 1) * k_,
                       [&](int64_t i, int64_t off, int64_t len, int64_t step) {
                         float* d = tmp.data() + (i - m * k_);
                         if (step == 1) {
                           std::memcpy(d, in + off, static_cast<size_t>(len) * sizeof(float));
                         } else {
                           for (int64_t j = 0; j < len; ++j)
                             d[j] = in[off + step * j];
                         }
                       });
        src = tmp.data();
      }
      fn(src, k.out + static_cast<uint64_t>(m) * row_bytes_, k_);
    };
    if (rows * k_ < kParallelMin || k.threads == 1) {
      for (int64_t m = 0; m < rows; ++m)
        row(m, tmp_);
      return;
    }
    // Runs of rows (claimed_tasks): a task a row (about 0.3 us of work at k = 576) spent as long
    // claiming tasks as quantizing (2 threads were no faster than 1 on a prefill's rows).
    const int threads = k.threads > 0 ? k.threads : hardware_threads();
    const int64_t tasks = claimed_tasks(rows, threads);
    parallel_for(tasks, threads, [&](int64_t t) {
      thread_local std::vector<float> tmp;
      for (int64_t m = rows * t / tasks; m < rows * (t + 1) / tasks; ++m)
        row(m, tmp);
    });
  }

 private:
  DType fmt_;
  View view_;
  quant::QuantizeRowFn fn_ = nullptr;  // the active ISA's, taken at load
  int64_t k_ = 0;
  uint64_t row_bytes_ = 0;
  ViewCache views_;
  std::vector<float> tmp_;
};

// ---------------------------------------------------------------- QMatmul

constexpr int64_t kQ8_0Bytes = 34;  // a Q8_0 block

class QMatmulKernel final : public Kernel {
 public:
  explicit QMatmulKernel(const LlirNode& n)
      : wtype_(input_dtype(n, 1)), fmt_(input_dtype(n, 0)), attrs_(n.attrs) {
    if (!is_block(wtype_) || blocks::activation_format(wtype_) != fmt_)
      throw Error("cpu.QMatmul: weights " + std::string(name(wtype_)) + " with activations " +
                  std::string(name(fmt_)) + " is not a supported pair");
    const View& xv = attrs_.views.at(0);
    const View& wv = attrs_.views.at(1);
    if (xv.has_base() || wv.has_base())
      throw Error("cpu.QMatmul: an input read at an element offset is not supported");
    axis_ = attrs_.axis;
    if (!xv.dims[static_cast<size_t>(axis_)].is_const())
      throw Error("cpu.QMatmul: the reduced axis must be static");
    k_ = xv.dims[static_cast<size_t>(axis_)].as_const();
    nblocks_ = k_ / block_size(wtype_);
    xq_row_bytes_ = storage_bytes(fmt_, k_);
    // n axes: W's stride is not 0 (static); m axes: the activation's stride is not 0.
    View rows;  // W over the n axes then k: one row per n index
    for (int i = 0; i < xv.rank(); ++i) {
      if (i == axis_) continue;
      if (!(wv.strides[static_cast<size_t>(i)] == Expr(0))) {
        n_axes_.push_back(i);
        rows.dims.push_back(wv.dims[static_cast<size_t>(i)]);
        rows.strides.push_back(wv.strides[static_cast<size_t>(i)]);
      } else if (!(xv.strides[static_cast<size_t>(i)] == Expr(0))) {
        m_axes_.push_back(i);
      }
    }
    rows.dims.push_back(Expr(k_));
    rows.strides.push_back(Expr(1) * Expr::z());
    w_rows_ = row_byte_offsets(rows, wtype_, "cpu.QMatmul");
    panel_rows_ = qpanel_rows(static_cast<int64_t>(storage_bytes(wtype_, k_)));
    const quant::QuantKernels& kern = quant::active_kernels();
    dot_ = kern.dot[quant::weight_index(wtype_)];
    repack_ = kern.to_q8_0[quant::weight_index(wtype_)];
    dot_q8_0_ = kern.dot[quant::kQ8_0];
    gemm_ = kern.gemm[quant::weight_index(wtype_)];
    gemm_scratch_ = kern.gemm_scratch[quant::weight_index(wtype_)];
  }

  void run(const KernelContext& k) override {
    if (version_ != k.dims_version) plan(k.dyn, k.dims_version);
    const quant::DotRowsFn dot = dot_;
    const int64_t N = static_cast<int64_t>(w_rows_.size()), M = static_cast<int64_t>(m_off_.size());
    if (N == 0 || M == 0) return;
    const uint8_t* w = k.in[1];
    if (w != row_base_) {  // the weight's row pointers, kept while it stays where it is
      row_ptrs_.resize(w_rows_.size());
      for (size_t n = 0; n < w_rows_.size(); ++n)
        row_ptrs_[n] = w + w_rows_[n];
      row_base_ = w;
    }
    const uint8_t* xq = k.in[0];
    float* out = reinterpret_cast<float*>(k.out);
    const int threads = k.threads > 0 ? k.threads : hardware_threads();
    const int64_t chunk = qtask_rows(N, threads, M > 4 && n_linear_ && m_linear_ ? panel_rows_ : 0);
    const int64_t tasks = (N + chunk - 1) / chunk;
    auto task = [&](int64_t t) {
      const int64_t begin = t * chunk, end = std::min(N, (t + 1) * chunk);
      if (n_linear_ && m_linear_) {
        // The whole chunk in one call per 4 activation rows: the kernel streams its rows. With
        // more than 4 activation rows, in panels that stay in cache while every activation row
        // passes over them (the LM head's chunk would come from DRAM once per 4 rows).
        // Q4_0 and Q5_0 panels passed over by more than 4 activation rows are unpacked once, to
        // Q8_0 blocks (bitwise the same products), not once per 4 rows.
        const int64_t panel = M <= 4 ? end - begin : panel_rows_;
        const bool repack = repack_ != nullptr && M > 4;
        for (int64_t p0 = begin; p0 < end; p0 += panel) {
          const int64_t p1 = std::min(end, p0 + panel);
          const uint8_t* const* rows = row_ptrs_.data() + p0;
          if (gemm_ != nullptr && M > 4) {  // the ISA's GEMM packs the panel once
            thread_local std::vector<uint8_t> scratch;
            scratch.resize(static_cast<size_t>(
                gemm_scratch_(nblocks_, static_cast<int>(p1 - p0), static_cast<int>(M))));
            gemm_(nblocks_, rows, static_cast<int>(p1 - p0), xq,
                  static_cast<int64_t>(xq_row_bytes_), static_cast<int>(M),
                  out + m_off_[0] + n_off_[p0], n_step_, m_step_, scratch.data());
            continue;
          }
          quant::DotRowsFn d = dot;
          if (repack) {
            thread_local std::vector<uint8_t> q8;
            thread_local std::vector<const uint8_t*> q8_rows;
            const int64_t row_bytes = nblocks_ * kQ8_0Bytes;
            q8.resize(static_cast<size_t>((p1 - p0) * row_bytes));
            q8_rows.resize(static_cast<size_t>(p1 - p0));
            repack_(rows, static_cast<int>(p1 - p0), nblocks_, q8.data());
            for (int64_t j = 0; j < p1 - p0; ++j)
              q8_rows[static_cast<size_t>(j)] = q8.data() + j * row_bytes;
            rows = q8_rows.data();
            d = dot_q8_0_;
          }
          for (int64_t m0 = 0; m0 < M; m0 += 4) {
            const int mm = static_cast<int>(std::min<int64_t>(4, M - m0));
            d(nblocks_, rows, static_cast<int>(p1 - p0),
              xq + static_cast<uint64_t>(m0) * xq_row_bytes_, static_cast<int64_t>(xq_row_bytes_),
              mm, out + m_off_[m0] + n_off_[p0], n_step_, m_step_);
          }
        }
        return;
      }
      for_each_tile(begin, end, n_off_, m_off_,
                    [&](int64_t n0, int rows, int64_t rs, int64_t m0, int mm, int64_t ms) {
                      dot(nblocks_, row_ptrs_.data() + n0, rows,
                          xq + static_cast<uint64_t>(m0) * xq_row_bytes_,
                          static_cast<int64_t>(xq_row_bytes_), mm, out + m_off_[m0] + n_off_[n0],
                          rs, ms);
                    });
    };
    if (tasks <= 1 || threads <= 1) {
      for (int64_t t = 0; t < tasks; ++t)
        task(t);
      return;
    }
    parallel_for(tasks, threads, task);
  }

 private:
  // Output offsets of every m and n index at these dims (the output is row-major over the
  // non-k axes).
  void plan(const DynMap& dyn, uint64_t version) {
    const View& xv = attrs_.views[0];
    std::vector<int64_t> dims = eval_shape(xv.dims, dyn);
    // Decode bumps the dims version every step (the context grows); the offsets change only
    // with this node's own dims.
    if (dims == dims_ && !m_off_.empty()) {
      version_ = version;
      return;
    }
    m_off_ = output_offsets(dims, axis_, m_axes_);
    n_off_ = output_offsets(dims, axis_, n_axes_);
    n_step_ = n_off_.size() > 1 ? n_off_[1] - n_off_[0] : 1;
    m_step_ = m_off_.size() > 1 ? m_off_[1] - m_off_[0] : 1;
    n_linear_ = linear_offsets(n_off_, 0, static_cast<int>(n_off_.size()), n_step_);
    m_linear_ = linear_offsets(m_off_, 0, static_cast<int>(m_off_.size()), m_step_);
    if (n_off_.size() != w_rows_.size())
      throw Error("cpu.QMatmul: the weight rows and the output disagree");
    dims_ = std::move(dims);
    version_ = version;
  }

  DType wtype_, fmt_;
  Attrs attrs_;
  int axis_ = 0;
  int64_t k_ = 0, nblocks_ = 0;
  uint64_t xq_row_bytes_ = 0;
  std::vector<int> m_axes_, n_axes_;
  std::vector<uint64_t> w_rows_;         // byte offset of each weight row (n in row-major order)
  quant::DotRowsFn dot_ = nullptr;       // the active ISA's, taken at load
  quant::RepackFn repack_ = nullptr;     // its Q4_0 / Q5_0 -> Q8_0 repack, or null
  quant::DotRowsFn dot_q8_0_ = nullptr;  // its Q8_0 dot, for repacked panels
  quant::GemmFn gemm_ = nullptr;         // its prefill GEMM for this type, or null
  quant::GemmScratchFn gemm_scratch_ = nullptr;
  uint64_t version_ = 0;
  int64_t panel_rows_ = 16;               // qpanel_rows of the weight's rows
  std::vector<int64_t> dims_;             // the dims the offsets below are for
  const uint8_t* row_base_ = nullptr;     // the weight buffer row_ptrs_ point into
  std::vector<const uint8_t*> row_ptrs_;  // w_rows_ from row_base_
  std::vector<int64_t> m_off_, n_off_;    // output offsets per m and per n index
  int64_t n_step_ = 1, m_step_ = 1;       // their steps when linear
  bool n_linear_ = false, m_linear_ = false;
};

std::unique_ptr<Kernel> make_quantize(const LlirNode& n) {
  return std::make_unique<QuantizeKernel>(n);
}
std::unique_ptr<Kernel> make_qmatmul(const LlirNode& n) {
  return std::make_unique<QMatmulKernel>(n);
}

}  // namespace

void register_qmatmul_ops(std::vector<const CpuOp*>& ops) {
  static const CpuOp quantize{&kQuantizeQ8, "cpu.library", nullptr, make_quantize};
  static const CpuOp qmatmul{&kQMatmul, "cpu.library", qmatmul_rules, make_qmatmul};
  ops.push_back(&quantize);
  ops.push_back(&qmatmul);
}

}  // namespace luminal::cpu
