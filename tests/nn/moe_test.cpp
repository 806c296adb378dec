// nn::router_topk and nn::expert_linear on the reference against plain loops: ids largest first
// (the first of equal probabilities first), weights renormalised or not, k = 1 and k = E; an
// expert linear layer with x shared by a token's choices or one row per choice, repeated experts
// included; shapes that do not fit are errors naming them. Both forms of the top-k (repeated
// argmax, ranks from every pair) against a sort by the router's order, bit for bit: ties, NaN,
// infinities, values below -1, k = 1, k = E, E not a multiple of 32, several rows.
// nn::router_softmax_topk against the same sort of the softmax's probabilities, the larger logit
// first where probabilities round equal, and ids whose computation sums no floats.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "luminal/nn/moe.hpp"
#include "luminal/runtime/reference.hpp"
#include "support/expect_error.hpp"

namespace luminal {
namespace {

TEST(NnRouterTopk, LargestFirstFirstOfTiesAndRenormalised) {
  // Row 0 has a tie between experts 1 and 3 (0.3): expert 1 comes first.
  const std::vector<float> probs = {0.1f, 0.3f, 0.05f, 0.3f, 0.25f,  //
                                    0.5f, 0.1f, 0.2f,  0.1f, 0.1f};
  for (int64_t k : {1, 2, 5})
    for (bool renorm : {false, true}) {
      Graph g;
      Tensor p = g.tensor("p", {2, 5});
      const nn::TopK top = nn::router_topk(p, k, renorm);
      top.ids.output("ids");
      top.weights.output("w");
      ReferenceRuntime rt(g);
      rt.set(p, probs);
      rt.execute();
      const std::vector<int32_t> ids = rt.get<int32_t>("ids");
      const std::vector<float> w = rt.get<float>("w");
      const std::vector<std::vector<int32_t>> order = {{1, 3, 4, 0, 2}, {0, 2, 1, 3, 4}};
      for (int r = 0; r < 2; ++r) {
        double sum = 0;
        for (int64_t j = 0; j < k; ++j)
          sum += probs[static_cast<size_t>(r * 5 + order[r][j])];
        for (int64_t j = 0; j < k; ++j) {
          const int32_t e = order[r][static_cast<size_t>(j)];
          EXPECT_EQ(ids[static_cast<size_t>(r * k + j)], e) << "k=" << k << " row " << r;
          const double want = probs[static_cast<size_t>(r * 5 + e)] / (renorm ? sum : 1.0);
          EXPECT_NEAR(w[static_cast<size_t>(r * k + j)], want, 1e-6) << "k=" << k;
        }
      }
    }
}

// The router's order: larger first, a NaN counting as +inf (so before every number; a NaN and a
// real +inf by index), equal ones by index.
bool before(float a, int ia, float b, int ib) {
  const float inf = std::numeric_limits<float>::infinity();
  const float ka = std::isnan(a) ? inf : a, kb = std::isnan(b) ? inf : b;
  if (ka != kb) return ka > kb;
  return ia < ib;
}

struct Choice {
  std::vector<int32_t> ids;
  std::vector<float> raw;  // the chosen probabilities
};

Choice topk_loop(const std::vector<float>& p, int64_t S, int64_t E, int64_t k) {
  Choice c;
  for (int64_t r = 0; r < S; ++r) {
    std::vector<int> idx(static_cast<size_t>(E));
    std::iota(idx.begin(), idx.end(), 0);
    const float* row = p.data() + r * E;
    std::sort(idx.begin(), idx.end(), [&](int a, int b) { return before(row[a], a, row[b], b); });
    for (int64_t j = 0; j < k; ++j) {
      c.ids.push_back(idx[static_cast<size_t>(j)]);
      // As the graph gets it: a sum over the row of zeros and this value (-0 becomes +0).
      c.raw.push_back(static_cast<float>(0.0 + row[idx[static_cast<size_t>(j)]]));
    }
  }
  return c;
}

/// Rows of E values: row 0 few distinct values (many ties), row 1 NaNs and +inf among ties, row 2
/// infinities, zeros of both signs and values below -1 (-inf among them), the rest random in
/// [0, 1) (a softmax's range).
std::vector<float> router_rows(int64_t S, int64_t E, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(0, 1);
  std::uniform_int_distribution<int> level(0, 3);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> p(static_cast<size_t>(S * E));
  for (int64_t r = 0; r < S; ++r)
    for (int64_t e = 0; e < E; ++e) {
      float& x = p[static_cast<size_t>(r * E + e)];
      const int l = level(rng);
      switch (r) {
        case 0: x = 0.125f * static_cast<float>(l); break;
        case 1: x = l == 0 ? nan : l == 3 ? inf : 0.25f * static_cast<float>(l); break;
        case 2: {
          const float v[] = {inf, -inf, 0.0f, -0.0f, -1.0f, -3.5f, -1.0f, 2.0f};
          x = v[static_cast<size_t>(l + 4 * (e % 2))];
          break;
        }
        default: x = u(rng);
      }
    }
  return p;
}

TEST(NnRouterTopk, BothFormsEqualASortByTheRoutersOrder) {
  constexpr int64_t S = 6;
  for (int64_t E : {5, 37, 128})
    for (int64_t k : {int64_t{1}, int64_t{3}, E}) {
      const std::vector<float> probs = router_rows(S, E, static_cast<uint64_t>(E * 100 + k));
      const Choice want = topk_loop(probs, S, E, k);
      std::vector<int32_t> ids_of[2];
      std::vector<float> w_of[2];
      int f = 0;
      for (nn::TopKForm form : {nn::TopKForm::Argmax, nn::TopKForm::Ranks}) {
        Graph g;
        g.declare_dim("s", 1, 16);
        Tensor p = g.tensor("p", {"s", E});
        const nn::TopK raw = nn::router_topk(p, k, false, form);
        const nn::TopK norm = nn::router_topk(p, k, true, form);
        raw.ids.output("ids");
        raw.weights.output("w");
        norm.weights.output("wn");
        ReferenceRuntime rt(g);
        g.set_dim("s", S);
        rt.set(p, probs);
        rt.execute();
        const std::vector<int32_t> ids = rt.get<int32_t>("ids");
        const std::vector<float> w = rt.get<float>("w"), wn = rt.get<float>("wn");
        const char* name = form == nn::TopKForm::Argmax ? "argmax" : "ranks";
        ASSERT_EQ(ids, want.ids) << name << " E=" << E << " k=" << k;
        ASSERT_EQ(0, std::memcmp(w.data(), want.raw.data(), w.size() * sizeof(float)))
            << name << " E=" << E << " k=" << k;
        // Renormalised: the chosen values over their sum (rows 3.. only: the others hold NaN and
        // infinities, whose quotients the bitwise comparison between the forms below covers).
        for (int64_t r = 3; r < S; ++r) {
          double sum = 0;
          for (int64_t j = 0; j < k; ++j)
            sum += want.raw[static_cast<size_t>(r * k + j)];
          for (int64_t j = 0; j < k; ++j) {
            const size_t at = static_cast<size_t>(r * k + j);
            EXPECT_NEAR(wn[at], want.raw[at] / sum, 1e-6) << name << " E=" << E << " k=" << k;
          }
        }
        ids_of[f] = ids;
        w_of[f++] = wn;
      }
      EXPECT_EQ(ids_of[0], ids_of[1]);
      ASSERT_EQ(w_of[0].size(), w_of[1].size());
      EXPECT_EQ(0, std::memcmp(w_of[0].data(), w_of[1].data(), w_of[0].size() * sizeof(float)))
          << "E=" << E << " k=" << k;
    }
}

// Logits rows for router_softmax_topk: ties, a NaN, a +inf, all -inf, some -inf among numbers,
// then random in [-4, 4).
std::vector<float> logit_rows(int64_t S, int64_t E, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-4, 4);
  std::uniform_int_distribution<int> level(0, 3);
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> x(static_cast<size_t>(S * E));
  for (int64_t r = 0; r < S; ++r)
    for (int64_t e = 0; e < E; ++e) {
      float& v = x[static_cast<size_t>(r * E + e)];
      const int l = level(rng);
      switch (r) {
        case 0: v = 0.5f * static_cast<float>(l); break;
        case 1: v = e == E / 2 ? nan : 0.5f * static_cast<float>(l); break;
        case 2: v = e == E - 1 ? inf : u(rng); break;
        case 3: v = -inf; break;
        case 4: v = l == 0 ? -inf : u(rng); break;
        default: v = u(rng);
      }
    }
  return x;
}

// Every SumReduce that `id` depends on (through inputs and declared alternatives), with the
// dtype it sums.
std::vector<DType> sums_behind(const Graph& g, NodeId id) {
  std::vector<NodeId> stack = {id};
  std::vector<bool> seen(g.nodes().size());
  std::vector<DType> sums;
  while (!stack.empty()) {
    const NodeId n = stack.back();
    stack.pop_back();
    if (seen[static_cast<size_t>(n)]) continue;
    seen[static_cast<size_t>(n)] = true;
    const Node& node = g.node(n);
    if (node.op == OpKind::SumReduce) sums.push_back(g.node(node.inputs[0].node).dtype);
    for (const Operand& in : node.inputs)
      stack.push_back(in.node);
    for (const Graph::Alternative& a : g.alternatives())
      if (a.primary == n) stack.push_back(a.alt);
  }
  return sums;
}

bool is_float(DType t) {
  return t == DType::F32 || t == DType::F16 || t == DType::BF16 || t == DType::F64;
}

TEST(NnRouterSoftmaxTopk, RanksByTheLogitsAndWeighsByTheSoftmax) {
  constexpr int64_t S = 8;
  for (int64_t E : {5, 37, 128})
    for (int64_t k : {int64_t{1}, int64_t{3}, E}) {
      const std::vector<float> logits = logit_rows(S, E, static_cast<uint64_t>(E * 100 + k));
      std::vector<int32_t> ids_of[3];
      std::vector<float> w_of[3];
      int f = 0;
      for (nn::TopKForm form :
           {nn::TopKForm::Argmax, nn::TopKForm::Ranks, nn::TopKForm::Searched}) {
        Graph g;
        g.declare_dim("s", 1, 16);
        Tensor x = g.tensor("x", {"s", E});
        const nn::TopK top = nn::router_softmax_topk(x, k, true, form);
        const nn::TopK raw = nn::router_softmax_topk(x, k, false, form);
        x.softmax(1).output("p");
        top.ids.output("ids");
        top.weights.output("wn");
        raw.weights.output("w");
        ReferenceRuntime rt(g);
        g.set_dim("s", S);
        rt.set(x, logits);
        rt.execute();
        // The reference: the experts sorted by the router's order over the logits (a NaN one
        // first), with the softmax's probabilities at them; where the probabilities are numbers
        // the same sort over them chooses alike (these rows have no probabilities that round
        // equal from different logits).
        const std::vector<float> p = rt.get<float>("p");
        const Choice by_logits = topk_loop(logits, S, E, k), by_probs = topk_loop(p, S, E, k);
        Choice want = by_logits;
        for (int64_t r = 0; r < S; ++r)
          for (int64_t j = 0; j < k; ++j) {
            const size_t at = static_cast<size_t>(r * k + j);
            want.raw[at] = static_cast<float>(0.0 + p[static_cast<size_t>(r * E + want.ids[at])]);
            if (!std::isnan(want.raw[at])) {
              EXPECT_EQ(by_probs.ids[at], want.ids[at]) << r;
            }
          }
        const std::vector<int32_t> ids = rt.get<int32_t>("ids");
        const std::vector<float> w = rt.get<float>("w"), wn = rt.get<float>("wn");
        const std::string name = std::to_string(static_cast<int>(form)) +
                                 " E=" + std::to_string(E) + " k=" + std::to_string(k);
        ASSERT_EQ(ids, want.ids) << name;
        ASSERT_EQ(0, std::memcmp(w.data(), want.raw.data(), w.size() * sizeof(float))) << name;
        for (int64_t r = 0; r < S; ++r) {
          double sum = 0;
          for (int64_t j = 0; j < k; ++j)
            sum += want.raw[static_cast<size_t>(r * k + j)];
          for (int64_t j = 0; j < k; ++j) {
            const size_t at = static_cast<size_t>(r * k + j);
            if (std::isnan(want.raw[at]))
              EXPECT_TRUE(std::isnan(wn[at])) << name << " row " << r;
            else
              EXPECT_NEAR(wn[at], want.raw[at] / sum, 1e-6) << name << " row " << r;
          }
        }
        ids_of[f] = ids;
        w_of[f++] = wn;
      }
      for (int i = 1; i < 3; ++i) {
        EXPECT_EQ(ids_of[0], ids_of[i]);
        EXPECT_EQ(0, std::memcmp(w_of[0].data(), w_of[i].data(), w_of[0].size() * sizeof(float)))
            << "E=" << E << " k=" << k;
      }
    }
}

TEST(NnRouterSoftmaxTopk, TheLargerLogitFirstWhereProbabilitiesRoundEqual) {
  // Experts 0 and 1 differ by one ulp of 0.001f; exp(x - max) rounds both to 1.0f, so ranking
  // the probabilities would take expert 0 (the lower index); the logits take 1.
  const float a = 0.001f, b = std::nextafter(0.001f, 1.0f);
  Graph g;
  Tensor x = g.tensor("x", {1, 3});
  const Tensor p = x.softmax(1);
  p.output("p");
  nn::router_softmax_topk(x, 1, false).ids.output("ids");
  ReferenceRuntime rt(g);
  rt.set(x, std::vector<float>{a, b, -1.0f});
  rt.execute();
  const std::vector<float> probs = rt.get<float>("p");
  ASSERT_EQ(probs[0], probs[1]);  // the case this test is about
  EXPECT_EQ(rt.get<int32_t>("ids"), std::vector<int32_t>{1});
}

TEST(NnRouterSoftmaxTopk, WeightsInTheGivenDtypeAreTheF32WeightsCast) {
  // Renormalised (the softmax of the chosen logits) and not (the probabilities), both forms.
  const std::vector<float> logits = logit_rows(8, 37, 5);
  for (bool renorm : {false, true})
    for (nn::TopKForm form : {nn::TopKForm::Argmax, nn::TopKForm::Ranks, nn::TopKForm::Searched}) {
      Graph g;
      Tensor x = g.tensor("x", {8, 37});
      const nn::TopK f32 = nn::router_softmax_topk(x, 3, renorm, form);
      const nn::TopK b16 = nn::router_softmax_topk(x, 3, renorm, form, DType::BF16);
      EXPECT_EQ(b16.weights.dtype(), DType::BF16);
      f32.weights.cast(DType::BF16).output("want");
      b16.weights.output("got");
      ReferenceRuntime rt(g);
      rt.set(x, logits);
      rt.execute();
      // (bf16 widens to f32 exactly; compared bit for bit, NaNs included)
      const std::vector<float> want = rt.get<float>("want"), got = rt.get<float>("got");
      ASSERT_EQ(got.size(), want.size());
      EXPECT_EQ(0, std::memcmp(got.data(), want.data(), got.size() * sizeof(float)))
          << renorm << " " << static_cast<int>(form);
    }
  Graph g;
  testing::expect_error(
      [&] {
        nn::router_softmax_topk(g.tensor("x", {2, 4}), 1, true, nn::TopKForm::Ranks, DType::I32);
      },
      {"router_softmax_topk", "float", "i32"});
}

TEST(NnRouterSoftmaxTopk, TheIdsSumNoFloats) {
  // The ids of a softmax's top-k read through probabilities depend on the softmax's float sum
  // (two kernels that compute it in different orders give keys that disagree); the logits'
  // ids sum only the comparisons' integers, in every form.
  for (nn::TopKForm form : {nn::TopKForm::Argmax, nn::TopKForm::Ranks, nn::TopKForm::Searched}) {
    Graph g;
    Tensor x = g.tensor("x", {2, 16}, DType::BF16);
    const NodeId via_probs = nn::router_topk(x.cast(DType::F32).softmax(1), 4, true, form).ids.id();
    const NodeId via_logits = nn::router_softmax_topk(x, 4, true, form).ids.id();
    const std::vector<DType> before = sums_behind(g, via_probs), now = sums_behind(g, via_logits);
    EXPECT_TRUE(std::any_of(before.begin(), before.end(), is_float));
    EXPECT_FALSE(std::any_of(now.begin(), now.end(), is_float)) << static_cast<int>(form);
  }
}

TEST(NnRouterTopk, SearchedDeclaresTheRanksAnAlternative) {
  Graph g;
  Tensor p = g.tensor("p", {3, 9});
  const nn::TopK top = nn::router_topk(p, 2, true);
  ASSERT_EQ(g.alternatives().size(), 2u);
  EXPECT_EQ(g.alternatives()[0].primary, top.ids.id());  // the primary's ids, as returned
  EXPECT_EQ(g.node(g.alternatives()[0].alt).op, OpKind::SumReduce);
  Graph g1;
  nn::router_topk(g1.tensor("p", {3, 9}), 2, true, nn::TopKForm::Argmax);
  EXPECT_TRUE(g1.alternatives().empty());
}

TEST(NnExpertLinear, RowsOfTheChosenExperts) {
  constexpr int64_t E = 4, N = 3, D = 5, S = 3, K = 2;
  std::mt19937_64 rng(1);
  std::uniform_real_distribution<float> u(-1, 1);
  auto rnd = [&](size_t n) {
    std::vector<float> v(n);
    for (float& x : v)
      x = u(rng);
    return v;
  };
  const std::vector<float> wv = rnd(E * N * D), xs = rnd(S * D), xc = rnd(S * K * D);
  const std::vector<int32_t> ids = {2, 0, 2, 2, 3, 1};  // expert 2 three times
  Graph g;
  Tensor w = g.tensor("w", {E, N, D});
  Tensor i = g.tensor("ids", {S, K}, DType::I32);
  Tensor x1 = g.tensor("x1", {S, D});
  Tensor x2 = g.tensor("x2", {S, K, D});
  nn::expert_linear(x1, w, i).output("shared");
  nn::expert_linear(x2, w, i).output("per_choice");
  ReferenceRuntime rt(g);
  rt.set(w, wv);
  rt.set(i, ids);
  rt.set(x1, xs);
  rt.set(x2, xc);
  rt.execute();
  const std::vector<float> shared = rt.get<float>("shared"), per = rt.get<float>("per_choice");
  for (int64_t s = 0; s < S; ++s)
    for (int64_t k = 0; k < K; ++k)
      for (int64_t n = 0; n < N; ++n) {
        const int64_t e = ids[static_cast<size_t>(s * K + k)];
        double a = 0, b = 0;
        for (int64_t d = 0; d < D; ++d) {
          const double wd = wv[static_cast<size_t>((e * N + n) * D + d)];
          a += xs[static_cast<size_t>(s * D + d)] * wd;
          b += xc[static_cast<size_t>((s * K + k) * D + d)] * wd;
        }
        const size_t at = static_cast<size_t>((s * K + k) * N + n);
        EXPECT_NEAR(shared[at], a, 1e-5);
        EXPECT_NEAR(per[at], b, 1e-5);
      }
}

TEST(NnExpertLinear, ShapesThatDoNotFitAreErrors) {
  Graph g;
  Tensor w = g.tensor("w", {4, 3, 5});
  Tensor ids = g.tensor("ids", {2, 2}, DType::I32);
  testing::expect_error(
      [&] {
        nn::expert_linear(g.tensor("x", {2, 6}), w, ids);
      },
      {"expert_linear", "[2, 6]", "[4, 3, 5]"});
  testing::expect_error(
      [&] {
        nn::expert_linear(g.tensor("x2", {2, 5}), w.reshape({12, 5}), ids);
      },
      {"expert_linear", "[E, N, D]"});
  testing::expect_error(
      [&] {
        nn::router_topk(g.tensor("p", {2, 4}), 5, true);
      },
      {"router_topk", "k = 5"});
  testing::expect_error(
      [&] {
        nn::router_softmax_topk(g.tensor("logits", {2, 2, 4}), 1, true);
      },
      {"router_softmax_topk", "logits", "[2, 2, 4]"});
}

}  // namespace
}  // namespace luminal
