// Scatters whose indexes are provably distinct (core/expr_distinct.hpp) write in parallel on
// CUDA: concat and pad (the torch frontend's KV-cache cat, folded weight concatenations) become
// cuda.ScatterDistinct / cuda.ScatterUnique instead of the ordered one-block Scatter, which took
// 10 ms for a [1, 4, 1024, 64] cache. CI checks the rules without a GPU; the device checks
// every program's values against the reference, bit for bit (a scatter moves bytes).
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "cuda/cuda_test_util.hpp"
#include "luminal/luminal.hpp"
#include "support/llir_direct.hpp"

namespace luminal {
namespace {

using testing::count_op;

bool is_parallel_scatter(std::string_view op) {
  return op == "cuda.ScatterDistinct" || op == "cuda.ScatterUnique";
}

/// cat([cache (1, 4, c, 64), row (1, 4, 1, 64)], 2), the same cache padded by 2 columns on
/// both sides of its last axis, and an ordered scatter through an index tensor (never proven).
Graph cat_and_pad(DType t, bool dynamic) {
  Graph g;
  if (dynamic) g.declare_dim("c", 1, 64);
  const Expr c = dynamic ? Expr::var("c") : Expr(24);
  Tensor cache = g.tensor("cache", {1, 4, c, 64}, t);
  Tensor row = g.tensor("row", {1, 4, 1, 64}, t);
  concat({cache, row}, 2).output("cat");
  cache.pad({{0, 0}, {0, 0}, {0, 0}, {2, 2}}, 0).output("pad");
  Tensor idx = g.tensor("idx", {4}, DType::I32);
  g.tensor("dest", {8, 3}, t).scatter_flat(idx, g.tensor("src", {4}, t)).output("ordered");
  return g;
}

TEST(ScatterDistinct, ConcatAndPadScatterInParallel) {
  testing::CudaRulesOnly rules;
  for (bool dynamic : {false, true}) {
    const Graph g = cat_and_pad(DType::BF16, dynamic);
    auto [l, n] = testing::prefer_ops(g, rules, is_parallel_scatter);
    // concat: two scatters (into zeros: distinct; into the first's output: unique, in place);
    // pad: one into zeros. The index tensor's scatter stays ordered.
    EXPECT_EQ(n, 3) << l.op_mix_string();
    EXPECT_GE(count_op(l, "cuda.ScatterDistinct"), 1) << l.op_mix_string();
    EXPECT_EQ(count_op(l, "Scatter") + count_op(l, "cuda.ScatterInPlace"), 1) << l.op_mix_string();
    // Preferring the ordered forms: the proven scatters have none left (dominated), except
    // the in-place one where the cat's first scatter is read by nothing else.
    auto [o, k] = testing::prefer_ops(g, rules, [](std::string_view op) {
      return op == "Scatter" || op == "cuda.ScatterInPlace";
    });
    EXPECT_LE(k, 2) << o.op_mix_string();
    EXPECT_EQ(count_op(o, "Scatter"), 1) << o.op_mix_string();
  }
  // An Iota whose values pass 2^31 wraps as I32: not parallel.
  Graph w;
  Tensor dest = w.tensor("dest", {8}, DType::F32);
  dest.scatter_flat(w.iota(Expr::z() * (int64_t{1} << 32) + 5, 2), w.tensor("src", {2}))
      .output("y");
  auto [lw, nw] = testing::prefer_ops(w, rules, is_parallel_scatter);
  EXPECT_EQ(nw, 0) << lw.op_mix_string();
}

TEST(ScatterDistinct, MatchesTheReferenceOnTheGpu) {
  LUMINAL_REQUIRE_GPU();
  for (DType t : {DType::F32, DType::BF16})
    for (bool dynamic : {false, true}) {
      const Graph g = cat_and_pad(t, dynamic);
      auto [l, n] = testing::prefer_ops(g, testing::gpu(), is_parallel_scatter);
      ASSERT_EQ(n, 3) << l.op_mix_string();
      const int64_t c = dynamic ? 37 : 24;
      std::mt19937 rng(static_cast<unsigned>(c));
      auto bytes = [&](int64_t count, DType d) {
        HostBuffer b{d, std::vector<uint8_t>(static_cast<size_t>(count * size_bytes(d)))};
        for (uint8_t& v : b.bytes)
          v = static_cast<uint8_t>(rng() & 0x3f);  // small finite values in every dtype
        return b;
      };
      HostBuffer idx{DType::I32, std::vector<uint8_t>(16)};
      const int32_t ids[4] = {5, 1, 5, 23};  // 5 twice: the later write wins
      std::memcpy(idx.bytes.data(), ids, 16);
      const testing::BufferMap in{{"cache", bytes(4 * c * 64, t)},
                                  {"row", bytes(4 * 64, t)},
                                  {"dest", bytes(24, t)},
                                  {"src", bytes(4, t)},
                                  {"idx", idx}};
      const DynMap dyn = dynamic ? DynMap{{"c", c}} : DynMap{};
      testing::LoadedPlan lp = testing::load_plan(
          testing::gpu(), l,
          dynamic ? std::vector<DynMap>{{{"c", 1}}, {{"c", 64}}} : std::vector<DynMap>{{}});
      const auto out = testing::run_plan(lp, in, dyn).outputs;
      ReferenceRuntime ref(g);
      for (const auto& [label, buf] : in)
        ref.set_bytes(label, buf.bytes.data(), buf.bytes.size());
      ref.execute(dyn);
      for (const char* name : {"cat", "pad", "ordered"}) {
        const Tensor o(g, g.find(name), {}, t);
        EXPECT_EQ(out.at(name).bytes, ref.get_bytes(o))
            << name << " " << luminal::name(t) << (dynamic ? " dynamic" : "");
      }
    }
}

}  // namespace
}  // namespace luminal
