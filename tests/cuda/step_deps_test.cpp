// CI without a GPU: the graph executor's dataflow edges (luminal/cuda/step_deps.hpp). Independent
// steps wait for nothing, every read after write, write after read and write after write waits
// (also through a chain of others), a cuBLASLt step is a barrier, skipped steps get no edges, and
// the lists are transitively reduced. Random plans check soundness against every conflicting pair.
// On an 8B-shaped decode's seed program, the layout's reuse gap shortens the longest chain of
// dependent kernels.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <random>
#include <vector>

#include "cuda/cuda_test_util.hpp"
#include "luminal/compiler/build_space.hpp"
#include "luminal/cuda/step_deps.hpp"
#include "luminal/luminal.hpp"
#include "luminal/models/decoder.hpp"
#include "luminal/models/synthetic.hpp"
#include "luminal/program/plan_layout.hpp"
#include "support/env_scope.hpp"

namespace luminal::cuda {
namespace {

using Deps = std::vector<std::vector<size_t>>;

DeviceRange buf(uint64_t at, uint64_t bytes = 256) { return {at, at + bytes}; }

StepAccess kernel(int node, std::vector<DeviceRange> reads, DeviceRange write) {
  return {
      .runs = true, .library = false, .node = node, .reads = std::move(reads), .writes = {write}};
}

StepAccess library(int node) {
  StepAccess a;
  a.library = true;
  a.node = node;
  return a;
}

TEST(StepDeps, IndependentProjectionsWaitForNothing) {
  // q, k, v read x; the scores read q and k; a write of v's value elsewhere reads v.
  const DeviceRange x = buf(0), q = buf(1000), k = buf(2000), v = buf(3000);
  const Deps d = step_dependencies({kernel(1, {x}, q), kernel(2, {x}, k), kernel(3, {x}, v),
                                    kernel(4, {q, k}, buf(4000)), kernel(5, {v}, buf(5000))});
  EXPECT_EQ(d, (Deps{{}, {}, {}, {0, 1}, {2}}));
}

TEST(StepDeps, WriteAfterReadWaitsForTheReader) {
  // Step 1 takes over the arena bytes step 0 read (its input's last use); step 2 overwrites what
  // step 1 wrote.
  const DeviceRange a = buf(0, 512), b = buf(1024);
  const Deps d = step_dependencies(
      {kernel(1, {a}, b), kernel(2, {buf(4096)}, buf(256, 128)), kernel(3, {}, buf(256, 64))});
  EXPECT_EQ(d, (Deps{{}, {0}, {1}}));
}

TEST(StepDeps, ReducedThroughAnotherStep) {
  // 2 reads 0's and 1's values, but 1 already waits for 0.
  const DeviceRange a = buf(0), b = buf(1000);
  const Deps d = step_dependencies(
      {kernel(1, {buf(9000)}, a), kernel(2, {a}, b), kernel(3, {a, b}, buf(2000))});
  EXPECT_EQ(d, (Deps{{}, {0}, {1}}));
}

TEST(StepDeps, LibraryStepIsABarrier) {
  const Deps d = step_dependencies({kernel(1, {buf(0)}, buf(1000)), kernel(2, {buf(0)}, buf(2000)),
                                    library(3), kernel(4, {buf(0)}, buf(3000)),
                                    kernel(5, {buf(3000)}, buf(4000)), library(6), library(7)});
  EXPECT_EQ(d, (Deps{{}, {}, {0, 1}, {2}, {3}, {4}, {5}}));
}

TEST(StepDeps, SkippedStepsHaveNoEdgesAndTheLaunchesOfANodeRunInOrder) {
  StepAccess skipped = kernel(2, {buf(0)}, buf(1000));
  skipped.runs = false;
  // Node 3 has two launches writing disjoint halves: the second still waits for the first.
  const Deps d = step_dependencies({kernel(1, {buf(5000)}, buf(0)), skipped,
                                    kernel(3, {buf(1000)}, buf(2000, 128)),
                                    kernel(3, {buf(1000)}, buf(2128, 128))});
  EXPECT_EQ(d, (Deps{{}, {}, {}, {2}}));
}

// Random plans: every pair of running steps that conflict is ordered (the later one reaches the
// earlier through the lists), and no list names a step another entry already reaches.
TEST(StepDeps, RandomPlansOrderEveryConflict) {
  std::mt19937_64 rng(7);
  auto rand = [&](uint64_t n) { return std::uniform_int_distribution<uint64_t>(0, n - 1)(rng); };
  int conflicts = 0, independent = 0;
  for (int trial = 0; trial < 200; ++trial) {
    const size_t n = 2 + rand(40);
    std::vector<StepAccess> steps(n);
    for (size_t s = 0; s < n; ++s) {
      StepAccess& a = steps[s];
      a.node = static_cast<int>(rand(n));
      a.runs = rand(10) != 0;
      a.library = rand(15) == 0;
      for (uint64_t r = rand(4); r > 0; --r)
        a.reads.push_back(buf(rand(64) * 64, 64 + rand(256)));
      a.writes.push_back(buf(rand(64) * 64, 64 + rand(256)));
    }
    const Deps d = step_dependencies(steps);
    // reach[s][t]: s waits for t, directly or not.
    std::vector<std::vector<bool>> reach(n, std::vector<bool>(n, false));
    for (size_t s = 0; s < n; ++s) {
      if (!steps[s].runs) {
        EXPECT_TRUE(d[s].empty());
      }
      for (size_t t : d[s]) {
        ASSERT_LT(t, s);
        ASSERT_TRUE(steps[t].runs);
        reach[s][t] = true;
        for (size_t u = 0; u < t; ++u)
          if (reach[t][u]) reach[s][u] = true;
      }
      for (size_t t : d[s])
        for (size_t o : d[s])
          EXPECT_FALSE(o != t && reach[o][t]) << "trial " << trial << ": step " << s << " lists "
                                              << t << ", which " << o << " reaches";
    }
    auto overlap = [](const std::vector<DeviceRange>& a, const std::vector<DeviceRange>& b) {
      for (const DeviceRange& x : a)
        for (const DeviceRange& y : b)
          if (x.overlaps(y)) return true;
      return false;
    };
    for (size_t s = 0; s < n; ++s)
      for (size_t t = 0; t < s; ++t) {
        const StepAccess &a = steps[t], &b = steps[s];
        if (!a.runs || !b.runs) continue;
        const bool must = a.library || b.library || a.node == b.node ||
                          overlap(a.writes, b.reads) || overlap(a.writes, b.writes) ||
                          overlap(a.reads, b.writes);
        if (must) {
          ++conflicts;
          EXPECT_TRUE(reach[s][t])
              << "trial " << trial << ": step " << s << " does not wait for step " << t;
        } else if (!reach[s][t]) {
          ++independent;
        }
      }
  }
  EXPECT_GT(conflicts, 1000);
  EXPECT_GT(independent, 100);  // the edges are not a chain
}

/// The longest chain of dependent kernels (in kernels) of `l`'s dataflow edges with the layout's
/// reuse gap `gap`, addresses from a fake binding; `arena` gets the arena's bytes.
int critical_path(const LlirGraph& l, const PlanSpec& spec, int gap, uint64_t* arena) {
  const PlanLayout layout(
      l, spec, {.backend = "cuda", .alignment = 256, .direct_outputs = true, .reuse_gap = gap});
  Bindings b;
  uintptr_t at = uintptr_t{1} << 40;
  auto fake = [&](uint64_t bytes) {
    Buffer buf{reinterpret_cast<void*>(at), bytes};
    at += uintptr_t{1} << 34;
    return buf;
  };
  for (size_t i = 0; i < layout.io().inputs.size(); ++i)
    b.inputs.push_back(fake(uint64_t{1} << 33));
  for (size_t i = 0; i < layout.io().outputs.size(); ++i)
    b.outputs.push_back(fake(uint64_t{1} << 20));
  b.arena = fake(layout.arena_bytes());
  *arena = layout.arena_bytes();
  std::vector<unsigned long long> ptr;
  layout.addresses(b, ptr);
  const std::vector<uint64_t> ext = layout.extents(b);
  std::vector<StepAccess> steps;
  for (size_t i = 0; i < l.nodes.size(); ++i) {
    const LlirNode& n = l.nodes[i];
    // Inputs run nothing; an Output runs a copy unless its producer wrote it in place.
    if (is_input(n) || (is_output(n) && ptr[i] == ptr[static_cast<size_t>(n.inputs.at(0))]))
      continue;
    steps.push_back(node_access(l, static_cast<int>(i), ptr, ext));
  }
  const Deps d = step_dependencies(steps);
  std::vector<int> depth(steps.size(), 1);
  int longest = 0;
  for (size_t s = 0; s < steps.size(); ++s) {
    for (size_t t : d[s])
      depth[s] = std::max(depth[s], depth[t] + 1);
    longest = std::max(longest, depth[s]);
  }
  return longest;
}

// The fewest-kernels program of a 4-layer 8B-shaped q4_0 decode step over the CUDA search space:
// with the arena reused at once, kernels of independent branches wait for each other through
// shared ranges; the plan's reuse gap (CudaPlan::kReuseGap) removes most of those waits. (The
// program without cuda.RowGemv, as the gap was measured: with it, k and v compute the norm's row
// and the chain at once is already 41 kernels, 40.5 at most for the 10%.)
TEST(StepDeps, ReuseGapShortensAnEightBDecodesLongestChain) {
  const testing::EnvScope no_row("LUMINAL_CUDA_ROW_PROLOGUE", "0");
  const models::LlamaSize size{.layers = 4,
                               .hidden = 4096,
                               .ffn = 14336,
                               .heads = 32,
                               .kv_heads = 8,
                               .vocab = 1000,
                               .rope_theta = 500000.0};
  models::DecoderShape shape;
  shape.slots = 256;
  shape.max_step = 1;
  shape.block_weights = models::matrix_block_types(models::llama_config(size), shape,
                                                   [](std::string_view) { return DType::Q4_0; });
  const models::Decoder dec = models::build_decoder(models::llama_config(size), shape);
  testing::CudaRulesOnly rules;
  Facts facts = dec.graph.dim_facts();
  facts["s"] = {1, 1};
  const BuiltSpace b =
      build_search_space(dec.graph, rules, facts, {}, FoldOptions{.on = true, .limit = 64 << 20});
  LlirGraph l = to_llir(*b.space, b.space->fewest_kernels_genome());
  l.fill_input_dtypes();
  PlanSpec spec;
  spec.facts = facts;
  spec.dim_names = {"c"};
  uint64_t arena0 = 0, arena16 = 0;
  const int at_once = critical_path(l, spec, 0, &arena0);
  const int gapped = critical_path(l, spec, 16, &arena16);
  std::printf(
      "[reuse gap] longest chain %d kernels at once (arena %llu bytes), %d with gap 16 "
      "(arena %llu bytes)\n",
      at_once, static_cast<unsigned long long>(arena0), gapped,
      static_cast<unsigned long long>(arena16));
  EXPECT_LT(gapped * 10, at_once * 9) << "at least 10% shorter";
  EXPECT_LT(arena16, arena0 + (uint64_t{1} << 20));
}

}  // namespace
}  // namespace luminal::cuda
