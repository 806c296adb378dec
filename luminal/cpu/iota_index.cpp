// cpu.GatherIota, cpu.ScatterIota and cpu.ScatterIotaInPlace: Gather and Scatter whose indexes
// are an Iota. That is what slices at an offset, concatenation, padding and repeats lower to
// (prim::gather_by_map / scatter_by_map): index i is a fixed expression of i, so no index buffer
// needs to be written or read.
//
// Rule (ruleset "cpu.library"): Gather(idx, data) / Scatter(dest, idx, src) where idx's class
// holds an Iota gets an e-node without the idx child. Its iota_expr is the Iota's expression
// composed with the view the op reads idx through (index i = iota_expr(z = i), wrapped to i32
// as the Iota stores it) and its iota_len the index count. It dominates the op it replaces (the
// same writes, minus the index buffer). A Scatter whose dest the in-place rule could overwrite
// (read contiguously, its element count) also gets cpu.ScatterIotaInPlace, which pruning keeps
// only where dest has no other reader; where it stays it dominates the ScatterIota (a decode
// step's KV cache write would otherwise copy the whole cache, twice) and cpu.ScatterInPlace
// (which reads the index buffer; scatter_inplace.cpp).
//
// Kernel: per dims the expression uses, the indexes are evaluated once and kept as runs of
// consecutive elements (destination start, source start, length: concatenation and slices copy
// whole rows with memcpy), or, when runs are short, as one source offset per element. A Scatter
// applies its runs in index order (the last duplicate wins), out-of-range indexes skipped, and
// splits them over threads only when no two write the same element. A Gather index out of range
// is an error naming the index and the position, as the primitive's.
#include <algorithm>
#include <climits>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "luminal/core/error.hpp"
#include "luminal/cpu/cpu_op.hpp"
#include "luminal/cpu/primitive_util.hpp"
#include "luminal/ir/prim.hpp"
#include "luminal/kernels/matmul_rule.hpp"

