#pragma once
// Token sampling inside the graph, so that only token ids cross to the host each step.
// Example: examples/snippets/nn/sampling.cpp (greedy and top-k on the reference).
//
// Every parameter that changes per request (temperature, top-k, top-p, min-p, repetition
// penalty, seed, step) is a small graph INPUT, so one compiled graph serves every setting.
//
// The pipeline (as transformers orders its processors), on logits x [n, V] (or [V]):
//   1. repetition penalty over the seen tokens: x > 0 ? x / p : x * p (p = 1: x unchanged);
//   2. temperature: z = x / T; T = 0 is greedy: z = x and no noise, so the token is exactly
//      argmax(x) (ties: the lowest index, as Tensor::argmax);
//   3. top-k: keep z >= the k-th largest z (ties at the k-th value are all kept; k = 0: off);
//   4. top-p over softmax of the top-k survivors: keep the smallest set of largest tokens whose
//      probability mass is >= top_p (ties at the cut are all kept; top_p = 1: off);
//   5. min-p: keep p >= min_p * p_max, tested as exp(z - max z) >= min_p (min_p = 0: off);
//   6. Gumbel-max: token = argmax(z + g) over the kept tokens (the others at -inf), with
//      g = -log(-log(u)) and u uniform from the counter hash below. The largest z is kept by
//      every filter, so greedy (g = 0) is unaffected by them.
//
// Thresholds by bisection, never a sort or a cumsum (both O(V^2) in this IR): for a measure
// m(t) = sum over kept tokens with z >= t of w (w = 1 counts tokens for top-k; w = exp(z - max)
// gives unnormalised mass for top-p, against top_p * sum(w)), the threshold is the largest t
// with m(t) >= target. Start with lo = min z (m(lo) = everything >= target) and
// hi = max z + (max z - min z) + |max z| 2^-20 (m(hi) = 0 < target); each of `iterations` steps
// halves [lo, hi) keeping m(lo) >= target > m(hi) (one O(V) compare + sum). Then snap: t = the
// largest z below hi; if m(t) >= target, t is the exact threshold (it is whenever a single distinct
// value lies in [lo, hi), i.e. always once the bracket is narrower than the gap between
// neighbouring logits), else lo is used (which may keep a few extra tokens lying within
// (max - min) * 2^-iterations of the cut). Cost: (iterations + 2) O(V) reductions per filter;
// a filter the request does not use can be left out of the graph (SamplerFilters). Four-way
// bisection (three thresholds per pass) was considered: per two bits it needs three measures and
// ~45 nodes against two measures and ~34 nodes, so it is not used.
//
// The random numbers: a counter-based hash of (seed, step, row, index) over exact int64 Add, Mul
// and Mod only (no xor or shift exists in the IR), so the integers - and the floats made from
// them - are bit-identical on every backend. The state h is in [0, 2^31); each round is
//     h = (h * a + c1) mod P            P = 2^31 - 1 (prime): an affine permutation mod P
//     h = (h * b + c2) mod 2^31         b odd: an affine permutation mod 2^31
//     h = (h + 2^16 * ((l * l + 40503) mod 32749)) mod 2^31,  l = h mod 2^16
// The last step is a Feistel-like bijection (it keeps the low 16 bits and shifts the high 15 by
// a non-linear function of them); mixing the two incompatible rings with it gives
// non-linearity (the affine rounds alone fail a 2-D chi-square badly). Every product is below
// 2^62, so nothing overflows int64. The inputs are absorbed one per round:
//     h = R0(s0); h = R1(h + s1); h = R2(h + step); h = R3(h + row); h = R4(h + index); h = R5(h)
// (additions mod 2^31; the seed's words s0 = seed mod 2^31, s1 = (seed >> 31) mod 2^31, so
// seeds equal mod 2^62 give the same stream; step, row and index must be < 2^31). Only the
// last two rounds run per element (one is not enough: with R4 alone, triples of neighbouring
// indices fail a 16^3-bucket chi-square by thousands of sigma). u = (h - h mod 256 + 128) * 2^-31:
// an odd multiple of 2^-24 in [2^-24, 1 - 2^-24] (exact in f32; never 0 or 1). Checked on the host:
// chi-square of 1-D buckets over index, step, seed and row sweeps and of 2-D pairs of neighbours
// within noise, every output bit balanced, ~15.5 of 31 bits flip when the index moves by one.
//
// Backend agreement: the hash and u are exact; the filters compare float sums, so a backend that
// sums in another order can disagree only when a token sits within rounding of a top-p cut.
#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "luminal/ir/graph.hpp"
#include "luminal/ir/tensor.hpp"

