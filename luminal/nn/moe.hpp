#pragma once
// Mixtures of experts on the Tensor API: the router's top-k choice and the experts it picks, as
// a gather of the chosen experts' weight rows, a batched matmul and a weighted sum. Nothing here
// reads an expert no token chose: a backend that fuses the gather into the matmul (the CPU's
// cpu.ExpertMatmul) reads only those experts' weights; the unfused program materialises the
// gathered rows (still only the chosen experts').
// Example: tests/nn/moe_test.cpp (top-k ids and weights, and an expert linear layer, checked
// against per-token loops).
#include <cstdint>

#include "luminal/ir/tensor.hpp"

namespace luminal::nn {

/// The router's choice per row of `probs` [s, E] (floats): ids [s, k] (I32) of the k largest
/// probabilities, largest first, the first of equal ones first (as torch.topk on distinct
/// values; a NaN before every number, NaNs by index), and their probabilities [s, k] (probs'
/// dtype), divided by their sum when `renormalise`.
struct TopK {
  Tensor ids;
  Tensor weights;
};
/// How router_topk computes the choice (the results are equal, bit for bit):
///   Argmax: k repeated argmaxes over the experts not taken yet (O(E k) work, two reductions
///     and a few elementwise kernels a step);
///   Ranks: every expert's rank from a comparison of every pair in its row, then the expert of
///     each rank (O(E^2) work in a few kernels: the fewest launches);
///   Searched: Argmax, with Ranks declared its alternative (Graph::alternative) for the
///     buckets of at most kRankPairs pairs (rows * E^2), so the search times both there and
///     picks per program.
enum class TopKForm { Searched, Argmax, Ranks };
/// The most pairs (rows * E^2) for which Searched offers Ranks: 64 rows of 128 experts.
inline constexpr int64_t kRankPairs = int64_t{1} << 20;
TopK router_topk(const Tensor& probs, int64_t k, bool renormalise,
                 TopKForm form = TopKForm::Searched);
/// A router from its logits [s, E] (any float dtype): the softmax in f32, and router_topk's
/// choice over it with the experts ranked by the logits (the softmax's order; a NaN logit first,
/// NaNs and +inf by index). Where two probabilities round equal from different logits, the
/// larger logit comes first (torch.topk over the probabilities may take either). A row with a
/// NaN or +inf logit, or only -inf ones, has NaN probabilities (as torch's softmax): its weights
/// are NaN whichever experts it takes, and it takes them by the logits. What models use: the
/// logits reach the comparisons through elementwise ops only, so a program that computes the
/// softmax's sum in two kernels (in two orders) still compares one set of keys, and the ids stay
/// k distinct experts in [0, E).
/// The weights come in dtype `weights` (cast by each form before the forms meet: no kernel of
/// its own).
TopK router_softmax_topk(const Tensor& logits, int64_t k, bool renormalise,
                         TopKForm form = TopKForm::Searched, DType weights = DType::F32);

/// For each chosen expert: x @ w[ids]^T. `w` [E, N, D] is every expert's weight in Hugging
/// Face's [out, in] layout, stacked; `ids` [s, k] (integers); x is [s, D] (one row per token,
/// shared by its k experts) or [s, k, D] (one row per choice). Returns [s, k, N]. f16/bf16
/// multiply and accumulate in f32 (as linear()).
Tensor expert_linear(const Tensor& x, const Tensor& w, const Tensor& ids);

}  // namespace luminal::nn
