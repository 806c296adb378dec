// luminal/compiler/core_rules.hpp: backend-independent rewrites that hold bit for bit in every
// dtype (cast-identity, cast-roundtrip, mul-one); they only merge classes.
#include "luminal/compiler/core_rules.hpp"
#include "luminal/compiler/lower.hpp"
#include "luminal/egraph/egraph.hpp"
#include "luminal/egraph/schedule.hpp"
#include "luminal/ir/graph.hpp"
#include "luminal/ir/tensor.hpp"
#include "snippet.hpp"

using namespace luminal;

int main() {
  Graph g;
  auto x = g.tensor("x", {4}, DType::BF16);
  (x.cast(DType::F32).cast(DType::BF16) * 1.0).output("y");  // cast-roundtrip, then mul-one
  EGraph eg;
  Lowered l = lower(g, eg);
  run_schedule(eg, Schedule::saturate(core_rules()));
  const ENodeId out = eg.nodes_of(l.roots[0])[0];
  expect(eg.find(eg.node(out).children[0]) == eg.find(l.class_of[x.id()]), "y's value is x");
  expect(widens_exactly(DType::BF16, DType::F32) && !widens_exactly(DType::F32, DType::BF16),
         "f32 holds every bf16, not the reverse");
}
