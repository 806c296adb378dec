// cpu.Attention: the attention rule's e-node (kernels/attention_rule.hpp) on the CPU, f32. A
// decode step's attention ran as three kernels (Q @ K^T, the masked softmax row, P @ V), each
// split over the threads by KV head: with 3 KV heads on 2 threads one thread took two, and the
// scores went through memory twice. Here, in one kernel:
//   1. the scores S [rows, L]: rows that read the same K row (a KV head's query heads) take each
//      K row once, in pieces of kPiece keys over the threads (small_f32::gemm's dot form where
//      the ISA has AVX2 and K is contiguous along d, else a loop);
//   2. the row program over S (cpu.Row's runner, RowProgram, with the scores as child j read
//      contiguously) into P [rows, L];
//   3. out = P @ V by the same pieces: each piece's partial products (small_f32::gemm's axpy
//      form, or a loop), then the pieces added in order (the same bits whatever the thread count).
// S and P are a few KiB a row and stay in the caches; K and V are read once.
//
// Off by default: LUMINAL_CPU_ATTENTION=on offers it. On the 2-core AMD EPYC dev box
// (2026-12-06, SmolLM2 Q4_1, `luminal bench -p 1400 -n 64 -r 2 --threads 2`) it was slower than
// the three kernels it replaces: TPOT 7.5-8.6 ms against 6.7-8.1 ms, alternating. Per layer at
// c ~ 1450 its steps took about 40 + 33 + 65 us against 33 + 30 + 62 us for the scores'
// cpu.BlasMatmul, the cpu.Row and P @ V's cpu.BlasMatmul (the same small_f32 kernels: the scores
// never left the caches either way, and fusing saves no bytes). Pieces over all KV heads with
// the next rows prefetched were slower still (scores 89-110 us). Both read K and V at 18-29 GB/s
// where the box streams 53 GB/s on two threads: the lever is the kernels' memory access, not
// the fusion.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "luminal/core/error.hpp"
#include "luminal/cpu/cpu_op.hpp"
#include "luminal/cpu/matmul_small_f32.hpp"
#include "luminal/cpu/quant/isa.hpp"
#include "luminal/cpu/row.hpp"
#include "luminal/cpu/strided.hpp"
#include "luminal/cpu/thread_pool.hpp"
#include "luminal/kernels/attention_rule.hpp"
#include "luminal/kernels/fused_program.hpp"

