// Horizontal fusion (compiler/hfuse_rule.hpp): matmuls of one activation row that share it
// become one matmul over concatenated weights, read back at column offsets. Every program drawn
// from the spaces below (fused, unfused and mixed) matches the reference, with and without the
// concatenation folded at load; the seed the rule biases fuses every member.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "luminal/cpu/cpu_backend.hpp"
#include "luminal/luminal.hpp"
#include "support/equivalence.hpp"
#include "support/model_blocks.hpp"

namespace luminal {
namespace {

// Horizontal fusion is off by default (LUMINAL_HFUSE=on offers it): these tests turn it on.
const bool kHfuseOn = [] { return setenv("LUMINAL_HFUSE", "on", 1) == 0; }();

using testing::block_output;
using testing::check_graph;
using testing::CheckOptions;
using testing::CheckResult;
using testing::FuzzGraph;
using testing::model_input;

// Matmul nodes (SumReduce, or a backend op named *Matmul) whose output rows are `width` long.
int matmuls_of_width(const LlirGraph& p, int64_t width) {
  int n = 0;
  for (const LlirNode& node : p.nodes) {
    const std::string_view op = node.op->name;
    const bool mm = op == "SumReduce" || op.find("Matmul") != std::string_view::npos;
    if (mm && !node.attrs.shape.empty() && node.attrs.shape.back() == Expr(width)) ++n;
  }
  return n;
}

// q/k/v of one row (s is 1): q's weight stored [n, k] and read transposed (as nn::Linear), k's
// and v's [k, n]. q's halves multiply (views at a start, as rope reads), v's reader also reads k.
FuzzGraph qkv_block(int64_t rows_hi = 1) {
  FuzzGraph fg;
  fg.name = "q/k/v of one row";
  fg.seed = 2001;
  fg.graph.declare_dim("s", 1, rows_hi);
  const Expr s = Expr::var("s");
  const int64_t d = 16;
  const DType dt = DType::F32;
  Tensor x = model_input(fg, "x", {s, d}, dt, -1, 1);
  Tensor wq = model_input(fg, "wq", {24, d}, dt, -0.5, 0.5);
  Tensor wk = model_input(fg, "wk", {d, 8}, dt, -0.5, 0.5);
  Tensor wv = model_input(fg, "wv", {d, 8}, dt, -0.5, 0.5);
  Tensor q = x.matmul(wq.transpose(0, 1));
  Tensor k = x.matmul(wk);
  Tensor v = x.matmul(wv);
  Tensor yq = q.slice(1, 0, 12) * q.slice(1, 12, 24) + q.slice(1, 3, 15);
  Tensor yk = (k * 0.5).exp();
  Tensor yv = v.relu() + k;
  fg.outputs.push_back(block_output(yq, "yq", d, 32));
  fg.outputs.push_back(block_output(yk, "yk", d, 32));
  fg.outputs.push_back(block_output(yv, "yv", d, 32));
  fg.dyn_points = {{{"s", 1}}};
  if (rows_hi > 1) fg.dyn_points.push_back({{"s", rows_hi}});
  return fg;
}

// SwiGLU of one row: silu(x @ w_gate) * (x @ w_up) @ w_down (bf16: casts around each product).
FuzzGraph gate_up_block(DType dt) {
  FuzzGraph fg;
  fg.name = "gate/up of one row " + std::string(name(dt));
  fg.seed = 2002;
  fg.graph.declare_dim("s", 1, 1);
  const Expr s = Expr::var("s");
  const int64_t d = 16, h = 32;
  Tensor x = model_input(fg, "x", {s, d}, dt, -1, 1);
  Tensor wg = model_input(fg, "w_gate", {d, h}, dt, -0.5, 0.5);
  Tensor wu = model_input(fg, "w_up", {d, h}, dt, -0.5, 0.5);
  Tensor wd = model_input(fg, "w_down", {h, d}, dt, -0.5, 0.5);
  Tensor y = (x.matmul(wg).silu() * x.matmul(wu)).matmul(wd);
  fg.outputs.push_back(block_output(y, "y", h, dt == DType::F32 ? 16 : 4));
  fg.dyn_points = {{{"s", 1}}};
  return fg;
}

CheckOptions on_cpu(bool fold, int64_t fused_width, std::vector<int64_t> member_widths) {
  static cpu::CpuBackend cpu(1), cpu2(2);
  CheckOptions o;
  o.backend = &cpu;
  o.backend2 = &cpu2;
  o.label = "1 thread";
  o.label2 = "2 threads";
  o.programs = 60;
  o.fold = fold;
  o.features.emplace_back(
      "fused", [fused_width](const LlirGraph& p) { return matmuls_of_width(p, fused_width) > 0; });
  o.features.emplace_back("mixed", [fused_width, member_widths](const LlirGraph& p) {
    int members = 0;
    for (int64_t w : member_widths)
      members += matmuls_of_width(p, w);
    return matmuls_of_width(p, fused_width) > 0 && members > 0;
  });
  return o;
}

// Static inputs become weights (persistent), as the harness does with folding on.
void mark_weights(const FuzzGraph& fg) {
  Graph g = fg.graph;  // a handle: marks the graph's own inputs
  for (NodeId id : g.inputs()) {
    Node& n = g.mutable_node(id);
    bool fixed = true;
    for (const Expr& d : n.shape)
      fixed = fixed && d.is_const();
    n.persist = fixed;
  }
}

void expect_all_match(const FuzzGraph& fg, const CheckOptions& o, bool want_folds) {
  mark_weights(fg);
  CheckResult r = check_graph(fg, o);
  EXPECT_EQ(r.failures.size(), 0u) << fg.name;
  std::printf("[hfuse] %s%s: %d programs, %d fused, %d mixed, %d with folds\n", fg.name.c_str(),
              o.fold ? " (folds)" : "", r.programs, r.programs_using["fused"],
              r.programs_using["mixed"], r.programs_using["(load-time fold)"]);
  EXPECT_GT(r.programs_using["fused"], 0) << fg.name << ": no program drawn computes the fusion";
  EXPECT_GT(r.programs_using["mixed"], 0) << fg.name << ": no mixed program drawn";
  EXPECT_LT(r.programs_using["fused"], r.programs) << fg.name << ": no unfused program drawn";
  if (want_folds) {
    EXPECT_GT(r.programs_using["(load-time fold)"], 0) << fg.name;
  }
}

TEST(Hfuse, QkvEveryProgramMatches) {
  expect_all_match(qkv_block(), on_cpu(false, 40, {24, 8}), false);
  expect_all_match(qkv_block(), on_cpu(true, 40, {24, 8}), true);
}

TEST(Hfuse, GateUpEveryProgramMatches) {
  expect_all_match(gate_up_block(DType::F32), on_cpu(false, 64, {32}), false);
  expect_all_match(gate_up_block(DType::F32), on_cpu(true, 64, {32}), true);
}

TEST(Hfuse, GateUpBf16EveryProgramMatches) {
  expect_all_match(gate_up_block(DType::BF16), on_cpu(false, 64, {32}), false);
  expect_all_match(gate_up_block(DType::BF16), on_cpu(true, 64, {32}), true);
}

// The space of a graph as the compiler builds it (static inputs as weights, folds of any size).
BuiltSpace space_of(const FuzzGraph& fg, Backend& be, bool fold) {
  mark_weights(fg);
  FoldOptions fo;
  fo.on = fold;
  fo.min_bytes = 0;
  fo.limit = UINT64_MAX;
  return build_search_space(fg.graph, be, fg.graph.dim_facts(), {}, fo);
}

// With the concatenation folded at load, the biased seed reads every member through the fused
// matmul (one matmul instead of three) and the concatenation as a fold; the plain fewest-kernels
// seed does not fuse. Without folds the concatenation would run every step, and the seed keeps
// the three matmuls; with a larger penalty it fuses, and that program matches the reference.
TEST(Hfuse, BiasedSeedFusesEveryMember) {
  cpu::CpuBackend cpu(1);
  FuzzGraph fg = qkv_block();
  {
    BuiltSpace b = space_of(fg, cpu, true);
    ASSERT_TRUE(b.space->has_seed_bias());
    const LlirGraph plain = to_llir(*b.space, b.space->fewest_kernels_genome());
    EXPECT_EQ(matmuls_of_width(plain, 40), 0) << plain.to_text();
    EXPECT_EQ(matmuls_of_width(plain, 24) + matmuls_of_width(plain, 8), 3) << plain.to_text();
    const LlirGraph fused = to_llir(*b.space, b.space->biased_genome());
    EXPECT_EQ(matmuls_of_width(fused, 40), 1) << fused.to_text();
    EXPECT_EQ(matmuls_of_width(fused, 24) + matmuls_of_width(fused, 8), 0) << fused.to_text();
    EXPECT_EQ(FoldResolver::placeholders(fused).size(), 1u) << fused.to_text();
  }
  BuiltSpace b = space_of(fg, cpu, false);
  ASSERT_TRUE(b.space->has_seed_bias());
  const LlirGraph kept = to_llir(*b.space, b.space->biased_genome());
  EXPECT_EQ(matmuls_of_width(kept, 40), 0) << kept.to_text();
  SearchSpace::SeedBias bias = *b.space->seed_bias();
  bias.penalty = 100;
  b.space->set_seed_bias(bias);
  const LlirGraph fused = to_llir(*b.space, b.space->biased_genome());
  EXPECT_EQ(matmuls_of_width(fused, 40), 1) << fused.to_text();
  EXPECT_EQ(matmuls_of_width(fused, 24) + matmuls_of_width(fused, 8), 0) << fused.to_text();
  CheckResult r;
  testing::Program prog{"biased", {}, fused, fused.to_text()};
  const std::string problem = testing::run_program(cpu, prog, fg, testing::reference_cases(fg), r);
  EXPECT_TRUE(problem.empty()) << problem << fused.to_text();
}

// Rows that are not one (s up to 4): no fused matmul, but each member may read its weight as
// rows of the concatenation, so a prefill can read the fold that a decode step's fused matmul
// reads (and the weights are released). Every program matches; the biased seed reads the
// concatenation for every member and no weight.
TEST(Hfuse, ManyRowsReadTheConcatenation) {
  cpu::CpuBackend cpu(1);
  FuzzGraph fg = qkv_block(4);
  BuiltSpace b = space_of(fg, cpu, true);
  ASSERT_TRUE(b.space->has_seed_bias());
  const LlirGraph seed = to_llir(*b.space, b.space->biased_genome());
  EXPECT_EQ(matmuls_of_width(seed, 40), 0) << seed.to_text();
  EXPECT_EQ(matmuls_of_width(seed, 24) + matmuls_of_width(seed, 8), 3) << seed.to_text();
  EXPECT_EQ(FoldResolver::placeholders(seed).size(), 1u) << seed.to_text();
  for (const LlirNode& n : seed.nodes)
    EXPECT_FALSE(is_op(n.op, OpKind::Input) && n.attrs.label.starts_with("w")) << seed.to_text();
  CheckOptions o = on_cpu(true, 40, {24, 8});
  mark_weights(fg);
  CheckResult r = check_graph(fg, o);
  EXPECT_EQ(r.programs_using["fused"], 0);
  EXPECT_GT(r.programs_using["(load-time fold)"], 0);
}

// Off by default and with LUMINAL_HFUSE=off: nothing offered; LUMINAL_HFUSE=on offers it.
TEST(Hfuse, OffSwitch) {
  cpu::CpuBackend cpu(1);
  setenv("LUMINAL_HFUSE", "off", 1);
  BuiltSpace b = space_of(qkv_block(), cpu, false);
  unsetenv("LUMINAL_HFUSE");
  BuiltSpace d = space_of(qkv_block(), cpu, false);
  setenv("LUMINAL_HFUSE", "on", 1);
  EXPECT_FALSE(b.space->has_seed_bias());
  EXPECT_FALSE(d.space->has_seed_bias());
  BuiltSpace on = space_of(qkv_block(), cpu, false);
  EXPECT_TRUE(on.space->has_seed_bias());
}

}  // namespace
}  // namespace luminal