namespace luminal::cpu {

namespace {

const OpDef kGatherIota{"cpu.GatherIota", OpKind::Input, false, -1, /*seed_cost=*/0.9};
const OpDef kScatterIota{"cpu.ScatterIota", OpKind::Input, false, -1, /*seed_cost=*/0.9};
const OpDef kScatterIotaInPlace{"cpu.ScatterIotaInPlace", OpKind::Input, false,
                                /*inplace_input=*/0, /*seed_cost=*/0.8};

// A live Iota e-node of class c, or nothing.
std::optional<ENodeId> iota_in(const EGraph& eg, ClassId c) {
  for (ENodeId n : eg.nodes_of(c))
    if (!eg.is_removed(n) && is_op(eg.node(n).op, OpKind::Iota)) return n;
  return std::nullopt;
}

// The Iota's expression at the flat index position z of `view` (what the op reads as index z).
Expr composed(const Attrs& iota, const View& view) {
  const Expr at = view.offset(prim::unflatten_index(Expr::z(), view.dims));
  return iota.iota_expr.substitute("z", at);
}

Rule iota_index_rule(OpKind kind) {
  const bool gather = kind == OpKind::Gather;
  return Rule{
      gather ? "cpu.gather-iota" : "cpu.scatter-iota", Pattern::op(kind).bind("op"), nullptr,
      [gather](const Match& m, EGraph& eg) {
        const ENode node = eg.node(m.root_node);
        const size_t ix = gather ? 0 : 1;  // the index child
        if (node.children.size() != (gather ? 2u : 3u)) return;
        const Attrs& a0 = eg.attrs(node.attr);
        if (a0.views.size() != node.children.size()) return;
        std::optional<ENodeId> iota = iota_in(eg, node.children[ix]);
        if (!iota) return;
        Attrs a = a0;
        const View& iv = a0.views[ix];
        a.iota_expr = composed(eg.attrs_of(*iota), iv);
        a.iota_len = iv.numel();
        std::vector<ClassId> children = node.children;
        children.erase(children.begin() + static_cast<std::ptrdiff_t>(ix));
        a.views.erase(a.views.begin() + static_cast<std::ptrdiff_t>(ix));
        const std::optional<ENodeId> copy =
            add_merged(eg, gather ? &kGatherIota : &kScatterIota, a, children, m.root);
        if (copy) eg.dominate(*copy, m.root_node);
        if (gather || !a.views[0].is_contiguous() || !(a.views[0].numel() == numel(a.shape)) ||
            eg.dtype(children[0]) != a.dtype)
          return;
        if (std::optional<ENodeId> n = add_merged(eg, &kScatterIotaInPlace, a, children, m.root)) {
          eg.dominate(*n, m.root_node);
          // Pruning applies dominance after it removed the illegal in-place e-nodes: where the
          // in-place form stays, the copy of dest is never the better choice.
          if (copy && *copy != *n) eg.dominate(*n, *copy);
        }
      }};
}

std::vector<Rule> iota_index_rules() {
  return {iota_index_rule(OpKind::Gather), iota_index_rule(OpKind::Scatter)};
}

// How an index expression in z (dims substituted) behaves along one row of L consecutive z
// starting at a multiple of L: constant, linear (a constant step within the row), or neither.
// z / d and z % d with L dividing d are constant and linear along such a row; sums and products
// of constant and linear parts keep their class (at most one linear factor).
enum class Along { Constant, Linear, Other };

Along along_row(const Expr& e, int64_t L) {
  using K = Expr::Kind;
  switch (e.kind()) {
    case K::Const: return Along::Constant;
    case K::Var: return e.var_name() == "z" ? Along::Linear : Along::Other;
    case K::Add: {
      Along out = Along::Constant;
      for (const Expr& c : e.children()) {
        const Along a = along_row(c, L);
        if (a == Along::Other) return Along::Other;
        if (a == Along::Linear) out = Along::Linear;
      }
      return out;
    }
    case K::Mul: {
      int linear = 0;
      for (const Expr& c : e.children()) {
        const Along a = along_row(c, L);
        if (a == Along::Other) return Along::Other;
        linear += a == Along::Linear;
      }
      return linear == 0 ? Along::Constant : linear == 1 ? Along::Linear : Along::Other;
    }
    case K::Div:
    case K::Mod: {
      const std::vector<Expr> c = e.children();
      const Along a = along_row(c[0], L);
      if (a == Along::Constant && along_row(c[1], L) == Along::Constant) return Along::Constant;
      if (!(c[0] == Expr::z()) || !c[1].is_const() || c[1].as_const() <= 0 ||
          c[1].as_const() % L != 0)
        return Along::Other;
      return e.kind() == K::Div ? Along::Constant : Along::Linear;
    }
    default: {
      for (const Expr& c : e.children())
        if (along_row(c, L) != Along::Constant) return Along::Other;
      return Along::Constant;
    }
  }
}

// A run of `len` elements: destination dst.., source src.. (element offsets).
struct Run {
  int64_t dst = 0, src = 0, len = 0;
};

// The evaluated indexes of a node: runs, or (when runs are short) a source offset per element.
struct IndexPlan {
  std::vector<Run> runs;
  std::vector<int64_t> offsets;  // gather: data offset of each output element (when used)
  bool use_runs = true;
  bool unique = true;  // scatter: no element written twice
};

// Builds runs from (dst, src) pairs added in order.
class RunBuilder {
 public:
  explicit RunBuilder(std::vector<Run>& out) : out_(out) {}
  void add(int64_t dst, int64_t src) { add_run(dst, src, 1); }
  /// add(dst + t, src + t) for t in [0, len), at once.
  void add_run(int64_t dst, int64_t src, int64_t len) {
    if (len <= 0) return;
    if (!out_.empty()) {
      Run& r = out_.back();
      if (r.dst + r.len == dst && r.src + r.len == src) {
        r.len += len;
        return;
      }
    }
    out_.push_back({dst, src, len});
  }

