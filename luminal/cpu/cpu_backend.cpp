#include "luminal/cpu/cpu_backend.hpp"

#include <omp.h>

#include <string>

#include "luminal/cpu/cpu_op.hpp"
#include "luminal/cpu/executable.hpp"

namespace luminal::cpu {

CpuBackend::CpuBackend(int threads) : threads_(threads > 0 ? threads : omp_get_max_threads()) {}

std::vector<RuleSet> CpuBackend::rulesets() const {
  std::vector<RuleSet> sets;
  for (const CpuOp* op : cpu_ops()) {
    if (!op->rules) continue;
    std::vector<Rule> rules = op->rules();
    if (rules.empty()) continue;
    RuleSet* set = nullptr;
    for (RuleSet& s : sets)
      if (s.name == op->ruleset) set = &s;
    if (!set) {
      sets.push_back(RuleSet{std::string(op->ruleset), {}});
      set = &sets.back();
    }
    for (Rule& r : rules)
      set->rules.push_back(std::move(r));
  }
  return sets;
}

bool CpuBackend::executes(const OpDef* op) const {
  return is_op(op, OpKind::Input) || is_op(op, OpKind::Output) || find_cpu_op(op) != nullptr;
}

std::unique_ptr<Executable> CpuBackend::load(const LlirGraph& g) {
  return std::make_unique<CpuExecutable>(g, threads_);
}

}  // namespace luminal::cpu
