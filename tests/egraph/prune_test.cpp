// Pruning: unsupported ops, dominance, in-place legality, cascades, the error for an output with
// no executable alternative, and cycle cutting (every choice acyclic, every class kept).
#include "luminal/egraph/prune.hpp"

#include <gtest/gtest.h>

#include <chrono>
#include <random>

#include "egraph/egraph_helpers.hpp"
#include "support/expect_error.hpp"

namespace luminal {
namespace {

using testing::constant;
using testing::ew;
using testing::input;
using testing::live_class_graph_acyclic;
using testing::make_attrs;
using testing::node_with;
using testing::reachable_classes;

const OpDef kCpuExp2{.name = "cpu.Exp2"};
const OpDef kCpuSqrt{.name = "cpu.Sqrt"};
const OpDef kCpuAdd{.name = "cpu.Add"};
const OpDef kCpuMul{.name = "cpu.Mul"};
const OpDef kCpuFused{.name = "cpu.Fused"};
const OpDef kAddInplace{.name = "cpu.AddInplace", .inplace_input = 0};

const OpDef* out_op() { return hlir_op(OpKind::Output); }

ClassId output(EGraph& eg, ClassId x, const std::string& label = "y") {
  Attrs a = make_attrs(eg.dtype(x), eg.shape(x), {View::contiguous(eg.shape(x))});
  a.label = label;
  return eg.add(out_op(), a, {x});
}

// A CPU-like backend: its own ops plus the HLIR leaves and Output.
PruneOptions cpu_backend() {
  PruneOptions o;
  o.executable = [](const OpDef* op) {
    return !op->is_hlir || op == hlir_op(OpKind::Input) || op == hlir_op(OpKind::Constant) ||
           op == hlir_op(OpKind::Output);
  };
  return o;
}

TEST(Prune, RemovesUnsupportedAlternatives) {
  EGraph eg;
  ClassId x = input(eg, "x");
  ClassId e = ew(eg, OpKind::Exp2, {x});
  eg.merge(e, ew(eg, &kCpuExp2, {x}));
  ClassId out = output(eg, e);
  PruneReport r = prune(eg, {out}, cpu_backend());
  EXPECT_EQ(r.unsupported, 1u);
  EXPECT_EQ(r.cascade + r.dominated + r.inplace + r.cycles, 0u);
  std::vector<ENodeId> left = eg.nodes_of(e);
  ASSERT_EQ(left.size(), 1u);
  EXPECT_EQ(eg.node(left[0]).op, &kCpuExp2);
  EXPECT_EQ(r.live_nodes, 3u);  // Input, cpu.Exp2, Output
  EXPECT_EQ(r.live_classes, 3u);
  EXPECT_EQ(r.to_string(),
            "prune: removed 1 unsupported, 0 dominated, 0 in-place, 0 cascade, 0 cyclic; 3 "
            "e-nodes in 3 classes remain reachable");
}

TEST(Prune, OutputWithoutExecutableAlternativeNamesTheOp) {
  {
    EGraph eg;
    ClassId e = ew(eg, OpKind::Exp2, {input(eg, "x")});
    testing::expect_error(
        [&] { prune(eg, {e}, cpu_backend()); },
        "cannot execute Exp2 f32[4] on this backend: no executable alternative for an output");
  }
  {
    // Through an Output: the message names the op that failed, not the Output.
    EGraph eg;
    Expr s = Expr::var("s");
    ClassId x = input(eg, "x", {s, 8}, DType::BF16);
    ClassId e = ew(eg, OpKind::Exp2, {x});
    ClassId out = output(eg, ew(eg, &kCpuSqrt, {e}));
    testing::expect_error(
        [&] { prune(eg, {out}, cpu_backend()); },
        {"cannot execute Exp2 bf16[s, 8] on this backend", "feeds output", "Output bf16[s, 8]"});
  }
  {
    EGraph eg;
    testing::expect_error([&] { prune(eg, {3}, cpu_backend()); }, "root class %c3 does not exist");
  }
}

TEST(Prune, CascadeRemovesNodesReadingAnEmptyClass) {
  EGraph eg;
  ClassId x = input(eg, "x");
  ClassId e = ew(eg, OpKind::Exp2, {x});  // HLIR only: will be empty
  ClassId s = ew(eg, OpKind::Sqrt, {e});
  ENodeId cpu_sqrt = eg.nodes_of(ew(eg, &kCpuSqrt, {e}))[0];
  eg.merge(s, eg.class_of(cpu_sqrt));
  eg.merge(s, ew(eg, &kCpuFused, {x}));  // sqrt(exp2(x)) in one kernel
  ClassId out = output(eg, s);
  PruneReport r = prune(eg, {out}, cpu_backend());
  EXPECT_EQ(r.unsupported, 2u);  // Exp2, Sqrt
  EXPECT_EQ(r.cascade, 1u);      // cpu.Sqrt read the empty Exp2 class
  EXPECT_TRUE(eg.is_removed(cpu_sqrt));
  std::vector<ENodeId> left = eg.nodes_of(s);
  ASSERT_EQ(left.size(), 1u);
  EXPECT_EQ(eg.node(left[0]).op, &kCpuFused);
  EXPECT_TRUE(eg.nodes_of(e).empty());
  EXPECT_EQ(r.live_classes, 3u);  // x, s, out: the empty class is no longer reachable
}

TEST(Prune, DominatedNodesGoOnlyWhereTheWinnerStays) {
  EGraph eg;
  ClassId x = input(eg, "x");
  ClassId y = input(eg, "y");
  ClassId a = ew(eg, OpKind::Add, {x, y});
  ENodeId hl = eg.nodes_of(a)[0];
  ENodeId plain = eg.nodes_of(ew(eg, &kCpuAdd, {x, y}))[0];
  ENodeId fused = eg.nodes_of(ew(eg, &kCpuFused, {x, y}))[0];
  eg.merge(a, eg.class_of(plain));
  eg.merge(a, eg.class_of(fused));
  eg.dominate(fused, plain);
  eg.dominate(hl, fused);  // the winner is unsupported: the loser stays
  eg.dominate(plain, hl);  // the loser is gone already
  ClassId b = ew(eg, &kCpuExp2, {x});
  ENodeId other = eg.nodes_of(ew(eg, &kCpuSqrt, {x}))[0];
  eg.dominate(eg.nodes_of(b)[0], other);  // different classes: nothing to do
  PruneReport r = prune(eg, {output(eg, a), output(eg, b, "b"), eg.class_of(other)}, cpu_backend());
  EXPECT_EQ(r.dominated, 1u);
  EXPECT_EQ(r.unsupported, 1u);
  EXPECT_TRUE(eg.is_removed(plain));
  EXPECT_FALSE(eg.is_removed(fused));
  EXPECT_FALSE(eg.is_removed(other));
  EXPECT_EQ(eg.nodes_of(a), std::vector<ENodeId>{fused});
}

// y = x' + w where x' = exp2(x); y may be computed in place in x''s buffer.
struct InplaceGraph {
  EGraph eg;
  ClassId x, w, e, y;
  ENodeId inplace;
  InplaceGraph() {
    x = input(eg, "x");
    w = input(eg, "w");
    e = ew(eg, &kCpuExp2, {x});
    y = ew(eg, &kCpuAdd, {e, w});
    inplace = eg.nodes_of(ew(eg, &kAddInplace, {e, w}))[0];
    eg.merge(y, eg.class_of(inplace));
  }
};

TEST(Prune, InplaceKeptWhenItsInputHasNoOtherConsumer) {
  InplaceGraph g;
  PruneReport r = prune(g.eg, {output(g.eg, g.y)}, cpu_backend());
  EXPECT_EQ(r.inplace, 0u);
  EXPECT_FALSE(g.eg.is_removed(g.inplace));
  EXPECT_EQ(g.eg.nodes_of(g.y).size(), 2u);
}

TEST(Prune, InplaceRemovedWhenAnotherValueReadsItsInput) {
  InplaceGraph g;
  ClassId z = ew(g.eg, &kCpuMul, {g.e, g.w});  // reads x' after y would have overwritten it
  PruneReport r = prune(g.eg, {output(g.eg, g.y), output(g.eg, z, "z")}, cpu_backend());
  EXPECT_EQ(r.inplace, 1u);
  EXPECT_TRUE(g.eg.is_removed(g.inplace));
  EXPECT_EQ(g.eg.nodes_of(g.y).size(), 1u);
}

TEST(Prune, InplaceIgnoresConsumersNoOutputNeeds) {
  InplaceGraph g;
  ew(g.eg, &kCpuMul, {g.e, g.w});  // dead code: never executed
  PruneReport r = prune(g.eg, {output(g.eg, g.y)}, cpu_backend());
  EXPECT_EQ(r.inplace, 0u);
  EXPECT_FALSE(g.eg.is_removed(g.inplace));
}

TEST(Prune, InplaceRemovedWhenItsInputIsAnOutput) {
  InplaceGraph g;
  PruneReport r = prune(g.eg, {g.y, g.e}, cpu_backend());
  EXPECT_EQ(r.inplace, 1u);
}

TEST(Prune, InplaceIntoAnInputNeedsPermission) {
  for (int allow = 0; allow < 3; ++allow) {
    EGraph eg;
    ClassId cache = input(eg, "kv_cache", {4}, DType::F32, true);
    ClassId w = input(eg, "w");
    ClassId y = ew(eg, &kCpuAdd, {cache, w});
    ENodeId ip = eg.nodes_of(ew(eg, &kAddInplace, {cache, w}))[0];
    eg.merge(y, eg.class_of(ip));
    ClassId out = output(eg, y, "kv_cache_out");
    eg.rebuild();
    PruneOptions o = cpu_backend();
    std::vector<std::pair<ENodeId, ClassId>> asked;
    if (allow > 0) {
      o.inplace_input_ok = [&](ENodeId in, ClassId self) {
        asked.emplace_back(in, self);
        return allow == 2;
      };
    }
    PruneReport r = prune(eg, {out}, o);
    EXPECT_EQ(r.inplace, allow == 2 ? 0u : 1u) << allow;
    EXPECT_EQ(eg.is_removed(ip), allow != 2);
    if (allow > 0) {
      ASSERT_EQ(asked.size(), 1u);
      EXPECT_EQ(asked[0].first, eg.nodes_of(cache)[0]);
      EXPECT_EQ(asked[0].second, eg.find(y));
    }
  }
}

TEST(Prune, OutputLeftOnlyWithAnIllegalInplaceNodeFails) {
  EGraph eg;
  ClassId x = input(eg, "x");
  ClassId w = input(eg, "w");
  ClassId e = ew(eg, &kCpuExp2, {x});
  ClassId y = ew(eg, &kAddInplace, {e, w});
  ClassId z = ew(eg, &kCpuMul, {e, w});
  testing::expect_error(
      [&] {
        prune(eg, {y, z}, cpu_backend());
      },
      {"cannot execute cpu.AddInplace f32[4]", "in-place"});
}

// ---- cycles ----

TEST(Prune, MulByOneMergedIntoItsInputIsCut) {
  EGraph eg;
  ClassId x = input(eg, "x");
  ClassId one = constant(eg, 1.0);
  ClassId m = ew(eg, OpKind::Mul, {x, one});
  ClassId out = output(eg, m);
  eg.merge(m, x);  // x == x * 1: the Mul now reads its own class
  PruneReport r = prune(eg, {out}, {});
  EXPECT_EQ(r.cycles, 1u);
  std::vector<ENodeId> left = eg.nodes_of(x);
  ASSERT_EQ(left.size(), 1u);
  EXPECT_EQ(eg.node(left[0]).op, hlir_op(OpKind::Input));
  EXPECT_TRUE(live_class_graph_acyclic(eg, {out}));
  EXPECT_EQ(r.live_classes, 2u);  // the constant is no longer needed
}

TEST(Prune, InversePairKeepsTheShallowestChoice) {
  EGraph eg;
  ClassId a = input(eg, "a");
  ClassId e = ew(eg, OpKind::Exp2, {a});
  ClassId l = ew(eg, OpKind::Log2, {e});
  ClassId out = output(eg, ew(eg, OpKind::Sqrt, {l}));
  eg.merge(l, a);  // log2(exp2(a)) == a: {a, Log2(E)} and E = {Exp2(A)} form a cycle
  eg.rebuild();
  ENodeId log_node = node_with(eg, a, OpKind::Log2);
  ENodeId exp_node = eg.nodes_of(e)[0];
  PruneReport r = prune(eg, {out}, {});
  EXPECT_EQ(r.cycles, 1u);
  EXPECT_TRUE(eg.is_removed(log_node));
  EXPECT_FALSE(eg.is_removed(exp_node));
  EXPECT_TRUE(live_class_graph_acyclic(eg, {out}));
  for (ClassId c : reachable_classes(eg, {out}))
    EXPECT_GE(eg.nodes_of(c).size(), 1u);
}

TEST(Prune, LongerCyclesAreCutAtTheirDeepestEdge) {
  // A -> B -> C -> A through unary ops, and each has an exit to x at a different depth.
  EGraph eg;
  ClassId x = input(eg, "x");
  ClassId a = ew(eg, OpKind::Exp2, {x});  // depth 1
  ClassId b = ew(eg, OpKind::Sqrt, {a});  // depth 2
  ClassId c = ew(eg, OpKind::Sin, {b});   // depth 3
  ClassId back = ew(eg, OpKind::Recip, {c});
  ENodeId recip = eg.nodes_of(back)[0];
  eg.merge(back, a);  // A also = Recip(C)
  ClassId out = output(eg, c);
  PruneReport r = prune(eg, {out}, {});
  EXPECT_EQ(r.cycles, 1u);
  EXPECT_TRUE(eg.is_removed(recip));
  EXPECT_EQ(eg.nodes_of(a).size(), 1u);
  EXPECT_TRUE(live_class_graph_acyclic(eg, {out}));
}

TEST(Prune, ClassOnlyReachableThroughItselfIsAnError) {
  // x = sqrt(in) has only an HLIR form; its other form reads itself: nothing executable is left.
  EGraph eg;
  ClassId in = input(eg, "in");
  ClassId one = constant(eg, 1.0);
  ClassId x = ew(eg, OpKind::Sqrt, {in});
  ClassId m = ew(eg, &kCpuMul, {x, one});
  eg.merge(m, x);
  testing::expect_error([&] { prune(eg, {output(eg, x)}, cpu_backend()); },
                        {"cannot execute Sqrt / cpu.Mul f32[4]", "depends on its own result"});
}

TEST(Prune, RandomGraphsEndAcyclicWithEveryClassKept) {
  std::mt19937 rng(11);
  size_t total_cycles = 0;
  for (int trial = 0; trial < 60; ++trial) {
    EGraph eg;
    std::vector<ClassId> cls;
    for (int i = 0; i < 3; ++i)
      cls.push_back(input(eg, "in" + std::to_string(i)));
    const OpKind un[] = {OpKind::Exp2, OpKind::Log2, OpKind::Sqrt, OpKind::Sin};
    const OpKind bin[] = {OpKind::Add, OpKind::Mul};
    for (int i = 0; i < 40; ++i) {
      size_t p = rng() % cls.size(), q = rng() % cls.size();
      cls.push_back(rng() % 2 ? ew(eg, un[rng() % 4], {cls[p]})
                              : ew(eg, bin[rng() % 2], {cls[p], cls[q]}));
    }
    std::vector<ClassId> roots{cls.back(), cls[cls.size() - 2]};
    for (int m = 0; m < 8; ++m)
      eg.merge(cls[rng() % cls.size()], cls[rng() % cls.size()]);
    PruneReport r = prune(eg, roots, {});
    total_cycles += r.cycles;
    EXPECT_EQ(r.unsupported + r.cascade + r.dominated + r.inplace, 0u);
    EXPECT_TRUE(live_class_graph_acyclic(eg, roots)) << "trial " << trial;
    std::vector<ClassId> reach = reachable_classes(eg, roots);
    EXPECT_EQ(r.live_classes, reach.size());
    size_t live = 0;
    for (ClassId c : reach) {
      EXPECT_GE(eg.nodes_of(c).size(), 1u) << "trial " << trial;
      live += eg.nodes_of(c).size();
    }
    EXPECT_EQ(r.live_nodes, live);
  }
  EXPECT_GT(total_cycles, 0u);  // the merges did create cycles
}

TEST(Prune, AcyclicGraphsLoseNothing) {
  EGraph eg;
  ClassId x = input(eg, "x");
  ClassId y = input(eg, "y");
  ClassId s = ew(eg, OpKind::Add, {x, y});
  eg.merge(s, ew(eg, OpKind::Add, {y, x}));
  ClassId out = output(eg, ew(eg, OpKind::Mul, {s, s}));
  const size_t before = eg.num_live_nodes();
  PruneReport r = prune(eg, {out}, {});
  EXPECT_EQ(eg.num_live_nodes(), before);
  EXPECT_EQ(r.live_nodes, before);
  EXPECT_EQ(r.cycles, 0u);
}

TEST(Prune, DeepGraphWithACycleAtEveryLevel) {
  // 50k levels, each merged with level * 1: a deep chain of self loops (no recursion limits).
  EGraph eg;
  ClassId one = constant(eg, 1.0);
  ClassId cur = input(eg, "x");
  const int levels = 50'000;
  for (int i = 0; i < levels; ++i) {
    cur = ew(eg, i % 2 ? OpKind::Exp2 : OpKind::Sqrt, {cur});
    eg.merge(cur, ew(eg, OpKind::Mul, {cur, one}));
  }
  ClassId out = output(eg, cur);
  auto t0 = std::chrono::steady_clock::now();
  PruneReport r = prune(eg, {out}, {});
  double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  std::printf("prune of %zu e-nodes: %.1f ms\n", eg.num_nodes(), ms);
  EXPECT_EQ(r.cycles, static_cast<size_t>(levels));
  EXPECT_EQ(r.live_nodes, static_cast<size_t>(levels) + 2);  // x, the chain, Output
  EXPECT_TRUE(live_class_graph_acyclic(eg, {out}));
}

}  // namespace
}  // namespace luminal
