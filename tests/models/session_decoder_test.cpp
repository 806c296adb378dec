// The Llama of luminal::models (random weights) in a session: a prefill then decode steps over the
// carried KV cache match the reference, and each decode step moves only the token id in and the
// logits out.
#include <gtest/gtest.h>

#include <cmath>

#include "luminal/cpu/cpu_backend.hpp"
#include "luminal/models/decoder.hpp"
#include "luminal/models/synthetic.hpp"
#include "luminal/runtime/reference.hpp"
#include "luminal/runtime/session.hpp"

namespace luminal {
namespace {

TEST(SessionTransformer, DecodeMovesOnlyIdsAndLogits) {
  const models::Decoder d = models::build_decoder(
      models::llama_config(
          {.layers = 2, .hidden = 64, .ffn = 128, .heads = 4, .kv_heads = 2, .vocab = 97}),
      {.slots = 16, .max_step = 8});
  const Graph& g = d.graph;
  const Tensor logits = d.logits;
  const size_t vocab = 97;
  cpu::CpuBackend cpu(1);
  Session s(g, cpu,
            CompileOptions().search_graph_limit(8).verbose(false).dim_buckets(
                "s", {DimBucket(1, 1), DimBucket(2, 8)}));
  ReferenceRuntime ref(g);
  models::random_weights(s, 3);
  models::random_weights_host(ref, 3);
  models::init_state(s, d);
  models::init_state(ref, d);
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
    ASSERT_EQ(a.size(), ids.size() * vocab);
    for (size_t k = 0; k < a.size(); ++k)
      ASSERT_NEAR(a[k], b[k], 2e-4) << "context " << c << " logit " << k;
  };
  step(prompt);
  for (int32_t id : steps) {
    const auto before = s.stats();
    step({id});
    const auto after = s.stats();
    EXPECT_EQ(after.bytes_uploaded - before.bytes_uploaded, 4u) << "only the token id goes in";
    EXPECT_EQ(after.bytes_downloaded - before.bytes_downloaded, 4u * vocab)
        << "only the logits come out";
  }
}

}  // namespace
}  // namespace luminal
