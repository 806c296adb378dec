// luminal/egraph/rule_sets.hpp: a backend's rules grouped into named rulesets (what
// Backend::rulesets returns), in the order each name first appears.
#include <string>
#include <vector>

#include "luminal/egraph/rule_sets.hpp"
#include "snippet.hpp"

using namespace luminal;

// A backend's ops, each naming its ruleset and giving its rules.
struct MyOp {
  std::string ruleset;
  std::vector<Rule> (*rules)();
};

std::vector<Rule> two_rules() {
  return {Rule{"a", Pattern::op(OpKind::Add), nullptr, nullptr},
          Rule{"b", Pattern::op(OpKind::Mul), nullptr, nullptr}};
}
std::vector<Rule> one_rule() { return {Rule{"c", Pattern::op(OpKind::Exp2), nullptr, nullptr}}; }

std::vector<const MyOp*> my_ops() {
  static const MyOp fused{"my.fusion", two_rules}, matmul{"my.lowering", one_rule},
      copy{"my.fusion", one_rule}, plain{"my.lowering", nullptr};
  return {&fused, &matmul, &copy, &plain};
}

int main() {
  std::vector<RuleSet> sets;
  for (const MyOp* op : my_ops())
    if (op->rules) add_rules(sets, op->ruleset, op->rules());
  expect(sets.size() == 2 && sets[0].name == "my.fusion", "in the order names first appear");
  expect(sets[0].rules.size() == 3 && sets[1].rules.size() == 1, "rules appended by name");
}
