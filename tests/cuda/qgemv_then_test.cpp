// cuda.QGemvQ8Matmul / cuda.QGemvQ8SMatmul (luminal/cuda/qgemv.cpp, gemv_then.hpp), offered unless
// LUMINAL_CUDA_QGEMV_MATMUL=0: an integer GEMV over block-quantized weights and rope's 2-term
// product after it in one kernel, and their store-into-scatter forms (the k projection with rope
// written into its cache row, scatter_store.cpp).
//   On the host: not offered when switched off; offered for every block type in both layouts,
//   plain and into a cache; the kernels compile for sm_90 (one, two and eight warps a row); a
//   SmolLM2-shaped q4_1 decode step's seed takes both in every layer, two kernels fewer a layer
//   and one fewer on the critical path; an 8B-shaped q4_0 one takes neither (its projections are
//   bound by their weights' bytes, qgemv.cpp's then_form_extra).
//   On a GPU: the same bits as the integer GEMV then cuda.Matmul (and then its scatter form),
//   at positions 1, 7 and 300, the cache's other rows untouched.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "cuda/cuda_test_util.hpp"
#include "cuda/model_seeds.hpp"
#include "luminal/cuda/nvrtc.hpp"
#include "luminal/luminal.hpp"
#include "luminal/models/decoder.hpp"
#include "luminal/models/synthetic.hpp"
#include "luminal/nn/linear.hpp"
#include "luminal/nn/rope.hpp"
#include "luminal/program/critical_path.hpp"
#include "support/env_scope.hpp"
#include "support/llir_direct.hpp"
#include "support/random_buffer.hpp"

