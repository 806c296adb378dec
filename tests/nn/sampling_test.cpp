// In-graph sampling (nn/sampling.hpp) on the ReferenceRuntime and the CPU backend: the counter
// hash against its host twin (bit-exact) and its uniformity (chi-square), greedy = argmax (and
// nn::greedy_token, the sampler-free head, agrees),
// top-k = 1 = greedy, reproducibility and backend agreement, filters that never let a masked
// token through, empirical frequencies within 5 sigma, repetition penalty, parameter checks.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <numeric>
#include <random>

#include "luminal/cpu/cpu_backend.hpp"
#include "luminal/nn/sampling.hpp"
#include "luminal/runtime/reference.hpp"
#include "luminal/runtime/session.hpp"
#include "support/expect_error.hpp"

namespace luminal {
namespace {

using nn::SamplingConfig;

// One sampler graph of fixed shape [n, V] on both runtimes (the CPU session compiles once).
struct Sampler {
  Graph g;
  Tensor logits, seen, token;
  nn::SamplerInputs in;
  int n, V;
  std::unique_ptr<ReferenceRuntime> ref;
  std::unique_ptr<cpu::CpuBackend> cpu;
  std::unique_ptr<Session> ses;

  Sampler(int rows, int vocab, nn::SamplerFilters filters = {}) : n(rows), V(vocab) {
    logits = g.tensor("logits", {rows, vocab});
    seen = g.tensor("seen", {rows, vocab});
    in = nn::sampler_inputs(g);
    token = nn::sample(logits, in, seen, 16, filters).output("token");
    ref = std::make_unique<ReferenceRuntime>(g);
    cpu = std::make_unique<cpu::CpuBackend>(1);
    ses = std::make_unique<Session>(g, *cpu, CompileOptions().search_graph_limit(2).verbose(false));
  }
  Runtime& rt(bool on_cpu) { return on_cpu ? static_cast<Runtime&>(*ses) : *ref; }
  std::vector<int32_t> run(bool on_cpu, const std::vector<float>& x, const SamplingConfig& c,
                           int64_t step = 0, std::vector<float> seen_v = {}) {
    Runtime& r = rt(on_cpu);
    if (seen_v.empty()) seen_v.assign(static_cast<size_t>(n) * V, 0.f);
    r.set(logits, x);
    r.set(seen, seen_v);
    nn::set_sampler_inputs(r, in, c, step);
    r.execute();
    return r.get<int32_t>(token);
  }
};

Sampler& toy() {  // 4096 rows of an 8-token distribution
  static Sampler s(4096, 8);
  return s;
}
Sampler& wide() {  // 64 rows of 300 tokens
  static Sampler s(64, 300);
  return s;
}

// The toy distribution (logits), the same in every row.
const std::vector<float> kToy = {1.0f, 2.5f, 0.3f, 2.0f, -1.0f, 1.7f, 0.0f, 2.4f};

std::vector<float> tile(const std::vector<float>& row, int n) {
  std::vector<float> out;
  for (int i = 0; i < n; ++i)
    out.insert(out.end(), row.begin(), row.end());
  return out;
}

std::vector<double> softmax(const std::vector<float>& x, double T) {
  std::vector<double> p(x.size());
  const double m = *std::max_element(x.begin(), x.end());
  double z = 0;
  for (size_t i = 0; i < x.size(); ++i)
    z += p[i] = std::exp((x[i] - m) / T);
  for (double& v : p)
    v /= z;
  return p;
}

// The kept set by transformers' rules (sorting on the host): top-k, then top-p over the
// renormalised survivors, then min-p.
std::vector<bool> kept(const std::vector<float>& x, const SamplingConfig& c) {
  const size_t V = x.size();
  std::vector<double> z(V);
  for (size_t i = 0; i < V; ++i)
    z[i] = x[i] / (c.temperature > 0 ? c.temperature : 1.0);
  std::vector<size_t> order(V);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return z[a] > z[b]; });
  std::vector<bool> keep(V, true);
  if (c.top_k > 0 && static_cast<size_t>(c.top_k) < V) {
    const double kth = z[order[static_cast<size_t>(c.top_k) - 1]];
    for (size_t i = 0; i < V; ++i)
      keep[i] = z[i] >= kth;
  }
  const double m = z[order[0]];
  double total = 0;
  for (size_t i = 0; i < V; ++i)
    if (keep[i]) total += std::exp(z[i] - m);
  double mass = 0;
  std::vector<bool> keep_p(V, false);
  for (size_t r = 0; r < V; ++r) {
    const size_t i = order[r];
    if (!keep[i]) continue;
    if (mass < c.top_p * total) keep_p[i] = true;
    mass += std::exp(z[i] - m);
  }
  for (size_t i = 0; i < V; ++i)
    keep[i] = keep[i] && keep_p[i] && std::exp(z[i] - m) >= c.min_p;
  return keep;
}

