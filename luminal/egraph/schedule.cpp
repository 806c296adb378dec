#include "luminal/egraph/schedule.hpp"

#include <cstdio>
#include <optional>
#include <utility>

#include "luminal/core/error.hpp"

namespace luminal {

// ---- building schedules ----

Schedule Schedule::run(const RuleSet& rs) {
  Schedule s;
  s.kind_ = Kind::Run;
  s.rules_ = std::make_shared<const RuleSet>(rs);
  return s;
}

Schedule Schedule::saturate(const RuleSet& rs) {
  Schedule s;
  s.kind_ = Kind::Saturate;
  s.rules_ = std::make_shared<const RuleSet>(rs);
  return s;
}

Schedule Schedule::repeat(int times, Schedule s) {
  if (times < 0) {
    throw Error("Schedule::repeat: times must be >= 0, got " + std::to_string(times));
  }
  Schedule r;
  r.kind_ = Kind::Repeat;
  r.times_ = times;
  r.parts_.push_back(std::move(s));
  return r;
}

Schedule Schedule::seq(std::vector<Schedule> parts) {
  Schedule s;
  s.kind_ = Kind::Seq;
  s.parts_ = std::move(parts);
  return s;
}

std::string_view to_string(StopReason r) {
  switch (r) {
    case StopReason::Saturated: return "saturated";
    case StopReason::NodeLimit: return "node limit";
    case StopReason::IterLimit: return "iteration limit";
    case StopReason::TimeLimit: return "time limit";
  }
  return "unknown";
}

std::string SaturationReport::to_string() const {
  std::string s;
  for (const RuleSetStats& st : rulesets) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.1f ms", st.seconds * 1e3);
    s += st.name + ": " + std::to_string(st.iterations) +
         (st.iterations == 1 ? " iteration, " : " iterations, ") + std::to_string(st.matches) +
         " matches, " + std::to_string(st.nodes_after) + " e-nodes / " +
         std::to_string(st.classes_after) + " classes, " + buf + " (" +
         std::string(luminal::to_string(st.stop)) + ")\n";
  }
  return s;
}

// ---- running ----

namespace {

using Clock = std::chrono::steady_clock;

std::string rule_context(const RuleSet& rs, const Rule& r) {
  return "rule '" + r.name + "' of ruleset '" + rs.name + "': ";
}

class Runner {
 public:
  Runner(EGraph& eg, const Limits& limits, SaturationReport& report)
      : eg_(eg), limits_(limits), report_(report), start_(Clock::now()) {}

  /// False when a limit stopped the schedule.
  bool exec(const Schedule& s) {
    switch (s.kind()) {
      case Schedule::Kind::Run: return run_ruleset(s.ruleset(), false);
      case Schedule::Kind::Saturate: return run_ruleset(s.ruleset(), true);
      case Schedule::Kind::Repeat:
        for (int i = 0; i < s.times(); ++i)
          if (!exec(s.parts().front())) return false;
        return true;
      case Schedule::Kind::Seq:
        for (const Schedule& part : s.parts())
          if (!exec(part)) return false;
        return true;
    }
    return true;
  }

  double elapsed() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }

 private:
  bool time_up() const { return elapsed() >= limits_.time_limit_s; }
  bool too_big() const { return eg_.num_nodes() > limits_.node_limit; }

  bool run_ruleset(const RuleSet& rs, bool saturate) {
    const Clock::time_point t0 = Clock::now();
    RuleSetStats st;
    st.name = rs.name;
    eg_.rebuild();  // matching reads canonical classes
    for (;;) {
      if (saturate && st.iterations >= limits_.iter_limit) {
        st.stop = StopReason::IterLimit;
        break;
      }
      if (time_up()) {
        st.stop = StopReason::TimeLimit;
        break;
      }
      const uint64_t before = eg_.version();
      if (std::optional<StopReason> stop = iterate(rs, st)) {
        st.stop = *stop;
        break;
      }
      if (!saturate || eg_.version() == before) break;
    }
    st.nodes_after = eg_.num_nodes();
    st.classes_after = eg_.num_classes();
    st.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    report_.rulesets.push_back(st);
    if (st.stop == StopReason::Saturated) return true;
    report_.stop = st.stop;
    report_.stopped_in = rs.name;
    return false;
  }

  // One iteration: every match of every rule on the e-graph as it is, then every builder, then
  // rebuild. Returns the limit that cut it short, if any.
  std::optional<StopReason> iterate(const RuleSet& rs, RuleSetStats& st) {
    std::vector<std::pair<const Rule*, Match>> todo;
    for (const Rule& rule : rs.rules) {
      if (!rule.apply) throw Error(rule_context(rs, rule) + "the rule has no builder (apply)");
      if (time_up()) return StopReason::TimeLimit;
      std::vector<Match> ms = match(eg_, rule.pattern);
      for (Match& m : ms) {
        if (rule.guard) {
          bool ok = false;
          try {
            ok = rule.guard(m, eg_);
          } catch (const Error& e) {
            throw Error(rule_context(rs, rule) + e.what());
          }
          if (!ok) continue;
        }
        todo.emplace_back(&rule, std::move(m));
      }
    }
    st.matches += todo.size();

    std::optional<StopReason> stop;
    for (size_t i = 0; i < todo.size(); ++i) {
      if (too_big()) {
        stop = StopReason::NodeLimit;
        break;
      }
      if ((i & 15) == 0 && time_up()) {
        stop = StopReason::TimeLimit;
        break;
      }
      const auto& [rule, m] = todo[i];
      if (eg_.is_removed(m.root_node)) continue;
      try {
        rule->apply(m, eg_);
      } catch (const Error& e) {
        throw Error(rule_context(rs, *rule) + e.what());
      }
    }
    eg_.rebuild();
    ++st.iterations;
    if (too_big()) return StopReason::NodeLimit;
    return stop;
  }

  EGraph& eg_;
  const Limits& limits_;
  SaturationReport& report_;
  Clock::time_point start_;
};

}  // namespace

SaturationReport run_schedule(EGraph& eg, const Schedule& s, const Limits& limits) {
  SaturationReport report;
  Runner runner(eg, limits, report);
  runner.exec(s);
  report.seconds = runner.elapsed();
  return report;
}

}  // namespace luminal
