// luminal/egraph/extract.hpp: the search space of a pruned e-graph. Each class with several
// options gets a gene; a genome picks one e-node per reachable class.
#include <vector>

#include "luminal/compiler/lower.hpp"
#include "luminal/egraph/egraph.hpp"
#include "luminal/egraph/extract.hpp"
#include "luminal/egraph/prune.hpp"
#include "luminal/ir/graph.hpp"
#include "luminal/ir/tensor.hpp"
#include "snippet.hpp"

using namespace luminal;

int main() {
  Graph g;
  auto a = g.tensor("a", {4});
  auto b = g.tensor("b", {4});
  (a + b).output("y");
  EGraph eg;
  Lowered l = lower(g, eg);
  // A second option for a + b: a backend's own add (another e-node of the same class).
  static const OpDef kMyAdd{"my.Add"};
  const ClassId sum = eg.find(eg.node(eg.nodes_of(l.roots[0])[0]).children[0]);
  eg.merge(sum, eg.add(&kMyAdd, eg.attrs_of(eg.nodes_of(sum)[0]),
                       {l.class_of[a.id()], l.class_of[b.id()]}));
  eg.rebuild();
  prune(eg, l.roots, {.executable = [](const OpDef*) { return true; }, .inplace_input_ok = {}});

  SearchSpace space(eg, l.roots);  // after prune()
  Rng rng(7);
  Genome genome = space.random_genome(rng);
  space.mutate(genome, 3, rng);
  expect(space.num_genes() == 1 && space.gene_sizes()[0] == 2, "one gene of two options");
  std::vector<ClassId> order = space.topo_order(genome);  // execution order under the genome
  expect(order.back() == eg.find(l.roots[0]), "the output runs last");
  expect(eg.class_of(space.chosen(genome, sum)) == sum, "the chosen e-node of the sum's class");
}
