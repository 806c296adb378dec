// nn::router_topk and nn::expert_linear on the reference against plain loops: ids largest first
// (the first of equal probabilities first), weights renormalised or not, k = 1 and k = E; an
// expert linear layer with x shared by a token's choices or one row per choice, repeated experts
// included; shapes that do not fit are errors naming them.
#include <gtest/gtest.h>

#include <random>
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
}

}  // namespace
}  // namespace luminal