namespace luminal {
namespace {

using testing::count_op;

struct ThenOn : testing::EnvScope {
  ThenOn() : EnvScope("LUMINAL_CUDA_QGEMV_MATMUL", "1") {}
};

/// x [1, k] (f32) @ Dequantize(w)^T, w [n, k] of block type t, then rope as [1, n / 64, 64] at
/// position c - 1: output "y", or (cache) written into row c - 1 of a cache [slots, n] carried
/// from step to step (output "cache_out").
Graph quant_rope(int64_t n, int64_t k, int64_t slots, DType t, bool cache) {
  Graph g;
  g.declare_dim("c", 1, slots);
  const Expr c = Expr::var("c");
  Tensor x = g.tensor("x", {Expr(1), Expr(k)});
  Tensor w = g.tensor("w", {Expr(n), Expr(k)}, t);
  const Tensor pos = g.iota(c - 1 + Expr::z(), Expr(1));
  const Tensor r =
      nn::apply_rope(nn::linear(x, w.dequantize()).reshape({Expr(1), Expr(n / 64), Expr(64)}), pos,
                     g.tensor("inv_freq", {Expr(32)}));
  if (!cache) {
    r.output("y");
    return g;
  }
  Tensor kv = g.tensor("cache", {Expr(slots), Expr(n)}).persist();
  const Tensor rows = g.iota((c - 1) * n + Expr::z(), Expr(n)).reshape({Expr(1), Expr(n)});
  g.carry(kv.scatter_flat(rows, r.reshape({Expr(1), Expr(n)})).output("cache_out"), kv);
  return g;
}

std::string then_op(bool split, bool cache) {
  return std::string(split ? "cuda.QGemvQ8SMatmul" : "cuda.QGemvQ8Matmul") +
         (cache ? "Scatter" : "");
}

/// The GEMV with the product in its kernel (storing into the cache or not), in one layout.
std::function<bool(std::string_view)> then_ops(bool split, bool cache) {
  const std::string op = then_op(split, cache);
  return [split, op](std::string_view o) {
    return o == op || o == "cuda.QuantizeQ8" || (split && o == "cuda.QRepack");
  };
}

/// The GEMV alone in the same layout, then cuda.Matmul (or its store into the cache): the GEMV
/// scores more than a cuda.Matmul would over the dequantised weight.
LlirGraph plain_program(const Graph& g, bool split, bool cache) {
  const std::string gemv = split ? "cuda.QGemvQ8S" : "cuda.QGemvQ8";
  const std::string product = cache ? "cuda.MatmulScatter" : "cuda.Matmul";
  return testing::prefer(g, testing::gpu(), [&](const EGraph& eg, ENodeId n) {
    const std::string_view o = eg.node(n).op->name;
    if (o == gemv) return 3.0;
    return o == "cuda.QuantizeQ8" || (split && o == "cuda.QRepack") || o == product ? 1.0 : 0.0;
  });
}

struct Case {
  DType t;
  bool split;
};

std::vector<Case> cases() {
  std::vector<Case> out;
  for (DType t : {DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q8_0, DType::Q4_K, DType::Q6_K})
    for (bool split : {false, true})
      if (!split || (t != DType::Q4_K && t != DType::Q5_K)) out.push_back({t, split});
  return out;
}

std::string describe(const Case& c, bool cache) {
  return std::string(name(c.t)) + (c.split ? " split" : " gguf") + (cache ? " into a cache" : "");
}

// k 512: a whole number of 256-value blocks; n 192: SmolLM2's k projection (three heads).
constexpr int64_t kK = 512, kN = 192, kSlots = 300;

/// Rope's 2-term product stays a product (LUMINAL_SHORT_SUMS would also offer it as Mul and Add).
struct ShortSumsOff : testing::EnvScope {
  ShortSumsOff() : EnvScope("LUMINAL_SHORT_SUMS", "off") {}
};

TEST(CudaQGemvThenRules, NotOfferedWhenSwitchedOff) {
  testing::EnvScope off("LUMINAL_CUDA_QGEMV_MATMUL", "0");
  testing::CudaRulesOnly rules;
  for (bool cache : {false, true}) {
    auto [l, hits] = testing::prefer_ops(quant_rope(kN, kK, kSlots, DType::Q4_0, cache), rules,
                                         then_ops(false, cache));
    EXPECT_EQ(count_op(l, then_op(false, cache)), 0) << l.op_mix_string();
  }
}

TEST(CudaQGemvThenRules, OfferedForEveryTypeAndCompiles) {
  LUMINAL_REQUIRE_NVRTC();
  const ThenOn on;
  const ShortSumsOff off;
  testing::CudaRulesOnly rules;
  std::vector<std::string> sources, whats;
  for (const Case& c : cases())
    for (bool cache : {false, true}) {
      testing::EnvScope split("LUMINAL_CUDA_QGEMV_SPLIT", c.split ? "1" : "0");
      const Graph g = quant_rope(kN, kK, kSlots, c.t, cache);
      auto [l, hits] = testing::prefer_ops(g, rules, then_ops(c.split, cache));
      EXPECT_EQ(count_op(l, then_op(c.split, cache)), 1)
          << describe(c, cache) << ": " << l.op_mix_string();
      EXPECT_EQ(count_op(l, "cuda.Matmul") + count_op(l, "cuda.MatmulScatter"), 0)
          << describe(c, cache) << ": " << l.op_mix_string();
      // 4 tasks a block, 1, and two rounds a task (the last two for two types: compile time)
      const bool all = c.t == DType::Q4_0 || c.t == DType::Q6_K;
      for (const char* warps : {"1", "2", "8"}) {
        if (!all && *warps != '1') continue;
        testing::EnvScope w("LUMINAL_CUDA_QGEMV_WARPS", warps);
        testing::add_kernels(l, PlanSpec{{{"c", {1, kSlots}}}, {"c"}}, sources, whats);
      }
    }
  testing::expect_compiles(sources, whats);
}

// The whole SmolLM2-shaped q4_1 step (30 layers): the q projection and rope in one kernel, the k
// projection, rope and the cache write in one, in every layer: 60 kernels fewer, 30 fewer on the
// critical path (the q and k chains into the attention both one shorter).
TEST(CudaQGemvThenRules, SmolLM2sSeedTakesBothInEveryLayer) {
  // (the forms alone, not inside cuda.RowGemv, which computes the norm in the GEMV)
  const testing::EnvScope no_row("LUMINAL_CUDA_ROW_PROLOGUE", "0");
  constexpr int kLayers = 30;
  LlirGraph before;
  {
    testing::EnvScope off("LUMINAL_CUDA_QGEMV_MATMUL", "0");
    before = testing::smollm2_q4_1_seed(kLayers);
  }
  const ThenOn on;
  const LlirGraph l = testing::smollm2_q4_1_seed(kLayers);
  std::printf(
      "[qgemv-then] SmolLM2 q4_1, %d layers: %zu kernels, %d on the critical path (%zu / %d "
      "without; %s)\n",
      kLayers, testing::kernel_count(l), critical_path(l), testing::kernel_count(before),
      critical_path(before), l.op_mix_string().c_str());
  EXPECT_EQ(count_op(l, "cuda.QGemvQ8Matmul") + count_op(l, "cuda.QGemvQ8SMatmul"), kLayers)
      << l.op_mix_string();
  EXPECT_EQ(count_op(l, "cuda.QGemvQ8MatmulScatter") + count_op(l, "cuda.QGemvQ8SMatmulScatter"),
            kLayers)
      << l.op_mix_string();
  EXPECT_EQ(count_op(l, "cuda.Matmul") + count_op(l, "cuda.MatmulScatter"), 0) << l.op_mix_string();
  EXPECT_EQ(testing::kernel_count(l) + 2 * kLayers, testing::kernel_count(before))
      << l.op_mix_string();
  EXPECT_EQ(critical_path(l) + kLayers, critical_path(before)) << l.op_mix_string();
}

// An 8B-shaped q4_0 step (2 layers) keeps its GEMVs and rope's products apart: the q and k
// weights (9 and 2.3 MiB) make the fused forms' seed cost the higher.
TEST(CudaQGemvThenRules, The8BSeedKeepsItsGemvsApart) {
  const testing::EnvScope on("LUMINAL_CUDA_QGEMV_MATMUL", nullptr);
  const LlirGraph l = testing::llama8b_seed(2, DType::Q4_0);
  for (const char* op : {"cuda.QGemvQ8Matmul", "cuda.QGemvQ8SMatmul", "cuda.QGemvQ8MatmulScatter",
                         "cuda.QGemvQ8SMatmulScatter"})
    EXPECT_EQ(count_op(l, op), 0) << l.op_mix_string();
  EXPECT_EQ(count_op(l, "cuda.Matmul") + count_op(l, "cuda.MatmulScatter"), 4) << l.op_mix_string();
}

// The dense forms (cuda.GemvMatmul / cuda.GemvCastMatmul, gemv.cpp) carry the same seed term: an
// 8B-shaped bf16 step (q 32 MiB, k 8 MiB) keeps rope's products apart from its GEMVs, where a
// SmolLM2-shaped one takes them (fewest_kernels_test.cpp).
TEST(CudaQGemvThenRules, The8BBf16SeedKeepsItsGemvsApart) {
  const testing::EnvScope on("LUMINAL_CUDA_GEMV_MATMUL", nullptr);
  const LlirGraph l = testing::llama8b_seed(2, DType::BF16);
  for (const char* op : {"cuda.GemvMatmul", "cuda.GemvCastMatmul", "cuda.GemvMatmulScatter",
                         "cuda.GemvCastMatmulScatter"})
    EXPECT_EQ(count_op(l, op), 0) << l.op_mix_string();
  EXPECT_EQ(count_op(l, "cuda.Matmul") + count_op(l, "cuda.MatmulScatter") +
                count_op(l, "cuda.MatmulCast") + count_op(l, "cuda.MatmulCastScatter"),
            4)
      << l.op_mix_string();
}

/// Every row of the cache `got` but row `written` is `given`'s; row `written` is not.
void expect_only_row_written(const HostBuffer& got, const HostBuffer& given, int64_t written,
                             const std::string& what) {
  ASSERT_EQ(got.bytes.size(), given.bytes.size()) << what;
  const size_t row = static_cast<size_t>(kN) * 4;
  for (size_t i = 0; i < got.bytes.size() / row; ++i) {
    const bool same = std::equal(got.bytes.begin() + i * row, got.bytes.begin() + (i + 1) * row,
                                 given.bytes.begin() + i * row);
    EXPECT_EQ(same, i != static_cast<size_t>(written)) << what << " row " << i;
  }
}

TEST(CudaQGemvThen, SameBitsAsTheGemvThenTheProduct) {
  LUMINAL_REQUIRE_GPU();
  const ThenOn on;
  const ShortSumsOff off;
  uint64_t seed = 70;
  for (const Case& c : cases())
    for (bool cache : {false, true})
      for (const char* warps : {"", "2", "8"}) {
        testing::EnvScope split("LUMINAL_CUDA_QGEMV_SPLIT", c.split ? "1" : "0");
        testing::EnvScope w("LUMINAL_CUDA_QGEMV_WARPS", *warps ? warps : nullptr);
        const std::string at = describe(c, cache) + (*warps ? " warps " + std::string(warps) : "");
        const Graph g = quant_rope(kN, kK, kSlots, c.t, cache);
        auto [fused, a] = testing::prefer_ops(g, testing::gpu(), then_ops(c.split, cache));
        const LlirGraph plain = plain_program(g, c.split, cache);
        ASSERT_EQ(count_op(fused, then_op(c.split, cache)), 1)
            << at << ": " << fused.op_mix_string();
        ASSERT_EQ(count_op(plain, cache ? "cuda.MatmulScatter" : "cuda.Matmul"), 1)
            << at << ": " << plain.op_mix_string();
        ASSERT_EQ(count_op(plain, c.split ? "cuda.QGemvQ8S" : "cuda.QGemvQ8"), 1)
            << at << ": " << plain.op_mix_string();
        std::vector<DynMap> buckets;
        for (int64_t ctx : {int64_t{1}, int64_t{7}, kSlots})
          buckets.push_back({{"c", ctx}});
        testing::LoadedPlan pa = testing::load_plan(testing::gpu(), fused, buckets);
        testing::LoadedPlan pb = testing::load_plan(testing::gpu(), plain, buckets);
        const HostBuffer kv = testing::random_buffer(DType::F32, kSlots * kN, ++seed, -1, 1);
        const HostBuffer w_blocks = testing::random_buffer(c.t, kN * kK, ++seed);
        for (const DynMap& dyn : buckets) {
          testing::BufferMap in{{"x", testing::random_buffer(DType::F32, kK, ++seed, -2, 2)},
                                {"w", w_blocks},
                                {"inv_freq", testing::random_buffer(DType::F32, 32, ++seed, 0, 1)}};
          if (cache) in.emplace("cache", kv);
          const std::string out = cache ? "cache_out" : "y";
          const HostBuffer ya = testing::run_plan(pa, in, dyn).outputs.at(out);
          const HostBuffer yb = testing::run_plan(pb, in, dyn).outputs.at(out);
          const std::string what = at + " c " + std::to_string(dyn.at("c"));
          ASSERT_EQ(ya.bytes.size(), yb.bytes.size()) << what;
          EXPECT_TRUE(ya.bytes == yb.bytes)
              << what << ": " << fused.op_mix_string() << " against " << plain.op_mix_string();
          if (cache) expect_only_row_written(ya, kv, dyn.at("c") - 1, what);
        }
      }
}

}  // namespace
}  // namespace luminal
