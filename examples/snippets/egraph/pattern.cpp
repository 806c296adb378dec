// luminal/egraph/pattern.hpp: patterns of ops, variables and attribute predicates matched
// against an e-graph (here the e-graph of a matmul, lowered from the Tensor API).
#include <vector>

#include "luminal/compiler/lower.hpp"
#include "luminal/egraph/egraph.hpp"
#include "luminal/egraph/pattern.hpp"
#include "luminal/ir/graph.hpp"
#include "luminal/ir/tensor.hpp"
#include "snippet.hpp"

using namespace luminal;

int main() {
  Graph g;
  auto a = g.tensor("a", {2, 3});
  auto b = g.tensor("b", {3, 4});
  a.matmul(b).output("c");  // a Mul broadcast over [2, 4, 3] reduced over its last axis
  EGraph eg;
  lower(g, eg);

  // SumReduce over the last axis of a Mul: a matmul
  Pattern p =
      Pattern::op(OpKind::SumReduce,
                  {Pattern::op(OpKind::Mul, {Pattern::var("a"), Pattern::var("b")}).bind("mul")})
          .where([](const Attrs& a) { return a.axis == (int)a.shape.size(); })
          .bind("sum");
  std::vector<Match> ms = match(eg, p);
  expect(ms.size() == 1, "one matmul");
  const Match& m = ms[0];
  expect(eg.node(m.node("mul")).children.size() == 2, "the bound Mul e-node");
  expect(m.cls("a") != m.cls("b"), "two inputs");
}
