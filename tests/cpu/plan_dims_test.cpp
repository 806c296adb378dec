// CpuPlan's per-node dims versions: when a dim changes, only the nodes that read it (in their
// shape, views, iota or payload) see a new version and re-plan; the others keep their caches.
// The values stay equal to the reference at every step (a kernel left with stale shapes would
// show here).
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "luminal/cpu/cpu_backend.hpp"
#include "luminal/cpu/plan.hpp"
#include "luminal/luminal.hpp"

namespace luminal {
namespace {

// Whether an LLIR node's shape or views name `dim` (what CpuPlan reads besides iota and payload).
bool reads(const LlirNode& n, const std::string& dim) {
  std::vector<Expr> es(n.attrs.shape.begin(), n.attrs.shape.end());
  for (const View& v : n.attrs.views) {
    es.insert(es.end(), v.dims.begin(), v.dims.end());
    es.insert(es.end(), v.strides.begin(), v.strides.end());
  }
  es.push_back(n.attrs.iota_expr);
  es.push_back(n.attrs.iota_len);
  for (const Expr& e : es)
    for (const std::string& v : e.vars())
      if (v == dim) return true;
  return false;
}

TEST(CpuPlanDims, OnlyNodesReadingAChangedDimReplan) {
  // A per-token part ([s, 16] through a matmul) and a part over the context ([c, 16], summed),
  // plus an iota whose value (not its shape) moves with c.
  Graph g;
  g.declare_dim("s", 1, 8);
  g.declare_dim("c", 1, 32);
  const Tensor x = g.tensor("x", {"s", 16});
  const Tensor w = g.tensor("w", {16, 16});
  const Tensor cache = g.tensor("cache", {"c", 16});
  const Tensor offset = g.iota(Expr::var("c") + Expr::z(), 16).cast(DType::F32);
  (x.matmul(w).relu() + 1.0).output("y");
  (cache.sum(0) + offset).output("z");
  cpu::CpuBackend cpu(1);
  Session s(g, cpu, CompileOptions().search_graph_limit(3).verbose(false));
  ReferenceRuntime ref(g);
  auto values = [](size_t n, int seed) {
    std::vector<float> v(n);
    for (size_t i = 0; i < n; ++i)
      v[i] = static_cast<float>((i * 7 + static_cast<size_t>(seed)) % 11) * 0.25f - 1;
    return v;
  };
  s.set("w", values(16 * 16, 1));
  ref.set("w", values(16 * 16, 1));
  const DynMap first{{"s", 3}, {"c", 5}};
  auto run = [&](int64_t sv, int64_t cv) {
    const DynMap dyn{{"s", sv}, {"c", cv}};
    for (Runtime* rt : std::vector<Runtime*>{&s, &ref}) {
      rt->set("x", values(static_cast<size_t>(sv) * 16, 2));
      rt->set("cache", values(static_cast<size_t>(cv) * 16, 3));
      rt->execute(dyn);
    }
    for (const char* out : {"y", "z"})
      EXPECT_EQ(s.get<float>(out), ref.get<float>(out)) << out << " at s=" << sv << ", c=" << cv;
  };
  run(3, 5);
  const auto& plan = dynamic_cast<const cpu::CpuPlan&>(s.plan(first));
  const LlirGraph& llir = plan.llir();
  const uint64_t base = plan.node_updates(), base_dims = plan.dim_updates();
  size_t read_c = 0, read_s = 0;
  for (const LlirNode& n : llir.nodes) {
    read_c += reads(n, "c");
    read_s += reads(n, "s");
  }
  ASSERT_GT(read_c, 0u);
  ASSERT_LT(read_c, llir.nodes.size()) << llir.to_text();
  // Only c moves: the nodes reading c (at least those whose shape or views name it; a payload may
  // add a few), never all of them.
  run(3, 9);
  const uint64_t after_c = plan.node_updates() - base;
  EXPECT_GE(after_c, read_c);
  EXPECT_LT(after_c, llir.nodes.size()) << llir.to_text();
  EXPECT_EQ(plan.dim_updates(), base_dims + 1);
  // The same dims again: nothing is re-evaluated.
  run(3, 9);
  EXPECT_EQ(plan.node_updates() - base, after_c);
  EXPECT_EQ(plan.dim_updates(), base_dims + 1);
  // Only s moves.
  run(6, 9);
  EXPECT_GE(plan.node_updates() - base - after_c, read_s);
  EXPECT_LT(plan.node_updates() - base - after_c, llir.nodes.size());
}

// The search times a CPU candidate with the dims that vary in its bucket moved by one every
// other run, as a decode loop moves c every step: the shapes each change re-evaluates count
// (programs of many kernels reading c timed like fused ones at fixed dims, and ran their steps
// slower). A dim fixed in the bucket stays; one at the top of its range moves down.
TEST(CpuPlanDims, TimingAlternatesTheDimsThatVaryInTheBucket) {
  Graph g;
  g.declare_dim("s", 1, 8);
  g.declare_dim("c", 1, 32);
  const Tensor x = g.tensor("x", {"s", 16});
  const Tensor cache = g.tensor("cache", {"c", 16});
  (x.exp() + 1.0).output("y");
  cache.sum(0).output("z");
  cpu::CpuBackend cpu(1);
  Session s(g, cpu, CompileOptions().search_graph_limit(2).verbose(false));
  s.set("x", std::vector<float>(8 * 16, 0.5f));
  s.set("cache", std::vector<float>(8 * 16, 0.25f));
  s.execute({{"s", 8}, {"c", 8}});
  auto& plan = dynamic_cast<cpu::CpuPlan&>(const_cast<Plan&>(s.plan({{"s", 8}, {"c", 8}})));
  // Both slots hold 8: s (range [1, 8]) moves down to 7, c (range [1, 32]) up to 9.
  const int64_t dims[2] = {8, 8};
  const auto alt = plan.alternate_dims(dims);
  ASSERT_TRUE(alt.has_value());
  EXPECT_EQ(std::multiset<int64_t>(alt->begin(), alt->end()), (std::multiset<int64_t>{7, 9}));
  const uint64_t before = plan.dim_updates();
  cpu.time(plan, 0, dims, 3, 10.0);
  // The warm-up at dims, then at least three timed runs alternating, then back at dims.
  EXPECT_GE(plan.dim_updates() - before, 4u);
  // Every dim fixed in the bucket: nothing alternates.
  Session fixed(g, cpu,
                CompileOptions()
                    .search_graph_limit(2)
                    .verbose(false)
                    .dim_buckets("s", {DimBucket(1, 1)})
                    .dim_buckets("c", {DimBucket(4, 4)}));
  fixed.set("x", std::vector<float>(16, 0.5f));
  fixed.set("cache", std::vector<float>(4 * 16, 0.25f));
  fixed.execute({{"s", 1}, {"c", 4}});
  const auto& one = dynamic_cast<const cpu::CpuPlan&>(fixed.plan({{"s", 1}, {"c", 4}}));
  const int64_t at[2] = {1, 4};
  const int64_t swapped[2] = {4, 1};
  EXPECT_FALSE(one.alternate_dims(at).has_value() || one.alternate_dims(swapped).has_value());
}

}  // namespace
}  // namespace luminal