TEST(NnSamplingHash, BitExactOnBothBackendsAndUniform) {
  Graph g;
  const nn::SamplerInputs in = nn::sampler_inputs(g);
  const int rows = 4, cols = 8192;
  const Tensor h = nn::counter_hash(in.seed, in.step, rows, cols);
  h.output("h");
  nn::hash_uniform(h).output("u");
  ReferenceRuntime ref(g);
  cpu::CpuBackend cpu(1);
  Session ses(g, cpu, CompileOptions().search_graph_limit(2).verbose(false));
  const uint64_t seed = 0x9E3779B97F4A7C15ull;  // both 31-bit words nonzero
  const int64_t step = 12345;
  std::vector<int64_t> want(static_cast<size_t>(rows) * cols);
  for (int r = 0; r < rows; ++r)
    for (int i = 0; i < cols; ++i)
      want[static_cast<size_t>(r) * cols + i] = nn::counter_hash_host(seed, step, r, i);
  for (Runtime* rt : {static_cast<Runtime*>(&ref), static_cast<Runtime*>(&ses)}) {
    nn::set_sampler_inputs(*rt, in, SamplingConfig{.seed = seed}, step);
    rt->execute();
    const auto got = rt->get<int64_t>("h");
    const auto u = rt->get<float>("u");
    ASSERT_EQ(got, want);
    for (size_t k = 0; k < want.size(); ++k) {
      ASSERT_EQ(u[k], nn::hash_uniform_host(want[k])) << k;
      ASSERT_GT(u[k], 0.f);
      ASSERT_LT(u[k], 1.f);
    }
  }
  // Chi-square of 64 buckets of u over the 32768 values (df 63: mean 63, sd 11.2), and of
  // 16 x 16 buckets of neighbouring pairs (df 255: sd 22.6): within 5 sigma.
  std::vector<double> c1(64), c2(256);
  for (size_t k = 0; k < want.size(); ++k) {
    const float u = nn::hash_uniform_host(want[k]);
    c1[static_cast<size_t>(u * 64)] += 1;
    if (k % 2 == 0) {
      const float v = nn::hash_uniform_host(want[k + 1]);
      c2[static_cast<size_t>(u * 16) * 16 + static_cast<size_t>(v * 16)] += 1;
    }
  }
  auto chi2 = [](const std::vector<double>& c, double n) {
    double e = n / static_cast<double>(c.size()), x = 0;
    for (double v : c)
      x += (v - e) * (v - e) / e;
    return x;
  };
  EXPECT_LT(std::abs(chi2(c1, 32768) - 63), 5 * std::sqrt(2.0 * 63));
  EXPECT_LT(std::abs(chi2(c2, 16384) - 255), 5 * std::sqrt(2.0 * 255));
  // Over steps and seeds (the counters the generation loop varies), on the host twin.
  std::vector<double> cs(64), cd(64);
  for (int k = 0; k < 32768; ++k) {
    cs[static_cast<size_t>(nn::hash_uniform_host(nn::counter_hash_host(7, k, 0, 3)) * 64)] += 1;
    cd[static_cast<size_t>(nn::hash_uniform_host(nn::counter_hash_host(k, 0, 0, 3)) * 64)] += 1;
  }
  EXPECT_LT(std::abs(chi2(cs, 32768) - 63), 5 * std::sqrt(2.0 * 63));
  EXPECT_LT(std::abs(chi2(cd, 32768) - 63), 5 * std::sqrt(2.0 * 63));
  // A broken hash fails: the affine rounds alone (no Feistel step) are a lattice.
  std::vector<double> bad(256);
  for (int k = 0; k < 16384; ++k) {
    const auto lin = [](int64_t i) { return ((i * 48271 + 11) % 2147483647 * 69069) % 2147483648; };
    bad[static_cast<size_t>(lin(2 * k) * 16 / 2147483648) * 16 +
        static_cast<size_t>(lin(2 * k + 1) * 16 / 2147483648)] += 1;
  }
  EXPECT_GT(chi2(bad, 16384), 255 + 5 * std::sqrt(2.0 * 255));
}