namespace luminal::cpu {

namespace {

const OpDef kAttention{.name = "cpu.Attention"};

/// Keys a task takes in steps 1 and 3.
constexpr int64_t kPiece = 256;
/// Rows small_f32::gemm multiplies at once.
constexpr int kMaxBatch = 4;

std::vector<Rule> attention_rules() {
  const char* on = std::getenv("LUMINAL_CPU_ATTENTION");
  if (on == nullptr || std::string(on) != "on") return {};
  return {attention_rule(
      "cpu.attention", row_op(), &kAttention, [](const EGraph& eg, const AttentionCandidate& c) {
        if (c.attrs.dtype != DType::F32) return false;
        const size_t n = c.children.size();
        const auto j = static_cast<size_t>(c.attrs.axis);
        for (size_t i : {j, n - 2, n - 1})
          if (eg.dtype(c.children[i]) != DType::F32) return false;
        const auto* prog = dynamic_cast<const FusedProgram*>(c.attrs.payload.get());
        return prog && prog->insts.back().dtype == DType::F32;
      })};
}

/// The offsets of the leading `lead` axes' indices of `ix` in row-major order (base included).
std::vector<int64_t> lead_offsets(const StridedIndex& ix, int lead) {
  int64_t count = 1;
  for (int a = 0; a < lead; ++a)
    count *= ix.dims()[static_cast<size_t>(a)];
  std::vector<int64_t> out(static_cast<size_t>(count));
  std::vector<int64_t> idx(static_cast<size_t>(lead), 0);
  for (int64_t r = 0; r < count; ++r) {
    int64_t off = ix.base();
    for (int a = 0; a < lead; ++a)
      off += ix.axis_offset(a, idx[static_cast<size_t>(a)]);
    out[static_cast<size_t>(r)] = off;
    for (int a = lead - 1; a >= 0; --a) {
      if (++idx[static_cast<size_t>(a)] < ix.dims()[static_cast<size_t>(a)]) break;
      idx[static_cast<size_t>(a)] = 0;
    }
  }
  return out;
}

std::vector<int64_t> axis_offsets(const StridedIndex& ix, int a) {
  std::vector<int64_t> out(static_cast<size_t>(ix.dims()[static_cast<size_t>(a)]));
  for (size_t i = 0; i < out.size(); ++i)
    out[i] = ix.axis_offset(a, static_cast<int64_t>(i));
  return out;
}

/// The step when offs[i] == i * step for every i (0 for fewer than two), else -1.
int64_t linear_step(const std::vector<int64_t>& offs) {
  if (offs.size() < 2) return 0;
  const int64_t step = offs[1] - offs[0];
  for (size_t i = 0; i < offs.size(); ++i)
    if (offs[i] != static_cast<int64_t>(i) * step) return -1;
  return step;
}

class AttentionKernel final : public Kernel {
 public:
  explicit AttentionKernel(const LlirNode& n) {
    const Attrs& a = n.attrs;
    const size_t count = a.views.size();
    if (count < 3 || a.axis < 0 || static_cast<size_t>(a.axis) >= count - 2)
      throw Error("cpu.Attention: the node needs the row program's children, then K and V");
    if (a.dtype != DType::F32)
      throw Error("cpu.Attention: only f32 is implemented, the node is " +
                  std::string(name(a.dtype)));
    j_ = static_cast<size_t>(a.axis);
    kc_ = count - 2;
    vc_ = count - 1;
    const View& qv = a.views[j_];
    if (qv.rank() < 2) throw Error("cpu.Attention: Q's view needs [rows..., L, d]");
    // The row program's node: the row's views, the scores (child j) read contiguously.
    row_node_.op = row_op();
    row_node_.attrs.shape = Shape(qv.dims.begin(), qv.dims.end() - 1);
    row_node_.attrs.views.assign(a.views.begin(), a.views.begin() + static_cast<long>(kc_));
    row_node_.attrs.views[j_] = View::contiguous(row_node_.attrs.shape);
    row_node_.attrs.payload = a.payload;
    row_ = std::make_unique<RowProgram>(row_node_, "cpu.Attention");
    row_node_.attrs.dtype = row_->result_dtype();
    if (row_->result_dtype() != DType::F32)
      throw Error("cpu.Attention: the row program's result must be f32");
    small_ = quant::active() != quant::QuantIsa::Portable;
  }

  void run(const KernelContext& k) override {
    prepare(k);
    auto* out = reinterpret_cast<float*>(k.out);
    const int64_t rows = static_cast<int64_t>(qrow_.size());
    if (rows * n_ == 0) return;
    if (L_ == 0) {
      std::fill(out, out + rows * n_, 0.0f);
      return;
    }
    const int threads = k.threads > 0 ? k.threads : hardware_threads();
    const auto* q = reinterpret_cast<const float*>(k.in[j_]);
    const auto* kk = reinterpret_cast<const float*>(k.in[kc_]);
    const auto* v = reinterpret_cast<const float*>(k.in[vc_]);
    const int64_t pieces = (L_ + kPiece - 1) / kPiece;
    const auto tasks = static_cast<int64_t>(batches_.size()) * pieces;
    scores_.resize(static_cast<size_t>(rows * L_));
    probs_.resize(static_cast<size_t>(rows * L_));
    parallel_for(tasks, threads, [&](int64_t t) { scores(t / pieces, t % pieces, q, kk); });
    // 2. the row program over the scores
    std::vector<const uint8_t*> in(k.in.begin(), k.in.begin() + static_cast<long>(kc_));
    in[j_] = reinterpret_cast<const uint8_t*>(scores_.data());
    const KernelContext rk{row_node_, k.dyn, k.dims_version, in, nullptr, k.threads};
    auto* p = reinterpret_cast<uint8_t*>(probs_.data());
    row_->run(rk, [&](const uint8_t* s, int last, int64_t flat, int64_t n) {
      row_->eval().store(s, row_->block_len(), last, DType::F32, p, flat, n);
    });
    // 3. P @ V by pieces, joined in order
    part_.resize(static_cast<size_t>(pieces * rows * n_));
    parallel_for(tasks, threads, [&](int64_t t) { values(t / pieces, t % pieces, v); });
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t e = 0; e < n_; ++e) {
        float s = 0;
        for (int64_t c = 0; c < pieces; ++c)
          s += part_[static_cast<size_t>((c * rows + r) * n_ + e)];
        out[r * n_ + e] = s;
      }
  }

