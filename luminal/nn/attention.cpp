#include "luminal/nn/attention.hpp"

#include <cmath>
#include <limits>

#include "luminal/core/error.hpp"

namespace luminal::nn {

Tensor cached_attention(Graph& g, const Tensor& q, const Tensor& k, const Tensor& v,
                        const std::string& name, int slots, const AttentionOptions& opts) {
  const Shape& qs = q.shape();
  const Shape& ks = k.shape();
  if (qs.size() != 3 || ks.size() != 3 || v.shape() != ks || qs[0] != ks[0] || qs[2] != ks[2]) {
    throw Error("nn::cached_attention '" + name + "': q must be [s, heads, hd] and k, v [s, " +
                "kv_heads, hd]; got q " + shape_to_string(qs) + ", k " + shape_to_string(ks) +
                ", v " + shape_to_string(v.shape()));
  }
  if (!qs[1].is_const() || !ks[1].is_const() || !ks[2].is_const())
    throw Error("nn::cached_attention '" + name + "': head counts and head_dim must be constants");
  const int64_t heads = qs[1].as_const(), kv = ks[1].as_const(), hd = ks[2].as_const();
  if (kv <= 0 || heads % kv != 0) {
    throw Error("nn::cached_attention '" + name + "': " + std::to_string(heads) +
                " query heads are not a multiple of " + std::to_string(kv) + " KV heads");
  }
  const int64_t groups = heads / kv, kvd = kv * hd;
  const Expr s = Expr::var("s"), c = Expr::var("c");
  const DType dt = k.dtype();

  if (opts.window && *opts.window < 1)
    throw Error("nn::cached_attention '" + name + "': the sliding window must be positive, got " +
                std::to_string(*opts.window));
  // A ring holds R = slots / 2 positions, each in two rows: p mod R and p mod R + R.
  const int64_t ring = slots / 2;
  if (opts.ring) {
    const int64_t most_s = g.dim_range("s").hi;
    if (!opts.window)
      throw Error("nn::cached_attention '" + name + "': a ring cache needs a sliding window");
    if (slots % 2 != 0 || ring < *opts.window + most_s - 1)
      throw Error("nn::cached_attention '" + name + "': a ring cache of " + std::to_string(slots) +
                  " rows cannot hold a window of " + std::to_string(*opts.window) +
                  " and a step of " + std::to_string(most_s) +
                  " tokens; give it 2 (window + s - 1) = " +
                  std::to_string(2 * (*opts.window + most_s - 1)) +
                  " rows or more (an even count), or declare a smaller s");
  }
  // The positions read: [first, c). Every one (first 0) unless window_read or a ring: then from
  // the first position the step's first query sees, c - s - (window - 1), or 0: at most
  // s + window - 1 of them. In order they are rows first .. c - 1; in a ring rows
  // first mod R onwards, which never pass the second copy's end.
  const Expr first = opts.window && (opts.window_read || opts.ring)
                         ? max(Expr(0), c - s - Expr(*opts.window - 1))
                         : Expr(0);
  const Expr R(ring);
  // (a ring's window: rows first mod R onwards, c - first of them, which fit its 2R rows; as
  // slice_exact, since slice's clamps would hide that length from the row kernels)
  const Expr ring_len =
      opts.ring
          ? max(Expr(0), c - first).simplify({{"c", g.dim_range("c")}, {"s", g.dim_range("s")}})
          : Expr(0);
  // Write this step's rows at c - s + i (in a ring at rows (c - s + i) mod R and that + R: the
  // step's [s, kvd] values read twice through a stride-0 axis).
  const Expr z = Expr::z(), step_rows = s * kvd;
  const Tensor rows =
      opts.ring ? g.iota((((c - s + (z / kvd) % s) % R) + (z / step_rows) * R) * kvd + z % kvd,
                         2 * step_rows)
                      .reshape({2, s, kvd})
                : g.iota((c - s) * kvd + z, step_rows).reshape({s, kvd});
  auto update = [&](const Tensor& x, const std::string& which) {
    Tensor cache = g.tensor(name + "." + which + "_cache", {slots, kvd}, dt).persist();
    const Tensor values =
        opts.ring ? x.reshape({1, s, kvd}).expand({2, s, kvd}) : x.reshape({s, kvd});
    Tensor next = cache.scatter_flat(rows, values).output(name + "." + which + "_cache_out");
    g.carry(next, cache);
    // [n, kv, hd] -> [kv, 1, n, hd] -> [kv, groups, n, hd] (stride 0 over the group)
    const Tensor read =
        opts.ring ? next.slice_exact(0, first % R, ring_len) : next.slice(0, first, c);
    const Expr n = read.shape()[0];
    return read.reshape({n, kv, hd})
        .permute({1, 0, 2})
        .reshape({kv, 1, n, hd})
        .expand({kv, groups, n, hd});
  };
  const Tensor K = update(k, "k"), V = update(v, "v");
  const Expr n = K.shape()[2];  // (c; with window_read or a ring at most s + window - 1)
  // q [s, heads, hd] -> [kv, groups, s, hd]
  const Tensor Q = q.reshape({s, kv, groups, hd}).permute({1, 2, 0, 3});
  Tensor scores = Q.matmul(K.transpose(2, 3));  // [kv, groups, s, n]
  if (dt == DType::F16 || dt == DType::BF16) scores = scores.cast(DType::F32);
  scores = scores * opts.scale.value_or(1.0 / std::sqrt(static_cast<double>(hd)));
  if (opts.softcap) scores = (scores * (1.0 / *opts.softcap)).tanh() * *opts.softcap;
  const Tensor pos = g.iota(c - s + Expr::z(), s);
  // (the keys' positions: first .. c - 1)
  const Tensor key_pos = first == Expr(0) ? g.arange(c) : g.iota(first + Expr::z(), n);
  const Tensor keys = key_pos.reshape({1, 1, 1, n}).expand({kv, groups, s, n});
  Tensor hidden = pos.reshape({1, 1, s, 1}).expand({kv, groups, s, n}).lt(keys);
  if (opts.window) {
    // Hidden when j <= p - window, i.e. j < p - window + 1.
    const Tensor lo = g.iota(c - s - (*opts.window - 1) + Expr::z(), s);
    hidden = hidden.logical_or(keys.lt(lo.reshape({1, 1, s, 1}).expand({kv, groups, s, n})));
  }
  const Tensor att =
      scores.masked_fill(hidden, -std::numeric_limits<double>::infinity()).softmax(3).cast(dt);
  return att
      .matmul(V)              // [kv, groups, s, hd]
      .permute({2, 0, 1, 3})  // [s, kv, groups, hd]
      .reshape({s, heads * hd});
}

}  // namespace luminal::nn
