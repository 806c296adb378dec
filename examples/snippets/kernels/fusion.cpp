// luminal/kernels/fusion.hpp: the fusion rules, generic over a backend's fused op: chains of
// elementwise e-nodes become one e-node of that op whose payload is a FusedProgram.
#include "luminal/kernels/fusion.hpp"
#include "luminal/compiler/lower.hpp"
#include "luminal/egraph/egraph.hpp"
#include "luminal/egraph/schedule.hpp"
#include "luminal/ir/graph.hpp"
#include "luminal/ir/tensor.hpp"
#include "luminal/kernels/fused_program.hpp"
#include "snippet.hpp"

using namespace luminal;

const OpDef kFused{"cuda.Fused"};

int main() {
  RuleSet fusion{"cuda.fusion", fusion_rules(&kFused, "cuda")};

  Graph g;
  auto x = g.tensor("x", {8});
  (x.exp2() * 0.5 + x).output("y");
  EGraph eg;
  lower(g, eg);
  run_schedule(eg, Schedule::saturate(fusion));
  int largest = 0;  // instructions of the largest fused region
  for (ENodeId n : eg.nodes_with_op(&kFused)) {
    const auto& p = static_cast<const FusedProgram&>(*eg.attrs_of(n).payload);
    largest = std::max(largest, static_cast<int>(p.insts.size()));
  }
  expect(largest >= 4, "exp2, the constant, mul and add in one region (plus the load)");
}
