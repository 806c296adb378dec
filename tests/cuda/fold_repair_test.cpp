// compiler/fold_repair.hpp on the case that made it: a SmolLM2-shaped decode step (30 layers,
// q4_1 projections, the tied embedding in q8_0) under the CUDA rules with load-time folding,
// whose fewest-kernels seed folds layer 1's output projection into the split layout and also
// reads it as stored, so the fold cannot release it (on an H100 the search then kept a random
// program 1.6x slower than the seed: 1.443 against 0.911 ms). No GPU: the rules and the folds'
// programs only.
#include <gtest/gtest.h>

#include <string>

#include "cuda/folded_decode.hpp"
#include "support/env_scope.hpp"
#include "support/llir_direct.hpp"

namespace luminal {
namespace {

TEST(FoldRepair, BringsTheQuantizedDecodeSeedWithinFoldLimit) {
  // (the rules as they were when the case arose: with cuda.FusedQ8 and cuda.GemvKNQ8, on by
  // default since 2026-12-06, this seed fits fold_limit and the repair has nothing to do)
  testing::EnvScope fused_q8("LUMINAL_CUDA_FUSED_Q8", "0");
  // (the forms alone, not inside cuda.RowGemv, which computes the norm in the GEMV)
  const testing::EnvScope no_row("LUMINAL_CUDA_ROW_PROLOGUE", "0");
  const testing::FoldedSpace f(testing::smollm2_q4_1_decode());
  const BuiltSpace& b = f.b;
  auto excess = [&](const LlirGraph& l) { return f.excess(l); };
  const Genome seed = b.space->fewest_kernels_genome();
  const LlirGraph seed_program = to_llir(*b.space, seed);
  const FoldExcess before = excess(seed_program);
  ASSERT_GT(before.bytes, 0) << "the seed fits fold_limit now: this test no longer covers the "
                                "repair (find another case)";
  EXPECT_EQ(before.kept, (std::set<std::string>{"model.layers.1.self_attn.o_proj.weight"}));

  const std::optional<FoldRepair> r = repair_fold_excess(*b.space, b.folds, seed, excess);
  ASSERT_TRUE(r.has_value());
  EXPECT_GE(r->changes, 1);
  EXPECT_LE(r->changes, 2);
  const LlirGraph fixed = to_llir(*b.space, r->genome);
  const FoldExcess after = excess(fixed);
  EXPECT_LE(after.bytes, 0);
  EXPECT_TRUE(after.kept.empty());
  // Next to the seed: about as many kernels (the search starts there, not from random ones).
  const auto kernels = [](const LlirGraph& l) {
    size_t k = 0;
    for (const LlirNode& n : l.nodes)
      k += !is_op(n.op, OpKind::Input) && !is_op(n.op, OpKind::Output);
    return k;
  };
  EXPECT_LE(kernels(fixed), kernels(seed_program) + 31) << seed_program.op_mix_string() << "\n"
                                                        << fixed.op_mix_string();
  // (the split layout's integer GEMVs, rope's product in the q and k ones' kernels or not, gate and
  // up paired or not)
  EXPECT_GE(testing::count_op(fixed, "cuda.QGemvQ8S") +
                testing::count_op(fixed, "cuda.QGemvQ8SMatmul") +
                testing::count_op(fixed, "cuda.QGemvQ8SMatmulScatter") +
                2 * testing::count_op(fixed, "cuda.QGemvQ8SGlu"),
            120)
      << fixed.op_mix_string();

  // A genome already within the limit comes back unchanged.
  const std::optional<FoldRepair> same = repair_fold_excess(*b.space, b.folds, r->genome, excess);
  ASSERT_TRUE(same.has_value());
  EXPECT_EQ(same->changes, 0);
  EXPECT_EQ(same->genome, r->genome);
}

}  // namespace
}  // namespace luminal
