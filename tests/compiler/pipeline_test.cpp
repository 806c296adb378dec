// The compiler's front half: lowering, core rules, the trace variable, and the search space.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "luminal/compiler/build_space.hpp"
#include "luminal/compiler/core_rules.hpp"
#include "luminal/compiler/trace.hpp"
#include "luminal/cpu/cpu_backend.hpp"
#include "luminal/runtime/session.hpp"

namespace luminal {
namespace {

TEST(Lower, OneENodePerNeededHlirNode) {
  Graph g;
  Tensor x = g.tensor("x", {4});
  Tensor unused = x.sin();  // no output depends on it
  (void)unused;
  x.exp().output("y");
  EGraph eg;
  Lowered low = lower(g, eg);
  EXPECT_EQ(low.roots.size(), 1u);
  EXPECT_EQ(eg.num_nodes(), g.nodes().size() - 1);
}

TEST(Lower, FixedDimIsSubstituted) {
  Graph g;
  Tensor x = g.tensor("x", {"s", 4});
  x.sum(1).output("y");
  EGraph eg;
  Lowered low = lower(g, eg, {{"s", {1, 1}}});
  ClassId y = eg.find(low.roots[0]);
  EXPECT_EQ(shape_to_string(eg.shape(y)), "[1]");
}

TEST(CoreRules, WideningExactly) {
  EXPECT_TRUE(widens_exactly(DType::BF16, DType::F32));
  EXPECT_TRUE(widens_exactly(DType::F16, DType::F32));
  EXPECT_TRUE(widens_exactly(DType::I32, DType::I64));
  EXPECT_FALSE(widens_exactly(DType::F32, DType::F16));
  EXPECT_FALSE(widens_exactly(DType::I32, DType::F32));  // 2^24 + 1 is not an f32
  EXPECT_FALSE(widens_exactly(DType::F16, DType::BF16));
}

size_t count_op(const EGraph& eg, OpKind k) {
  size_t n = 0;
  for (ENodeId id : eg.nodes_with_op(hlir_op(k)))
    n += !eg.is_removed(id);
  return n;
}

TEST(CoreRules, CastRoundTripAndMulOneMerge) {
  Graph g;
  Tensor x = g.tensor("x", {8}, DType::BF16);
  // bf16 -> f32 -> bf16 is the identity; so is * 1.
  Tensor y = (x.cast(DType::F32).cast(DType::BF16) * 1.0).output("y");
  (void)y;
  EGraph eg;
  Lowered low = lower(g, eg);
  run_schedule(eg, Schedule::saturate(core_rules()));
  eg.rebuild();
  // The output reads the input's class directly.
  ClassId in = eg.find(low.class_of[g.find("x")]);
  const ENode& out = eg.node(eg.nodes_of(low.roots[0])[0]);
  EXPECT_EQ(eg.find(out.children[0]), in);
  EXPECT_GE(count_op(eg, OpKind::Cast), 2u);  // the casts stay as alternatives
}

TEST(CoreRules, NarrowingRoundTripIsNotMerged) {
  Graph g;
  Tensor x = g.tensor("x", {8});
  (void)x.cast(DType::F16).cast(DType::F32).output("y");  // loses precision: not the identity
  EGraph eg;
  Lowered low = lower(g, eg);
  run_schedule(eg, Schedule::saturate(core_rules()));
  eg.rebuild();
  EXPECT_NE(eg.find(low.class_of[g.find("x")]),
            eg.find(eg.node(eg.nodes_of(low.roots[0])[0]).children[0]));
}

TEST(Trace, WritesEachStageToAFolder) {
  auto dir = std::filesystem::temp_directory_path() / "luminal_trace_test";
  std::filesystem::remove_all(dir);
  setenv("LUMINAL_TRACE", dir.c_str(), 1);
  Graph g;
  Tensor x = g.tensor("x", {4, 4});
  (x.exp() * 2.0 + x).sum(1).output("y");
  cpu::CpuBackend cpu(1);
  Session c = compile(g, cpu, CompileOptions().search_graph_limit(4).verbose(false));
  unsetenv("LUMINAL_TRACE");
  for (const char* f : {"hlir.txt", "saturation.txt", "pruned-egraph.txt", "best-1.llir"})
    EXPECT_TRUE(std::filesystem::exists(dir / f)) << f;
  std::ifstream in(dir / "saturation.txt");
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_NE(ss.str().find("core"), std::string::npos) << ss.str();
  std::filesystem::remove_all(dir);
}

// Runtime categories (per-execute lines) are neither stages on stderr nor a folder.
TEST(Trace, CategoriesAreNotStagesOrFolders) {
  setenv("LUMINAL_TRACE", "cuda.recapture", 1);
  EXPECT_FALSE(Trace().on());
  setenv("LUMINAL_TRACE", "cuda.recapture,1", 1);
  EXPECT_TRUE(Trace().on());
  setenv("LUMINAL_TRACE", "0", 1);
  EXPECT_FALSE(Trace().on());
  unsetenv("LUMINAL_TRACE");
  EXPECT_FALSE(std::filesystem::exists("cuda.recapture"));
}

TEST(SearchSpace, EveryGenomeIsAValidProgram) {
  Graph g;
  Tensor x = g.tensor("x", {4, 8});
  Tensor w = g.tensor("w", {8, 8});
  ((x.exp() + 1.0).matmul(w).relu() * 2.0).output("y");
  cpu::CpuBackend cpu(1);
  BuiltSpace b = build_search_space(g, cpu, {});
  ASSERT_GT(b.space->num_genes(), 0u);
  Rng rng(5);
  for (int i = 0; i < 50; ++i) {
    Genome gen = b.space->random_genome(rng);
    LlirGraph p = to_llir(*b.space, gen);
    // Inputs come before their readers; exactly one Output.
    int outputs = 0;
    for (size_t k = 0; k < p.nodes.size(); ++k) {
      for (int in : p.nodes[k].inputs)
        EXPECT_LT(in, static_cast<int>(k));
      outputs += is_op(p.nodes[k].op, OpKind::Output);
    }
    EXPECT_EQ(outputs, 1);
    EXPECT_NO_THROW(cpu.load(p, PlanSpec{}));
  }
}

}  // namespace
}  // namespace luminal
