// luminal/kernels/matmul_rule.hpp: SumReduce(axis k) over Mul(a, b) becomes one backend matmul
// e-node (the Mul's children and views, the reduced axis), dominating the SumReduce.
#include "luminal/kernels/matmul_rule.hpp"
#include "luminal/compiler/lower.hpp"
#include "luminal/egraph/egraph.hpp"
#include "luminal/egraph/schedule.hpp"
#include "luminal/ir/graph.hpp"
#include "luminal/ir/tensor.hpp"
#include "snippet.hpp"

using namespace luminal;

const OpDef kMatmul{"cuda.Matmul"};

int main() {
  Rule r{"cuda.matmul", matmul_pattern(),
         [](const Match& m, const EGraph& eg) { return matmul_parts(eg, m).has_value(); },
         [](const Match& m, EGraph& eg) {
           if (auto p = matmul_parts(eg, m)) add_matmul_node(eg, &kMatmul, *p, m.root);
         }};
  // matmul_rule(&kMatmul, "cuda.matmul") is this rule.

  Graph g;
  auto a = g.tensor("a", {"s", 8});
  auto w = g.tensor("w", {8, 16});
  a.matmul(w).output("y");
  EGraph eg;
  lower(g, eg);
  run_schedule(eg, Schedule::saturate(RuleSet{"matmul", {r}}));
  expect(eg.nodes_with_op(&kMatmul).size() == 1, "one matmul e-node");
  expect(!eg.dominations().empty(), "it dominates the SumReduce");
}
