// luminal/egraph/schedule.hpp: schedules say how rulesets run (run, saturate, repeat, seq), under
// limits; the report says what stopped them.
#include <cstdio>

#include "luminal/compiler/lower.hpp"
#include "luminal/egraph/egraph.hpp"
#include "luminal/egraph/schedule.hpp"
#include "luminal/ir/graph.hpp"
#include "luminal/ir/tensor.hpp"
#include "snippet.hpp"

using namespace luminal;

// a + b -> b + a: a second e-node in the sum's class.
RuleSet commute() {
  Rule r{"commute-add", Pattern::op(OpKind::Add, {Pattern::var("a"), Pattern::var("b")}), nullptr,
         [](const Match& m, EGraph& eg) {
           Attrs at = eg.attrs_of(m.root_node);
           std::swap(at.views[0], at.views[1]);
           eg.merge(m.root, eg.add(hlir_op(OpKind::Add), at, {m.cls("b"), m.cls("a")}));
         }};
  return RuleSet{"commute", {r}};
}

int main() {
  Graph g;
  auto a = g.tensor("a", {4});
  auto b = g.tensor("b", {4});
  ((a + b) * a).output("y");
  EGraph eg;
  lower(g, eg);

  const RuleSet core = commute(), lowering = commute(), fusion = commute();
  Schedule s = Schedule::seq({Schedule::saturate(core), Schedule::run(lowering),
                              Schedule::repeat(3, Schedule::saturate(fusion))});
  SaturationReport r = run_schedule(eg, s, {.node_limit = 200000, .time_limit_s = 5});
  if (r.stop != StopReason::Saturated) std::fprintf(stderr, "%s", r.to_string().c_str());
  expect(r.stop == StopReason::Saturated, "a commuted sum saturates");
  expect(r.rulesets.size() == 5, "one line per ruleset run: saturate, run, three saturates");
}
