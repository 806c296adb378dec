// nn modules against plain loops: linear with the [out, in] layout, rope (inverse frequencies as
// transformers computes them, rotate-half application), cached GQA attention over several steps
// (a prefill on top of a filled cache included) on the reference and the CPU backend, SwiGLU.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <random>

#include "luminal/cpu/cpu_backend.hpp"
#include "luminal/nn/attention.hpp"
#include "luminal/nn/linear.hpp"
#include "luminal/nn/mlp.hpp"
#include "luminal/nn/rope.hpp"
#include "luminal/runtime/reference.hpp"
#include "luminal/runtime/session.hpp"
#include "support/expect_error.hpp"

namespace luminal {
namespace {

std::vector<float> rnd(size_t n, uint64_t seed, float scale = 1.0f) {
  std::mt19937_64 r(seed);
  std::uniform_real_distribution<float> u(-scale, scale);
  std::vector<float> v(n);
  for (float& x : v)
    x = u(r);
  return v;
}

float hexf(const char* s) { return std::strtof(s, nullptr); }

TEST(NnLinear, WeightIsOutByIn) {
  Graph g;
  Tensor x = g.tensor("x", {2, 3});
  Tensor w = g.tensor("w", {4, 3});
  Tensor b = g.tensor("b", {4});
  nn::linear(x, w, b).output("y");
  ReferenceRuntime rt(g);
  auto xv = rnd(6, 1), wv = rnd(12, 2), bv = rnd(4, 3);
  rt.set(x, xv);
  rt.set(w, wv);
  rt.set(b, bv);
  rt.execute();
  auto y = rt.get<float>("y");
  for (int i = 0; i < 2; ++i)
    for (int o = 0; o < 4; ++o) {
      double want = bv[o];
      for (int k = 0; k < 3; ++k)
        want += static_cast<double>(xv[i * 3 + k]) * wv[o * 3 + k];
      EXPECT_NEAR(y[i * 4 + o], want, 1e-5);
    }
  testing::expect_error(
      [&] {
        nn::linear(x, g.tensor("w2", {3, 4}));
      },
      {"nn::linear", "in-features 4", "[out, in]"});
}

TEST(NnRope, InverseFrequenciesMatchTransformers) {
  // transformers' values for Llama 3 (head_dim 128, base 500000, factor 8, low 1, high 4,
  // original 8192), recorded with torch: unscaled, low-frequency (/8) and smoothed entries.
  const std::vector<float> plain = nn::rope_inv_freq(128, 500000.0);
  const std::vector<float> l3 =
      nn::rope_inv_freq(128, 500000.0, nn::RopeScaling::llama3(8.0, 1.0, 4.0, 8192));
  ASSERT_EQ(l3.size(), 64u);
  const struct {
    int j;
    const char *plain, *scaled;
  } want[] = {{0, "0x1p+0", "0x1p+0"},
              {1, "0x1.a11582p-1", "0x1.a11582p-1"},
              {20, "0x1.0f5386p-6", "0x1.0f5386p-6"},
              {29, "0x1.56e5b8p-9", "0x1.1bfa0cp-9"},
              {31, "0x1.c7182p-10", "0x1.c12f3cp-11"},
              {34, "0x1.ec07d4p-11", "0x1.765ba4p-13"},
              {40, "0x1.1f91fp-12", "0x1.1f91fp-15"},
              {63, "0x1.4985fep-19", "0x1.4985fep-22"}};
  for (const auto& w : want) {
    // Within one ulp (torch's vectorised pow may round the last bit differently).
    EXPECT_LE(std::abs(std::bit_cast<int32_t>(plain[w.j]) - std::bit_cast<int32_t>(hexf(w.plain))),
              1)
        << w.j;
    EXPECT_LE(std::abs(std::bit_cast<int32_t>(l3[w.j]) - std::bit_cast<int32_t>(hexf(w.scaled))), 1)
        << w.j;
  }
  const std::vector<float> lin = nn::rope_inv_freq(8, 10000.0, nn::RopeScaling::linear(4.0));
  for (int j = 0; j < 4; ++j)
    EXPECT_EQ(lin[j], nn::rope_inv_freq(8, 10000.0)[j] / 4.0f);
  testing::expect_error([] { nn::rope_inv_freq(7, 10000.0); }, "even");
}

TEST(NnRope, RotatesHalvesAtTheStepPositions) {
  Graph g;
  g.declare_dim("s", 1, 8);
  g.declare_dim("c", 1, 64);
  const int heads = 2, hd = 8;
  Tensor x = g.tensor("x", {"s", heads, hd});
  Tensor inv = g.tensor("inv", {hd / 2});
  nn::apply_rope(x, nn::step_positions(g), inv).output("y");
  ReferenceRuntime rt(g);
  const std::vector<float> invv = nn::rope_inv_freq(hd, 10000.0);
  const auto xv = rnd(3 * heads * hd, 5);
  rt.set(x, xv);
  rt.set(inv, invv);
  rt.execute({{"s", 3}, {"c", 40}});  // positions 37, 38, 39
  const auto y = rt.get<float>("y");
  for (int i = 0; i < 3; ++i)
    for (int h = 0; h < heads; ++h)
      for (int j = 0; j < hd / 2; ++j) {
        const float a = static_cast<float>(37 + i) * invv[j];
        const float x1 = xv[(i * heads + h) * hd + j], x2 = xv[(i * heads + h) * hd + j + hd / 2];
        EXPECT_NEAR(y[(i * heads + h) * hd + j], x1 * std::cos(a) - x2 * std::sin(a), 2e-6);
        EXPECT_NEAR(y[(i * heads + h) * hd + j + hd / 2], x2 * std::cos(a) + x1 * std::sin(a),
                    2e-6);
      }
}

// Plain attention over a host cache: rows [0, c) hold every key/value so far; with a window w,
// a query at position p sees keys p - w + 1 .. p only.
std::vector<float> naive_attention(const std::vector<float>& q, const std::vector<float>& kc,
                                   const std::vector<float>& vc, int s, int c, int heads, int kv,
                                   int hd, int window = 0) {
  std::vector<float> out(static_cast<size_t>(s * heads * hd));
  const int groups = heads / kv;
  for (int i = 0; i < s; ++i)
    for (int h = 0; h < heads; ++h) {
      const int kh = h / groups, last = c - s + i;
      const int lo = window > 0 ? std::max(0, last - window + 1) : 0;
      std::vector<double> w(static_cast<size_t>(last + 1));
      double mx = -1e300, sum = 0;
      for (int j = lo; j <= last; ++j) {
        double d = 0;
        for (int e = 0; e < hd; ++e)
          d += static_cast<double>(q[(i * heads + h) * hd + e]) * kc[(j * kv + kh) * hd + e];
        w[j] = d / std::sqrt(static_cast<double>(hd));
        mx = std::max(mx, w[j]);
      }
      for (int j = lo; j <= last; ++j)
        sum += (w[j] = std::exp(w[j] - mx));
      for (int e = 0; e < hd; ++e) {
        double acc = 0;
        for (int j = lo; j <= last; ++j)
          acc += w[j] / sum * vc[(j * kv + kh) * hd + e];
        out[(i * heads + h) * hd + e] = static_cast<float>(acc);
      }
    }
  return out;
}

// nn::cached_attention with `o` (heads 4 over 2 KV heads of 8, a 24-row cache) through steps of
// `steps` tokens, on the reference runtime and a CPU session, against naive_attention (over each
// query's last o.window keys where set); random values from seeds seed + 10 (q), + 20 (k), + 30
// (v) plus the step.
void expect_cached_attention_over_steps(const nn::AttentionOptions& o, std::vector<int> steps,
                                        int seed, const std::string& what, int slots = 24) {
  // (the context may pass the cache's rows in a ring: up to 48 positions)
  const int heads = 4, kv = 2, hd = 8, most = o.ring ? 48 : slots;
  Graph g;
  g.declare_dim("s", 1, 8);
  g.declare_dim("c", 1, most);
  Tensor q = g.tensor("q", {"s", heads, hd});
  Tensor k = g.tensor("k", {"s", kv, hd});
  Tensor v = g.tensor("v", {"s", kv, hd});
  nn::cached_attention(g, q, k, v, "l0", slots, o).output("o");
  ReferenceRuntime ref(g);
  cpu::CpuBackend cpu(1);
  Session ses(g, cpu,
              CompileOptions().search_graph_limit(8).verbose(false).dim_buckets(
                  "s", {DimBucket(1, 1), DimBucket(2, 8)}));
  for (Runtime* rt : {static_cast<Runtime*>(&ref), static_cast<Runtime*>(&ses)}) {
    rt->set("l0.k_cache", std::vector<float>(slots * kv * hd, 0.f));
    rt->set("l0.v_cache", std::vector<float>(slots * kv * hd, 0.f));
  }
  std::vector<float> kc(most * kv * hd), vc(most * kv * hd);
  int c = 0, step = 0;
  for (int s : steps) {
    const auto qv = rnd(s * heads * hd, seed + 10 + step), kv_ = rnd(s * kv * hd, seed + 20 + step),
               vv = rnd(s * kv * hd, seed + 30 + step);
    for (int i = 0; i < s * kv * hd; ++i) {
      kc[c * kv * hd + i] = kv_[i];
      vc[c * kv * hd + i] = vv[i];
    }
    c += s;
    const auto want =
        naive_attention(qv, kc, vc, s, c, heads, kv, hd, static_cast<int>(o.window.value_or(0)));
    for (Runtime* rt : {static_cast<Runtime*>(&ref), static_cast<Runtime*>(&ses)}) {
      rt->set(q, qv);
      rt->set(k, kv_);
      rt->set(v, vv);
      rt->execute({{"s", s}, {"c", c}});
      const auto got = rt->get<float>("o");
      ASSERT_EQ(got.size(), want.size());
      for (size_t i = 0; i < got.size(); ++i)
        ASSERT_NEAR(got[i], want[i], 2e-5)
            << what << " step " << step << " (s " << s << ", c " << c << ") element " << i;
    }
    ++step;
  }
}

TEST(NnAttention, CachedGqaMatchesPlainAttentionOverSteps) {
  // A 3-token prefill, a decode step, then a 2-token prefill on top of the filled cache.
  expect_cached_attention_over_steps({}, {3, 1, 2}, 0, "plain");
  Graph g;
  g.declare_dim("s", 1, 8);
  g.declare_dim("c", 1, 16);
  testing::expect_error(
      [&] {
        nn::cached_attention(g, g.tensor("q3", {"s", 3, 8}), g.tensor("k", {"s", 2, 8}),
                             g.tensor("v", {"s", 2, 8}), "bad", 16);
      },
      {"nn::cached_attention 'bad'", "not a multiple"});
}

// A sliding window (Gemma 3's local layers), masked over the whole cache or read from the first
// row a query of the step sees (AttentionOptions::window_read: the cache read at a run-time
// offset, min(c, s + window - 1) rows): both equal attention over each query's last `window`
// keys, through prefills and decode steps before and past the window.
TEST(NnAttention, SlidingWindowReadOrMaskedMatchesPlainAttention) {
  for (bool read : {false, true}) {
    nn::AttentionOptions o;
    o.window = 5;
    o.window_read = read;
    // Within the window, across it in one prefill, decode steps past it, a prefill on top.
    expect_cached_attention_over_steps(o, {3, 1, 6, 1, 1, 4, 1}, 30, read ? "read" : "masked");
  }
}

// AttentionOptions::ring: a sliding layer's cache as a ring of window + s - 1 positions (12 for a
// window of 5 and steps of up to 8) in 24 rows, position p in rows p mod 12 and p mod 12 + 12.
// The same values as attention over each query's last `window` keys, through prefills and decode
// steps that wrap the ring several times (44 positions), a full 8-token step among them; a ring
// too small for the window and the largest step, or without a window, is refused with the rows it
// needs.
TEST(NnAttention, SlidingWindowInARingMatchesPlainAttention) {
  nn::AttentionOptions o;
  o.window = 5;
  o.ring = true;
  expect_cached_attention_over_steps(o, {3, 1, 6, 1, 1, 4, 1, 8, 1, 7, 2, 1, 1, 5, 1, 1}, 40,
                                     "ring", 24);
  o.window = 2;  // (a ring larger than needed)
  expect_cached_attention_over_steps(o, {8, 1, 1, 8, 3, 1, 2}, 41, "ring of 12, window 2", 24);
  auto attend = [](const nn::AttentionOptions& bad) {
    Graph g;
    g.declare_dim("s", 1, 8);
    g.declare_dim("c", 1, 64);
    nn::cached_attention(g, g.tensor("q", {"s", 4, 8}), g.tensor("k", {"s", 2, 8}),
                         g.tensor("v", {"s", 2, 8}), "l", 22, bad);
  };
  o.window = 5;
  testing::expect_error([&] { attend(o); },
                        {"nn::cached_attention 'l'", "ring cache of 22 rows", "window of 5",
                         "step of 8", "2 (window + s - 1) = 24 rows"});
  nn::AttentionOptions no_window;
  no_window.ring = true;
  testing::expect_error([&] { attend(no_window); }, {"'l'", "a ring cache needs a sliding window"});
}

TEST(NnMlp, SwigluMatchesLoops) {
  Graph g;
  Tensor x = g.tensor("x", {2, 4});
  Tensor wg = g.tensor("wg", {6, 4}), wu = g.tensor("wu", {6, 4}), wd = g.tensor("wd", {4, 6});
  nn::swiglu_mlp(x, wg, wu, wd).output("y");
  ReferenceRuntime rt(g);
  const auto xv = rnd(8, 1), gv = rnd(24, 2), uv = rnd(24, 3), dv = rnd(24, 4);
  rt.set(x, xv);
  rt.set(wg, gv);
  rt.set(wu, uv);
  rt.set(wd, dv);
  rt.execute();
  const auto y = rt.get<float>("y");
  for (int i = 0; i < 2; ++i)
    for (int o = 0; o < 4; ++o) {
      double acc = 0;
      for (int h = 0; h < 6; ++h) {
        double a = 0, b = 0;
        for (int k = 0; k < 4; ++k) {
          a += static_cast<double>(xv[i * 4 + k]) * gv[h * 4 + k];
          b += static_cast<double>(xv[i * 4 + k]) * uv[h * 4 + k];
        }
        acc += a / (1 + std::exp(-a)) * b * dv[o * 6 + h];
      }
      EXPECT_NEAR(y[i * 4 + o], acc, 1e-5);
    }
}

}  // namespace
}  // namespace luminal
