// cpu.Attention (luminal/cpu/attention.cpp, the rule in kernels/attention_rule.hpp): a decode
// step's attention (nn::cached_attention at s = 1) as one kernel, against the reference, at
// contexts across the kernel's 256-key pieces, for plain, soft-capped and windowed softmax rows,
// query groups of 1 to 6 heads, with and without AVX2, on 1 and 2 threads (the same bits). The op
// is offered under LUMINAL_CPU_ATTENTION=on only (the fixture sets it).
#include <gtest/gtest.h>

#include <random>
#include <set>
#include <string>

#include "luminal/compiler/build_space.hpp"
#include "luminal/cpu/quant/isa.hpp"
#include "luminal/nn/attention.hpp"
#include "ops_test_util.hpp"
#include "support/env_scope.hpp"

namespace luminal {
namespace {

constexpr int64_t kSlots = 700;

/// One decode step of cached attention: q [1, kv * groups, hd], this step's k and v, the caches.
Graph decode_step(int64_t kv, int64_t groups, int64_t hd, const nn::AttentionOptions& o = {}) {
  Graph g;
  g.declare_dim("s", 1, 1);
  g.declare_dim("c", 1, kSlots);
  Tensor q = g.tensor("q", {"s", kv * groups, hd});
  Tensor k = g.tensor("k", {"s", kv, hd});
  Tensor v = g.tensor("v", {"s", kv, hd});
  nn::cached_attention(g, q, k, v, "l0", static_cast<int>(kSlots), o).output("o");
  return g;
}

std::vector<DynMap> contexts() {
  std::vector<DynMap> d;
  for (int64_t c : {1, 7, 256, 257, 513, 700})
    d.push_back(DynMap{{"s", 1}, {"c", c}});
  return d;
}

/// The program choosing cpu.Attention wherever the e-graph offers it.
LlirGraph attention_program(const Graph& g) {
  cpu::CpuBackend cpu(2);
  BuiltSpace b = build_search_space(g, cpu, g.dim_facts());
  return opstest::choose(b, opstest::prefer_op("cpu.Attention"));
}

// f32 sums in other orders than the reference's double ones
constexpr testing::Tol kTol{2e-5, 2e-5};

class CpuAttention : public ::testing::Test {
  const testing::EnvScope on_{"LUMINAL_CPU_ATTENTION", "on"};
};

TEST_F(CpuAttention, DecodeStepMatchesTheReference) {
  const Graph g = decode_step(3, 3, 64);  // SmolLM2's heads
  const LlirGraph p = attention_program(g);
  ASSERT_EQ(opstest::count_op(p, "cpu.Attention"), 1) << p.to_text();
  EXPECT_EQ(opstest::count_op(p, "cpu.Row"), 0) << p.to_text();
  opstest::check_program(g, p, contexts(), kTol, "smollm2 heads", 2, 1, -1, 1);
}

TEST_F(CpuAttention, RandomProgramsMatchTheReference) {
  // Programs drawn from the decode step's e-graph (cpu.Attention among the other lowerings of
  // every class), each against the reference. Where cpu.Attention is taken the classes it
  // replaces drop out, so few distinct programs hold it.
  nn::AttentionOptions o;
  o.softcap = 8.0;
  const Graph g = decode_step(2, 3, 32, o);
  cpu::CpuBackend cpu(2);
  BuiltSpace b = build_search_space(g, cpu, g.dim_facts());
  Rng rng(17);
  std::set<std::string> seen;
  int with = 0;
  for (int d = 0; d < 200 && seen.size() < 24; ++d) {
    // odd draws: random choices everywhere but cpu.Attention wherever it is offered
    std::uniform_real_distribution<double> u(0, 1);
    const LlirGraph l =
        d % 2 == 0
            ? to_llir(*b.space, b.space->random_genome(rng))
            : to_llir(*b.space, b.space->best_scoring_genome([&](ENodeId n) {
                return (b.space->egraph().node(n).op->name == "cpu.Attention" ? 10 : 0) + u(rng);
              }));
    if (!seen.insert(l.to_text()).second) continue;
    with += opstest::count_op(l, "cpu.Attention");
    opstest::check_program(g, l, {DynMap{{"s", 1}, {"c", 1}}, DynMap{{"s", 1}, {"c", 300}}}, kTol,
                           "program " + std::to_string(seen.size()), 2, 7, -1, 1);
  }
  EXPECT_GE(seen.size(), 8u);
  EXPECT_GE(with, 1) << "no drawn program held cpu.Attention";
}

TEST_F(CpuAttention, TheSeedTakesIt) {
  const Graph g = decode_step(3, 3, 64);
  cpu::CpuBackend cpu(2);
  BuiltSpace b = build_search_space(g, cpu, g.dim_facts());
  const LlirGraph seed = to_llir(*b.space, b.space->fewest_kernels_genome());
  EXPECT_EQ(opstest::count_op(seed, "cpu.Attention"), 1) << seed.to_text();
}

TEST_F(CpuAttention, SoftCappedAndWindowedRows) {
  nn::AttentionOptions o;
  o.softcap = 5.0;
  o.window = 300;
  o.scale = 0.3;
  const Graph g = decode_step(2, 2, 32, o);
  const LlirGraph p = attention_program(g);
  ASSERT_EQ(opstest::count_op(p, "cpu.Attention"), 1) << p.to_text();
  opstest::check_program(g, p, contexts(), kTol, "softcap + window", 2, 2, -1, 1);
}

// The window read from the first row a query of the step sees (AttentionOptions::window_read:
// the caches at a run-time row offset, min(c, s + window - 1) rows): programs drawn from the
// e-graph (and the seed), each against the reference, before, at and past the window, decode
// steps and a 4-token prefill.
TEST_F(CpuAttention, WindowReadProgramsMatchTheReference) {
  nn::AttentionOptions o;
  o.window = 300;
  o.window_read = true;
  Graph g;
  g.declare_dim("s", 1, 4);
  g.declare_dim("c", 1, kSlots);
  nn::cached_attention(g, g.tensor("q", {"s", 4, 32}), g.tensor("k", {"s", 2, 32}),
                       g.tensor("v", {"s", 2, 32}), "l0", static_cast<int>(kSlots), o)
      .output("o");
  cpu::CpuBackend cpu(2);
  BuiltSpace b = build_search_space(g, cpu, g.dim_facts());
  Rng rng(23);
  std::set<std::string> seen;
  const std::vector<DynMap> at = {
      {{"s", 1}, {"c", 1}}, {{"s", 1}, {"c", 299}}, {{"s", 1}, {"c", 301}}, {{"s", 1}, {"c", 700}},
      {{"s", 4}, {"c", 4}}, {{"s", 4}, {"c", 302}}, {{"s", 4}, {"c", 650}}};
  for (int d = 0; d < 40 && seen.size() < 10; ++d) {
    const LlirGraph l = d == 0 ? to_llir(*b.space, b.space->fewest_kernels_genome())
                               : to_llir(*b.space, b.space->random_genome(rng));
    if (!seen.insert(l.to_text()).second) continue;
    opstest::check_program(g, l, at, kTol, "window read, program " + std::to_string(seen.size()), 2,
                           11, -1, 1);
  }
  EXPECT_GE(seen.size(), 6u);
}

TEST_F(CpuAttention, QueryGroupsOfOneToSixHeads) {
  for (int64_t groups : {1, 4, 6}) {
    const Graph g = decode_step(2, groups, 16);
    const LlirGraph p = attention_program(g);
    ASSERT_EQ(opstest::count_op(p, "cpu.Attention"), 1) << p.to_text();
    opstest::check_program(g, p, contexts(), kTol, "groups " + std::to_string(groups), 2, 3, -1, 1);
  }
}

TEST_F(CpuAttention, WithoutAvx2) {
  const cpu::quant::ScopedQuantIsa portable(cpu::quant::QuantIsa::Portable);
  const Graph g = decode_step(3, 3, 64);
  const LlirGraph p = attention_program(g);
  ASSERT_EQ(opstest::count_op(p, "cpu.Attention"), 1) << p.to_text();
  opstest::check_program(g, p, contexts(), kTol, "portable", 2, 4, -1, 1);
}

TEST_F(CpuAttention, OneThreadAndTwoGiveTheSameBits) {
  const Graph g = decode_step(3, 3, 64);
  const LlirGraph p = attention_program(g);
  const DynMap dyn{{"s", 1}, {"c", 600}};
  const testing::BufferMap in = opstest::random_inputs(g, dyn, 5, -1, 1);
  testing::BufferMap got[2];
  for (int t : {1, 2}) {
    cpu::CpuBackend cpu(t);
    testing::LoadedPlan lp = testing::load_plan(cpu, p, {dyn});
    got[t - 1] = testing::run_executable(lp, g, in, dyn);
  }
  opstest::expect_same(got[1].at("o"), got[0].at("o"), opstest::kExact, "2 threads vs 1");
}

TEST(CpuAttentionSwitch, OffByDefault) {
  const testing::EnvScope unset("LUMINAL_CPU_ATTENTION", nullptr);
  const Graph g = decode_step(3, 3, 64);
  cpu::CpuBackend cpu(2);
  BuiltSpace b = build_search_space(g, cpu, g.dim_facts());
  const LlirGraph p = opstest::choose(b, opstest::prefer_op("cpu.Attention"));
  EXPECT_EQ(opstest::count_op(p, "cpu.Attention"), 0) << p.to_text();
}

TEST_F(CpuAttention, NotForARowReadAcrossItsRows) {
  // softmax over the last axis, then contracted over the rows' axis (P^T @ X): no attention
  Graph g;
  Tensor a = g.tensor("a", {8, 16}), b = g.tensor("b", {16, 32}), x = g.tensor("x", {8, 5});
  a.matmul(b).softmax(1).transpose(0, 1).matmul(x).output("y");
  cpu::CpuBackend cpu(2);
  BuiltSpace built = build_search_space(g, cpu, g.dim_facts());
  const LlirGraph p = opstest::choose(built, opstest::prefer_op("cpu.Attention"));
  EXPECT_EQ(opstest::count_op(p, "cpu.Attention"), 0) << p.to_text();
  opstest::check_program(g, p, {DynMap{}}, kTol, "across rows");
}

TEST_F(CpuAttention, ARowOfScoresTimesValuesOutsideAttention) {
  // The same structure without a cache: softmax(a @ b^T) @ v at constant shapes.
  Graph g;
  Tensor a = g.tensor("a", {4, 24}), b = g.tensor("b", {40, 24}), v = g.tensor("v", {40, 12});
  a.matmul(b.transpose(0, 1)).softmax(1).matmul(v).output("y");
  const LlirGraph p = attention_program(g);
  ASSERT_EQ(opstest::count_op(p, "cpu.Attention"), 1) << p.to_text();
  opstest::check_program(g, p, {DynMap{}}, kTol, "plain", 2, 6, -1, 1);
}

}  // namespace
}  // namespace luminal
