// Models from a config alone: random weights generated on the backend equal the host's values
// bit for bit, have the documented ranges, and a random model runs the same on the CPU backend
// and the reference.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "luminal/core/error.hpp"
#include "luminal/cpu/cpu_backend.hpp"
#include "luminal/models/causal_lm.hpp"
#include "luminal/models/synthetic.hpp"
#include "luminal/runtime/reference.hpp"
#include "luminal/runtime/session.hpp"

namespace luminal::models {
namespace {

CompileOptions quick() { return CompileOptions().search_graph_limit(4).verbose(false); }

// A graph exposing its weights as outputs, so their values can be read back.
struct Exposed {
  Graph g;
  std::vector<Tensor> outs;
};
Exposed exposed_weights(DType dt, int64_t rows = 24) {
  Exposed e;
  e.outs.push_back(e.g.tensor("layer.norm.weight", {37}, dt).persist().output("norm"));
  e.outs.push_back(e.g.tensor("layer.proj.weight", {rows, 50}, dt).persist().output("proj"));
  e.outs.push_back(e.g.tensor("layer.proj.bias", {rows}, dt).persist().output("bias"));
  e.outs.push_back(e.g.tensor("not_a_weight", {3}, dt).persist().output("other"));
  return e;
}

TEST(RandomWeights, BackendValuesEqualHostValuesBitForBit) {
  cpu::CpuBackend cpu(1);
  for (DType dt : {DType::F32, DType::BF16, DType::F16}) {
    Exposed a = exposed_weights(dt), b = exposed_weights(dt);
    Session s(a.g, cpu, quick());
    s.set("not_a_weight", std::vector<float>{1, 2, 3});
    EXPECT_EQ(random_weights(s, 42, quick()), 3);
    ReferenceRuntime ref(b.g);
    ref.set("not_a_weight", std::vector<float>{1, 2, 3});
    EXPECT_EQ(random_weights_host(ref, 42), 3);
    s.execute();
    ref.execute();
    for (size_t k = 0; k < a.outs.size(); ++k)
      EXPECT_EQ(s.get_bytes(a.outs[k]), ref.get_bytes(b.outs[k])) << name(dt) << " output " << k;
    EXPECT_EQ(s.get<float>(a.outs[3]), (std::vector<float>{1, 2, 3})) << "not a weight: untouched";
    EXPECT_EQ(s.stats().bytes_copied, (37 + 24 * 50 + 24) * static_cast<uint64_t>(size_bytes(dt)));
  }
}

TEST(RandomWeights, RangesSeedsAndIndependenceFromOtherWeights) {
  Exposed a = exposed_weights(DType::F32), b = exposed_weights(DType::F32, 80),
          c = exposed_weights(DType::F32);
  ReferenceRuntime ra(a.g), rb(b.g), rc(c.g);
  for (ReferenceRuntime* r : {&ra, &rb, &rc})
    r->set("not_a_weight", std::vector<float>{0, 0, 0});
  random_weights_host(ra, 1);
  random_weights_host(rb, 1);
  random_weights_host(rc, 2);
  ra.execute();
  rb.execute();
  rc.execute();
  const auto norm = ra.get<float>(a.outs[0]), proj = ra.get<float>(a.outs[1]),
             bias = ra.get<float>(a.outs[2]);
  for (float v : norm)
    EXPECT_TRUE(v >= 0.95f && v < 1.05f) << v;
  for (float v : bias)
    EXPECT_TRUE(v >= -0.02f && v < 0.02f) << v;
  const float bound = 1.f / std::sqrt(50.f);
  double mean = 0, sq = 0;
  for (float v : proj) {
    EXPECT_TRUE(v >= -bound && v < bound) << v;
    mean += v;
    sq += static_cast<double>(v) * v;
  }
  mean /= static_cast<double>(proj.size());
  const double var = sq / static_cast<double>(proj.size()) - mean * mean;
  // Uniform on [-b, b): mean 0 (sd of the mean b / sqrt(3 * 1200) = 0.0024), variance b^2 / 3.
  EXPECT_NEAR(mean, 0.0, 0.01);
  EXPECT_NEAR(var, bound * bound / 3, 0.1 * bound * bound / 3);
  // A weight's values depend on its label, seed and index only: the first 24 rows of an
  // [80, 50] weight equal the [24, 50] one; another seed differs.
  const auto proj80 = rb.get<float>(b.outs[1]);
  EXPECT_TRUE(std::equal(proj.begin(), proj.end(), proj80.begin()));
  const auto other_seed = rc.get<float>(c.outs[1]);
  int same = 0;
  for (size_t i = 0; i < proj.size(); ++i)
    same += proj[i] == other_seed[i];
  EXPECT_LT(same, 5) << "seed 2 repeats seed 1's values";
}

TEST(RandomWeights, ConfigSizesAndErrors) {
  const io::ModelConfig cfg =
      llama_config({.layers = 3, .hidden = 64, .ffn = 96, .heads = 4, .kv_heads = 2, .vocab = 101});
  EXPECT_EQ(cfg.head_dim, 16);
  const Decoder d = build_decoder(cfg, {.slots = 8, .max_step = 4});
  int64_t sum = 0;
  for (NodeId id : d.graph.inputs()) {
    const Node& n = d.graph.node(id);
    if (!is_weight(n.label)) continue;
    int64_t numel = 1;
    for (const Expr& e : n.shape)
      numel *= e.as_const();
    sum += numel;
  }
  EXPECT_EQ(parameter_count(cfg), sum);
  EXPECT_THROW(llama_config({.hidden = 64, .heads = 3}), Error);
  EXPECT_THROW(llama_config({.heads = 8, .kv_heads = 3}), Error);
  EXPECT_THROW(llama_config({.layers = 0}), Error);
}

TEST(RandomWeights, SetFromChecksDtypeSizeAndBackend) {
  cpu::CpuBackend cpu(1), other(1);
  Graph src;
  src.tensor("x", {"n"}, DType::F32).exp().output("y");
  src.declare_dim("n", 1, 16);
  Session a(src, cpu, quick().dim_buckets("n", {DimBucket(1, 16)}));
  Graph dst;
  dst.tensor("f", {8}, DType::F32).output("f_out");
  dst.tensor("h", {8}, DType::F16).output("h_out");
  Session b(dst, cpu, quick()), c(dst, other, quick());
  EXPECT_THROW(b.set_from("f", a, "y"), Error) << "not executed yet";
  a.set("x", std::vector<float>(12, 0.f));
  a.execute({{"n", 12}});
  EXPECT_THROW(b.set_from("f", a, "y"), Error) << "12 elements into 8";
  a.set("x", std::vector<float>(8, 0.f));
  a.execute({{"n", 8}});
  EXPECT_THROW(b.set_from("h", a, "y"), Error) << "f32 into f16";
  EXPECT_THROW(c.set_from("f", a, "y"), Error) << "another backend";
  b.set_from("f", a, "y");
  b.set("h", std::vector<float>(8, 0.f));
  b.execute();
  EXPECT_EQ(b.get<float>("f_out"), std::vector<float>(8, 1.f));
}

// A random model on the CPU backend gives the reference's logits and greedy tokens.
TEST(RandomModel, CpuMatchesReference) {
  const io::ModelConfig cfg = llama_config({.layers = 2,
                                            .hidden = 64,
                                            .ffn = 128,
                                            .heads = 4,
                                            .kv_heads = 2,
                                            .vocab = 97,
                                            .tie_embeddings = true});
  const DecoderShape shape{.slots = 32, .max_step = 8};
  cpu::CpuBackend cpu(1);
  CausalLM lm = CausalLM::random(cfg, cpu, shape, quick(), 11);
  CausalLM ref = CausalLM::random_reference(cfg, shape, 11);
  const std::vector<int32_t> prompt = {5, 17, 2, 90, 33, 1, 64, 8, 12, 40};  // two chunks
  const auto a = lm.forward(prompt), b = ref.forward(prompt);
  ASSERT_EQ(a.size(), prompt.size() * 97);
  float spread = 0;
  for (size_t k = 0; k < a.size(); ++k) {
    ASSERT_NEAR(a[k], b[k], 1e-4) << "logit " << k;
    spread = std::max(spread, std::abs(a[k]));
  }
  EXPECT_GT(spread, 0.5f) << "logits of O(1), not collapsed";
  EXPECT_EQ(lm.generate_greedy({3}, 6), ref.generate_greedy({3}, 6));
  CausalLM other = CausalLM::random(cfg, cpu, shape, quick(), 12);
  const auto c = other.forward(prompt);
  EXPECT_GT(std::abs(c[0] - a[0]) + std::abs(c[1] - a[1]), 1e-3) << "the seed matters";
}

}  // namespace
}  // namespace luminal::models
