// Horizontal fusion in the Llama decoder (random weights) on the CPU: with the fused matmuls
// forced (a backend whose timing prefers the programs that fuse q/k/v and gate/up), a prefill
// then decode steps match the reference, and the decode step runs one matmul for q/k/v and one
// for gate/up per layer over concatenations folded at load.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <map>
#include <vector>

#include "luminal/models/decoder.hpp"
#include "luminal/models/synthetic.hpp"
#include "luminal/program/fold.hpp"
#include "luminal/runtime/reference.hpp"
#include "luminal/runtime/session.hpp"
#include "support/delegating_backend.hpp"

namespace luminal {
namespace {

// Horizontal fusion is off by default (LUMINAL_HFUSE=on offers it): these tests turn it on.
const bool kHfuseOn = [] { return setenv("LUMINAL_HFUSE", "on", 1) == 0; }();

// hidden 64, 4 heads of 16, 2 KV heads: q 64 + k 32 + v 32 = 128; ffn 96: gate + up = 192.
constexpr int64_t kQkv = 128, kGateUp = 192;

int matmuls_of_width(const LlirGraph& p, int64_t width) {
  int n = 0;
  for (const LlirNode& node : p.nodes) {
    const std::string_view op = node.op->name;
    const bool mm = op == "SumReduce" || op.find("Matmul") != std::string_view::npos;
    if (mm && !node.attrs.shape.empty() && node.attrs.shape.back() == Expr(width)) ++n;
  }
  return n;
}

// Times programs that fuse both groups as fast, every other as slow; among equals, the more
// folded values a program reads the faster (a prefill reading the concatenations).
struct PreferFused : testing::CpuDelegate {
  std::map<const Plan*, double> times;
  int fused_loads = 0;
  std::unique_ptr<Plan> load(const LlirGraph& g, const PlanSpec& spec) override {
    std::unique_ptr<Plan> p = cpu.load(g, spec);
    const bool fused = matmuls_of_width(g, kQkv) > 0 && matmuls_of_width(g, kGateUp) > 0;
    fused_loads += fused;
    times[p.get()] = (fused ? 1e-6 : 1.0) / (1.0 + FoldResolver::placeholders(g).size());
    return p;
  }
  double time(Plan& p, int, const int64_t*, int, double) override { return times.at(&p); }
};

models::Decoder tiny_llama() {
  return models::build_decoder(
      models::llama_config(
          {.layers = 2, .hidden = 64, .ffn = 96, .heads = 4, .kv_heads = 2, .vocab = 97}),
      {.slots = 16, .max_step = 8});
}

CompileOptions options() {
  return CompileOptions().search_graph_limit(8).verbose(false).fold_min_bytes(0).dim_buckets(
      "s", {DimBucket(1, 1), DimBucket(2, 8)});
}

// The session's bytes with the programs PreferFused picks (fusion on or off).
uint64_t session_bytes(bool hfuse) {
  setenv("LUMINAL_HFUSE", hfuse ? "on" : "off", 1);
  const models::Decoder d = tiny_llama();
  PreferFused be;
  Session s(d.graph, be, options());
  models::random_weights(s, 3);
  models::init_state(s, d);
  s.compile();
  s.set("ids", std::vector<int32_t>{5, 17});
  s.execute({{"s", 2}, {"c", 2}});  // runs the folds, releases what only they read
  setenv("LUMINAL_HFUSE", "on", 1);
  return s.memory_bytes();
}

TEST(HfuseDecoder, FusedDecodeMatchesReference) {
  const models::Decoder d = tiny_llama();
  const Graph& g = d.graph;
  const Tensor logits = d.logits;
  const size_t vocab = 97;
  setenv("LUMINAL_CACHE", "off", 1);  // search here (ctest sets it too)
  PreferFused be;
  Session s(g, be,
            CompileOptions().search_graph_limit(8).verbose(false).fold_min_bytes(0).dim_buckets(
                "s", {DimBucket(1, 1), DimBucket(2, 8)}));
  ReferenceRuntime ref(g);
  models::random_weights(s, 3);
  models::random_weights_host(ref, 3);
  models::init_state(s, d);
  models::init_state(ref, d);
  s.compile();
  EXPECT_GT(be.fused_loads, 0);
  const LlirGraph& decode = s.llir({{"s", 1}, {"c", 6}});
  EXPECT_EQ(matmuls_of_width(decode, kQkv), 2) << decode.op_mix_string();
  EXPECT_EQ(matmuls_of_width(decode, kGateUp), 2) << decode.op_mix_string();
  EXPECT_EQ(matmuls_of_width(decode, 32) + matmuls_of_width(decode, 96), 0)
      << decode.op_mix_string();
  int folds = 0;
  for (const LlirNode& n : decode.nodes)
    folds += is_op(n.op, OpKind::Input) && n.attrs.label.rfind("#fold/", 0) == 0;
  EXPECT_GE(folds, 4) << "the concatenations are folded at load";
  // The prefill reads its weights from the concatenations too (rows at an offset).
  const LlirGraph& prefill = s.llir({{"s", 5}, {"c", 5}});
  int prefill_folds = 0;
  for (const LlirNode& n : prefill.nodes)
    prefill_folds += is_op(n.op, OpKind::Input) && n.attrs.label.rfind("#fold/", 0) == 0;
  EXPECT_GE(prefill_folds, 4) << prefill.op_mix_string();

  const std::vector<int32_t> prompt = {5, 17, 2, 90, 33};
  int c = 0;
  auto step = [&](const std::vector<int32_t>& ids) {
    c += static_cast<int>(ids.size());
    const DynMap dyn{{"s", static_cast<int64_t>(ids.size())}, {"c", c}};
    s.set("ids", ids);
    ref.set("ids", ids);
    s.execute(dyn);
    ref.execute(dyn);
    auto a = s.get<float>(logits), b = ref.get<float>(logits);
    ASSERT_EQ(a.size(), ids.size() * vocab);
    for (size_t k = 0; k < a.size(); ++k)
      ASSERT_NEAR(a[k], b[k], 2e-4) << "context " << c << " logit " << k;
    // The greedy token of the last row agrees.
    const size_t row = (ids.size() - 1) * vocab;
    size_t ia = 0, ib = 0;
    for (size_t k = 1; k < vocab; ++k) {
      if (a[row + k] > a[row + ia]) ia = k;
      if (b[row + k] > b[row + ib]) ib = k;
    }
    EXPECT_EQ(ia, ib) << "context " << c;
  };
  step(prompt);
  for (int32_t id : {7, 61, 12, 40})
    step({id});
}

// The weights that only the concatenations read are released: fused, the session holds no more
// than without fusion.
TEST(HfuseDecoder, FoldedConcatenationsReplaceTheWeights) {
  const uint64_t off = session_bytes(false), on = session_bytes(true);
  EXPECT_LE(on, off);
  EXPECT_GT(on, off / 2);
}

}  // namespace
}  // namespace luminal