 private:
  std::vector<Run>& out_;
};

class IotaIndexKernel : public Kernel {
 public:
  IotaIndexKernel(const LlirNode& n, bool gather)
      : gather_(gather),
        es_(size_bytes(n.attrs.dtype)),
        expr_(n.attrs.iota_expr),
        len_(n.attrs.iota_len),
        row_(gather || n.attrs.views.size() < 2 ? View::contiguous(n.attrs.shape)
                                                : n.attrs.views[1]),
        views_(n.attrs.views) {
    if (views_.size() != (gather ? 1u : 2u))
      throw Error(std::string(n.op->name) + ": needs " + (gather ? "(data)" : "(dest, src)") +
                  " and their views, got " + std::to_string(views_.size()));
    for (const std::string& v : expr_.vars())
      if (v != "z") vars_.push_back(v);
    for (const std::string& v : len_.vars())
      if (std::find(vars_.begin(), vars_.end(), v) == vars_.end()) vars_.push_back(v);
    split_shift();
  }

 protected:
  // The index plan for the dims in `dyn` (rebuilt when a dim the expression, the count or a view
  // reads changes).
  const IndexPlan& plan(const KernelContext& k) {
    const bool views_changed = cache_.update(views_, k.dyn, k.dims_version);
    values_now_.clear();
    for (const std::string& v : vars_) {
      auto it = k.dyn.find(v);
      values_now_.push_back(it == k.dyn.end() ? INT64_MIN : it->second);
    }
    if (built_ && !views_changed && values_now_ == values_) return plan_;
    if (built_ && !views_changed && shifted(k.dyn)) return plan_;
    values_ = values_now_;
    built_ = true;
    build(k.dyn);
    return plan_;
  }

  const EvalView& view(size_t i) const { return cache_[i]; }

  const bool gather_;
  const int es_;

 private:
  // A Scatter index expression f(z) + g(dims) (a decode step's KV cache write: its rows at
  // c - s) keeps the part g apart: where only dims that g alone reads changed, the runs move by
  // the change of g, instead of evaluating the expression again (9 us a write per step, most of
  // the cache write's time).
  void split_shift() {
    if (gather_ || expr_.kind() != Expr::Kind::Add) return;
    Expr g(0);
    bool any_g = false;
    for (const Expr& c : expr_.children()) {
      const std::vector<std::string> vs = c.vars();
      if (c.has_var("z")) {
        if (vs.size() != 1) return;  // f must read z alone
      } else {
        g = any_g ? g + c : c;
        any_g = true;
      }
    }
    if (!any_g) return;
    shift_ = g;
    for (size_t i = 0; i < vars_.size(); ++i)
      shift_only_.push_back(shift_->has_var(vars_[i]) && !len_.has_var(vars_[i]));
  }

  // Moves the runs where only dims that the shift alone reads changed and every index stays in
  // range (as it was when built): the same runs as build() gives, in the same order. i32 wrapping
  // commutes with the move there (wrap(v + d) = wrap(v) + d while that lies in [0, numel)).
  bool shifted(const DynMap& dyn) {
    if (!shift_ || !complete_) return false;
    for (size_t i = 0; i < vars_.size(); ++i)
      if (values_now_[i] != values_[i] && !shift_only_[i]) return false;
    const int64_t sh = shift_->eval(dyn);
    const int64_t d = sh - shift_at_;
    if (lo_ + d < 0 || hi_ + d > cache_[0].numel) return false;
    for (Run& r : plan_.runs)
      r.dst += d;
    lo_ += d;
    hi_ += d;
    shift_at_ = sh;
    values_ = values_now_;
    return true;
  }