TEST(NnSampling, GreedyIsArgmaxWithLowestIndexOnTies) {
  Sampler& s = wide();
  std::mt19937 r(3);
  std::uniform_int_distribution<int> q(-20, 20);
  std::vector<float> x(static_cast<size_t>(s.n) * s.V);
  for (float& v : x)
    v = static_cast<float>(q(r)) * 0.25f;  // many ties, at the maximum too
  std::vector<int32_t> want(static_cast<size_t>(s.n));
  for (int row = 0; row < s.n; ++row) {
    const float* p = x.data() + static_cast<size_t>(row) * s.V;
    want[static_cast<size_t>(row)] = static_cast<int32_t>(std::max_element(p, p + s.V) - p);
  }
  // Greedy with filters set (they never remove the maximum) and any seed.
  for (const SamplingConfig& c :
       {SamplingConfig{}, SamplingConfig{.top_k = 3, .top_p = 0.5, .min_p = 0.3, .seed = 99}}) {
    EXPECT_EQ(s.run(false, x, c), want);
    EXPECT_EQ(s.run(true, x, c), want);
  }
  // top-k = 1 at any temperature and seed is greedy too (with a unique maximum: top-k keeps
  // every token tied with the k-th value, as transformers does).
  std::normal_distribution<float> nd(0.f, 3.f);
  for (float& v : x)
    v = nd(r);
  for (int row = 0; row < s.n; ++row) {
    const float* p = x.data() + static_cast<size_t>(row) * s.V;
    want[static_cast<size_t>(row)] = static_cast<int32_t>(std::max_element(p, p + s.V) - p);
  }
  for (uint64_t seed : {1, 2, 3})
    EXPECT_EQ(s.run(true, x, {.temperature = 1.5, .top_k = 1, .seed = seed}, 7), want);
  EXPECT_EQ(s.run(false, x, {.temperature = 1.5, .top_k = 1, .seed = 5}, 7), want);
  EXPECT_EQ(s.run(true, x, {.temperature = 0.7, .top_p = 1e-6, .seed = 5}, 7), want);
  EXPECT_EQ(s.run(true, x, {.temperature = 0.7, .min_p = 1.0, .seed = 5}, 7), want);
}

// greedy_token (the head a model compiles instead of the sampler for greedy decoding): the same
// lowest-index argmax, on [n, V] and [V] logits of any float dtype, on both runtimes.
TEST(NnSampling, GreedyTokenIsTheSamplersGreedyChoice) {
  std::mt19937 r(4);
  std::uniform_int_distribution<int> q(-20, 20);
  const int n = 16, V = 300;
  std::vector<float> x(static_cast<size_t>(n) * V);
  for (float& v : x)
    v = static_cast<float>(q(r)) * 0.25f;  // many ties, at the maximum too
  std::vector<int32_t> want(static_cast<size_t>(n));
  for (int row = 0; row < n; ++row) {
    const float* p = x.data() + static_cast<size_t>(row) * V;
    want[static_cast<size_t>(row)] = static_cast<int32_t>(std::max_element(p, p + V) - p);
  }
  Graph g;
  const Tensor logits = g.tensor("logits", {n, V});
  const Tensor one = g.tensor("one", {V}, DType::BF16);
  const size_t before = g.nodes().size();
  const Tensor token = nn::greedy_token(logits).output("token");
  EXPECT_LE(g.nodes().size() - before, 20u);  // vs ~1300 for the sampler
  const Tensor token1 = nn::greedy_token(one).output("token1");
  ASSERT_EQ(token.rank(), 1);
  EXPECT_EQ(token.shape()[0].as_const(), n);
  ASSERT_EQ(token1.rank(), 1);
  EXPECT_EQ(token1.shape()[0].as_const(), 1);
  ReferenceRuntime ref(g);
  cpu::CpuBackend cpu(1);
  Session ses(g, cpu, CompileOptions().search_graph_limit(2).verbose(false));
  const std::vector<float> row0(x.begin(), x.begin() + V);
  for (Runtime* rt : {static_cast<Runtime*>(&ref), static_cast<Runtime*>(&ses)}) {
    rt->set(logits, x);
    rt->set(one, row0);
    rt->execute();
    EXPECT_EQ(rt->get<int32_t>(token), want);
    EXPECT_EQ(rt->get<int32_t>(token1), std::vector<int32_t>{want[0]});
  }
  EXPECT_EQ(toy().run(true, tile(kToy, toy().n), {}), std::vector<int32_t>(4096, 1));
  testing::expect_error([&] { nn::greedy_token(g.tensor("i", {4}, DType::I32)); },
                        {"greedy_token", "floats"});
  EXPECT_FALSE(SamplingConfig{}.needs_sampler());
  EXPECT_FALSE((SamplingConfig{.top_k = 5, .top_p = 0.5, .min_p = 0.1}.needs_sampler()));
  EXPECT_TRUE(SamplingConfig{.temperature = 0.5}.needs_sampler());
  EXPECT_TRUE(SamplingConfig{.repetition_penalty = 1.1}.needs_sampler());
}

