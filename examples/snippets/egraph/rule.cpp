// luminal/egraph/rule.hpp: a rule is a pattern, an optional guard and a builder that adds
// e-nodes and merges them with the match's root, keeping the program's meaning.
#include "luminal/egraph/rule.hpp"
#include "luminal/compiler/lower.hpp"
#include "luminal/egraph/egraph.hpp"
#include "luminal/egraph/schedule.hpp"
#include "luminal/ir/graph.hpp"
#include "luminal/ir/tensor.hpp"
#include "snippet.hpp"

using namespace luminal;

int main() {
  Rule r{"fold-double-recip",
         Pattern::op(OpKind::Recip, {Pattern::op(OpKind::Recip, {Pattern::var("x")})}), nullptr,
         [](const Match& m, EGraph& eg) { eg.merge(m.root, m.cls("x")); }};

  Graph g;
  auto x = g.tensor("x", {4});
  x.reciprocal().reciprocal().output("y");
  EGraph eg;
  Lowered l = lower(g, eg);
  run_schedule(eg, Schedule::saturate(RuleSet{"fold", {r}}));
  const ENodeId out = eg.nodes_of(l.roots[0])[0];  // the Output e-node
  expect(eg.find(eg.node(out).children[0]) == eg.find(l.class_of[x.id()]),
         "the output reads x's class: 1 / (1 / x) is x");
}
