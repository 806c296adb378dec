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
#include <string>

#include "luminal/cpu/cpu_backend.hpp"
#include "luminal/luminal.hpp"
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

INSTANTIATE_TEST_SUITE_P(Seeds, RandomGraphs,
                         ::testing::Range(0,
                                          env_int("LUMINAL_FUZZ_SEEDS", testing::kDefaultSeeds)));

}  // namespace
}  // namespace luminal
