// luminal/egraph/prune.hpp: after saturation, keep only the e-nodes a backend can execute,
// legally and usefully.
#include "luminal/egraph/prune.hpp"
#include "luminal/compiler/lower.hpp"
#include "luminal/egraph/egraph.hpp"
#include "luminal/ir/graph.hpp"
#include "luminal/ir/tensor.hpp"
#include "snippet.hpp"

using namespace luminal;

int main() {
  Graph g;
  auto x = g.tensor("x", {4});
  x.exp2().output("y");
  EGraph eg;
  Lowered l = lower(g, eg);
  // A second option for exp2(x) that this "backend" does not execute.
  const OpDef kSlowExp{"my.SlowExp"};
  const ClassId y = eg.find(eg.node(eg.nodes_of(l.roots[0])[0]).children[0]);
  eg.merge(y, eg.add(&kSlowExp, eg.attrs_of(eg.nodes_of(y)[0]), {l.class_of[x.id()]}));

  PruneReport r = prune(
      eg, l.roots,
      {.executable = [&](const OpDef* op) { return op != &kSlowExp; }, .inplace_input_ok = {}});
  expect(r.unsupported == 1, "the e-node the backend does not execute is removed");
  expect(eg.nodes_of(y).size() == 1, "exp2(x) keeps one option");
}
