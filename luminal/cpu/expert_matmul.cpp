// cpu.ExpertMatmul: a matmul over the chosen experts' weights, read in place by expert id
// (compiler/expert_rule.hpp matches it: nn::expert_linear's gather of weight rows under a
// matmul). out[r, n] = sum over d of act[r, d] * W[ids[r], n, d], with W [E, N, D] f32, f16,
// bf16 or block-quantized (Q4_0 .. Q6_K). Only the experts some row names are read, and the
// gathered rows are never materialised.
//
// Rows are grouped by expert (a counting sort of the ids), so each chosen expert's matrix is
// streamed once per step however many rows chose it: a group of one row (decode) is a GEMV
// (sgemv, or the quantized dot kernels over the row), a larger group (prefill) one GEMM of its
// gathered activation rows (sgemm; the quantized kernels 4 rows at a time). Tasks are (group,
// chunk of n) pairs over the thread pool; 16-bit weights are widened per chunk into a thread's
// buffer first. The unfused Gather + matmul stays an alternative the search times, except in
// decode (a few rows), where this kernel reads a subset of what it reads and dominates it.
#include <cblas.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "luminal/compiler/expert_rule.hpp"
#include "luminal/core/blocks.hpp"
#include "luminal/core/error.hpp"
#include "luminal/cpu/cpu_op.hpp"
#include "luminal/cpu/primitive_util.hpp"
#include "luminal/cpu/quant/isa.hpp"
#include "luminal/cpu/quant/kernels.hpp"
#include "luminal/cpu/quant/quant_index.hpp"
#include "luminal/cpu/quant_rows.hpp"
#include "luminal/cpu/thread_pool.hpp"
#include "luminal/kernels/matmul_rule.hpp"