// A sampler built without the top-k and/or top-p filters draws the same tokens as the full one
// for configs that do not use them (and is much smaller).
TEST(NnSampling, FiltersLeftOutDrawTheSameTokens) {
  Sampler& full = wide();
  Sampler none(full.n, full.V, {.top_k = false, .top_p = false});
  Sampler only_k(full.n, full.V, {.top_k = true, .top_p = false});
  EXPECT_LT(none.g.nodes().size() * 2, full.g.nodes().size());
  std::mt19937 r(8);
  std::normal_distribution<float> nd(0.f, 2.f);
  std::vector<float> x(static_cast<size_t>(full.n) * full.V), seen(x.size());
  for (float& v : x)
    v = nd(r);
  for (size_t i = 0; i < seen.size(); i += 7)
    seen[i] = 1.f;
  for (uint64_t seed : {1, 2}) {
    const SamplingConfig c{
        .temperature = 0.9, .min_p = 0.05, .repetition_penalty = 1.3, .seed = seed};
    const std::vector<int32_t> want = full.run(true, x, c, 3, seen);
    EXPECT_EQ(none.run(true, x, c, 3, seen), want);
    EXPECT_EQ(none.run(false, x, c, 3, seen), want);
    SamplingConfig k = c;
    k.top_k = 5;
    EXPECT_EQ(only_k.run(true, x, k, 3, seen), full.run(true, x, k, 3, seen));
  }
  const nn::SamplerFilters no_k{.top_k = false, .top_p = true};
  const nn::SamplerFilters no_p{.top_k = true, .top_p = false};
  const nn::SamplerFilters neither{.top_k = false, .top_p = false};
  EXPECT_TRUE(neither.serve({.top_k = 5, .top_p = 0.5}));  // greedy: no filter is used
  EXPECT_FALSE(no_k.serve({.temperature = 1, .top_k = 5}));
  EXPECT_FALSE(no_p.serve({.temperature = 1, .top_p = 0.5}));
  EXPECT_TRUE(no_p.serve({.temperature = 1, .top_k = 5}));
}

TEST(NnSampling, SeededReproducibleAndSameOnBothBackends) {
  Sampler& s = wide();
  std::mt19937 r(5);
  std::normal_distribution<float> nd(0.f, 2.f);
  std::vector<float> x(static_cast<size_t>(s.n) * s.V);
  for (float& v : x)
    v = nd(r);
  const SamplingConfig c{.temperature = 0.9, .top_k = 40, .top_p = 0.9, .min_p = 0.02, .seed = 42};
  const auto a = s.run(false, x, c, 3);
  EXPECT_EQ(s.run(false, x, c, 3), a);
  EXPECT_EQ(s.run(true, x, c, 3), a);
  EXPECT_EQ(s.run(true, x, c, 3), a);
  // Another seed or another step gives other draws.
  SamplingConfig c2 = c;
  c2.seed = 43;
  EXPECT_NE(s.run(true, x, c2, 3), a);
  EXPECT_NE(s.run(true, x, c, 4), a);
  // The sampled rows are not all the argmax (the noise acts).
  int argmaxes = 0;
  for (int row = 0; row < s.n; ++row) {
    const float* p = x.data() + static_cast<size_t>(row) * s.V;
    argmaxes += a[static_cast<size_t>(row)] == std::max_element(p, p + s.V) - p;
  }
  EXPECT_LT(argmaxes, s.n);
}

