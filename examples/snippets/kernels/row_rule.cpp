// luminal/kernels/row_rule.hpp: a reduction over the last axis and the elementwise work around
// it as one e-node of a backend's row op (softmax in one kernel).
#include "luminal/kernels/row_rule.hpp"
#include "luminal/compiler/lower.hpp"
#include "luminal/egraph/egraph.hpp"
#include "luminal/egraph/schedule.hpp"
#include "luminal/ir/graph.hpp"
#include "luminal/ir/tensor.hpp"
#include "luminal/kernels/fusion.hpp"
#include "snippet.hpp"

using namespace luminal;

const OpDef kFused{"cuda.Fused"};
const OpDef kRow{"cuda.Row"};

int main() {
  RuleSet fusion{"cuda.fusion", fusion_rules(&kFused, "cuda")};
  RuleSet rows{"cuda.rows", row_rules(&kRow, &kFused, "cuda")};

  Graph g;
  auto x = g.tensor("x", {"s", 64});
  x.softmax(-1).output("y");
  EGraph eg;
  lower(g, eg);
  run_schedule(eg, Schedule::seq({Schedule::saturate(fusion), Schedule::saturate(rows)}));
  expect(!eg.nodes_with_op(&kRow).empty(), "softmax as a row e-node");
}
