#pragma once
// The CPU backend: kernels for every HLIR primitive over strided views, fused elementwise
// regions, reductions, gather/scatter (with an in-place scatter), and matmul as a generic strided
// kernel or an OpenBLAS sgemm/dgemm call. Multi-threaded (its own pool: thread_pool.hpp).
//
//   luminal::cpu::CpuBackend cpu;                 // threads: all hardware threads
//   auto model = g.compile(cpu, CompileOptions().search_graph_limit(20));
#include <memory>
#include <string>
#include <vector>

#include "luminal/program/backend.hpp"

namespace luminal::cpu {

class CpuBackend : public Backend {
 public:
  /// `threads` <= 0: every hardware thread (LUMINAL_CPU_THREADS overrides).
  explicit CpuBackend(int threads = 0);
  std::string name() const override { return "cpu"; }
  std::vector<RuleSet> rulesets() const override;
  bool executes(const OpDef* op) const override;
  std::unique_ptr<Executable> load(const LlirGraph& g) override;
  int threads() const { return threads_; }

 private:
  int threads_;
};

}  // namespace luminal::cpu
