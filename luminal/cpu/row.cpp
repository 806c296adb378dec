// cpu.Row: a reduction over the last axis and the elementwise work around it in one kernel
// (RMSNorm, softmax, layer norm, ...), from the row program the shared row rule builds
// (luminal/kernels/row_rule.hpp; ruleset "cpu.rows").
//
// Each row runs its program in passes over blocks of the row (fused_eval.hpp's arrays): pass p
// accumulates every RowSum / RowMax whose operand needs only the row values of earlier passes;
// the last pass computes the result and stores it. Where a block holds whole rows, a value an
// earlier pass computed is not computed again (softmax's exp once, not twice). RMSNorm is two
// passes (the sum of squares, then the scaled row), softmax three (max, sum, output). Values shared
// by a row (loads broadcast along it, reductions, the math on them, such as the norm's correctly
// rounded division and rsqrt) are computed once per row and broadcast into their arrays. Sums
// accumulate in double (in lanes for floats, whose rounding to the dtype hides the order) and
// round once to their dtype (through f32, as the SumReduce kernel); max propagates NaN. Rows are
// split over the thread pool; where the rows are fewer than the threads, a long row is split into
// pieces of fixed length, each pass's reductions joined over the pieces in order (one row's bits
// do not depend on the thread count; a few long rows take this path or the other by it, as the
// SumReduce kernel's split does).
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "luminal/core/error.hpp"
#include "luminal/cpu/cpu_op.hpp"
#include "luminal/cpu/elem_types.hpp"
#include "luminal/cpu/fused.hpp"
#include "luminal/cpu/fused_eval.hpp"
#include "luminal/cpu/primitive_util.hpp"
#include "luminal/cpu/row.hpp"
#include "luminal/cpu/thread_pool.hpp"
#include "luminal/cpu/vec_math.hpp"
#include "luminal/kernels/row_rule.hpp"