namespace luminal::cpu {

namespace {

const OpDef kExpertMatmul{"cpu.ExpertMatmul"};

bool has_dot_kernel(DType t) {
  switch (t) {
    case DType::Q4_0:
    case DType::Q4_1:
    case DType::Q5_0:
    case DType::Q5_1:
    case DType::Q8_0:
    case DType::Q4_K:
    case DType::Q5_K:
    case DType::Q6_K: return true;
    default: return false;
  }
}

bool supported(const ExpertMatmulParts& p) { return !is_block(p.wtype) || has_dot_kernel(p.wtype); }

// With a static count of at most kFewRows rows (decode: one token's k choices) the kernel reads a
// subset of what the unfused form reads (it gathers the same rows, writes them, reads them again):
// it dominates the matmuls of its class over the gathered rows. With more rows (prefill) both
// stay and the search times them.
constexpr int64_t kFewRows = 16;

bool few_rows(const View& act_rows) {
  int64_t m = 1;
  for (int i = 0; i + 1 < act_rows.rank(); ++i) {
    if (!act_rows.dims[static_cast<size_t>(i)].is_const()) return false;
    m *= act_rows.dims[static_cast<size_t>(i)].as_const();
  }
  return m <= kFewRows;
}

// `x` dominates every other live e-node of its class that does not read the weight itself (the
// unfused matmuls read the gathered rows instead).
void dominate_unfused(EGraph& eg, ENodeId x) {
  const ENode& xn = eg.node(x);
  for (ENodeId n : eg.nodes_of(eg.class_of(x))) {
    if (n == x || eg.is_removed(n)) continue;
    bool reads_weight = false;
    for (ClassId child : eg.node(n).children)
      reads_weight |= eg.find(child) == eg.find(xn.children[2]);
    if (!reads_weight) eg.dominate(x, n);
  }
}

std::vector<Rule> expert_rules() {
  Rule r{"cpu.expert-matmul", matmul_pattern(),
         [](const Match& m, const EGraph& eg) {
           std::optional<ExpertMatmulParts> p = expert_matmul_parts(eg, m);
           return p && supported(*p);
         },
         [](const Match& m, EGraph& eg) {
           std::optional<ExpertMatmulParts> p = expert_matmul_parts(eg, m);
           if (!p || !supported(*p)) return;
           Attrs a;
           a.dtype = p->sum.dtype;
           a.shape = p->sum.shape;
           a.views = {p->act_rows, p->ids_rows, p->weight_view};
           const std::optional<ENodeId> x =
               add_merged(eg, &kExpertMatmul, a, {p->act, p->ids, p->weight}, m.root);
           if (x && !eg.is_removed(*x) && few_rows(p->act_rows)) dominate_unfused(eg, *x);
         }};
  return {r};
}

// OpenBLAS's own threads would compete with the pool's for the same cores.
void single_threaded_blas() {
  static const bool once = [] {
    openblas_set_num_threads(1);
    return true;
  }();
  (void)once;
}

class ExpertMatmulKernel final : public Kernel {
 public:
  explicit ExpertMatmulKernel(const LlirNode& n)
      : act_t_(input_dtype(n, 0)),
        ids_t_(input_dtype(n, 1)),
        wtype_(input_dtype(n, 2)),
        act_view_(n.attrs.views.at(0)),
        ids_view_(n.attrs.views.at(1)) {
    if (act_t_ != DType::F32 || n.attrs.dtype != DType::F32)
      throw Error("cpu.ExpertMatmul: activations and output must be f32");
    if (!is_integer(ids_t_)) throw Error("cpu.ExpertMatmul: expert ids must be integers");
    const View& wv = n.attrs.views.at(2);
    if (wv.has_base())
      throw Error("cpu.ExpertMatmul: weights read at an element offset are not supported");
    E_ = wv.dims.at(0).as_const();
    N_ = wv.dims.at(1).as_const();
    D_ = wv.dims.at(2).as_const();
    R_ = wv.strides[0].eval({}, 1);
    n_stride_ = wv.strides[1].eval({}, 1);
    if (is_block(wtype_)) {
      if (!has_dot_kernel(wtype_))
        throw Error("cpu.ExpertMatmul: no quantized dot kernel for " + std::string(name(wtype_)));
      fmt_ = blocks::activation_format(wtype_);
      xq_row_bytes_ = storage_bytes(fmt_, D_);
      nblocks_ = D_ / block_size(wtype_);
      w_rows_ = row_byte_offsets(wv, wtype_, "cpu.ExpertMatmul");
      quantize_ = quant::active_kernels().quantize[quant::act_index(fmt_)];
      dot_ = quant::active_kernels().dot[quant::weight_index(wtype_)];
    } else if (wtype_ != DType::F32 && wtype_ != DType::F16 && wtype_ != DType::BF16) {
      throw Error("cpu.ExpertMatmul: weights of " + std::string(name(wtype_)) +
                  " are not supported (f32, f16, bf16 or Q4_0 .. Q6_K)");
    }
    single_threaded_blas();
  }

