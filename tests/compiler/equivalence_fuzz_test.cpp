// Equivalence fuzz on the CPU backend: for a graph, draw many distinct programs from its CPU
// search space and check that every one of them, loaded and executed by the CPU backend, matches
// the ReferenceRuntime on the same inputs at several values of the dynamic dims (the harness:
// tests/support/equivalence.hpp). Programs run with 1 thread, every 4th with 2.
//
// Graphs: random graphs (tests/support/random_graph.hpp, one test per seed) and model blocks
// (tests/support/model_blocks.hpp: SwiGLU MLP, RMSNorm + projection, GQA attention with a KV
// cache written by scatter and read back by gather). Model blocks must have at least 50 distinct
// programs, and all must match.
//
// Environment:
//   LUMINAL_FUZZ_SEEDS=n      random graphs to test (default 64; 32 under AddressSanitizer)
//   LUMINAL_FUZZ_SEED_BASE=n  first seed (default 0): LUMINAL_FUZZ_SEED_BASE=1000 explores others
//   LUMINAL_FUZZ_PROGRAMS=n   programs per random graph (default 50; the model blocks always 50)
//   LUMINAL_FUZZ_VERBOSE=1    prints one line per graph (space size, programs, time)
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <string>

#include "luminal/cpu/cpu_backend.hpp"
#include "luminal/luminal.hpp"
#include "luminal/nn/moe.hpp"
#include "luminal/nn/rope.hpp"
#include "support/equivalence.hpp"
#include "support/model_blocks.hpp"
#include "support/random_graph.hpp"

