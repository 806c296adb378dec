// The benchmark transformer in a session: a prefill then decode steps over the carried KV cache
// match the reference, and each decode step moves only the token id in and the logits out.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "bench/transformer.hpp"
#include "luminal/cpu/cpu_backend.hpp"
#include "luminal/runtime/session.hpp"

namespace luminal {
namespace {

void fill_weights(Runtime& rt, const Graph& g) {
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> u(-0.3f, 0.3f);
  for (NodeId id : g.inputs()) {
    const Node& n = g.node(id);
    if (n.label == "ids") continue;
    int64_t numel = 1;
    for (const Expr& d : n.shape)
      numel *= d.as_const();
    std::vector<float> v(static_cast<size_t>(numel));
    const bool cache = n.label.find("cache") != std::string::npos;
    const bool norm = n.label.find("norm") != std::string::npos;
    for (float& x : v)
      x = cache ? 0.f : norm ? 1.f : u(rng);
    rt.set(n.label, v);
  }
}

TEST(SessionTransformer, DecodeMovesOnlyIdsAndLogits) {
  bench::TransformerConfig cfg;
  cfg.layers = 2;
  cfg.hidden = 64;
  cfg.ffn = 128;
  cfg.heads = 4;
  cfg.kv_heads = 2;
  cfg.vocab = 97;
  cfg.slots = 16;
  Graph g;
  g.declare_dim("s", 1, 8);
  g.declare_dim("c", 1, cfg.slots);
  Tensor logits = bench::transformer(g, cfg);
  cpu::CpuBackend cpu(1);
  Session s(g, cpu,
            CompileOptions().search_graph_limit(8).verbose(false).dim_buckets(
                "s", {DimBucket(1, 1), DimBucket(2, 8)}));
  ReferenceRuntime ref(g);
  fill_weights(s, g);
  fill_weights(ref, g);
  s.compile();
  const std::vector<int32_t> prompt = {5, 17, 2, 90, 33};
  std::vector<int32_t> steps = {7, 61, 12};
  int c = 0;
  auto step = [&](const std::vector<int32_t>& ids) {
    c += static_cast<int>(ids.size());
    const DynMap dyn{{"s", static_cast<int64_t>(ids.size())}, {"c", c}};
    s.set("ids", ids);
    ref.set("ids", ids);
    s.execute(dyn);
    ref.execute(dyn);
    auto a = s.get<float>(logits), b = ref.get<float>(logits);
    ASSERT_EQ(a.size(), ids.size() * cfg.vocab);
    for (size_t k = 0; k < a.size(); ++k)
      ASSERT_NEAR(a[k], b[k], 2e-4) << "context " << c << " logit " << k;
  };
  step(prompt);
  for (int32_t id : steps) {
    const auto before = s.stats();
    step({id});
    const auto after = s.stats();
    EXPECT_EQ(after.bytes_uploaded - before.bytes_uploaded, 4u) << "only the token id goes in";
    EXPECT_EQ(after.bytes_downloaded - before.bytes_downloaded, 4u * cfg.vocab)
        << "only the logits come out";
  }
}

}  // namespace
}  // namespace luminal
