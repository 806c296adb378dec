#include "luminal/nn/moe.hpp"

#include <optional>
#include <string>

#include "luminal/core/error.hpp"

namespace luminal::nn {

TopK router_topk(const Tensor& probs, int64_t k, bool renormalise) {
  if (probs.rank() != 2 || !probs.dim(1).is_const())
    throw Error("router_topk: probs must be [s, E] with a static E, got " +
                shape_to_string(probs.shape()));
  const int64_t E = probs.dim(1).as_const();
  if (k < 1 || k > E)
    throw Error("router_topk: k = " + std::to_string(k) + " is outside 1.." + std::to_string(E));
  Graph g = probs.graph();
  const Expr s = probs.dim(0);
  const Tensor experts = g.arange(E).reshape({1, E}).expand({s, E});
  const Tensor slots = g.arange(k).reshape({1, k});
  // Repeated argmax; choice j lands in column j through a mask (no concatenation).
  Tensor remaining = probs;
  std::optional<Tensor> ids, weights;
  for (int64_t j = 0; j < k; ++j) {
    const Tensor best = remaining.argmax(1, true);  // [s, 1] I32
    const Tensor pick = experts.eq(best.expand({s, E}));
    const Tensor p = pick.where(probs, 0.0).sum(1, true);  // [s, 1]
    const Tensor column = slots.eq(static_cast<double>(j)).expand({s, k});
    const Tensor id = column.where(best.expand({s, k}), 0.0);
    const Tensor w = column.where(p.expand({s, k}), 0.0);
    ids = ids ? *ids + id : id;
    weights = weights ? *weights + w : w;
    remaining = remaining.masked_fill(pick, -1.0);
  }
  Tensor wts = *weights;
  if (renormalise) wts = wts / wts.sum(1, true).expand({s, k});
  return {*ids, wts};
}

Tensor expert_linear(const Tensor& x, const Tensor& w, const Tensor& ids) {
  if (w.rank() != 3 || !w.dim(0).is_const() || !w.dim(1).is_const() || !w.dim(2).is_const())
    throw Error("expert_linear: the weight must be [E, N, D] with static sizes, got " +
                shape_to_string(w.shape()));
  if (ids.rank() != 2)
    throw Error("expert_linear: ids must be [s, k], got " + shape_to_string(ids.shape()));
  const int64_t E = w.dim(0).as_const(), N = w.dim(1).as_const(), D = w.dim(2).as_const();
  const Expr s = ids.dim(0), k = ids.dim(1);
  const bool shared = x.rank() == 2;
  if (!(shared || x.rank() == 3) || x.dim(-1) != Expr(D) || x.dim(0) != s ||
      (!shared && x.dim(1) != k))
    throw Error("expert_linear: x " + shape_to_string(x.shape()) + " does not fit ids " +
                shape_to_string(ids.shape()) + " and weight " + shape_to_string(w.shape()) +
                " (want [s, D] or [s, k, D])");
  // The chosen experts' rows: row e of w as [E, N*D] is expert e's whole matrix.
  const Tensor rows = w.reshape({E, N * D}).embedding(ids).reshape({s, k, N, D});
  const Tensor xa = shared ? x.reshape({s, 1, 1, D}).expand({s, k, 1, D}) : x.reshape({s, k, 1, D});
  return xa.matmul(rows.transpose(-1, -2)).reshape({s, k, N});
}

}  // namespace luminal::nn