namespace luminal {
namespace {

using testing::attention_block;
using testing::check_graph;
using testing::CheckOptions;
using testing::CheckResult;
using testing::env_int;
using testing::FuzzGraph;
using testing::FuzzInput;
using testing::FuzzOutput;
using testing::rmsnorm_block;
using testing::run_check;
using testing::sentinel_graph;
using testing::swiglu_block;

/// `o` running on the CPU backend: 1 thread, every `multithread_every`-th program 2 threads.
CheckOptions on_cpu(CheckOptions o) {
  static cpu::CpuBackend cpu(1), cpu2(2);
  o.backend = &cpu;
  o.backend2 = &cpu2;
  o.label = "1 thread";
  o.label2 = "2 threads";
  return o;
}

CheckOptions cpu_model_options() { return on_cpu(testing::model_options()); }

// The check itself: programs of a slightly different graph must all be reported, on both the
// float output (a 1e-4 relative error) and the integer one (off by one).
TEST(EquivalenceFuzz, CatchesWrongPrograms) {
  FuzzGraph oracle = sentinel_graph(false);
  FuzzGraph wrong = sentinel_graph(true);
  CheckOptions o = on_cpu({});
  o.programs = 10;
  o.compiled = &wrong.graph;
  CheckResult r = run_check(oracle, o);
  ASSERT_TRUE(r.errors.empty()) << r.errors[0];
  ASSERT_GT(r.programs, 1);
  EXPECT_EQ(r.failures.size(), static_cast<size_t>(r.programs));
  for (const std::string& f : r.failures) {
    EXPECT_NE(f.find("output 'y'"), std::string::npos) << f;
    EXPECT_NE(f.find("output 'k'"), std::string::npos) << f;
  }
  // ... and the right graph passes.
  o.compiled = nullptr;
  CheckResult ok = run_check(oracle, o);
  EXPECT_TRUE(ok.errors.empty() && ok.failures.empty())
      << (ok.errors.empty() ? ok.failures[0] : ok.errors[0]);
}

TEST(EquivalenceFuzz, SwiGluMlpF32) { check_graph(swiglu_block(DType::F32), cpu_model_options()); }
TEST(EquivalenceFuzz, SwiGluMlpF16) { check_graph(swiglu_block(DType::F16), cpu_model_options()); }
TEST(EquivalenceFuzz, RmsNormProjection) { check_graph(rmsnorm_block(), cpu_model_options()); }
TEST(EquivalenceFuzz, GqaAttentionKvCache) {
  check_graph(attention_block(false), cpu_model_options());
}
TEST(EquivalenceFuzz, GqaAttentionKvCacheRope) {
  check_graph(attention_block(true), cpu_model_options());
}

// The row kernel (cpu.Row): RMSNorm and the attention's softmax as one kernel each are among the
// programs drawn, and every program matches.
TEST(EquivalenceFuzz, RowKernelPrograms) {
  setenv("LUMINAL_CPU_ROWS", "on", 1);  // the default; set in case the environment has "off"
  for (const FuzzGraph& fg : {rmsnorm_block(), attention_block(true)}) {
    CheckResult r = check_graph(fg, cpu_model_options());
    EXPECT_GT(r.programs_using["cpu.Row"], 0) << fg.name;
  }
  unsetenv("LUMINAL_CPU_ROWS");
}

// nn::apply_rope's sum over an axis of two: programs that take it as adds (short_sum_rule.hpp),
// fused or not, and programs that keep the SumReduce or a matmul, are all the reference's bits
// (a zero tolerance), and the draws hold both.
TEST(EquivalenceFuzz, RopeSumOfTwoAsAdds) {
  for (DType dt : {DType::F32, DType::BF16}) {
    FuzzGraph fg;
    fg.name = "nn::apply_rope " + std::string(name(dt));
    fg.seed = 1010;
    fg.graph.declare_dim("s", 1, 8);
    const Expr s = Expr::var("s");
    Tensor x = testing::model_input(fg, "x", {s, 3, 16}, dt, -4, 4);
    FuzzInput pos;
    pos.label = "pos";
    pos.dtype = DType::I32;
    pos.shape = {s};
    pos.lo = 0;
    pos.hi = 100;
    fg.inputs.push_back(pos);
    Tensor p = fg.graph.tensor("pos", {"s"}, DType::I32);
    Tensor inv = testing::model_input(fg, "inv_freq", {8}, DType::F32, 0.001, 1);
    nn::apply_rope(x, p, inv).output("y");
    fg.outputs.push_back(FuzzOutput{"y", dt, 0, 0});
    fg.dyn_points = {{{"s", 1}}, {{"s", 4}}, {{"s", 8}}};
    CheckOptions o = on_cpu({});
    o.programs = 30;
    o.features.emplace_back("adds", [](const LlirGraph& g) {
      const auto mix = g.op_mix();
      return !mix.contains("SumReduce") && !mix.contains("cpu.Matmul");
    });
    CheckResult r = check_graph(fg, o);
    EXPECT_GT(r.programs, 10) << fg.name;
    EXPECT_GT(r.programs_using["adds"], 0) << fg.name;
    EXPECT_LT(r.programs_using["adds"], r.programs) << fg.name;
  }
}

// Random graph 77103 (found by LUMINAL_FUZZ_SEED_BASE=77000): a division whose dividend, a
// k = 2 matmul, is also an output. Some programs compute the matmul twice, by cpu.BlasMatmul and
// as the short sum's adds inlined in a fused kernel (bits apart: BLAS's fma); the division's
// former Veltkamp split of q0 = x * (1/y), t - (t - q0) with t and q0 from the two copies, was
// off by 2^27 times their difference (5.17 for -0.50). Division no longer splits (division.cpp).
TEST(EquivalenceFuzz, QuotientOfAValueComputedTwoWays) {
  CheckOptions o = on_cpu({});
  o.programs = 60;
  check_graph(testing::random_graph(77103), o);
}

// Seed 170232: elements gathered one an index (a row gather of R = 1) times a vector, summed
// over the gathered axis. The expert-matmul rule took the sum over the ids for a contraction
// inside each expert's row (cpu.ExpertMatmul with a scalar id view: 0.35 became -0.21 in every
// program); a contraction must stay inside one gathered row (expert_rule.cpp).
TEST(EquivalenceFuzz, ElementsGatheredAndSummedOverTheIds) {
  check_graph(testing::random_graph(170232), on_cpu({}));
}

// The router's top-k (nn::router_topk). Searched: programs mixing the repeated argmax (MaxReduce,
// or a cpu.Row's max over the experts not taken) and its alternative, the pairwise ranks (whose
// ids are the graph's only contraction: cpu.Matmul), per output; Ranks alone: every program of
// that form. All equal to the reference (which runs the argmax, or the ranks).
TEST(EquivalenceFuzz, RouterTopKBothForms) {
  for (nn::TopKForm form : {nn::TopKForm::Searched, nn::TopKForm::Ranks})
    for (bool renormalise : {false, true}) {
      CheckOptions o = cpu_model_options();
      // Both forms: enough draws that some take each (30 took no ranks with a renormalisation).
      o.programs = form == nn::TopKForm::Searched ? 60 : 30;
      const FuzzGraph fg = testing::router_block(renormalise, form);
      CheckResult r = check_graph(fg, o);
      ASSERT_GT(r.programs, 10) << fg.name;
      EXPECT_GT(r.programs_using["cpu.Matmul"], 0)
          << fg.name << (form == nn::TopKForm::Ranks ? " (ranks)" : " (both)")
          << ": no program ran the ranks";
      if (form == nn::TopKForm::Searched && !renormalise) {
        EXPECT_GT(r.programs_using["MaxReduce"] + r.programs_using["cpu.Row"], 0)
            << "no program ran the repeated argmax";
      }
    }
}

// Quantized weights: every program (QMatmul on an 8-bit activation, dequantise then multiply,
// QGather or a gather of the dequantised table; with folds, a dequantised copy made at load)
// matches the reference within the activation-rounding bound (quantized_block).
class QuantizedBlocks : public ::testing::TestWithParam<DType> {};

TEST_P(QuantizedBlocks, MatchReference) {
  CheckOptions o = on_cpu({});
  o.programs = 24;
  CheckResult r = check_graph(testing::quantized_block(GetParam()), o);
  EXPECT_GT(r.programs_using["cpu.QMatmul"], 0);
  EXPECT_GT(r.programs_using["cpu.QGather"], 0);
  // With folding (any growth allowed): some programs read a dequantised copy made at load.
  o.fold = true;
  CheckResult f = check_graph(testing::quantized_block(GetParam()), o);
  EXPECT_GT(f.programs_using["(load-time fold)"], 0);
}

INSTANTIATE_TEST_SUITE_P(Types, QuantizedBlocks,
                         ::testing::Values(DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1,
                                           DType::Q8_0, DType::Q4_K, DType::Q5_K, DType::Q6_K),
                         [](const auto& info) { return std::string(name(info.param)); });

// Load-time folding: programs reading folded values (every static input taken as a weight,
// every weight-only value offered) agree with the reference, and some programs do fold.
TEST(EquivalenceFuzz, ProgramsWithLoadTimeFolds) {
  int folding = 0;
  for (uint64_t seed = 0; seed < 12; ++seed) {
    FuzzGraph fg = testing::random_graph(5000 + seed);
    CheckOptions o = on_cpu({});
    o.programs = 20;
    o.fold = true;
    CheckResult r = check_graph(fg, o);
    folding += r.programs_using["(load-time fold)"];
  }
  CheckOptions o = cpu_model_options();
  o.fold = true;
  CheckResult r = run_check(swiglu_block(DType::F32), o);
  EXPECT_TRUE(r.errors.empty() && r.failures.empty())
      << (r.errors.empty() ? (r.failures.empty() ? "" : r.failures[0]) : r.errors[0]);
  folding += r.programs_using["(load-time fold)"];
  EXPECT_GT(folding, 10) << "too few programs read a folded value to test folding";
}

// ---------------------------------------------------------------- random graphs

class RandomGraphs : public ::testing::TestWithParam<int> {};

TEST_P(RandomGraphs, MatchReference) {
  const uint64_t seed = static_cast<uint64_t>(env_int("LUMINAL_FUZZ_SEED_BASE", 0)) +
                        static_cast<uint64_t>(GetParam());
  FuzzGraph fg = testing::random_graph(seed);
  CheckOptions o = on_cpu({});
  o.programs = env_int("LUMINAL_FUZZ_PROGRAMS", 50);
  check_graph(fg, o);
}

// Random graphs around one mixture-of-experts matmul (random_expert_graph): every program
// agrees, and some run it as cpu.ExpertMatmul.
TEST(EquivalenceFuzz, ExpertGraphs) {
  int expert_programs = 0;
  for (uint64_t seed = 0; seed < 12; ++seed) {
    FuzzGraph fg = testing::random_expert_graph(seed);
    CheckOptions o = on_cpu({});
    o.programs = 20;
    CheckResult r = check_graph(fg, o);
    expert_programs += r.programs_using["cpu.ExpertMatmul"];
  }
  EXPECT_GT(expert_programs, 10) << "too few programs ran cpu.ExpertMatmul";
}

INSTANTIATE_TEST_SUITE_P(Seeds, RandomGraphs,
                         ::testing::Range(0,
                                          env_int("LUMINAL_FUZZ_SEEDS", testing::kDefaultSeeds)));

}  // namespace
}  // namespace luminal