 private:
  void prepare(const KernelContext& k) {
    if (version_ == k.dims_version) return;
    const Attrs& a = k.node.attrs;
    const StridedIndex qi(a.views[j_], k.dyn), ki(a.views[kc_], k.dyn), vi(a.views[vc_], k.dyn);
    const int q = qi.rank() - 1;  // D's rank: rows..., L
    L_ = qi.dims()[static_cast<size_t>(q - 1)];
    d_ = qi.dims()[static_cast<size_t>(q)];
    n_ = vi.dims()[static_cast<size_t>(q - 1)];
    qrow_ = lead_offsets(qi, q - 1);
    krow_ = lead_offsets(ki, q - 1);
    vrow_ = lead_offsets(vi, q - 1);
    qd_ = axis_offsets(qi, q);
    kl_ = axis_offsets(ki, q - 1);
    kd_ = axis_offsets(ki, q);
    vn_ = axis_offsets(vi, q - 1);
    vl_ = axis_offsets(vi, q);
    kl_step_ = linear_step(kl_);
    kd_step_ = linear_step(kd_);
    vn_step_ = linear_step(vn_);
    vl_step_ = linear_step(vl_);
    // Rows reading the same K and V rows (a KV head's query heads), in batches of kMaxBatch.
    std::map<std::pair<int64_t, int64_t>, std::vector<int64_t>> groups;
    for (size_t r = 0; r < qrow_.size(); ++r)
      groups[{krow_[r], vrow_[r]}].push_back(static_cast<int64_t>(r));
    batches_.clear();
    for (auto& [key, members] : groups)
      for (size_t b = 0; b < members.size(); b += kMaxBatch)
        batches_.emplace_back(
            members.begin() + static_cast<long>(b),
            members.begin() + static_cast<long>(std::min(members.size(), b + kMaxBatch)));
    version_ = k.dims_version;
  }

  /// Step 1 for one batch of rows over keys [piece * kPiece, ...).
  void scores(int64_t b, int64_t piece, const float* q, const float* kk) {
    const std::vector<int64_t>& rows = batches_[static_cast<size_t>(b)];
    const int m = static_cast<int>(rows.size());
    const int64_t l0 = piece * kPiece, len = std::min(kPiece, L_ - l0);
    const int64_t k0 = krow_[static_cast<size_t>(rows[0])];
    if (small_ && kd_step_ == 1 && kl_step_ >= 0) {
      thread_local std::vector<float> qbuf, cbuf;
      qbuf.resize(static_cast<size_t>(m * d_));
      cbuf.resize(static_cast<size_t>(m * len));
      for (int i = 0; i < m; ++i)
        for (int64_t t = 0; t < d_; ++t)
          qbuf[static_cast<size_t>(i * d_ + t)] =
              q[qrow_[static_cast<size_t>(rows[static_cast<size_t>(i)])] +
                qd_[static_cast<size_t>(t)]];
      if (small_f32::gemm(m, len, d_, qbuf.data(), d_, 1, kk + k0 + kl_step_ * l0, 1, kl_step_,
                          cbuf.data(), len)) {
        for (int i = 0; i < m; ++i)
          std::memcpy(&scores_[static_cast<size_t>(rows[static_cast<size_t>(i)] * L_ + l0)],
                      &cbuf[static_cast<size_t>(i * len)], static_cast<size_t>(len) * 4);
        return;
      }
    }
    for (int64_t r : rows) {
      const float* qr = q + qrow_[static_cast<size_t>(r)];
      for (int64_t l = l0; l < l0 + len; ++l) {
        const float* kr = kk + k0 + kl_[static_cast<size_t>(l)];
        double s = 0;
        for (int64_t t = 0; t < d_; ++t)
          s += static_cast<double>(qr[qd_[static_cast<size_t>(t)]]) *
               static_cast<double>(kr[kd_[static_cast<size_t>(t)]]);
        scores_[static_cast<size_t>(r * L_ + l)] = static_cast<float>(s);
      }
    }
  }

