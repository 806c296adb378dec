// The ops of the random graph generator (random_graph.hpp): each draws one op on a value and
// returns the result with its value bounds and error bound.
#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "luminal/nn/moe.hpp"
#include "support/random_graph_builder.hpp"

namespace luminal::testing::detail {

// ---------------------------------------------------------------- ops
RandomGraphBuilder::Val RandomGraphBuilder::random_op(const Val& a) {
  for (;;) {
    const int r = uniform(0, 99);
    if (r < 20) return unary(a);
    if (r < 40) return binary(a);
    if (r < 46) return where_op(a);
    if (r < 55) return reduce(a);
    if (r < 65) return matmul(a);
    if (r < 72) return gather(a);
    if (r < 76) return scatter(a);
    if (r < 87) return movement(a);
    if (r < 95) return misc(a);
    return cast_op(a);
  }
}

RandomGraphBuilder::Val RandomGraphBuilder::unary(const Val& a) {
  if (is_int()) {
    switch (uniform(0, 3)) {
      case 0: log("neg"); return Val{a.t.neg(), -a.hi, -a.lo, 0};
      case 1:
        log("abs");
        return Val{a.t.abs(), a.lo >= 0 ? a.lo : a.hi <= 0 ? -a.hi : 0, a.mag(), 0};
      case 2: log("relu"); return Val{a.t.relu(), std::max(a.lo, 0.0), std::max(a.hi, 0.0), 0};
      default: log("square"); return Val{a.t.square(), 0, a.mag() * a.mag(), 0};
    }
  }
  switch (uniform(0, 13)) {
    case 0: {
      Val b = bounded(a, 2);
      log("exp");
      double hi = std::exp(b.hi);
      return Val{b.t.exp(), std::exp(b.lo), hi, hi * b.err + kRound * hi};
    }
    case 1: {
      Val b = positive(a);
      log("log");
      double m = std::max(std::fabs(std::log(b.lo)), std::fabs(std::log(b.hi)));
      return Val{b.t.log(), std::log(b.lo), std::log(b.hi), b.err / b.lo + kRound * (m + 1)};
    }
    case 2: {
      Val b = bounded(a, 4);
      log("sin");
      return Val{b.t.sin(), -1, 1, b.err + kRound * 2};
    }
    case 3: {
      Val b = bounded(a, 4);
      log("cos");
      return Val{b.t.cos(), -1, 1, b.err + kRound * 3};
    }
    case 4: {
      Val b = positive(a);
      log("sqrt");
      return Val{b.t.sqrt(), std::sqrt(b.lo), std::sqrt(b.hi),
                 b.err * 0.5 / std::sqrt(b.lo) + kRound * std::sqrt(b.hi)};
    }
    case 5: {
      Val b = positive(a);
      log("reciprocal");
      return Val{b.t.reciprocal(), 1 / b.hi, 1 / b.lo, b.err / (b.lo * b.lo) + kRound * (1 / b.lo)};
    }
    case 6:
      log("sigmoid");
      return Val{a.t.sigmoid(), sigmoid(a.lo), sigmoid(a.hi), 0.25 * a.err + kRound * 2};
    case 7: log("relu"); return Val{a.t.relu(), std::max(a.lo, 0.0), std::max(a.hi, 0.0), a.err};
    case 8:
      log("tanh");
      return Val{a.t.tanh(), std::tanh(a.lo), std::tanh(a.hi), a.err + kRound * 3};
    case 9: log("neg"); return Val{a.t.neg(), -a.hi, -a.lo, a.err};
    case 10:
      log("abs");
      return Val{a.t.abs(), a.lo >= 0 ? a.lo : a.hi <= 0 ? -a.hi : 0, a.mag(), a.err};
    case 11: {
      log("silu");
      double m = a.mag();
      return Val{a.t.silu(), -0.28, m, 1.1 * a.err + kRound * (m + 1)};
    }
    case 12: {
      log("square");
      double m = a.mag();
      return Val{a.t.square(), 0, m * m, 2 * m * a.err + kRound * m * m};
    }
    default: {
      Val b = bounded(a, 3);
      log("rsqrt");
      Val p = positive(b);
      return Val{p.t.rsqrt(), 1 / std::sqrt(p.hi), 1 / std::sqrt(p.lo),
                 p.err * 0.5 / std::pow(p.lo, 1.5) + kRound * 2 / std::sqrt(p.lo)};
    }
  }
}

RandomGraphBuilder::Val RandomGraphBuilder::binary(const Val& a) {
  Val b = partner(a);
  const bool swap = chance(0.3);
  const Tensor& x = swap ? b.t : a.t;
  const Tensor& y = swap ? a.t : b.t;
  const Val& vx = swap ? b : a;
  const Val& vy = swap ? a : b;
  const int n_ops = is_int() ? 5 : 6;
  switch (uniform(0, n_ops - 1)) {
    case 0: {
      log("add " + str(b.shape()));
      double lo = vx.lo + vy.lo, hi = vx.hi + vy.hi;
      return Val{x + y, lo, hi, vx.err + vy.err + kRound * std::max(std::fabs(lo), std::fabs(hi))};
    }
    case 1: {
      log("sub " + str(b.shape()));
      double lo = vx.lo - vy.hi, hi = vx.hi - vy.lo;
      return Val{x - y, lo, hi, vx.err + vy.err + kRound * std::max(std::fabs(lo), std::fabs(hi))};
    }
    case 2: {
      log("mul " + str(b.shape()));
      double c[] = {vx.lo * vy.lo, vx.lo * vy.hi, vx.hi * vy.lo, vx.hi * vy.hi};
      double lo = *std::min_element(c, c + 4), hi = *std::max_element(c, c + 4);
      double err =
          vy.mag() * vx.err + vx.mag() * vy.err + kRound * std::max(std::fabs(lo), std::fabs(hi));
      return Val{x * y, lo, hi, is_int() ? 0 : err};
    }
    case 3: {
      log("maximum " + str(b.shape()));
      return Val{x.maximum(y), std::max(vx.lo, vy.lo), std::max(vx.hi, vy.hi),
                 std::max(vx.err, vy.err)};
    }
    case 4: {
      log("minimum " + str(b.shape()));
      return Val{x.minimum(y), std::min(vx.lo, vy.lo), std::min(vx.hi, vy.hi),
                 std::max(vx.err, vy.err)};
    }
    default: {
      Val d = positive(b);
      log("div " + str(b.shape()));
      double c[] = {a.lo / d.lo, a.lo / d.hi, a.hi / d.lo, a.hi / d.hi};
      double lo = *std::min_element(c, c + 4), hi = *std::max_element(c, c + 4);
      double err = a.err / d.lo + a.mag() * d.err / (d.lo * d.lo) +
                   kRound * (std::max(std::fabs(lo), std::fabs(hi)) + 1 / d.lo);
      return Val{a.t / d.t, lo, hi, err};
    }
  }
}

Tensor RandomGraphBuilder::condition(const Val& a) {
  Val x = a.exact() && chance(0.5) ? a : partner(a, true, false);
  if (!x.exact()) x = new_input(a.shape());
  Val y = partner(x, true, false);
  if (!y.exact()) y = new_input(Shape{x.shape().empty() ? Expr(1) : x.shape().back()});
  Tensor c;
  const int n_cmp = is_int() ? 6 : 4;
  switch (uniform(0, n_cmp - 1)) {
    case 0: c = x.t.lt(y.t); break;
    case 1: c = x.t.le(y.t); break;
    case 2: c = x.t.gt(y.t); break;
    case 3: c = x.t.ge(y.t); break;
    case 4: c = x.t.eq(y.t); break;
    default: c = x.t.ne(y.t); break;
  }
  log("  condition: compare " + str(x.shape()) + " with " + str(y.shape()));
  if (chance(0.25)) {
    Val z = partner(x, true, false);
    if (z.exact()) {
      Tensor c2 = x.t.lt(z.t);
      c = chance(0.5) ? c.logical_and(c2) : c.logical_or(c2);
      log("  condition: logical and/or with another compare");
    }
  }
  if (chance(0.15)) {
    c = c.logical_not();
    log("  condition: logical_not");
  }
  bools_.push_back(c);
  return c;
}

RandomGraphBuilder::Val RandomGraphBuilder::where_op(const Val& a) {
  Tensor c = condition(a);
  if (chance(0.3)) {
    double v = is_int() ? static_cast<double>(uniform(-3, 3)) : std::round(real(-1, 1) * 4) / 4;
    log("masked_fill " + std::to_string(v));
    return Val{a.t.masked_fill(c, v), std::min(a.lo, v), std::max(a.hi, v), a.err};
  }
  Val b = partner(a, false, false);
  log("where (other " + str(b.shape()) + ")");
  Tensor t = chance(0.5) ? c.where(a.t, b.t) : c.where(b.t, a.t);
  return Val{t, std::min(a.lo, b.lo), std::max(a.hi, b.hi), std::max(a.err, b.err)};
}

RandomGraphBuilder::Val RandomGraphBuilder::reduce(const Val& in) {
  Val a = in;
  if (chance(0.35)) {
    // A contraction: the reduction of a product (matmul-like with any views).
    Val b = partner(in);
    if (b.shape() != in.shape()) b = new_full_input(in.shape());
    double c[] = {in.lo * b.lo, in.lo * b.hi, in.hi * b.lo, in.hi * b.hi};
    double lo = *std::min_element(c, c + 4), hi = *std::max_element(c, c + 4);
    double err = is_int() ? 0
                          : b.mag() * in.err + in.mag() * b.err +
                                kRound * std::max(std::fabs(lo), std::fabs(hi));
    a = Val{in.t * b.t, lo, hi, err};
    log("mul (contraction)");
  }
  const int axis = uniform(0, a.rank() - 1);
  const bool keep = a.rank() == 1 || chance(0.35);
  const Expr k = a.shape()[static_cast<size_t>(axis)];
  const double kmax = static_cast<double>(dmax(k)), kmin = static_cast<double>(dmin(k));
  const int n_kinds = is_int() ? 3 : 4;
  switch (uniform(0, n_kinds - 1)) {
    case 0: {
      log("sum axis " + std::to_string(axis) + (keep ? " keepdim" : ""));
      double lo = std::min(kmin * a.lo, kmax * a.lo), hi = std::max(kmin * a.hi, kmax * a.hi);
      return Val{a.t.sum(axis, keep), lo, hi,
                 is_int() ? 0 : kmax * a.err + kRound * std::sqrt(kmax) * a.mag()};
    }
    case 1:
      log("max axis " + std::to_string(axis) + (keep ? " keepdim" : ""));
      return Val{a.t.max(axis, keep), a.lo, a.hi, a.err};
    case 2:
      log("min axis " + std::to_string(axis) + (keep ? " keepdim" : ""));
      return Val{a.t.min(axis, keep), a.lo, a.hi, a.err};
    default:
      log("mean axis " + std::to_string(axis) + (keep ? " keepdim" : ""));
      return Val{a.t.mean(axis, keep), a.lo, a.hi,
                 a.err + kRound * (1 + std::sqrt(kmax)) * a.mag()};
  }
}

RandomGraphBuilder::Val RandomGraphBuilder::matmul_of(const Val& x, const Val& y, const Tensor& t,
                                                      const Expr& k, const std::string& what) {
  const double kk = static_cast<double>(dmax(k));
  const double m = kk * x.mag() * y.mag();
  log("matmul " + what + " -> " + str(t.shape()) + " (k = " + k.to_string() + ")");
  if (is_int()) return Val{t, -m, m, 0};
  double err =
      kk * (y.mag() * x.err + x.mag() * y.err) + kRound * std::sqrt(kk) * x.mag() * y.mag();
  return Val{t, -m, m, err};
}

RandomGraphBuilder::Val RandomGraphBuilder::matmul(const Val& a) {
  const Shape& s = a.shape();
  // The reference materialises the [..., m, n, k] products: keep them under ~1e6.
  static const int64_t kN[] = {1, 2, 3, 4, 5, 7, 16, 33};
  int64_t nn = kN[uniform(0, large_ ? 7 : 5)];
  while (nn > 1 && max_numel(s) * nn > 1000000)
    nn /= 2;
  const Expr n = nn;
  if (a.rank() == 1 || a.rank() > 3) {
    Val w = new_full_input(Shape{s.back(), n});
    return matmul_of(a, w, a.t.matmul(w.t), s.back(), "by weight");
  }
  const Expr m = s[s.size() - 2], k = s.back();
  const int mode = uniform(0, 3);
  if (mode == 0 || (a.rank() == 3 && mode == 3)) {
    // a @ W, W [k, n] (broadcast over the batch) or [B, k, n].
    Shape ws{k, n};
    if (a.rank() == 3 && chance(0.5)) ws.insert(ws.begin(), s[0]);
    Val w = new_full_input(ws);
    return matmul_of(a, w, a.t.matmul(w.t), k, "a @ W" + str(ws));
  }
  if (mode == 1 && max_numel(s) * dmax(m) <= 1000000) {
    // a @ b^T with b like a (attention scores).
    Val b = partner(a);
    if (b.shape() != s) b = new_full_input(s);
    return matmul_of(a, b, a.t.matmul(b.t.transpose(-1, -2)), k, "a @ b^T");
  }
  if (mode == 1 || mode == 2) {
    // a^T @ b: contraction over the rows (the dynamic dim when it is there).
    Shape bs = s;
    bs.back() = n;
    Val b = new_full_input(bs);
    return matmul_of(a, b, a.t.transpose(-1, -2).matmul(b.t), m, "a^T @ b" + str(bs));
  }
  // 1-D right operand.
  Val v = new_input(Shape{k});
  return matmul_of(a, v, a.t.matmul(v.t), k, "a @ vector");
}

RandomGraphBuilder::Val RandomGraphBuilder::gather(const Val& a) {
  const Shape& s = a.shape();
  const int mode = uniform(0, 2);
  if (mode == 0) {
    const int axis = uniform(0, a.rank() - 1);
    Expr len = dyn_ && chance(0.4) ? Expr::var("s") : Expr(uniform(1, 6));
    Tensor idx = index_input(Shape{len}, s[static_cast<size_t>(axis)] - 1);
    log("index_select axis " + std::to_string(axis));
    return Val{a.t.index_select(axis, idx), a.lo, a.hi, a.err};
  }
  if (mode == 1) {
    // embedding from a fresh table, ids shaped like a without its last axis.
    Expr vocab = uniform(3, 10);
    Val table = new_input(Shape{vocab, s.back()});
    Shape ids_shape(s.begin(), s.end() - 1);
    if (ids_shape.empty()) ids_shape.push_back(dyn_ ? Expr::var("s") : Expr(uniform(1, 5)));
    Tensor ids = index_input(ids_shape, vocab - 1);
    log("embedding");
    return Val{table.t.embedding(ids), table.lo, table.hi, 0};
  }
  const int axis = uniform(0, a.rank() - 1);
  Tensor idx = index_input(s, s[static_cast<size_t>(axis)] - 1);
  log("gather_elements axis " + std::to_string(axis));
  return Val{a.t.gather_elements(axis, idx), a.lo, a.hi, a.err};
}

RandomGraphBuilder::Val RandomGraphBuilder::expert(const Val& a) {
  // x [R, D]: `a` with a static axis last (a fresh input when it has none), other axes as rows.
  Val x = a;
  int axis = -1;
  for (int i = a.rank() - 1; i >= 0 && axis < 0; --i)
    if (a.shape()[static_cast<size_t>(i)].is_const()) axis = i;
  if (axis < 0) {
    x = new_input(Shape{dyn_ ? Expr::var("s") : Expr(uniform(1, 6)), Expr(uniform(2, 8))});
  } else if (axis != a.rank() - 1) {
    x.t = a.t.transpose(axis, -1);
    log("transpose " + std::to_string(axis) + " -1");
  }
  const int64_t D = x.shape().back().as_const();
  Expr R = 1;
  for (int i = 0; i + 1 < x.rank(); ++i)
    R = R * x.shape()[static_cast<size_t>(i)];
  x.t = x.t.reshape({R, Expr(D)});
  const int E = uniform(2, 6), k = uniform(1, 3);
  static const int64_t kN[] = {1, 2, 3, 5, 8, 16, 33};
  int64_t n = kN[uniform(0, 6)];
  while (n > 1 && dmax(R) * k * n * D > 1000000)  // the reference's [R, k, N, D] products
    n /= 2;
  Val w = new_input(Shape{Expr(E), Expr(n), Expr(D)});
  Tensor ids = index_input(Shape{R, Expr(k)}, Expr(E - 1));
  return matmul_of(x, w, nn::expert_linear(x.t, w.t, ids), D,
                   "expert_linear E " + std::to_string(E) + " k " + std::to_string(k) + " N " +
                       std::to_string(n));
}

Tensor RandomGraphBuilder::distinct_rows_input(const Expr& len, const Expr& rows) {
  FuzzInput in;
  in.label = next_label("idx");
  in.dtype = DType::I32;
  in.shape = Shape{len};
  in.fill = [rows](const DynMap& dyn, int64_t n, std::mt19937_64& rng) {
    return distinct_indexes(n, rows.eval(dyn) - 1, rng);
  };
  Tensor idx = fg_.graph.tensor(in.label, {Dim(len)}, DType::I32);
  fg_.inputs.push_back(in);
  log(in.label + " = distinct row indexes [" + len.to_string() + "] in [0, " + rows.to_string() +
      ")");
  return idx;
}

RandomGraphBuilder::Val RandomGraphBuilder::scatter(const Val& a) {
  const Shape& s = a.shape();
  const Expr rows = s[0];
  const int64_t nmin = dmin(rows);
  const Expr few = uniform(1, static_cast<int>(std::min<int64_t>(nmin, 3)));
  Val dest = a, src;
  Expr len;
  if (chance(0.35)) {
    // State carried across runs (a KV-cache update): rows of a written into a fresh input
    // whose new value is an output carried back into it, so the scatter may run in place.
    dest = new_input(s);
    len = rows.is_const() && nmin >= 2 && chance(0.5) ? few : rows;
    src = a;
    if (len != rows) src.t = a.t.slice(0, 0, len);
  } else {
    // Rows of a replaced by rows of a fresh source.
    len = rows.is_const() || chance(0.5) ? few : rows;
    Shape src_shape = s;
    src_shape[0] = len;
    src = new_input(src_shape);
  }
  Tensor index = distinct_rows_input(len, rows);
  for (int i = 1; i < a.rank(); ++i)
    index = index.unsqueeze(-1);
  index = index.expand(dims_of(src.shape()));
  Tensor t = dest.t.scatter_elements(0, index, src.t);
  Val v{t, std::min(dest.lo, src.lo), std::max(dest.hi, src.hi), std::max(dest.err, src.err)};
  if (dest.t.id() == a.t.id()) {
    log("scatter_elements rows of a fresh source");
    if (chance(0.4)) {
      // The scattered-into value is read again: it must not have been updated in place.
      log("  + the value scattered into");
      v = Val{v.t + a.t, v.lo + a.lo, v.hi + a.hi, v.err + a.err + kRound * (v.mag() + a.mag())};
      if (is_int()) v.err = 0;
    }
    return v;
  }
  std::string label = "state" + std::to_string(fg_.outputs.size());
  fg_.graph.carry(t.output(label), dest.t);
  fg_.outputs.push_back(FuzzOutput{label, dt_, 1.5 * v.err + 1, 4});
  log("scatter_elements rows into a carried state input (output '" + label + "')");
  if (chance(0.25)) {
    // The state is also read by another op: no in-place update then.
    log("  * the old state");
    Val w{v.t * dest.t, -v.mag() * dest.mag(), v.mag() * dest.mag(),
          is_int() ? 0 : dest.mag() * v.err + kRound * v.mag() * dest.mag()};
    return w;
  }
  return v;
}

RandomGraphBuilder::Val RandomGraphBuilder::movement(const Val& a) {
  const Shape& s = a.shape();
  const int r = a.rank();
  switch (uniform(0, 6)) {
    case 0:
      if (r >= 2) {
        int i = uniform(0, r - 1), j = uniform(0, r - 1);
        if (i == j) j = (i + 1) % r;
        log("transpose " + std::to_string(i) + " " + std::to_string(j));
        return Val{a.t.transpose(i, j), a.lo, a.hi, a.err};
      }
      break;
    case 1:
      if (r >= 3) {
        std::vector<int> order(static_cast<size_t>(r));
        std::iota(order.begin(), order.end(), 0);
        std::shuffle(order.begin(), order.end(), rng_);
        log("permute");
        return Val{a.t.permute(order), a.lo, a.hi, a.err};
      }
      break;
    case 2: {
      // split an even static axis
      for (int i = 0; i < r; ++i) {
        const Expr& d = s[static_cast<size_t>(i)];
        if (d.is_const() && d.as_const() % 2 == 0 && d.as_const() >= 4 && r < 4) {
          log("split_dims " + std::to_string(i) + " by 2");
          return Val{a.t.split_dims(i, 2), a.lo, a.hi, a.err};
        }
      }
      break;
    }
    case 3:
      if (r >= 2) {
        int i = uniform(0, r - 2);
        if (chance(0.5)) {
          log("merge_dims " + std::to_string(i));
          return Val{a.t.merge_dims(i), a.lo, a.hi, a.err};
        }
        Shape to;
        for (int j = 0; j < r; ++j)
          if (j == i + 1)
            to.back() = to.back() * s[static_cast<size_t>(j)];
          else
            to.push_back(s[static_cast<size_t>(j)]);
        log("reshape to " + str(to));
        return Val{a.t.reshape(dims_of(to)), a.lo, a.hi, a.err};
      }
      break;
    case 4: {
      // slice a static axis
      for (int i = 0; i < r; ++i) {
        const Expr& d = s[static_cast<size_t>(i)];
        if (d.is_const() && d.as_const() >= 3) {
          const int64_t n = d.as_const();
          const int kind = uniform(0, 3);
          if (kind == 0) {
            log("slice axis " + std::to_string(i) + " [1:]");
            return Val{a.t.slice(i, 1), a.lo, a.hi, a.err};
          }
          if (kind == 1) {
            log("slice axis " + std::to_string(i) + " [::2]");
            return Val{a.t.slice(i, 0, std::nullopt, 2), a.lo, a.hi, a.err};
          }
          // From a start (negative: from the end) to an end, step 1 or 2: a view at an offset.
          const int64_t start = uniform(1, static_cast<int>(n - 2));
          const int64_t from = chance(0.5) ? start : start - n;
          const int64_t end = uniform(static_cast<int>(start + 1), static_cast<int>(n));
          const int64_t step = kind == 2 ? 1 : 2;
          log("slice axis " + std::to_string(i) + " [" + std::to_string(from) + ":" +
              std::to_string(end) + ":" + std::to_string(step) + "]");
          return Val{a.t.slice(i, from, end, step), a.lo, a.hi, a.err};
        }
      }
      break;
    }
    case 5: {
      Val b = partner(a);
      if (b.shape() != s) b = new_full_input(s);
      int axis = uniform(0, r - 1);
      log("concat axis " + std::to_string(axis));
      return Val{concat({a.t, b.t}, axis), std::min(a.lo, b.lo), std::max(a.hi, b.hi),
                 std::max(a.err, b.err)};
    }
    default:
      if (r < 4 && max_numel(s) * 3 <= (large_ ? 100000 : 400)) {
        int axis = uniform(0, r);
        log("expand_dim " + std::to_string(axis) + " x3");
        return Val{a.t.expand_dim(axis, 3), a.lo, a.hi, a.err};
      }
      if (r >= 1) {
        double v = is_int() ? 0 : 0.5;
        log("pad last axis {1, 2} with " + std::to_string(v));
        return Val{a.t.pad(pad_last(r), v), std::min(a.lo, v), std::max(a.hi, v), a.err};
      }
      break;
  }
  log("neg (movement fallback)");
  return Val{a.t.neg(), -a.hi, -a.lo, a.err};
}

std::vector<std::pair<Dim, Dim>> RandomGraphBuilder::pad_last(int rank) {
  std::vector<std::pair<Dim, Dim>> p(static_cast<size_t>(rank), {Dim(0), Dim(0)});
  p.back() = {Dim(1), Dim(2)};
  return p;
}

RandomGraphBuilder::Val RandomGraphBuilder::misc(const Val& a) {
  const Shape& s = a.shape();
  const int axis = uniform(0, a.rank() - 1);
  const Expr k = s[static_cast<size_t>(axis)];
  const double kmax = static_cast<double>(dmax(k));
  switch (uniform(0, 5)) {
    case 0:
      if (!is_int()) {
        log("softmax axis " + std::to_string(axis));
        return Val{a.t.softmax(axis), 0, 1, 2 * a.err + kRound * (4 + std::sqrt(kmax))};
      }
      break;
    case 1:
      // The position of the extreme: only of exact values (a near tie must not flip).
      if (a.exact()) {
        const bool is_max = chance(0.5);
        const bool keep = chance(0.3);
        Tensor idx = is_max ? a.t.argmax(axis, keep) : a.t.argmin(axis, keep);
        log(std::string(is_max ? "argmax" : "argmin") + " axis " + std::to_string(axis));
        if (idx.rank() >= 1 && chance(0.3)) extra_outputs_.push_back(idx);
        if (idx.rank() == 0) idx = idx.unsqueeze(0);
        return Val{idx.cast(dt_), 0, kmax - 1, 0};
      }
      break;
    case 2:
      if (kmax <= 64 && max_numel(s) * kmax <= 300000) {
        log("cumsum axis " + std::to_string(axis));
        double lo = std::min(a.lo, kmax * a.lo), hi = std::max(a.hi, kmax * a.hi);
        return Val{a.t.cumsum(axis), lo, hi,
                   is_int() ? 0 : kmax * a.err + kRound * std::sqrt(kmax) * a.mag()};
      }
      break;
    case 3:
      if (is_int()) {
        Val d = new_input(s, /*positive=*/true);
        log("fmod by a positive input");
        double m = std::min(a.mag(), d.hi - 1);
        return Val{a.t.fmod(d.t), a.lo < 0 ? -m : 0, a.hi > 0 ? m : 0, 0};
      }
      if (a.exact()) {
        double c = chance(0.5) ? 0.25 : 0.75;
        log("fmod " + std::to_string(c));
        return Val{a.t % c, a.lo < 0 ? -c : 0, a.hi > 0 ? c : 0, 0};
      }
      break;
    case 4:
      if (!is_int() && a.exact()) {
        // x * 4 is exact; the cast truncates toward zero.
        log("(x * 4) cast i32 and back");
        double m = std::floor(4 * a.mag());
        return Val{(a.t * 4.0).cast(DType::I32).cast(dt_), a.lo < 0 ? -m : 0, a.hi > 0 ? m : 0, 0};
      }
      break;
    default:
      if (max_numel(s) * 2 <= (large_ ? 100000 : 400)) {
        std::vector<Dim> reps(s.size(), Dim(1));
        reps[static_cast<size_t>(axis)] = 2;
        log("repeat axis " + std::to_string(axis) + " x2");
        return Val{a.t.repeat(reps), a.lo, a.hi, a.err};
      }
      break;
  }
  return unary(a);
}

RandomGraphBuilder::Val RandomGraphBuilder::cast_op(const Val& a) {
  if (is_int()) {
    // Through a float and back (exact for small integers).
    log("cast f32 and back");
    return Val{a.t.cast(DType::F32).cast(dt_), a.lo, a.hi, 0};
  }
  if ((dt_ == DType::F32 || dt_ == DType::F64) && !a.exact()) {
    // Rounding an inexact value to a narrower type may land one ulp of that type apart in two
    // correct programs: a tolerance that allows it would say little. Cast exact values only.
    return unary(a);
  }
  if (dt_ == DType::F32 || dt_ == DType::F64) {
    DType via = dt_ == DType::F64 && chance(0.5) ? DType::F32
                : chance(0.5)                    ? DType::F16
                                                 : DType::BF16;
    log("cast " + std::string(name(via)) + " and back");
    return Val{a.t.cast(via).cast(dt_), a.lo, a.hi, 0};
  }
  log("cast f32 and back");
  return Val{a.t.cast(DType::F32).cast(dt_), a.lo, a.hi, a.err};
}

}  // namespace luminal::testing::detail