TEST(NnSampling, FiltersNeverReturnAMaskedToken) {
  Sampler& s = toy();
  const auto x = tile(kToy, s.n);
  const SamplingConfig configs[] = {
      {.temperature = 1.0, .top_k = 3},
      {.temperature = 2.0, .top_p = 0.6},
      {.temperature = 1.0, .min_p = 0.3},
      {.temperature = 3.0, .top_k = 5, .top_p = 0.7, .min_p = 0.1},
  };
  for (const SamplingConfig& c0 : configs) {
    const std::vector<bool> keep = kept(kToy, c0);
    const int n_kept = static_cast<int>(std::count(keep.begin(), keep.end(), true));
    ASSERT_GE(n_kept, 2);
    ASSERT_LT(n_kept, 8);
    std::vector<int> hits(8);
    for (uint64_t seed = 0; seed < 4; ++seed) {
      SamplingConfig c = c0;
      c.seed = seed;
      // The CPU backend for every seed; the reference for one config.
      const bool on_cpu = seed > 0 || &c0 != &configs[0];
      for (int32_t t : s.run(on_cpu, x, c, static_cast<int64_t>(seed))) {
        ASSERT_TRUE(t >= 0 && t < 8 && keep[static_cast<size_t>(t)])
            << "token " << t << " top_k " << c.top_k << " top_p " << c.top_p;
        hits[static_cast<size_t>(t)]++;
      }
    }
    for (int t = 0; t < 8; ++t)  // and every kept token is drawn
      EXPECT_EQ(hits[static_cast<size_t>(t)] > 0, keep[static_cast<size_t>(t)]) << t;
  }
}

TEST(NnSampling, ThresholdsAreExactOnNearTies) {
  // Logits one ulp apart: the bisection brackets, then snaps to the exact k-th value.
  Sampler& s = toy();
  std::vector<float> row(8);
  float v = 1.0f;
  for (float& e : row) {
    e = v;
    v = std::nextafter(v, 2.0f);
  }
  const auto x = tile(row, s.n);
  for (int k : {1, 2, 3, 7}) {
    for (int32_t t : s.run(true, x, {.temperature = 1.0, .top_k = k, .seed = 11}))
      ASSERT_GE(t, 8 - k) << "k " << k;
  }
}

// Counts of s.n draws against probabilities p: every |count - n p| within 5 sigma.
void expect_frequencies(const std::vector<int32_t>& draws, const std::vector<double>& p) {
  std::vector<double> count(p.size());
  for (int32_t t : draws)
    count[static_cast<size_t>(t)] += 1;
  const double n = static_cast<double>(draws.size());
  for (size_t i = 0; i < p.size(); ++i) {
    const double sd = std::sqrt(n * p[i] * (1 - p[i]));
    EXPECT_LE(std::abs(count[i] - n * p[i]), 5 * sd + 1e-9)
        << "token " << i << ": " << count[i] << " draws, expected " << n * p[i];
  }
}

TEST(NnSampling, FrequenciesMatchTheDistribution) {
  Sampler& s = toy();
  const auto x = tile(kToy, s.n);
  for (double T : {1.0, 0.6}) {
    const SamplingConfig c{.temperature = T, .seed = 2024};
    expect_frequencies(s.run(true, x, c, 1), softmax(kToy, T));
  }
  // top-p 0.75 at T = 1: the renormalised survivors.
  const SamplingConfig c{.temperature = 1.0, .top_p = 0.75, .seed = 77};
  const std::vector<bool> keep = kept(kToy, c);
  std::vector<float> masked = kToy;
  for (size_t i = 0; i < 8; ++i)
    if (!keep[i]) masked[i] = -1e30f;
  expect_frequencies(s.run(true, x, c, 2), softmax(masked, 1.0));
  expect_frequencies(s.run(false, x, c, 2), softmax(masked, 1.0));
}