  void build(const DynMap& dyn) {
    plan_ = {};
    complete_ = false;
    std::map<std::string, Expr, std::less<>> subs;
    for (const auto& [name, v] : dyn)
      subs[name] = Expr(v);
    const int64_t n = len_.substitute(subs).eval(DynMap{}, 0);
    if (n == 0) return;  // (the expression may divide by a dim that is 0 now)
    const Expr at = expr_.substitute(subs);
    const int64_t L = row_.dims.empty() ? 1 : eval_shape({row_.dims.back()}, dyn)[0];
    RunBuilder runs(plan_.runs);
    auto add = make_adder(runs);
    const DynMap none;
    auto wrap = [](int64_t v) {  // as the Iota stores it: i32
      return static_cast<int64_t>(static_cast<int32_t>(static_cast<uint32_t>(v)));
    };
    const Along along = L > 1 && n % L == 0 ? along_row(at, L) : Along::Other;
    if (along == Along::Other) {
      for (int64_t i = 0; i < n; ++i)
        add(i, wrap(at.eval(none, i)));
    } else {
      // One or two evaluations a row: the row's first index and its step. A Scatter row of
      // consecutive indexes in range, read from a contiguous source, is one run (what the adds
      // would give, without a call an element: a prefill's KV cache write built its runs in
      // 0.2 ms a layer and matrix, 13 ms of SmolLM2's first prefill at a new length).
      const bool whole_rows = !gather_ && cache_[1].identity();
      const int64_t dest_n = cache_[0].numel;
      for (int64_t r = 0; r < n; r += L) {
        const int64_t first = at.eval(none, r);
        const int64_t step = along == Along::Linear ? at.eval(none, r + 1) - first : 0;
        if (whole_rows && step == 1 && first >= 0 && first + L <= dest_n &&
            first + L - 1 <= INT32_MAX) {
          for (int64_t t = 0; t < L; ++t)
            mark_written(first + t);
          runs.add_run(first, r, L);
          continue;
        }
        for (int64_t t = 0; t < L; ++t)
          add(r + t, wrap(first + step * t));
      }
    }
    if (shift_) {  // for shifted(): whether every index was in range, and their extent
      complete_ = !skipped_;
      lo_ = INT64_MAX;
      hi_ = INT64_MIN;
      for (const Run& r : plan_.runs) {
        lo_ = std::min(lo_, r.dst);
        hi_ = std::max(hi_, r.dst + r.len);
      }
      shift_at_ = shift_->eval(dyn);
    }
    // Runs of 4 elements or more on average copy faster than element by element.
    plan_.use_runs =
        !gather_ || plan_.runs.size() * 4 <= static_cast<size_t>(std::max<int64_t>(n, 1));
    if (plan_.use_runs)
      plan_.offsets.clear();
    else
      plan_.runs.clear();
  }

  // The function that records index j for position i: a Gather checks j against the data and
  // keeps its offset; a Scatter skips j out of range and notes duplicates.
  std::function<void(int64_t, int64_t)> make_adder(RunBuilder& runs) {
    if (gather_) {
      const EvalView& dv = cache_[0];
      return [this, &runs, &dv](int64_t i, int64_t j) {
        if (j < 0 || j >= dv.numel)
          throw Error("Gather: index " + std::to_string(j) + " at position " + std::to_string(i) +
                      " is out of range for data of " + std::to_string(dv.numel) + " elements");
        const int64_t off = dv.identity() ? j : dv.idx.offset_of_flat(j);
        plan_.offsets.push_back(off);
        runs.add(i, off);
      };
    }
    const EvalView& dest = cache_[0];
    const EvalView& sv = cache_[1];
    seen_.assign(static_cast<size_t>(dest.numel), false);
    skipped_ = false;
    return [this, &runs, &dest, &sv](int64_t i, int64_t j) {
      if (j < 0 || j >= dest.numel) {
        skipped_ = true;
        return;
      }
      mark_written(j);
      runs.add(j, sv.identity() ? i : sv.idx.offset_of_flat(i));
    };
  }

  // Scatter: dest element j (in range) is written; a second write makes the plan not unique.
  void mark_written(int64_t j) {
    if (seen_[static_cast<size_t>(j)]) plan_.unique = false;
    seen_[static_cast<size_t>(j)] = true;
  }

  Expr expr_, len_;
  View row_;  // the index positions' view (its last dim is a row)
  std::vector<View> views_;
  std::vector<std::string> vars_;
  ViewCache cache_;
  std::vector<int64_t> values_, values_now_;
  bool built_ = false;
  // Scatter: the index expression's part without z (split_shift), which of vars_ only it reads,
  // its value when the runs were last placed, and whether they were complete (no index out of
  // range) and the elements [lo_, hi_) they cover.
  std::optional<Expr> shift_;
  std::vector<bool> shift_only_;
  int64_t shift_at_ = 0, lo_ = 0, hi_ = 0;
  bool complete_ = false, skipped_ = false;
  IndexPlan plan_;
  std::vector<bool> seen_;  // scatter: elements written while building
};

// Copies the runs [b, e) of `runs` from src to dst.
void copy_runs(const std::vector<Run>& runs, int64_t b, int64_t e, const uint8_t* src, uint8_t* dst,
               int es) {
  for (int64_t r = b; r < e; ++r) {
    const Run& run = runs[static_cast<size_t>(r)];
    std::memcpy(dst + run.dst * es, src + run.src * es, static_cast<size_t>(run.len * es));
  }
}

class GatherIotaKernel final : public IotaIndexKernel {
 public:
  explicit GatherIotaKernel(const LlirNode& n) : IotaIndexKernel(n, true) {}

