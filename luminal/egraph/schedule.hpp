#pragma once
// Schedules: how rulesets run, with limits that say what stopped them.
// Example: examples/snippets/egraph/schedule.cpp.
//
// One iteration of a ruleset: find every match of every rule (on the e-graph as it was), apply
// them all, rebuild. `run` does one iteration; `saturate` iterates until an iteration changes
// nothing (or a limit hits); `repeat(n, s)` runs s n times; `seq` runs its parts in order.
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "luminal/egraph/rule.hpp"

namespace luminal {

class Schedule {
 public:
  enum class Kind { Run, Saturate, Repeat, Seq };
  static Schedule run(const RuleSet& rs);
  static Schedule saturate(const RuleSet& rs);
  static Schedule repeat(int times, Schedule s);
  static Schedule seq(std::vector<Schedule> parts);

  Kind kind() const { return kind_; }
  const RuleSet& ruleset() const { return *rules_; }
  int times() const { return times_; }
  const std::vector<Schedule>& parts() const { return parts_; }

 private:
  Kind kind_ = Kind::Seq;
  std::shared_ptr<const RuleSet> rules_;
  int times_ = 1;
  std::vector<Schedule> parts_;
};

struct Limits {
  size_t node_limit = 2'000'000;  // e-nodes in the e-graph
  int iter_limit = 64;            // iterations per saturate
  double time_limit_s = 60;       // whole schedule
};

enum class StopReason { Saturated, NodeLimit, IterLimit, TimeLimit };
std::string_view to_string(StopReason r);

struct RuleSetStats {
  std::string name;
  int iterations = 0;
  size_t matches = 0;
  size_t nodes_after = 0;
  size_t classes_after = 0;
  double seconds = 0;
  /// Saturated when no limit cut this run short (for `run`: its one iteration completed).
  StopReason stop = StopReason::Saturated;
};

struct SaturationReport {
  /// Saturated when every part ran to completion; otherwise the first limit that stopped one.
  StopReason stop = StopReason::Saturated;
  std::string stopped_in;  // the ruleset that hit the limit
  std::vector<RuleSetStats> rulesets;
  double seconds = 0;
  /// One line per ruleset run: "fusion: 3 iterations, 1234 matches, 5678 e-nodes / 900 classes,
  /// 12.3 ms (saturated)".
  std::string to_string() const;
};

SaturationReport run_schedule(EGraph& eg, const Schedule& s, const Limits& limits = {});

}  // namespace luminal