TEST(NnSampling, RepetitionPenalty) {
  Sampler& s = toy();
  // Token 1 (2.5) is the argmax; seen and penalised by 1.2 it becomes 2.0833 < 2.4 (token 7).
  // A seen negative logit is multiplied: token 4 (-1.0) -> -1.2.
  std::vector<float> seen(8, 0.f);
  seen[1] = 1.f;
  const auto x = tile(kToy, s.n);
  const auto sv = tile(seen, s.n);
  for (bool on_cpu : {false, true}) {
    EXPECT_EQ(s.run(on_cpu, x, {.repetition_penalty = 1.2}, 0, sv)[0], 7);
    EXPECT_EQ(s.run(on_cpu, x, {.repetition_penalty = 1.02}, 0, sv)[0], 1);  // 2.451 > 2.4
  }
  // Sampled frequencies follow the penalised distribution.
  std::vector<float> pen = kToy;
  pen[1] = kToy[1] / 1.2f;
  seen[4] = 1.f;
  pen[4] = kToy[4] * 1.2f;
  expect_frequencies(s.run(true, x, {.temperature = 1.0, .repetition_penalty = 1.2, .seed = 5}, 0,
                           tile(seen, s.n)),
                     softmax(pen, 1.0));
}

TEST(NnSampling, ConfigValidationNamesFieldAndRange) {
  testing::expect_error([] { SamplingConfig{.temperature = -1}.validate(); },
                        {"temperature", ">= 0"});
  testing::expect_error([] { SamplingConfig{.top_p = 1.5}.validate(); }, {"top_p", "(0, 1]"});
  testing::expect_error([] { SamplingConfig{.top_p = 0}.validate(); }, {"top_p", "(0, 1]"});
  testing::expect_error([] { SamplingConfig{.min_p = -0.1}.validate(); }, {"min_p", "[0, 1]"});
  testing::expect_error([] { SamplingConfig{.top_k = -2}.validate(); }, {"top_k", ">= 0"});
  testing::expect_error([] { SamplingConfig{.repetition_penalty = 0}.validate(); },
                        {"repetition_penalty", "> 0"});
  Graph g;
  const nn::SamplerInputs in = nn::sampler_inputs(g);
  testing::expect_error([&] { nn::sample(g.tensor("x", {2, 3, 4}), in); }, "[V] or [n, V]");
}

}  // namespace
}  // namespace luminal

namespace luminal {
namespace {

TEST(NnSampling, FirstIndexOfFallsBackWhereNoValueEqualsTheMaximum) {
  // Row 0: m present twice (the first); row 1: m above every value, as when a program computes
  // the score twice with bits apart (the fallback); row 2: m present at the end.
  Graph g;
  Tensor x = g.tensor("x", {3, 5});
  Tensor m = g.tensor("m", {3, 1});
  Tensor fb = g.tensor("fb", {3}, DType::I32);
  nn::first_index_of(x, m, fb).output("with");
  nn::first_index_of(x, m, std::nullopt).output("without");
  const std::vector<float> xv = {1, 4, 2, 4, 0, 3, 1, 2, 0, 1, 5, 6, 7, 8, 9};
  const std::vector<float> mv = {4, std::nextafter(3.0f, 4.0f), 9};
  const std::vector<int32_t> fbv = {3, 2, 1};
  ReferenceRuntime ref(g);
  cpu::CpuBackend cpu(1);
  Session ses(g, cpu, CompileOptions().search_graph_limit(4).verbose(false));
  for (Runtime* rt : {static_cast<Runtime*>(&ref), static_cast<Runtime*>(&ses)}) {
    rt->set(x, xv);
    rt->set(m, mv);
    rt->set(fb, fbv);
    rt->execute();
    EXPECT_EQ(rt->get<int32_t>("with"), (std::vector<int32_t>{1, 2, 4}));
    EXPECT_EQ(rt->get<int32_t>("without"), (std::vector<int32_t>{1, 1 << 30, 4}));
  }
}

}  // namespace
}  // namespace luminal
