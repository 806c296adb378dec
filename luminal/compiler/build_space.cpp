#include "luminal/compiler/build_space.hpp"

#include "luminal/compiler/core_rules.hpp"
#include "luminal/compiler/hfuse_rule.hpp"
#include "luminal/compiler/short_sum_rule.hpp"

#include <chrono>
#include <map>
#include <memory>
#include <set>
#include <string>

namespace luminal {

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// Does an Output e-node of `out_class` read `self` through a contiguous view?
bool output_reads_contiguously(const EGraph& eg, ClassId out_class, ClassId self) {
  for (ENodeId n : eg.nodes_of(out_class)) {
    const ENode& e = eg.node(n);
    if (!is_op(e.op, OpKind::Output)) continue;
    if (eg.find(e.children[0]) == eg.find(self) && eg.attrs(e.attr).views[0].is_contiguous())
      return true;
  }
  return false;
}

}  // namespace

BuiltSpace build_search_space(const Graph& g, Backend& backend, const Facts& facts,
                              const Limits& limits, const FoldOptions& fold) {
  BuiltSpace b;
  b.eg = std::make_unique<EGraph>();
  EGraph& eg = *b.eg;

  auto t0 = Clock::now();
  b.lowered = lower(g, eg, facts);
  b.lower_s = since(t0);

  t0 = Clock::now();
  std::set<std::string, std::less<>> carried;
  for (auto [o, i] : g.carried())
    carried.insert(g.node(i).label);
  auto hfuse_log = std::make_shared<HfuseLog>();
  std::vector<Schedule> parts{Schedule::saturate(core_rules()),
                              Schedule::saturate(short_sum_rules())};
  // Horizontal fusion after the core rules (the backends' rules then see the fused matmul and
  // its readers), and again after the backends' rules, for the readers they added (a fused
  // region reading two members reads both from the fused matmul only so).
  const RuleSet hf = horizontal_fusion_rules(std::move(carried), hfuse_log);
  if (!hf.rules.empty()) parts.push_back(Schedule::saturate(hf));
  for (const RuleSet& rs : backend.rulesets())
    parts.push_back(Schedule::saturate(rs));
  if (!hf.rules.empty()) parts.push_back(Schedule::saturate(hf));
  b.saturation = run_schedule(eg, Schedule::seq(std::move(parts)), limits);
  eg.rebuild();
  if (fold.on && backend.executes(fold_op())) b.folds = add_fold_leaves(eg, g, fold);
  b.saturate_s = since(t0);

  // An input may be updated in place only when the graph carries this value into it (through an
  // Output that reads it contiguously).
  std::map<std::string, NodeId, std::less<>> carried_from;  // input label -> output node
  for (auto [o, i] : g.carried())
    carried_from[g.node(i).label] = o;
  PruneOptions po;
  po.executable = [&](const OpDef* op) { return backend.executes(op); };
  po.inplace_input_ok = [&](ENodeId input, ClassId self) {
    auto it = carried_from.find(eg.attrs_of(input).label);
    if (it == carried_from.end()) return false;
    return output_reads_contiguously(eg, b.lowered.class_of[it->second], self);
  };
  t0 = Clock::now();
  b.pruning = prune(eg, b.lowered.roots, po);
  b.prune_s = since(t0);

  t0 = Clock::now();
  b.space = std::make_unique<SearchSpace>(eg, b.lowered.roots);
  b.space->set_free_folds(b.folds.constants);
  if (const double per_byte = backend.seed_byte_cost(); per_byte > 0)  // (the CPU's prices)
    b.space->set_seed_byte_cost(per_byte, [&](ENodeId n) { return backend.seed_work(eg, n); });
  b.space->set_seed_path_weight(backend.seed_path_weight());
  if (!hfuse_log->concats.empty()) {
    SearchSpace::SeedBias bias;
    bias.avoid.insert(hfuse_log->members.begin(), hfuse_log->members.end());
    bias.avoid.insert(hfuse_log->weights.begin(), hfuse_log->weights.end());
    bias.free_folds.insert(hfuse_log->concats.begin(), hfuse_log->concats.end());
    b.space->set_seed_bias(std::move(bias));
  }
  b.space_s = since(t0);
  return b;
}

}  // namespace luminal