  void run(const KernelContext& k) override {
    const IndexPlan& p = plan(k);
    const int es = es_;
    if (p.use_runs) {
      const auto nr = static_cast<int64_t>(p.runs.size());
      parallel_blocks(nr, 256, k.threads, nr * 16,
                      [&](int64_t b, int64_t e) { copy_runs(p.runs, b, e, k.in[0], k.out, es); });
      return;
    }
    const auto n = static_cast<int64_t>(p.offsets.size());
    auto gather = [&](auto tag) {
      using S = decltype(tag);
      const S* data = reinterpret_cast<const S*>(k.in[0]);
      S* out = reinterpret_cast<S*>(k.out);
      parallel_blocks(n, 4096, k.threads, n, [&](int64_t b, int64_t e) {
        for (int64_t i = b; i < e; ++i)
          out[i] = data[p.offsets[static_cast<size_t>(i)]];
      });
    };
    dispatch_size(es, gather);
  }
};

// Fills `count` elements of dst with copies of the `es`-byte element at src.
void fill(uint8_t* dst, int64_t count, const uint8_t* src, int es, int threads) {
  bool zero = true;
  for (int b = 0; b < es; ++b)
    zero = zero && src[b] == 0;
  parallel_blocks(count, int64_t{1} << 18, threads, count, [&](int64_t b, int64_t e) {
    if (zero) {
      std::memset(dst + b * es, 0, static_cast<size_t>((e - b) * es));
      return;
    }
    for (int64_t i = b; i < e; ++i)
      std::memcpy(dst + i * es, src, static_cast<size_t>(es));
  });
}

class ScatterIotaKernel final : public IotaIndexKernel {
 public:
  explicit ScatterIotaKernel(const LlirNode& n) : IotaIndexKernel(n, false) {
    for (const Expr& st : n.attrs.views[0].strides)
      broadcast_ = broadcast_ && st == Expr(0);
  }

  void run(const KernelContext& k) override {
    const IndexPlan& p = plan(k);
    const EvalView& dest = view(0);
    if (k.out != k.in[0] || !dest.identity()) {
      if (broadcast_ && dest.numel > 0)  // a constant's value everywhere
        fill(k.out, dest.numel, k.in[0] + dest.idx.offset_of_flat(0) * es_, es_, k.threads);
      else
        copy_view(k.in[0], dest, k.out, es_, k.threads);
    }
    const auto nr = static_cast<int64_t>(p.runs.size());
    if (p.unique) {
      parallel_blocks(nr, 256, k.threads, nr * 16,
                      [&](int64_t b, int64_t e) { copy_runs(p.runs, b, e, k.in[1], k.out, es_); });
    } else {
      copy_runs(p.runs, 0, nr, k.in[1], k.out, es_);
    }
  }

 private:
  bool broadcast_ = true;  // dest read with every stride 0
};

std::unique_ptr<Kernel> make_gather_iota(const LlirNode& n) {
  return std::make_unique<GatherIotaKernel>(n);
}
std::unique_ptr<Kernel> make_scatter_iota(const LlirNode& n) {
  return std::make_unique<ScatterIotaKernel>(n);
}

}  // namespace

void register_iota_index_ops(std::vector<const CpuOp*>& ops) {
  static const CpuOp gather{&kGatherIota, "cpu.library", iota_index_rules, make_gather_iota};
  static const CpuOp scatter{&kScatterIota, "cpu.library", nullptr, make_scatter_iota};
  static const CpuOp scatter_inplace{&kScatterIotaInPlace, "cpu.library", nullptr,
                                     make_scatter_iota};
  ops.push_back(&gather);
  ops.push_back(&scatter);
  ops.push_back(&scatter_inplace);
}

}  // namespace luminal::cpu
