#include "luminal/cpu/cpu_backend.hpp"

#include <cstdlib>
#include <string>

#include "luminal/core/error.hpp"
#include "luminal/cpu/cpu_op.hpp"
#include "luminal/cpu/executable.hpp"
#include "luminal/cpu/thread_pool.hpp"

namespace luminal::cpu {

namespace {
int default_threads() {
  if (const char* v = std::getenv("LUMINAL_CPU_THREADS"); v && *v) {
    char* end = nullptr;
    long n = std::strtol(v, &end, 10);
    if (*end != '\0' || n < 1 || n > 4096) {
      throw Error("LUMINAL_CPU_THREADS='" + std::string(v) +
                  "' is not a thread count: give a number from 1 to 4096, or unset it");
    }
    return static_cast<int>(n);
  }
  return hardware_threads();
}
}  // namespace

CpuBackend::CpuBackend(int threads) : threads_(threads > 0 ? threads : default_threads()) {}

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
