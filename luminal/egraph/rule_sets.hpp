#pragma once
// Grouping a backend's rules into named rulesets (what Backend::rulesets returns), in the order
// each ruleset name first appears. Example: examples/snippets/egraph/rule_sets.cpp.
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "luminal/egraph/rule.hpp"

namespace luminal {

/// Appends `rules` to the ruleset named `ruleset` in `sets`, creating it at the end when absent
/// (nothing when `rules` is empty).
inline void add_rules(std::vector<RuleSet>& sets, std::string_view ruleset,
                      std::vector<Rule> rules) {
  if (rules.empty()) return;
  RuleSet* set = nullptr;
  for (RuleSet& s : sets)
    if (s.name == ruleset) set = &s;
  if (!set) {
    sets.push_back(RuleSet{std::string(ruleset), {}});
    set = &sets.back();
  }
  for (Rule& r : rules)
    set->rules.push_back(std::move(r));
}

}  // namespace luminal