  /// Step 3 for one batch of rows over keys [piece * kPiece, ...): its partial products.
  void values(int64_t b, int64_t piece, const float* v) {
    const std::vector<int64_t>& rows = batches_[static_cast<size_t>(b)];
    const int m = static_cast<int>(rows.size());
    const int64_t l0 = piece * kPiece, len = std::min(kPiece, L_ - l0);
    const auto nrows = static_cast<int64_t>(qrow_.size());
    const int64_t v0 = vrow_[static_cast<size_t>(rows[0])];
    float* part = &part_[static_cast<size_t>(piece * nrows * n_)];
    if (small_ && vn_step_ == 1 && vl_step_ >= 0) {
      thread_local std::vector<float> pbuf, cbuf;
      pbuf.resize(static_cast<size_t>(m * len));
      cbuf.resize(static_cast<size_t>(m * n_));
      for (int i = 0; i < m; ++i)
        std::memcpy(&pbuf[static_cast<size_t>(i * len)],
                    &probs_[static_cast<size_t>(rows[static_cast<size_t>(i)] * L_ + l0)],
                    static_cast<size_t>(len) * 4);
      if (small_f32::gemm(m, n_, len, pbuf.data(), len, 1, v + v0 + vl_step_ * l0, vl_step_, 1,
                          cbuf.data(), n_)) {
        for (int i = 0; i < m; ++i)
          std::memcpy(part + rows[static_cast<size_t>(i)] * n_, &cbuf[static_cast<size_t>(i * n_)],
                      static_cast<size_t>(n_) * 4);
        return;
      }
    }
    for (int64_t r : rows)
      for (int64_t e = 0; e < n_; ++e) {
        const float* ve = v + v0 + vn_[static_cast<size_t>(e)];
        double s = 0;
        for (int64_t l = l0; l < l0 + len; ++l)
          s += static_cast<double>(probs_[static_cast<size_t>(r * L_ + l)]) *
               static_cast<double>(ve[vl_[static_cast<size_t>(l)]]);
        part[r * n_ + e] = static_cast<float>(s);
      }
  }

  size_t j_ = 0, kc_ = 0, vc_ = 0;  // Q's child (the row's scores), K's, V's
  LlirNode row_node_;
  std::unique_ptr<RowProgram> row_;
  bool small_ = false;
  uint64_t version_ = 0;
  int64_t L_ = 0, d_ = 0, n_ = 0;
  std::vector<int64_t> qrow_, krow_, vrow_, qd_, kl_, kd_, vn_, vl_;
  int64_t kl_step_ = -1, kd_step_ = -1, vn_step_ = -1, vl_step_ = -1;
  std::vector<std::vector<int64_t>> batches_;
  std::vector<float> scores_, probs_, part_;
};

std::unique_ptr<Kernel> make_attention(const LlirNode& n) {
  return std::make_unique<AttentionKernel>(n);
}

}  // namespace

void register_attention_ops(std::vector<const CpuOp*>& ops) {
  static const CpuOp op{&kAttention, "cpu.library", attention_rules, make_attention};
  ops.push_back(&op);
}

}  // namespace luminal::cpu
