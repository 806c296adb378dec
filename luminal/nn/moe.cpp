#include "luminal/nn/moe.hpp"

#include <cmath>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "luminal/core/error.hpp"

namespace luminal::nn {

namespace {

// The router's order: a NaN before every number (as argmax takes a NaN first), else the larger
// key (probability or logit); equal ones (NaNs too) by index. It is strict and total, so choice t
// of a row is well defined for every input (infinities and negative values included).

// The key an expert is ranked by (of a probability or a logit): a NaN counts as +inf (before
// every number, as in torch's topk; among NaNs and a real +inf the lower index first). Both forms
// rank by it, so they choose alike on every input.
// Written as "below +inf, else +inf" (a NaN is not below it; +inf stays +inf): three
// instructions where isnan's two comparisons take five, so a pairwise region that computes the
// key twice (once per side of a pair) still fits a fused kernel.
Tensor nan_as_infinity(const Tensor& values) {
  const double inf = std::numeric_limits<double>::infinity();
  return values.lt(inf).where(values, inf);
}

// k steps of: the largest key of the experts not taken yet (the first of equal ones), its value
// (`values`: the probabilities, or the logits), then it is taken. O(E k) work, two reductions a
// step.
TopK topk_by_argmax(const Tensor& values, const Tensor& key, int64_t k) {
  Graph g = values.graph();
  const int64_t E = values.dim(1).as_const();
  const Expr s = values.dim(0);
  const Tensor experts = g.arange(E).reshape({1, E}).expand({s, E});
  const Tensor slots = g.arange(k).reshape({1, k});
  std::optional<Tensor> taken, ids, weights;
  for (int64_t j = 0; j < k; ++j) {
    // Taken experts read -inf and never hit (an expert of -inf may still be the largest).
    const Tensor rest = taken ? key.masked_fill(*taken, -INFINITY) : key;
    // (The keys hold no NaN, so neither does m, and equality finds the largest.)
    const Tensor m = rest.max(1, true).expand({s, E});
    Tensor hit = rest.eq(m);
    if (taken) hit = hit.logical_and(taken->logical_not());
    const Tensor best = hit.where(experts, static_cast<double>(E)).min(1, true);  // [s, 1]
    const Tensor pick = experts.eq(best.expand({s, E}));
    const Tensor p = pick.where(values, 0.0).sum(1, true);  // [s, 1]
    // Choice j lands in column j through a mask (no concatenation).
    const Tensor column = slots.eq(static_cast<double>(j)).expand({s, k});
    const Tensor id = column.where(best.expand({s, k}), 0.0);
    const Tensor w = column.where(p.expand({s, k}), 0.0);
    ids = ids ? *ids + id : id;
    weights = weights ? *weights + w : w;
    taken = taken ? taken->logical_or(pick) : pick;
  }
  return {*ids, *weights};
}

// Every expert's rank in its row (how many come before it: a comparison of every pair, one
// reduction), then choice t is the expert of rank t. O(E^2) work in a few kernels.
TopK topk_by_ranks(const Tensor& values, const Tensor& key, int64_t k) {
  Graph g = values.graph();
  const int64_t E = values.dim(1).as_const();
  const Expr s = values.dim(0);
  const std::vector<Dim> pairs = {s, E, E};  // [row, e, j]: does j come before e?
  // Only comparisons and boolean algebra over the pairs, on the keys: larger, or equal and lower.
  const Tensor pe = key.reshape({s, E, 1}).expand(pairs);
  const Tensor pj = key.reshape({s, 1, E}).expand(pairs);
  const Tensor lower =
      g.arange(E).reshape({1, 1, E}).lt(g.arange(E).reshape({1, E, 1})).expand(pairs);  // j < e
  const Tensor before = pe.lt(pj).logical_or(pj.lt(pe).logical_not().logical_and(lower));
  const Tensor rank = before.sum(2);  // [s, E] I32: a permutation of 0 .. E-1 in each row
  // One expert per (row, t), so each sum adds one value to zeros: exactly the id, and exactly
  // its value.
  const std::vector<Dim> choices = {s, k, E};  // [row, t, e]
  const Tensor chosen =
      rank.reshape({s, 1, E}).expand(choices).eq(g.arange(k).reshape({1, k, 1}).expand(choices));
  const Tensor ids =
      (chosen.cast(DType::I32) * g.arange(E).reshape({1, 1, E}).expand(choices)).sum(2);
  // A select, not a product: an unchosen NaN or infinity must not reach the sum.
  const Tensor wts = chosen.where(values.reshape({s, 1, E}).expand(choices), 0.0).sum(2);
  return {ids, wts};
}

// The shapes both entry points accept: [s, E] with a static E, and 1 <= k <= E.
void check_router(const char* what, const char* arg, const Tensor& t, int64_t k) {
  if (t.rank() != 2 || !t.dim(1).is_const())
    throw Error(std::string(what) + ": " + arg + " must be [s, E] with a static E, got " +
                shape_to_string(t.shape()));
  const int64_t E = t.dim(1).as_const();
  if (k < 1 || k > E)
    throw Error(std::string(what) + ": k = " + std::to_string(k) + " is outside 1.." +
                std::to_string(E));
}

// What the weights are, from the values each form picks at the chosen experts.
enum class Weights {
  Picked,           // the picked values (probabilities)
  Renormalised,     // the picked probabilities over their sum
  SoftmaxOfPicked,  // the softmax of the picked logits: the renormalised probabilities, as the
                    // softmax's sum over every expert cancels
};

TopK choose(const Tensor& values, const Tensor& key, int64_t k, Weights weights, TopKForm form,
            DType out) {
  const int64_t E = values.dim(1).as_const();
  const Expr s = values.dim(0);
  // Each form's weights are finished (and cast) before the forms meet: merged first, the
  // division's row kernel grew through the argmax form's running sums (the weights' class held
  // both), and the fewest-kernels seed with both forms ran it as six kernels instead of the ranks
  // form's one; a cast after the merge ran as a kernel of its own.
  auto finished = [&](TopK t) {
    if (weights == Weights::Renormalised)
      t.weights = t.weights / t.weights.sum(1, true).expand({s, k});
    if (weights == Weights::SoftmaxOfPicked) t.weights = t.weights.softmax(1);
    if (out != t.weights.dtype()) t.weights = t.weights.cast(out);
    return t;
  };
  const TopK top = finished(form == TopKForm::Ranks ? topk_by_ranks(values, key, k)
                                                    : topk_by_argmax(values, key, k));
  if (form == TopKForm::Searched) {
    const TopK ranked = finished(topk_by_ranks(values, key, k));
    Graph g = values.graph();
    // Only where the pairs stay few (decode, short prompts): the ranks' O(s E^2) comparisons
    // cost more than the argmax's kernels on long prompts (and would crowd the search there).
    const std::pair<Expr, int64_t> few_pairs{s * Expr(E * E), kRankPairs};
    g.alternative(top.ids, ranked.ids, few_pairs);
    g.alternative(top.weights, ranked.weights, few_pairs);
  }
  return top;
}

}  // namespace

TopK router_topk(const Tensor& probs, int64_t k, bool renormalise, TopKForm form) {
  check_router("router_topk", "probs", probs, k);
  return choose(probs, nan_as_infinity(probs), k,
                renormalise ? Weights::Renormalised : Weights::Picked, form, probs.dtype());
}

TopK router_softmax_topk(const Tensor& logits, int64_t k, bool renormalise, TopKForm form,
                         DType weights) {
  check_router("router_softmax_topk", "logits", logits, k);
  const Tensor x = logits.cast(DType::F32);
  // Ranked by the logits: only elementwise ops between them and the comparisons, so every kernel
  // that computes the keys gets the same bits. Ranked through the softmax, the keys read its
  // sum, which a row kernel and another kernel compute in different orders: comparisons of the
  // two copies disagree (ranks that are no permutation, an argmax that hits nothing) and an id
  // falls outside [0, E).
  // Renormalised, the weights are the softmax of the chosen logits alone (p_t / sum of the
  // chosen p is exp(x_t - m) / sum of the chosen exp(x - m)): a row kernel over k values, where
  // the softmax over all E experts, the pick and the division were three.
  if (!is_float(weights))
    throw Error(std::string("router_softmax_topk: the weights' dtype must be a float, got ") +
                std::string(name(weights)));
  if (renormalise) return choose(x, nan_as_infinity(x), k, Weights::SoftmaxOfPicked, form, weights);
  return choose(x.softmax(1), nan_as_infinity(x), k, Weights::Picked, form, weights);
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