namespace luminal::nn {

/// Sampling settings of one request. The defaults are greedy decoding.
struct SamplingConfig {
  double temperature = 0;         // >= 0; 0 = greedy (argmax)
  int64_t top_k = 0;              // >= 0; 0 = off
  double top_p = 1;               // (0, 1]; 1 = off
  double min_p = 0;               // [0, 1]; 0 = off
  double repetition_penalty = 1;  // > 0; 1 = off (as transformers: > 1 discourages repeats)
  uint64_t seed = 0;
  bool greedy() const { return temperature == 0; }
  /// False when the token is the plain argmax of the logits (temperature 0 and no repetition
  /// penalty; top-k, top-p and min-p never drop the largest logit), which greedy_token() computes
  /// without the sampler.
  bool needs_sampler() const { return temperature != 0 || repetition_penalty != 1; }
  /// Throws luminal::Error naming the first bad field and its valid range.
  void validate() const;
};

/// The sampler's graph inputs (all small; set per request, `step` per token).
struct SamplerInputs {
  Tensor temperature;         // F32 [1]
  Tensor top_k;               // I32 [1]
  Tensor top_p;               // F32 [1]
  Tensor min_p;               // F32 [1]
  Tensor repetition_penalty;  // F32 [1]
  Tensor seed;                // I64 [2]: seed_words(seed)
  Tensor step;                // I64 [1]: the counter, e.g. the index of the token generated
};

/// Adds the inputs "<prefix>.temperature", ".top_k", ".top_p", ".min_p",
/// ".repetition_penalty", ".seed" and ".step".
SamplerInputs sampler_inputs(Graph& g, std::string_view prefix = "sampler");

/// The seed as the hash's two 31-bit words {seed mod 2^31, (seed >> 31) mod 2^31}.
std::array<int64_t, 2> seed_words(uint64_t seed);

/// Sets every sampler input on a runtime (anything with set(Tensor, std::vector<T>)).
template <class Rt>
void set_sampler_inputs(Rt& rt, const SamplerInputs& in, const SamplingConfig& c, int64_t step) {
  c.validate();
  const auto w = seed_words(c.seed);
  rt.set(in.temperature, std::vector<float>{static_cast<float>(c.temperature)});
  rt.set(in.top_k,
         std::vector<int32_t>{static_cast<int32_t>(std::min<int64_t>(c.top_k, int64_t{1} << 30))});
  rt.set(in.top_p, std::vector<float>{static_cast<float>(c.top_p)});
  rt.set(in.min_p, std::vector<float>{static_cast<float>(c.min_p)});
  rt.set(in.repetition_penalty, std::vector<float>{static_cast<float>(c.repetition_penalty)});
  rt.set(in.seed, std::vector<int64_t>{w[0], w[1]});
  rt.set(in.step, std::vector<int64_t>{step});
}

/// The hash state (I64 in [0, 2^31)) for every (row, index) of a [rows, cols] grid.
/// seed: I64 [2] words; step: I64 [1].
Tensor counter_hash(const Tensor& seed, const Tensor& step, Dim rows, Dim cols);
/// Uniform F32 in (0, 1) from hash states (see the header comment).
Tensor hash_uniform(const Tensor& h);
/// The same hash on the host (tests, tools): bit-identical to counter_hash.
int64_t counter_hash_host(uint64_t seed, int64_t step, int64_t row, int64_t index);
float hash_uniform_host(int64_t h);

/// The first index of each row of x (F32 [n, V]) whose value is not below m (F32 [n, 1]: the
/// row's maximum, so the first equal to it), as I32 [n]; where every element is below m,
/// `fallback` (I32 [n]), or 2^30 without one. sample() passes a
/// fallback: a program may compute its score twice with bits apart (nn/sampling.cpp).
Tensor first_index_of(const Tensor& x, const Tensor& m, const std::optional<Tensor>& fallback);

/// The largest t (by bisection, then snapped to a value of x) with m(t) >= target, per row,
/// where m(t) = sum over x >= t of w (of 1 without w). x, w: F32 [n, V], finite. lo0, hi0,
/// target: [n, 1] (or [1, 1]) with m(lo0) >= target > m(hi0). Returns F32 [n, 1].
Tensor bisect_threshold(const Tensor& x, const std::optional<Tensor>& w, const Tensor& lo0,
                        const Tensor& hi0, const Tensor& target, int iterations);

/// The index of each row's largest logit (ties: the lowest index) of [n, V] or [V] logits, I32
/// [n] ([1] for 1-D): a max-reduce, a compare and a max-reduce over the indices (~13 nodes; fewer
/// than Tensor::argmax). The same token as sample() with greedy settings.
Tensor greedy_token(const Tensor& logits);

/// The filters sample() builds. The top-k and top-p bisections are most of the sampler's nodes
/// (~700 of ~1100) and of its time; one left out costs nothing and its input is ignored (as if
/// off).
struct SamplerFilters {
  bool top_k = true;
  bool top_p = true;
  /// The filters `c` needs: top_k when c.top_k > 0, top_p when c.top_p < 1 (none when greedy).
  static SamplerFilters needed_by(const SamplingConfig& c) {
    return {.top_k = !c.greedy() && c.top_k > 0, .top_p = !c.greedy() && c.top_p < 1};
  }
  /// Whether these filters serve `c` (a filter that is left out must be off in c, or c greedy).
  bool serve(const SamplingConfig& c) const {
    const SamplerFilters need = needed_by(c);
    return (top_k || !need.top_k) && (top_p || !need.top_p);
  }
};

/// Samples one token per row of logits ([n, V] or [V], any float dtype) with the pipeline above.
/// `seen` ([V] or [n, V]; nonzero = seen) enables the repetition penalty. Returns I32 [n] ([1]
/// for 1-D logits).
Tensor sample(const Tensor& logits, const SamplerInputs& in,
              const std::optional<Tensor>& seen = std::nullopt, int iterations = 16,
              SamplerFilters filters = {});

}  // namespace luminal::nn
