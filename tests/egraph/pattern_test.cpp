// Pattern matching: multi-node patterns, variables, bindings, attribute predicates, any_op,
// removed e-nodes, limits, and guards through rules.
#include "luminal/egraph/pattern.hpp"

#include <gtest/gtest.h>

#include "egraph/egraph_helpers.hpp"
#include "luminal/egraph/schedule.hpp"
#include "support/expect_error.hpp"

namespace luminal {
namespace {

using testing::ew;
using testing::input;
using testing::make_attrs;

const OpDef kMatmul{"cpu.Matmul"};

// a[m, k] @ b[k, n] the HLIR way: Mul over a broadcast [m, n, k], then SumReduce of axis 2.
struct MatmulGraph {
  EGraph eg;
  Expr m = Expr::var("s");
  ClassId a, b, mul, sum;
  ENodeId mul_node, sum_node;

  explicit MatmulGraph(int k = 64, int n = 32) {
    a = input(eg, "a", {m, k});
    b = input(eg, "b", {k, n}, DType::F32, true);
    View va{{m, n, k}, {k * Expr::z(), 0, Expr::z()}};
    View vb{{m, n, k}, {0, Expr::z(), n * Expr::z()}};
    mul = eg.add(hlir_op(OpKind::Mul), make_attrs(DType::F32, {m, n, k}, {va, vb}), {a, b});
    Attrs s = make_attrs(DType::F32, {m, n}, {View::contiguous({m, n, k})});
    s.axis = 2;
    sum = eg.add(hlir_op(OpKind::SumReduce), s, {mul});
    mul_node = eg.nodes_of(mul)[0];
    sum_node = eg.nodes_of(sum)[0];
  }
};

Pattern matmul_pattern() {
  return Pattern::op(OpKind::SumReduce,
                     {Pattern::op(OpKind::Mul, {Pattern::var("a"), Pattern::var("b")}).bind("mul")})
      .where([](const Attrs& a) { return a.axis == static_cast<int>(a.shape.size()); })
      .bind("sum");
}

TEST(Pattern, SumReduceOverMulIsAMatmul) {
  MatmulGraph g;
  std::vector<Match> ms = match(g.eg, matmul_pattern());
  ASSERT_EQ(ms.size(), 1u);
  const Match& m = ms[0];
  EXPECT_EQ(m.root, g.sum);
  EXPECT_EQ(m.root_node, g.sum_node);
  EXPECT_EQ(m.cls("a"), g.a);
  EXPECT_EQ(m.cls("b"), g.b);
  EXPECT_EQ(m.node("mul"), g.mul_node);
  EXPECT_EQ(m.node("sum"), g.sum_node);
  EXPECT_EQ(g.eg.attrs_of(m.node("mul")).views[1].strides[2], 32 * Expr::z());
  testing::expect_error([&] { (void)m.cls("c"); }, {"'c'", "a, b"});
  testing::expect_error([&] { (void)m.node("x"); }, {"'x'", "sum, mul"});
}

TEST(Pattern, AttributePredicatesFilter) {
  MatmulGraph g;
  // A reduce over the first axis is not a matmul.
  Pattern p = Pattern::op(OpKind::SumReduce,
                          {Pattern::op(OpKind::Mul, {Pattern::var("a"), Pattern::var("b")})})
                  .where([](const Attrs& a) { return a.axis == 0; });
  EXPECT_TRUE(match(g.eg, p).empty());
  // Several predicates are and-ed.
  Pattern q = Pattern::op(OpKind::Mul, {Pattern::var("a"), Pattern::var("b")})
                  .where([](const Attrs& a) { return a.dtype == DType::F32; })
                  .where([](const Attrs& a) { return a.shape.size() == 3; });
  EXPECT_EQ(match(g.eg, q).size(), 1u);
  Pattern r = Pattern::op(OpKind::Mul, {Pattern::var("a"), Pattern::var("b")})
                  .where([](const Attrs& a) { return a.dtype == DType::F32; })
                  .where([](const Attrs& a) { return a.shape.size() == 2; });
  EXPECT_TRUE(match(g.eg, r).empty());
  // Predicates on a child pattern read the child's attributes.
  Pattern persistent_b = Pattern::op(
      OpKind::Mul, {Pattern::var("a"),
                    Pattern::op(OpKind::Input).where([](const Attrs& a) { return a.persist; })});
  EXPECT_EQ(match(g.eg, persistent_b).size(), 1u);
}

TEST(Pattern, SameVariableTwiceMustBindTheSameClass) {
  EGraph eg;
  ClassId x = input(eg, "x");
  ClassId y = input(eg, "y");
  ClassId xx = ew(eg, OpKind::Mul, {x, x});
  ClassId xy = ew(eg, OpKind::Mul, {x, y});
  Pattern square = Pattern::op(OpKind::Mul, {Pattern::var("v"), Pattern::var("v")});
  std::vector<Match> ms = match(eg, square);
  ASSERT_EQ(ms.size(), 1u);
  EXPECT_EQ(ms[0].root, xx);
  EXPECT_EQ(ms[0].cls("v"), x);
  EXPECT_EQ(ms[0].classes.size(), 1u);
  // After x == y, Mul(x, y) is a square too (and congruent with Mul(x, x)).
  eg.merge(x, y);
  eg.rebuild();
  EXPECT_EQ(eg.find(xx), eg.find(xy));
  ms = match(eg, square);
  ASSERT_EQ(ms.size(), 1u);  // one live e-node left
  EXPECT_EQ(ms[0].cls("v"), eg.find(x));
}

TEST(Pattern, VariableSharedAcrossLevels) {
  // Add(Mul(a, b), a): a appears at two depths.
  EGraph eg;
  ClassId a = input(eg, "a");
  ClassId b = input(eg, "b");
  ClassId ab = ew(eg, OpKind::Mul, {a, b});
  ClassId yes = ew(eg, OpKind::Add, {ab, a});
  ew(eg, OpKind::Add, {ab, b});
  Pattern p = Pattern::op(
      OpKind::Add,
      {Pattern::op(OpKind::Mul, {Pattern::var("a"), Pattern::var("b")}), Pattern::var("a")});
  std::vector<Match> ms = match(eg, p);
  ASSERT_EQ(ms.size(), 1u);
  EXPECT_EQ(ms[0].root, yes);
}

TEST(Pattern, EveryAlternativeOfAChildClassIsTried) {
  EGraph eg;
  ClassId x = input(eg, "x");
  ClassId y = input(eg, "y");
  ClassId ex = ew(eg, OpKind::Exp2, {x});
  ClassId ey = ew(eg, OpKind::Exp2, {y});
  ClassId sx = ew(eg, OpKind::Sqrt, {x});
  eg.merge(ex, sx);  // class {Exp2(x), Sqrt(x)}
  ClassId add = ew(eg, OpKind::Add, {ex, ey});
  eg.merge(ey, input(eg, "z"));  // {Exp2(y), Input z}
  eg.rebuild();
  // Add(any unary(p), any unary(q)): one match per pair of alternatives.
  auto unary = [](const char* v) {
    return Pattern::any_op([](const OpDef* op) {
             return op == hlir_op(OpKind::Exp2) || op == hlir_op(OpKind::Sqrt);
           })
        .bind(v);
  };
  std::vector<Match> ms = match(eg, Pattern::op(OpKind::Add, {unary("p"), unary("q")}));
  ASSERT_EQ(ms.size(), 2u);  // {Exp2, Sqrt} x {Exp2}
  EXPECT_EQ(eg.node(ms[0].node("p")).op, hlir_op(OpKind::Exp2));
  EXPECT_EQ(eg.node(ms[1].node("p")).op, hlir_op(OpKind::Sqrt));
  EXPECT_EQ(ms[0].node("q"), ms[1].node("q"));
  EXPECT_EQ(ms[0].root, eg.find(add));
  // Exp2 children with their own variables: a cartesian product of bindings.
  Pattern both =
      Pattern::op(OpKind::Add, {Pattern::op(OpKind::Exp2, {Pattern::var("i")}),
                                Pattern::any_op([](const OpDef*) { return true; }).bind("other")});
  ms = match(eg, both);
  ASSERT_EQ(ms.size(), 2u);  // second child: Exp2(y) or Input z
  EXPECT_EQ(ms[0].cls("i"), x);
  EXPECT_EQ(eg.node(ms[0].node("other")).op, hlir_op(OpKind::Exp2));
  EXPECT_EQ(eg.node(ms[1].node("other")).op, hlir_op(OpKind::Input));
  // The limit caps the list.
  EXPECT_EQ(match(eg, both, 1).size(), 1u);
  EXPECT_EQ(match(eg, both, 0).size(), 0u);
}

TEST(Pattern, AnyOpAsRootConstrainsNoChildren) {
  MatmulGraph g;
  const OpDef* in = hlir_op(OpKind::Input);
  std::vector<Match> ms = match(g.eg, Pattern::any_op([&](const OpDef* op) {
                                        return op != in;
                                      }).where([](const Attrs& a) {
                                          return a.shape.size() == 3;
                                        }).bind("n"));
  ASSERT_EQ(ms.size(), 1u);
  EXPECT_EQ(ms[0].node("n"), g.mul_node);
  EXPECT_TRUE(ms[0].classes.empty());
}

TEST(Pattern, ArityMustMatchWhenChildrenAreGiven) {
  EGraph eg;
  ClassId x = input(eg, "x");
  ClassId e = ew(eg, OpKind::Exp2, {x});
  // No child patterns: any children.
  ASSERT_EQ(match(eg, Pattern::op(OpKind::Exp2)).size(), 1u);
  EXPECT_EQ(match(eg, Pattern::op(OpKind::Exp2))[0].root, e);
  EXPECT_TRUE(match(eg, Pattern::op(OpKind::Exp2, {Pattern::var("a"), Pattern::var("b")})).empty());
}

TEST(Pattern, RemovedNodesNeverMatch) {
  MatmulGraph g;
  const OpDef* fused = &kMatmul;
  ClassId mm = g.eg.add(fused, make_attrs(DType::F32, {g.m, 32}), {g.a, g.b});
  g.eg.merge(mm, g.sum);
  g.eg.rebuild();
  EXPECT_EQ(match(g.eg, matmul_pattern()).size(), 1u);
  g.eg.remove(g.mul_node);  // a child e-node
  EXPECT_TRUE(match(g.eg, matmul_pattern()).empty());
  EXPECT_EQ(match(g.eg, Pattern::op(fused, {Pattern::var("a"), Pattern::var("b")})).size(), 1u);
  g.eg.remove(testing::node_with(g.eg, g.sum, fused));  // a root e-node
  EXPECT_TRUE(match(g.eg, Pattern::op(fused, {Pattern::var("a"), Pattern::var("b")})).empty());
}

TEST(Pattern, MatchesComeInENodeOrder) {
  EGraph eg;
  std::vector<ClassId> exps;
  for (int i = 0; i < 5; ++i)
    exps.push_back(ew(eg, OpKind::Exp2, {input(eg, "x" + std::to_string(i))}));
  std::vector<Match> ms = match(eg, Pattern::op(OpKind::Exp2, {Pattern::var("x")}));
  ASSERT_EQ(ms.size(), 5u);
  for (int i = 0; i < 5; ++i)
    EXPECT_EQ(ms[i].root, exps[i]);
  EXPECT_EQ(match(eg, Pattern::op(OpKind::Exp2, {Pattern::var("x")}), 3).size(), 3u);
}

TEST(Pattern, RootMustBeAnOp) {
  EGraph eg;
  input(eg, "x");
  testing::expect_error([&] { match(eg, Pattern::var("x")); }, "variable 'x'");
}

TEST(Pattern, GuardsRejectMatchesInRules) {
  // Fold Recip(Recip(x)) -> x, but only for f32 (the guard reads the e-graph).
  EGraph eg;
  ClassId x = input(eg, "x");
  ClassId rr = ew(eg, OpKind::Recip, {ew(eg, OpKind::Recip, {x})});
  ClassId h = input(eg, "h", {4}, DType::F16);
  ClassId hh = ew(eg, OpKind::Recip, {ew(eg, OpKind::Recip, {h})});
  int guarded = 0;
  Rule fold{"fold-double-recip",
            Pattern::op(OpKind::Recip, {Pattern::op(OpKind::Recip, {Pattern::var("x")})}),
            [&](const Match& m, const EGraph& g) {
              ++guarded;
              return g.dtype(m.cls("x")) == DType::F32;
            },
            [](const Match& m, EGraph& g) { g.merge(m.root, m.cls("x")); }};
  SaturationReport r = run_schedule(eg, Schedule::saturate(RuleSet{"core", {fold}}));
  EXPECT_EQ(r.stop, StopReason::Saturated);
  EXPECT_EQ(eg.find(rr), eg.find(x));
  EXPECT_NE(eg.find(hh), eg.find(h));
  EXPECT_GE(guarded, 2);
  ASSERT_EQ(r.rulesets.size(), 1u);
  // Iteration 1: only the f32 match passes. Iteration 2 (nothing changes): Recip(Recip(x)) again,
  // and Recip(x) whose child class now holds Recip(Recip(x)) too.
  EXPECT_EQ(r.rulesets[0].iterations, 2);
  EXPECT_EQ(r.rulesets[0].matches, 3u);
}

}  // namespace
}  // namespace luminal