namespace luminal::cpu {

namespace {

const OpDef kRow{"cpu.Row"};

// The sum of v[0, n) added to t, in double: in lanes for floats (the sum rounds once to its
// dtype, through f32, which usually hides the order of the double additions: exactly unless the
// terms cancel, as in the SumReduce kernel), in order otherwise.
template <class R>
double row_sum(const R* v, int64_t n, double t) {
  if constexpr (std::is_same_v<R, float>) {
    return t + vec::sum_f32(v, n);
  } else {
    for (int64_t e = 0; e < n; ++e)
      t += static_cast<double>(v[e]);
    return t;
  }
}

// max(t, v[0, n)) as the sequential loop gives it: NaN when either holds one, else t, or the
// segment's first element equal to its maximum when that maximum is above t (for floats
// vec::max_f32's, in lanes).
template <class R>
double row_max(const R* v, int64_t n, double t) {
  if constexpr (std::is_same_v<R, float>) {
    const double m = vec::max_f32(v, n);
    if (std::isnan(m) || std::isnan(t)) return std::numeric_limits<double>::quiet_NaN();
    return t < m ? m : t;
  } else {
    for (int64_t e = 0; e < n; ++e) {
      const double y = static_cast<double>(v[e]);
      if (std::isnan(y) || std::isnan(t))
        t = std::numeric_limits<double>::quiet_NaN();
      else if (t < y)
        t = y;
    }
    return t;
  }
}

// On unless LUMINAL_CPU_ROWS=off (the search then never offers cpu.Row; the kernel still runs
// any cpu.Row a program holds). The rule costs about 0.2 s a bucket of the tiny Llama's `luminal
// run` compile, its sampler included (kernels/row_rule_memo.hpp).
std::vector<Rule> rules() {
  const char* v = std::getenv("LUMINAL_CPU_ROWS");
  if (v != nullptr && std::string(v) == "off") return {};
  return row_rules(&kRow, fused_op(), "cpu");
}

/// Elements evaluated together: several short rows, or a piece of a long one.
constexpr int64_t kRowBlock = 1024;
/// Rows up to this long are evaluated whole (one block), longer ones in kRowBlock pieces.
constexpr int64_t kWholeRow = 4096;
/// Pieces of a long row run on several threads when the rows are fewer than the threads (a
/// decode step's rows over the vocabulary): each pass's reductions sum per piece of this many
/// elements, then over the pieces in order.
constexpr int64_t kRowChunk = 8 * kRowBlock;
/// Elements times instructions below which a node runs on one thread: a decode step's softmax
/// over 9 heads of a few hundred positions (about 20 instructions an element) splits its rows,
/// a norm of one row does not.
constexpr int64_t kRowParallelWork = 16384;

}  // namespace

RowProgram::RowProgram(const LlirNode& n, const char* op) : node_(n) {
  const auto* prog = dynamic_cast<const FusedProgram*>(n.attrs.payload.get());
  if (!prog) throw Error(std::string(op) + ": the node has no FusedProgram payload");
  prog->validate();
  if (!prog->has_row_reduce())
    throw Error(std::string(op) + ": the program has no row reduction: " + prog->to_string());
  if (prog->num_children() > static_cast<int>(n.attrs.views.size()))
    throw Error(std::string(op) + ": the program loads more children than the node has views");
  if (n.attrs.shape.empty()) throw Error(std::string(op) + ": a row node needs at least one axis");
  ev_ = SlotEval(prog->insts);
  const std::vector<FusedInst>& in = prog->insts;
  const size_t count = in.size();
  auto operands = [&](size_t i) {
    std::vector<int> o;
    if (in[i].op == FusedOpcode::Load || in[i].op == FusedOpcode::Const) return o;
    for (int32_t x : {in[i].a, in[i].b, in[i].c})
      if (x >= 0) o.push_back(x);
    return o;
  };
  row_level_.assign(count, false);
  stage_.assign(count, 0);
  for (size_t i = 0; i < count; ++i) {
    const FusedInst& x = in[i];
    int stage = 0;
    bool row = true;
    for (int o : operands(i)) {
      stage = std::max(stage, stage_[static_cast<size_t>(o)]);
      row = row && row_level_[static_cast<size_t>(o)];
    }
    if (x.op == FusedOpcode::Load) {
      std::optional<View> v = view_over(n.attrs.views[static_cast<size_t>(x.a)], n.attrs.shape);
      row = v && v->strides.back() == Expr(0);
    } else if (is_row_reduce(x.op)) {
      ++stage;  // available from the pass after its operand's
      row = true;
    }
    row_level_[i] = row;
    stage_[i] = stage;
  }
  passes_ = *std::max_element(stage_.begin(), stage_.end()) + 1;
  std::vector<bool> read_by_element(count, false);
  for (size_t i = 0; i < count; ++i)
    if (!row_level_[i] || is_row_reduce(in[i].op))
      for (int o : operands(i))
        read_by_element[static_cast<size_t>(o)] = true;
  // The result is stored from the element arrays.
  read_by_element[count - 1] = true;
  element_consts_.assign(count, false);
  for (size_t i = 0; i < count; ++i)
    element_consts_[i] = in[i].op == FusedOpcode::Const && read_by_element[i];
  pass_.assign(static_cast<size_t>(passes_), {});
  for (int p = 0; p < passes_; ++p) {
    Pass& ps = pass_[static_cast<size_t>(p)];
    std::vector<bool> need(count, false);
    if (p == passes_ - 1) need[count - 1] = true;
    for (size_t i = 0; i < count; ++i) {
      if (!row_level_[i] || stage_[i] != p || in[i].op == FusedOpcode::Const) continue;
      ps.row_insts.push_back(static_cast<int>(i));
      if (read_by_element[i]) ps.expand.push_back(static_cast<int>(i));
    }
    for (size_t i = 0; i < count; ++i)
      if (is_row_reduce(in[i].op) && stage_[i] == p + 1) {
        need[static_cast<size_t>(in[i].a)] = true;
        ps.reduce.push_back(static_cast<int>(i));
      }
    for (size_t i = count; i-- > 0;) {
      if (!need[i] || row_level_[i]) continue;
      for (int o : operands(i))
        need[static_cast<size_t>(o)] = true;
    }
    for (size_t i = 0; i < count; ++i)
      if (need[i] && !row_level_[i]) ps.work.push_back(static_cast<int>(i));
  }
  // Where a block holds whole rows, the arrays of earlier passes still hold their values.
  std::vector<bool> done(count, false);
  for (Pass& ps : pass_)
    for (int i : ps.work)
      if (!done[static_cast<size_t>(i)]) {
        ps.fresh.push_back(i);
        done[static_cast<size_t>(i)] = true;
      }
}

void RowProgram::prepare(const KernelContext& k) {
  if (version_ == k.dims_version) return;
  const std::vector<int64_t> dims = eval_shape(node_.attrs.shape, k.dyn);
  numel_ = 1;
  for (int64_t d : dims)
    numel_ *= d;
  row_len_ = dims.back();
  idx_.clear();
  if (numel_ > 0)
    for (const View& v : node_.attrs.views)
      idx_.emplace_back(v, k.dyn);
  // Short rows: several whole rows a block; rows up to kWholeRow: one whole row a block (each
  // pass then evaluates only what no earlier pass did: a decode step's softmax over a long
  // context took its mask and exp2 again in every pass); longer ones: one row in blocks of
  // kRowBlock.
  block_rows_ = row_len_ > 0 ? std::max<int64_t>(1, kRowBlock / row_len_) : 1;
  len_ = row_len_ > kRowBlock && row_len_ <= kWholeRow
             ? (row_len_ + 7) / 8 * 8
             : std::min<int64_t>(kRowBlock, (block_rows_ * row_len_ + 7) / 8 * 8);
  len_ = std::max<int64_t>(len_, 8);
  version_ = k.dims_version;
}

int64_t RowProgram::rows() const { return row_len_ > 0 ? numel_ / row_len_ : 0; }

void RowProgram::row_values(const KernelContext& k, int p, int64_t b0, int64_t nb,
                            const double* acc, uint8_t* rs, uint8_t* s) {
  const std::vector<FusedInst>& in = ev_.insts();
  const Pass& ps = pass_[static_cast<size_t>(p)];
  const int64_t L = row_len_, B = block_rows_;
  // The row values of this stage, in program order, one per row.
  for (int i : ps.row_insts) {
    const FusedInst& x = in[static_cast<size_t>(i)];
    if (x.op == FusedOpcode::Load) {
      for (int64_t j = 0; j < nb; ++j)
        ev_.load(rs, B, i, k.in[x.a], idx_[x.a], (b0 + j) * L, 1, j);
    } else if (is_row_reduce(x.op)) {
      const double* a = acc + static_cast<size_t>(i) * B;
      dispatch_dtype(x.dtype, [&](auto tag) {
        constexpr DType T = decltype(tag)::value;
        using R = compute_t<T>;
        R* d = reinterpret_cast<R*>(SlotEval::at(rs, B, i));
        for (int64_t j = 0; j < nb; ++j) {
          if constexpr (std::is_same_v<R, double>)
            d[j] = a[j];
          else if constexpr (std::is_same_v<R, float>)
            d[j] = num::round_to<T>(static_cast<float>(a[j]));
        }
      });
    } else {
      ev_.eval(rs, B, i, nb);
    }
  }
  for (int i : ps.expand)
    ev_.expand(rs, B, s, len_, i, nb, nb > 1 ? L : len_);
}

void RowProgram::eval_block(const KernelContext& k, const std::vector<int>& insts, uint8_t* s,
                            int64_t flat, int64_t n) const {
  for (int i : insts) {
    const FusedInst& x = ev_.insts()[static_cast<size_t>(i)];
    if (x.op == FusedOpcode::Load)
      ev_.load(s, len_, i, k.in[x.a], idx_[x.a], flat, n);
    else
      ev_.eval(s, len_, i, n);
  }
}

double RowProgram::reduce_segment(int i, uint8_t* s, int64_t e, int64_t n, double t) const {
  const std::vector<FusedInst>& in = ev_.insts();
  const FusedInst& x = in[static_cast<size_t>(i)];
  dispatch_dtype(in[static_cast<size_t>(x.a)].dtype, [&](auto tag) {
    using R = compute_t<decltype(tag)::value>;
    if constexpr (!std::is_same_v<R, int64_t>) {
      const R* v = reinterpret_cast<const R*>(SlotEval::at(s, len_, x.a)) + e;
      t = x.op == FusedOpcode::RowSum ? row_sum(v, n, t) : row_max(v, n, t);
    }
  });
  return t;
}

void RowProgram::run_rows(const KernelContext& k, int64_t r0, int64_t r1, const BlockSink& sink) {
  const std::vector<FusedInst>& in = ev_.insts();
  const int last = static_cast<int>(in.size()) - 1;
  const int64_t L = row_len_, B = block_rows_;
  const bool whole = L <= len_;    // a block holds whole rows: each pass sees the same elements
  uint8_t* s = ev_.scratch(len_);  // element arrays
  uint8_t* rs = ev_.scratch2(B);   // row arrays: one value per row of the block
  ev_.fill_constants(s, len_, &element_consts_);
  ev_.fill_constants(rs, B);
  std::vector<double>& acc = acc_scratch();
  acc.assign(in.size() * static_cast<size_t>(B), 0.0);
  for (int64_t b0 = r0; b0 < r1; b0 += B) {
    const int64_t nb = std::min(B, r1 - b0);
    for (int p = 0; p < passes_; ++p) {
      const Pass& ps = pass_[static_cast<size_t>(p)];
      row_values(k, p, b0, nb, acc.data(), rs, s);
      const bool final_pass = p == passes_ - 1;
      if (ps.reduce.empty() && !final_pass) continue;
      for (int i : ps.reduce)
        std::fill_n(acc.data() + static_cast<size_t>(i) * B, nb,
                    in[static_cast<size_t>(i)].op == FusedOpcode::RowSum
                        ? 0.0
                        : -std::numeric_limits<double>::infinity());
      // Blocks of the rows' elements: all nb rows at once, or one row in pieces.
      const int64_t total = nb * L;
      for (int64_t begin = 0; begin < total; begin += len_) {
        const int64_t n = std::min(len_, total - begin);
        const int64_t flat = b0 * L + begin;
        eval_block(k, whole ? ps.fresh : ps.work, s, flat, n);
        for (int i : ps.reduce) {
          double* a = acc.data() + static_cast<size_t>(i) * B;
          for (int64_t e = 0; e < n;) {
            const int64_t j = (begin + e) / L;  // the row within the block
            const int64_t stop = std::min(n, (j + 1) * L - begin);
            a[j] = reduce_segment(i, s, e, stop - e, a[j]);
            e = stop;
          }
        }
        if (final_pass) sink(s, last, flat, n);
      }
    }
  }
}

namespace {

double join_max(double t, double m) {  // as row_max over a segment whose maximum is m
  if (std::isnan(m) || std::isnan(t)) return std::numeric_limits<double>::quiet_NaN();
  return t < m ? m : t;
}

}  // namespace

void RowProgram::run_long_row(const KernelContext& k, int64_t row, int threads,
                              const BlockSink& sink) {
  const std::vector<FusedInst>& in = ev_.insts();
  const int last = static_cast<int>(in.size()) - 1;
  const size_t ni = in.size();
  const int64_t L = row_len_;
  const int64_t chunks = (L + kRowChunk - 1) / kRowChunk;
  auto initial = [&](int i) {
    return in[static_cast<size_t>(i)].op == FusedOpcode::RowSum
               ? 0.0
               : -std::numeric_limits<double>::infinity();
  };
  long_acc_.assign(ni, 0.0);
  long_part_.assign(static_cast<size_t>(chunks) * ni, 0.0);
  for (int p = 0; p < passes_; ++p) {
    const Pass& ps = pass_[static_cast<size_t>(p)];
    const bool final_pass = p == passes_ - 1;
    if (ps.reduce.empty() && !final_pass) continue;
    parallel_for(chunks, threads, [&](int64_t c) {
      uint8_t* s = ev_.scratch(len_);
      uint8_t* rs = ev_.scratch2(1);
      ev_.fill_constants(s, len_, &element_consts_);
      ev_.fill_constants(rs, 1);
      for (int q = 0; q <= p; ++q)
        row_values(k, q, row, 1, long_acc_.data(), rs, s);
      double* part = long_part_.data() + static_cast<size_t>(c) * ni;
      for (int i : ps.reduce)
        part[i] = initial(i);
      const int64_t c1 = std::min(L, (c + 1) * kRowChunk);
      for (int64_t begin = c * kRowChunk; begin < c1; begin += len_) {
        const int64_t n = std::min(len_, c1 - begin);
        const int64_t flat = row * L + begin;
        eval_block(k, ps.work, s, flat, n);
        for (int i : ps.reduce)
          part[i] = reduce_segment(i, s, 0, n, part[i]);
        if (final_pass) sink(s, last, flat, n);
      }
    });
    // The chunks' partials in chunk order: the same bits whatever the thread count.
    for (int i : ps.reduce) {
      double t = initial(i);
      for (int64_t c = 0; c < chunks; ++c) {
        const double v = long_part_[static_cast<size_t>(c) * ni + static_cast<size_t>(i)];
        t = in[static_cast<size_t>(i)].op == FusedOpcode::RowSum ? t + v : join_max(t, v);
      }
      long_acc_[static_cast<size_t>(i)] = t;
    }
  }
}

std::vector<double>& RowProgram::acc_scratch() {
  thread_local std::vector<double> acc;
  return acc;
}

void RowProgram::run(const KernelContext& k, const BlockSink& sink) {
  prepare(k);
  const int64_t rows = this->rows();
  if (rows == 0 || row_len_ == 0) return;
  const int threads = k.threads > 0 ? k.threads : hardware_threads();
  const int64_t blocks = (rows + block_rows_ - 1) / block_rows_;
  const int64_t work = numel_ * static_cast<int64_t>(ev_.insts().size());
  // (one row takes the pieces on one thread too: its bits do not depend on the thread count)
  if (rows < std::max(threads, 2) && row_len_ >= 2 * kRowChunk && work >= kRowParallelWork) {
    for (int64_t r = 0; r < rows; ++r)
      run_long_row(k, r, threads, sink);
    return;
  }
  const int64_t parts =
      work < kRowParallelWork || threads <= 1 ? 1 : claimed_tasks(blocks, threads);
  parallel_for(parts, threads, [&](int64_t part) {
    const int64_t b0 = blocks * part / parts, b1 = blocks * (part + 1) / parts;
    run_rows(k, b0 * block_rows_, std::min(rows, b1 * block_rows_), sink);
  });
}

namespace {

class RowKernel final : public Kernel {
 public:
  explicit RowKernel(const LlirNode& n) : prog_(n, "cpu.Row") {
    if (prog_.result_dtype() != n.attrs.dtype)
      throw Error("cpu.Row: the program's result dtype differs from the node's dtype");
  }
  void run(const KernelContext& k) override {
    const DType dt = k.node.attrs.dtype;
    prog_.run(k, [&](const uint8_t* s, int last, int64_t flat, int64_t n) {
      prog_.eval().store(s, prog_.block_len(), last, dt, k.out, flat, n);
    });
  }

 private:
  RowProgram prog_;
};

std::unique_ptr<Kernel> make_row(const LlirNode& n) { return std::make_unique<RowKernel>(n); }

}  // namespace

const OpDef* row_op() { return &kRow; }

void register_row_ops(std::vector<const CpuOp*>& ops) {
  static const CpuOp op{&kRow, "cpu.rows", rules, make_row};
  ops.push_back(&op);
}

}  // namespace luminal::cpu
