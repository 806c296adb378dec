// The random graph generator (random_graph.hpp): setup, inputs, operands and outputs (its ops are
// in random_graph_ops.cpp).
#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "support/random_graph.hpp"

#include "luminal/core/blocks.hpp"
#include "support/random_graph_builder.hpp"

namespace luminal::testing {

HostBuffer make_input_data(const FuzzInput& in, const DynMap& dyn, uint64_t seed) {
  int64_t n = numel(in.shape).eval(dyn);
  if (is_block(in.dtype)) {  // valid random blocks (blocks::fill_valid_blocks); lo/hi unused
    HostBuffer b{in.dtype, std::vector<uint8_t>(static_cast<size_t>(storage_bytes(in.dtype, n)))};
    blocks::fill_valid_blocks(in.dtype, b.bytes, seed);
    return b;
  }
  std::mt19937_64 rng(seed);
  std::vector<double> v(static_cast<size_t>(n));
  if (in.fill) {
    v = in.fill(dyn, n, rng);
  } else if (in.index_hi) {
    std::uniform_int_distribution<int64_t> d(0, in.index_hi->eval(dyn));
    for (double& x : v)
      x = static_cast<double>(d(rng));
  } else if (is_float(in.dtype)) {
    std::uniform_real_distribution<double> d(in.lo, in.hi);
    for (double& x : v)
      x = d(rng);
  } else {
    std::uniform_int_distribution<int64_t> d(static_cast<int64_t>(in.lo),
                                             static_cast<int64_t>(in.hi));
    for (double& x : v)
      x = static_cast<double>(d(rng));
  }
  if (is_float(in.dtype)) return to_host_buffer(v.data(), v.size(), in.dtype, in.label);
  std::vector<int64_t> iv;
  iv.reserve(v.size());
  for (double x : v)
    iv.push_back(static_cast<int64_t>(std::llround(x)));
  return to_host_buffer(iv.data(), iv.size(), in.dtype, in.label);
}

std::vector<double> distinct_indexes(int64_t n, int64_t hi, std::mt19937_64& rng) {
  std::vector<int64_t> all(static_cast<size_t>(hi + 1));
  std::iota(all.begin(), all.end(), 0);
  std::shuffle(all.begin(), all.end(), rng);
  return std::vector<double>(all.begin(), all.begin() + n);
}

FuzzGraph random_graph(uint64_t seed) { return detail::RandomGraphBuilder(seed).build(); }

FuzzGraph random_expert_graph(uint64_t seed) {
  return detail::RandomGraphBuilder(seed, true).build();
}

namespace detail {

FuzzGraph RandomGraphBuilder::build() {
  const int r = uniform(0, 99);
  dt_ = r < 58   ? DType::F32
        : r < 63 ? DType::F64
        : r < 72 ? DType::F16
        : r < 80 ? DType::BF16
                 : DType::I32;
  if (dt_ == DType::I32 && chance(0.25)) dt_ = DType::I64;
  if (expert_ && is_int()) dt_ = DType::F32;
  // Large graphs (tens of thousands of elements) cross the kernels' block and threading
  // thresholds; the others are tiny.
  large_ = chance(0.15);
  if (chance(0.7)) {
    dyn_ = true;
    std::vector<int64_t> vals{1, 2, 3, 4, 5, 6, 7, 8};
    if (large_) vals = {1, 3, 64, 77, 129, 200, 256};
    fg_.graph.declare_dim("s", 1, vals.back());
    std::shuffle(vals.begin(), vals.end(), rng_);
    int count = uniform(2, 3);
    vals.resize(static_cast<size_t>(count));
    if (chance(0.4)) vals[0] = 1;
    std::sort(vals.begin(), vals.end());
    vals.erase(std::unique(vals.begin(), vals.end()), vals.end());
    fg_.dyn_points.clear();
    for (int64_t v : vals)
      fg_.dyn_points.push_back(DynMap{{"s", v}});
  }
  // Base shape: rank 2 or 3, small static dims, the dynamic dim on one axis.
  static const int64_t kSmall[] = {2, 3, 4, 5, 6, 8};
  static const int64_t kLarge[] = {3, 16, 33, 64, 100, 130};
  const int rank = chance(0.65) ? 2 : 3;
  Shape base;
  for (int tries = 0; tries < 100; ++tries) {
    base.clear();
    for (int i = 0; i < rank; ++i)
      base.push_back(large_ ? kLarge[uniform(0, 5)] : kSmall[uniform(0, 5)]);
    if (dyn_) base[static_cast<size_t>(uniform(0, rank - 1))] = Expr::var("s");
    const int64_t n = max_numel(base);
    if (!large_ || (n >= 8000 && n <= 50000)) break;
  }
  pool_.push_back(new_input(base));
  if (chance(0.5)) pool_.push_back(new_input(base));

  const bool low_precision = dt_ == DType::F16 || dt_ == DType::BF16;
  const int n_ops = low_precision ? uniform(3, 6) : uniform(4, 12);
  const int expert_at = expert_ ? uniform(0, n_ops - 1) : -1;
  for (int i = 0; i < n_ops; ++i) {
    Val a = pick_operand();
    Val v = normalized(i == expert_at ? expert(a) : random_op(a));
    pool_.push_back(v);
    produced_.push_back(v);
  }
  choose_outputs();
  std::string dyn_text;
  for (const DynMap& d : fg_.dyn_points)
    for (auto& [k, v] : d)
      dyn_text += (dyn_text.empty() ? "" : ",") + k + "=" + std::to_string(v);
  fg_.name = std::string(expert_ ? "expert" : "random") + " seed " + std::to_string(fg_.seed) +
             " (" + std::string(name(dt_)) + (large_ ? ", large" : "") +
             (dyn_text.empty() ? ", static" : ", " + dyn_text) + ")";
  return std::move(fg_);
}

int64_t RandomGraphBuilder::dmax(const Expr& e) const {
  int64_t m = INT64_MIN;
  for (const DynMap& d : fg_.dyn_points)
    m = std::max(m, e.eval(d));
  return m;
}

int64_t RandomGraphBuilder::dmin(const Expr& e) const {
  int64_t m = INT64_MAX;
  for (const DynMap& d : fg_.dyn_points)
    m = std::min(m, e.eval(d));
  return m;
}

RandomGraphBuilder::Val RandomGraphBuilder::new_input(const Shape& shape, bool positive) {
  FuzzInput in;
  in.label = next_label("in");
  in.dtype = dt_;
  in.shape = shape;
  if (is_int()) {
    in.lo = positive ? 1 : -4;
    in.hi = 4;
  } else {
    in.lo = positive ? 0.5 : -1;
    in.hi = positive ? 2 : 1;
  }
  Tensor t = fg_.graph.tensor(in.label, dims_of(shape), dt_);
  fg_.inputs.push_back(in);
  log(in.label + " = input " + std::string(name(dt_)) + str(shape));
  return Val{t, in.lo, in.hi, 0};
}

RandomGraphBuilder::Val RandomGraphBuilder::new_full_input(const Shape& shape) {
  const int r = uniform(0, 99);
  if (!shape.empty() && r < 20) {
    // Tiled (stride z % d), every other element (stride 2z) or elements from an offset (a view
    // with a base: from k, or every other one from 1) along a static axis.
    const bool tiled = r < 10;
    const int64_t from = r < 14 ? 0 : r < 17 ? uniform(1, 3) : 1;
    const int64_t step = r < 14 || r >= 17 ? 2 : 1;
    std::vector<int> axes;
    for (size_t i = 0; i < shape.size(); ++i)
      if (shape[i].is_const() && (!tiled || shape[i].as_const() % 2 == 0))
        axes.push_back(static_cast<int>(i));
    if (!axes.empty()) {
      const int axis = axes[static_cast<size_t>(uniform(0, (int)axes.size() - 1))];
      const int64_t d = shape[static_cast<size_t>(axis)].as_const();
      Shape stored = shape;
      stored[static_cast<size_t>(axis)] = tiled ? d / 2 : step * d + from;
      Val v = new_input(stored);
      if (tiled) {
        std::vector<Dim> reps(shape.size(), Dim(1));
        reps[static_cast<size_t>(axis)] = 2;
        v.t = v.t.repeat(reps);
      } else {
        v.t = v.t.slice(axis, from, std::nullopt, step);
      }
      log(std::string("  (read ") +
          (tiled ? "tiled x2"
                 : "from " + std::to_string(from) + " with step " + std::to_string(step)) +
          " along axis " + std::to_string(axis) + ")");
      if (v.shape() == shape) return v;
      log("  (shape " + str(v.shape()) + " differs: a plain input instead)");
    }
  }
  if (shape.size() < 2 || r < 70) return new_input(shape);
  std::vector<int> order(shape.size());
  std::iota(order.begin(), order.end(), 0);
  std::shuffle(order.begin(), order.end(), rng_);
  Shape stored(shape.size());
  for (size_t i = 0; i < shape.size(); ++i)
    stored[static_cast<size_t>(order[i])] = shape[i];
  Val v = new_input(stored);
  // permute(order) reads axis i from stored axis order[i], whose size is shape[i].
  v.t = v.t.permute(order);
  log("  (read permuted to " + str(v.shape()) + ")");
  return v;
}

Tensor RandomGraphBuilder::index_input(const Shape& shape, const Expr& hi) {
  FuzzInput in;
  in.label = next_label("idx");
  in.dtype = chance(0.8) ? DType::I32 : DType::I64;
  in.shape = shape;
  in.index_hi = hi;
  Tensor t = fg_.graph.tensor(in.label, dims_of(shape), in.dtype);
  fg_.inputs.push_back(in);
  log(in.label + " = index input " + std::string(name(in.dtype)) + str(shape) + " in [0, " +
      hi.to_string() + "]");
  return t;
}

// ---------------------------------------------------------------- operands
RandomGraphBuilder::Val RandomGraphBuilder::pick_operand() {
  if (!produced_.empty() && chance(0.7)) return produced_.back();
  return pool_[static_cast<size_t>(uniform(0, static_cast<int>(pool_.size()) - 1))];
}

RandomGraphBuilder::Val RandomGraphBuilder::partner(const Val& a, bool need_exact,
                                                    bool may_be_bigger) {
  const Shape& s = a.shape();
  std::vector<const Val*> same;
  for (const Val& v : pool_)
    if (v.shape() == s && v.t.id() != a.t.id() && (!need_exact || v.exact())) same.push_back(&v);
  const int r = uniform(0, 99);
  if (!same.empty() && r < 30) return *same[static_cast<size_t>(uniform(0, (int)same.size() - 1))];
  if (r < 40) {
    // An earlier value of another shape that broadcasts with a's (a keepdim reduction
    // against its source, or a against a bigger value).
    std::vector<const Val*> bc;
    for (const Val& v : pool_)
      if (v.shape() != s && (!need_exact || v.exact()) &&
          (broadcasts(v.shape(), s) || (may_be_bigger && broadcasts(s, v.shape()))) &&
          max_numel(v.shape()) <= (large_ ? 100000 : 1000))
        bc.push_back(&v);
    if (!bc.empty()) {
      const Val& v = *bc[static_cast<size_t>(uniform(0, (int)bc.size() - 1))];
      log("  (an earlier value " + str(v.shape()) + ")");
      return v;
    }
  }
  if (r < 60 || s.empty()) return new_full_input(s);
  if (r < 75) return new_input(Shape{s.back()});  // row vector
  if (r < 87) {                                   // column vector
    Shape col(s.size(), Expr(1));
    col[0] = s[0];
    return new_input(col);
  }
  double c = is_int() ? static_cast<double>(uniform(-3, 3)) : std::round(real(-1, 1) * 8) / 8;
  log("  (scalar " + std::to_string(c) + ")");
  return Val{fg_.graph.constant(c, dt_), c, c, 0};
}

bool RandomGraphBuilder::broadcasts(const Shape& from, const Shape& to) {
  if (from.size() > to.size()) return false;
  const size_t off = to.size() - from.size();
  for (size_t i = 0; i < from.size(); ++i)
    if (from[i] != to[off + i] && from[i] != Expr(1)) return false;
  return true;
}

RandomGraphBuilder::Val RandomGraphBuilder::positive(const Val& v) {
  if (v.lo >= 0.5 && v.hi <= 2) return v;
  double sl = sigmoid(v.lo), sh = sigmoid(v.hi);
  Tensor t = v.t.sigmoid() * 1.5 + 0.5;
  double err = 1.5 * (0.25 * v.err + kRound * 2) + kRound * 2;
  return Val{t, 0.5 + 1.5 * sl, 0.5 + 1.5 * sh, err};
}

RandomGraphBuilder::Val RandomGraphBuilder::bounded(const Val& v, double m) {
  if (v.mag() <= m) return v;
  return Val{v.t.tanh(), std::tanh(v.lo), std::tanh(v.hi), v.err + kRound * 2};
}

RandomGraphBuilder::Val RandomGraphBuilder::normalized(const Val& v) {
  if (is_int()) {
    if (v.mag() <= 1000) return v;
    Val r{v.t % 7.0, v.lo < 0 ? -6.0 : 0.0, 6, 0};
    log("  % 7");
    return r;
  }
  if (v.mag() <= 4) return v;
  double scale = 1.0 / std::ceil(v.mag() / 2);
  log("  * " + std::to_string(scale));
  return Val{v.t * scale, v.lo * scale, v.hi * scale, v.err * scale + kRound * 2};
}

// ---------------------------------------------------------------- outputs
void RandomGraphBuilder::choose_outputs() {
  std::vector<Val> outs{produced_.back()};
  for (int tries = 0; tries < 4 && outs.size() < 3; ++tries) {
    if (!chance(0.4)) continue;
    const Val& v = produced_[static_cast<size_t>(uniform(0, (int)produced_.size() - 1))];
    bool dup = false;
    for (const Val& o : outs)
      dup = dup || (o.t.id() == v.t.id() && o.t.view().strides == v.t.view().strides &&
                    o.t.view().base == v.t.view().base && o.t.shape() == v.t.shape());
    if (!dup) outs.push_back(v);
  }
  int k = 0;
  for (const Val& v : outs) {
    std::string label = "out" + std::to_string(k++);
    v.t.output(label);
    fg_.outputs.push_back(FuzzOutput{label, v.t.dtype(), 1.5 * v.err + 1, 4});
  }
  if (chance(0.05)) {
    // The same value under a second label.
    std::string label = "out" + std::to_string(k++);
    outs[0].t.output(label);
    fg_.outputs.push_back(FuzzOutput{label, outs[0].t.dtype(), 1.5 * outs[0].err + 1, 4});
  }
  for (const Tensor& t : extra_outputs_) {
    std::string label = "out" + std::to_string(k++);
    t.output(label);
    fg_.outputs.push_back(FuzzOutput{label, t.dtype(), 0, 0});
  }
  if (!bools_.empty() && chance(0.4)) {
    std::string label = "out" + std::to_string(k++);
    bools_.back().output(label);
    fg_.outputs.push_back(FuzzOutput{label, DType::Bool, 0, 0});
  }
  // Integer graphs: sometimes also read the last value as floats.
  if (is_int() && chance(0.3)) {
    std::string label = "out" + std::to_string(k++);
    produced_.back().t.cast(DType::F32).output(label);
    fg_.outputs.push_back(FuzzOutput{label, DType::F32, 0, 1});
  }
}

}  // namespace detail
}  // namespace luminal::testing