  void run(const KernelContext& k) override {
    views_.update({act_view_, ids_view_}, k.dyn, k.dims_version);
    const EvalView& av = views_[0];
    const EvalView& iv = views_[1];
    const int64_t M = iv.numel;
    if (M == 0 || N_ == 0) return;
    group_rows(k, iv, M);
    gather_activations(k, av, M);
    const int threads = k.threads > 0 ? k.threads : hardware_threads();
    // Tasks: (group, chunk of n), about four per thread (decode has few groups: n is split).
    const int64_t groups = static_cast<int64_t>(group_expert_.size());
    const int64_t per_group = std::max<int64_t>(1, (4 * threads + groups - 1) / groups);
    int64_t chunk = std::max<int64_t>(16, (N_ + per_group - 1) / per_group);
    chunk = std::min(N_, (chunk + 3) / 4 * 4);
    const int64_t chunks = (N_ + chunk - 1) / chunk;
    float* grouped_out = out_.data();
    // Set before the tasks start: they only read the row pointers.
    const uint8_t* const* w_rows = is_block(wtype_) ? row_ptrs(k.in[2]) : nullptr;
    auto task = [&](int64_t t) {
      const int64_t gi = t / chunks, c = t % chunks;
      const int64_t n0 = c * chunk, n1 = std::min(N_, n0 + chunk);
      const int64_t first = group_start_[static_cast<size_t>(gi)];
      const int64_t rows = group_start_[static_cast<size_t>(gi) + 1] - first;
      const int64_t e = group_expert_[static_cast<size_t>(gi)];
      float* c_out = grouped_out + first * N_ + n0;
      if (is_block(wtype_)) {
        const uint8_t* const* ptrs = w_rows + e * N_ + n0;
        for (int64_t m0 = 0; m0 < rows; m0 += 4) {
          const int mm = static_cast<int>(std::min<int64_t>(4, rows - m0));
          dot_(nblocks_, ptrs, static_cast<int>(n1 - n0),
               xq_.data() + static_cast<uint64_t>(first + m0) * xq_row_bytes_,
               static_cast<int64_t>(xq_row_bytes_), mm, c_out + m0 * N_, 1, N_);
        }
        return;
      }
      const float* a = act_.data() + first * D_;
      const float* w;
      int64_t ldw = n_stride_;
      if (wtype_ == DType::F32) {
        w = reinterpret_cast<const float*>(k.in[2]) + e * R_ + n0 * n_stride_;
      } else {
        thread_local std::vector<float> wide;
        wide.resize(static_cast<size_t>((n1 - n0) * D_));
        widen(k.in[2], e * R_ + n0 * n_stride_, n1 - n0, wide.data());
        w = wide.data();
        ldw = D_;
      }
      const int nn = static_cast<int>(n1 - n0), dd = static_cast<int>(D_);
      if (rows == 1) {
        cblas_sgemv(CblasRowMajor, CblasNoTrans, nn, dd, 1.f, w, static_cast<int>(ldw), a, 1, 0.f,
                    c_out, 1);
      } else {
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<int>(rows), nn, dd, 1.f, a,
                    dd, w, static_cast<int>(ldw), 0.f, c_out, static_cast<int>(N_));
      }
    };
    const int64_t tasks = groups * chunks;
    if (tasks <= 1 || threads <= 1 || M * N_ * D_ < kParallelMin) {
      for (int64_t t = 0; t < tasks; ++t)
        task(t);
    } else {
      parallel_for(tasks, threads, task);
    }
    // Back to row order.
    float* out = reinterpret_cast<float*>(k.out);
    for (int64_t j = 0; j < M; ++j)
      std::copy_n(grouped_out + j * N_, N_, out + order_[static_cast<size_t>(j)] * N_);
  }

 private:
  // Counting sort of the rows by expert id: order_ (rows in group order), one group per chosen
  // expert (group_expert_, group_start_).
  void group_rows(const KernelContext& k, const EvalView& iv, int64_t M) {
    ids_.resize(static_cast<size_t>(M));
    auto read = [&](int64_t r, int64_t off) {
      const int64_t e = load_as_int64(ids_t_, k.in[1], off);
      if (e < 0 || e >= E_)
        throw Error("cpu.ExpertMatmul: expert id " + std::to_string(e) + " at row " +
                    std::to_string(r) + " is out of range for " + std::to_string(E_) + " experts");
      ids_[static_cast<size_t>(r)] = e;
    };
    iv.idx.for_range(0, M, read);
    count_.assign(static_cast<size_t>(E_) + 1, 0);
    for (int64_t e : ids_)
      ++count_[static_cast<size_t>(e) + 1];
    for (int64_t e = 0; e < E_; ++e)
      count_[static_cast<size_t>(e) + 1] += count_[static_cast<size_t>(e)];
    group_expert_.clear();
    group_start_.clear();
    for (int64_t e = 0; e < E_; ++e) {
      if (count_[static_cast<size_t>(e) + 1] == count_[static_cast<size_t>(e)]) continue;
      group_expert_.push_back(e);
      group_start_.push_back(count_[static_cast<size_t>(e)]);
    }
    group_start_.push_back(M);
    order_.resize(static_cast<size_t>(M));
    for (int64_t r = 0; r < M; ++r)
      order_[static_cast<size_t>(count_[static_cast<size_t>(ids_[static_cast<size_t>(r)])]++)] = r;
    out_.resize(static_cast<size_t>(M * N_));
  }

