#pragma once
// Rules and rulesets.
//
// A rule is a pattern, an optional guard and a builder. The builder adds e-nodes and merges them
// with the match's root (or declares dominations); it must keep the program's meaning.
// Example: examples/snippets/egraph/rule.cpp (1 / (1 / x) == x).
#include <functional>
#include <string>
#include <vector>

#include "luminal/egraph/pattern.hpp"

namespace luminal {

struct Rule {
  std::string name;
  Pattern pattern;
  /// Optional: reject a match (read-only).
  std::function<bool(const Match&, const EGraph&)> guard;
  std::function<void(const Match&, EGraph&)> apply;
};

struct RuleSet {
  std::string name;
  std::vector<Rule> rules;
};

}  // namespace luminal
