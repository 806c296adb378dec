// luminal/kernels/inplace_rule.hpp: an HLIR Scatter gets an alternative e-node of the backend's
// in-place op (OpDef::inplace_input 0: it writes into dest's buffer instead of copying dest).
#include "luminal/kernels/inplace_rule.hpp"
#include "luminal/compiler/lower.hpp"
#include "luminal/egraph/egraph.hpp"
#include "luminal/egraph/schedule.hpp"
#include "luminal/ir/graph.hpp"
#include "luminal/ir/tensor.hpp"
#include "snippet.hpp"

using namespace luminal;

const OpDef kScatterInPlace{"cuda.ScatterInPlace", OpKind::Input, false, 0};

int main() {
  RuleSet inplace{"cuda.inplace", {scatter_inplace_rule(&kScatterInPlace, "cuda.scatter-inplace")}};

  Graph g;  // a cache of 16 rows of 4, two rows written at `at`
  auto cache = g.tensor("cache", {64});
  auto at = g.tensor("at", {8}, DType::I32);
  auto rows = g.tensor("rows", {8});
  cache.scatter_flat(at, rows).output("cache_out");
  EGraph eg;
  lower(g, eg);
  run_schedule(eg, Schedule::run(inplace));
  expect(eg.nodes_with_op(&kScatterInPlace).size() == 1, "an in-place alternative");
}
