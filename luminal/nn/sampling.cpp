#include "luminal/nn/sampling.hpp"

#include <cmath>
#include <limits>

#include "luminal/core/error.hpp"

namespace luminal::nn {

namespace {

constexpr int64_t kP = 2147483647;  // 2^31 - 1, prime
constexpr int64_t kM = 2147483648;  // 2^31
// Dropped tokens and values outside a bracket move down by this (finite: exact selects).
constexpr double kBig = 0x1p100;

struct Round {
  int64_t a, c1, b, c2;
};
// a: multiplier mod P (< 2^31); b: odd multiplier mod 2^31; c1, c2 < 2^31.
constexpr Round kRounds[6] = {{1103515245, 12345, 1664525, 1013904223},
                              {48271, 11, 69069, 362437},
                              {16807, 7, 1566083941, 12345},
                              {950706376, 3, 1812433253, 1},
                              {1583458089, 17, 1103515245, 12345},
                              {742938285, 5, 1664525, 1013904223}};

int64_t round_host(int64_t h, const Round& r) {
  h = (h * r.a + r.c1) % kP;
  h = (h * r.b + r.c2) % kM;
  const int64_t l = h % 65536;
  return (h + 65536 * ((l * l + 40503) % 32749)) % kM;
}

Tensor round_graph(const Tensor& x, const Round& r) {
  auto d = [](int64_t v) { return static_cast<double>(v); };
  Tensor h = (x * d(r.a) + d(r.c1)) % d(kP);
  h = (h * d(r.b) + d(r.c2)) % d(kM);
  const Tensor l = h % 65536.0;
  return (h + ((l * l + 40503.0) % 32749.0) * 65536.0) % d(kM);
}

Tensor first_max(const Tensor& x) { return first_index_of(x, x.max(-1, true), std::nullopt); }

Tensor as_row_param(const Tensor& p, DType dt) {
  // [1] (or [n]) -> [.., 1] in dtype dt.
  Tensor t = p.dtype() == dt ? p : p.cast(dt);
  return t.rank() == 1 ? t.unsqueeze(1) : t;
}

}  // namespace

void SamplingConfig::validate() const {
  auto bad = [](const std::string& field, double v, const std::string& range) {
    throw Error("sampling: " + field + " = " + std::to_string(v) + " is out of range; " + range);
  };
  if (!(temperature >= 0) || !std::isfinite(temperature))
    bad("temperature", temperature, "give a value >= 0 (0 = greedy)");
  if (top_k < 0) bad("top_k", static_cast<double>(top_k), "give a value >= 0 (0 = off)");
  if (!(top_p > 0 && top_p <= 1)) bad("top_p", top_p, "give a value in (0, 1] (1 = off)");
  if (!(min_p >= 0 && min_p <= 1)) bad("min_p", min_p, "give a value in [0, 1] (0 = off)");
  if (!(repetition_penalty > 0) || !std::isfinite(repetition_penalty))
    bad("repetition_penalty", repetition_penalty, "give a value > 0 (1 = off)");
}

SamplerInputs sampler_inputs(Graph& g, std::string_view prefix) {
  const std::string p(prefix);
  SamplerInputs in;
  in.temperature = g.tensor(p + ".temperature", {1}, DType::F32);
  in.top_k = g.tensor(p + ".top_k", {1}, DType::I32);
  in.top_p = g.tensor(p + ".top_p", {1}, DType::F32);
  in.min_p = g.tensor(p + ".min_p", {1}, DType::F32);
  in.repetition_penalty = g.tensor(p + ".repetition_penalty", {1}, DType::F32);
  in.seed = g.tensor(p + ".seed", {2}, DType::I64);
  in.step = g.tensor(p + ".step", {1}, DType::I64);
  return in;
}

std::array<int64_t, 2> seed_words(uint64_t seed) {
  return {static_cast<int64_t>(seed % kM), static_cast<int64_t>((seed >> 31) % kM)};
}

int64_t counter_hash_host(uint64_t seed, int64_t step, int64_t row, int64_t index) {
  const auto w = seed_words(seed);
  int64_t h = round_host(w[0], kRounds[0]);
  h = round_host((h + w[1]) % kM, kRounds[1]);
  h = round_host((h + step) % kM, kRounds[2]);
  h = round_host((h + row) % kM, kRounds[3]);
  h = round_host((h + index) % kM, kRounds[4]);
  return round_host(h, kRounds[5]);
}

float hash_uniform_host(int64_t h) { return static_cast<float>(h - h % 256 + 128) * 0x1p-31f; }

Tensor counter_hash(const Tensor& seed, const Tensor& step, Dim rows, Dim cols) {
  if (seed.dtype() != DType::I64 || step.dtype() != DType::I64)
    throw Error("nn::counter_hash: seed and step must be I64 inputs");
  Graph g = seed.graph();
  const double m = static_cast<double>(kM);
  Tensor h = round_graph(seed.slice(0, 0, 1), kRounds[0]);                // [1]
  h = round_graph((h + seed.slice(0, 1, 2)) % m, kRounds[1]);             // [1]
  h = round_graph((h + step.reshape({1})) % m, kRounds[2]);               // [1]
  const Tensor row = g.arange(rows).cast(DType::I64).reshape({rows, 1});  // [rows, 1]
  h = round_graph((h.reshape({1, 1}) + row) % m, kRounds[3]);             // [rows, 1]
  const Tensor col = g.arange(cols).cast(DType::I64).reshape({1, cols});  // [1, cols]
  h = round_graph((h + col) % m, kRounds[4]);                             // [rows, cols]
  return round_graph(h, kRounds[5]);
}

Tensor hash_uniform(const Tensor& h) { return (h - h % 256.0 + 128.0).cast(DType::F32) * 0x1p-31; }

Tensor first_index_of(const Tensor& x, const Tensor& m, const std::optional<Tensor>& fallback) {
  // min over i of (i, or i + 2^30 where x < m) in f32 (exact below 2^24).
  const Dim V = x.dim(1);
  const Tensor idx = x.graph().arange(V, 0, 1, DType::F32).reshape({1, V});
  const Tensor off = idx + x.lt(m).cast(DType::F32) * 0x1p30;
  const Tensor first = (-off).max(-1).neg();
  if (!fallback) return first.cast(DType::I32);
  const Tensor found = first.lt(0x1p30).cast(DType::F32);  // exact selects: products by 1 and 0
  return (first * found + fallback->cast(DType::F32) * (1.0 - found)).cast(DType::I32);
}

Tensor bisect_threshold(const Tensor& x, const std::optional<Tensor>& w, const Tensor& lo0,
                        const Tensor& hi0, const Tensor& target, int iterations) {
  // Shared scalar constants keep the graph small (each `t * 0.5` would add a constant node).
  Graph g = x.graph();
  const Tensor one = g.constant(1.0), neg = g.constant(-1.0), half = g.constant(0.5);
  // m(t) = sum of w (or 1) over x >= t, as w + (-w) [x < t]: each term exactly w or 0 (x >= t
  // is !(x < t) for the finite values used here).
  // Counting (no w): m(t) < target is V - count(x < t) < target, i.e. count > V - target (exact:
  // integer counts, and V - target rounds to no other integer below 2^23).
  const std::optional<Tensor> nw = w ? std::optional<Tensor>(*w * neg) : std::nullopt;
  const Tensor budget = target * neg + static_cast<double>(x.shape().back().as_const());
  // 1 where m(t) < target (t is above the cut).
  auto miss_at = [&](const Tensor& t) {
    const Tensor below = x.lt(t).cast(DType::F32);
    if (!nw) return budget.lt(below.sum(-1, true)).cast(DType::F32);
    return (below * *nw + *w).sum(-1, true).lt(target).cast(DType::F32);
  };
  Tensor lo = lo0, hi = hi0;
  for (int i = 0; i < iterations; ++i) {
    const Tensor mid = (hi + lo * neg) * half + lo;
    const Tensor miss = miss_at(mid);
    const Tensor hit = miss * neg + one;
    lo = mid * hit + lo * miss;  // exact selects: one product is x * 1, the other x * 0
    hi = hi * hit + mid * miss;
  }
  // Snap to the largest value below hi when it still meets the target (exact whenever [lo, hi)
  // holds one distinct value): values >= hi move down by kBig.
  const Tensor below_hi = x.lt(hi).cast(DType::F32);
  const Tensor snap = (below_hi * g.constant(kBig) + g.constant(-kBig) + x).max(-1, true);
  const Tensor miss = miss_at(snap);
  return snap * (miss * neg + one) + lo * miss;
}

Tensor sample(const Tensor& logits, const SamplerInputs& in, const std::optional<Tensor>& seen,
              int iterations, SamplerFilters filters) {
  if (logits.rank() != 1 && logits.rank() != 2)
    throw Error("nn::sample: logits must be [V] or [n, V], got " + shape_to_string(logits.shape()));
  if (!is_float(logits.dtype()))
    throw Error("nn::sample: logits must be floats, got " + std::string(name(logits.dtype())));
  Tensor x = logits.dtype() == DType::F32 ? logits : logits.cast(DType::F32);
  if (x.rank() == 1) x = x.unsqueeze(0);
  const Dim n = x.dim(0), V = x.dim(1);
  if (!V.e.is_const()) throw Error("nn::sample: the vocabulary (last axis) must be a constant");
  const double vocab = static_cast<double>(V.e.as_const());
  auto f32 = [](const Tensor& b) { return b.cast(DType::F32); };
  auto select = [](const Tensor& c, const Tensor& a, const Tensor& b) {  // exact, a b finite
    return a * c + b * (1.0 - c);
  };

  // 1. Repetition penalty: seen ? (x > 0 ? x / p : x * p) : x, as x * (1/p) and x * p.
  if (seen) {
    Tensor s = seen->dtype() == DType::F32 ? *seen : f32(seen->ne(0.0));
    if (s.rank() == 1) s = s.unsqueeze(0);
    const Tensor p = as_row_param(in.repetition_penalty, DType::F32);
    x = select(s, select(f32(x.gt(0.0)), x * (1.0 / p), x * p), x);
  }
  // 2. Temperature (T = 0: z = x * 1 = x and no noise).
  const Tensor T = as_row_param(in.temperature, DType::F32);
  const Tensor sampling = f32(T.gt(0.0));
  const Tensor z = x * (1.0 / select(sampling, T, T * 0.0 + 1.0));
  const Tensor zmax = z.max(-1, true);
  const Tensor zmin = (-z).max(-1, true).neg();
  // Above every value (m(hi0) = 0), and no wider than needed.
  const Tensor hi0 = zmax + (zmax - zmin) + zmax.abs() * 0x1p-20 + 0x1p-100;
  // 3. top-k: the k-th largest value (k outside [1, V]: V, i.e. off). Every token >= thr is kept.
  Tensor thr = zmin;
  if (filters.top_k) {
    const Tensor k = as_row_param(in.top_k, DType::F32);
    const Tensor k_on = f32(k.ge(1.0).logical_and(k.le(vocab)));
    thr =
        bisect_threshold(z, std::nullopt, zmin, hi0, select(k_on, k, k * 0.0 + vocab), iterations);
  }
  // 4. top-p over the top-k survivors (those below thr lie below every t tried: no mask).
  const Tensor e = (z - zmax).exp();
  if (filters.top_p) {
    const Tensor mass = (filters.top_k ? e * (1.0 - z.lt(thr).cast(DType::F32)) : e).sum(-1, true);
    thr = bisect_threshold(z, e, thr, hi0, as_row_param(in.top_p, DType::F32) * mass, iterations);
  }
  // 5. min-p; the top-p threshold is >= the top-k one, so z >= thr implies the top-k test.
  Tensor keep = 1.0 - e.lt(as_row_param(in.min_p, DType::F32)).cast(DType::F32);
  if (filters.top_k || filters.top_p) keep = (1.0 - z.lt(thr).cast(DType::F32)) * keep;
  // 6. Gumbel-max as an exponential race: argmax(z + g) with g = -log(-log u) is
  // argmax(exp(z - zmax) / E) with E = -log(u) ~ Exp(1) (one log instead of two; tokens with
  // p / p_max < 2^-126 underflow to 0 and are never drawn). Greedy: the score is z itself.
  const Tensor race =
      e * (-(hash_uniform(counter_hash(in.seed, in.step, n, V)).log())).reciprocal();
  // The first token at the score's maximum. A program may compute the score in two kernels (the
  // maximum's and the compare's), its top-p threshold from sums added in different orders, and
  // then disagree with itself about a token at the threshold: no score equals the maximum. The
  // token is then z's first maximum (every filter keeps it), never an index outside the
  // vocabulary.
  const Tensor score = select(sampling, race, z) - (1.0 - keep) * kBig;
  return first_index_of(score, score.max(-1, true), first_index_of(z, zmax, std::nullopt));
}

Tensor greedy_token(const Tensor& logits) {
  if (logits.rank() != 1 && logits.rank() != 2)
    throw Error("nn::greedy_token: logits must be [V] or [n, V], got " +
                shape_to_string(logits.shape()));
  if (!is_float(logits.dtype()))
    throw Error("nn::greedy_token: logits must be floats, got " +
                std::string(name(logits.dtype())));
  Tensor x = logits.dtype() == DType::F32 ? logits : logits.cast(DType::F32);
  return first_max(x.rank() == 1 ? x.unsqueeze(0) : x);
}

}  // namespace luminal::nn