  // The activation rows in group order: f32 [M, D], or quantized to the weight's 8-bit format.
  void gather_activations(const KernelContext& k, const EvalView& av, int64_t M) {
    const float* in = reinterpret_cast<const float*>(k.in[0]);
    act_.resize(static_cast<size_t>(M * D_));
    for (int64_t j = 0; j < M; ++j) {
      const int64_t r = order_[static_cast<size_t>(j)];
      float* dst = act_.data() + j * D_;
      if (av.identity()) {
        std::copy_n(in + r * D_, D_, dst);
      } else {
        av.idx.for_range(r * D_, (r + 1) * D_,
                         [&](int64_t i, int64_t off) { dst[i - r * D_] = in[off]; });
      }
    }
    if (!is_block(wtype_)) return;
    xq_.resize(static_cast<size_t>(M) * xq_row_bytes_);
    for (int64_t j = 0; j < M; ++j)
      quantize_(act_.data() + j * D_, xq_.data() + static_cast<uint64_t>(j) * xq_row_bytes_, D_);
  }

  // Rows [n0, n0 + rows) of W from element `at` (16-bit) widened to f32, row-major [rows, D].
  void widen(const uint8_t* w, int64_t at, int64_t rows, float* dst) const {
    const uint16_t* src = reinterpret_cast<const uint16_t*>(w);
    for (int64_t n = 0; n < rows; ++n) {
      const uint16_t* row = src + at + n * n_stride_;
      float* d = dst + n * D_;
      if (wtype_ == DType::BF16)
        for (int64_t i = 0; i < D_; ++i)
          d[i] = f32_from_bf16(row[i]);
      else
        for (int64_t i = 0; i < D_; ++i)
          d[i] = f16_bits_to_f32(row[i]);
    }
  }

  // The weight's row pointers (E * N), kept while it stays where it is.
  const uint8_t* const* row_ptrs(const uint8_t* w) {
    if (w != row_base_) {
      row_ptrs_.resize(w_rows_.size());
      for (size_t i = 0; i < w_rows_.size(); ++i)
        row_ptrs_[i] = w + w_rows_[i];
      row_base_ = w;
    }
    return row_ptrs_.data();
  }

  DType act_t_, ids_t_, wtype_, fmt_ = DType::F32;
  View act_view_, ids_view_;
  int64_t E_ = 0, N_ = 0, D_ = 0, R_ = 0, n_stride_ = 0;
  // Quantized weights.
  uint64_t xq_row_bytes_ = 0;
  int64_t nblocks_ = 0;
  std::vector<uint64_t> w_rows_;
  const uint8_t* row_base_ = nullptr;
  std::vector<const uint8_t*> row_ptrs_;
  quant::QuantizeRowFn quantize_ = nullptr;
  quant::DotRowsFn dot_ = nullptr;
  // Per run (kept between runs: no allocation once the sizes were seen).
  ViewCache views_;
  std::vector<int64_t> ids_, count_, order_, group_expert_, group_start_;
  std::vector<float> act_, out_;
  std::vector<uint8_t> xq_;
};

std::unique_ptr<Kernel> make_expert_matmul(const LlirNode& n) {
  return std::make_unique<ExpertMatmulKernel>(n);
}

}  // namespace

void register_expert_matmul_ops(std::vector<const CpuOp*>& ops) {
  static const CpuOp op{&kExpertMatmul, "cpu.library", expert_rules, make_expert_matmul};
  ops.push_back(&op);
}

}  // namespace luminal::cpu
