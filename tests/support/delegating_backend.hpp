#pragma once
// Test helper: a Backend that forwards everything to the CPU backend, for tests that override
// one part (load, timing) and keep the rest real.
//
//   struct FakeTimes : testing::CpuDelegate {
//     double time(Plan& p, int parity, const int64_t* d, int, double) override { ... }
//   };
#include <memory>
#include <string>
#include <vector>

#include "luminal/cpu/cpu_backend.hpp"
#include "luminal/program/backend.hpp"

namespace luminal::testing {

class CpuDelegate : public Backend {
 public:
  explicit CpuDelegate(int threads = 1) : cpu(threads) {}
  std::string name() const override { return "cpu-delegate"; }
  std::vector<RuleSet> rulesets() const override { return cpu.rulesets(); }
  bool executes(const OpDef* op) const override { return cpu.executes(op); }
  std::unique_ptr<Plan> load(const LlirGraph& g, const PlanSpec& spec) override {
    return cpu.load(g, spec);
  }
  std::string device_key() const override { return cpu.device_key(); }
  const OpDef* op_named(std::string_view n) const override { return cpu.op_named(n); }
  std::shared_ptr<const Payload> read_payload(std::string_view k,
                                              std::string_view t) const override {
    return cpu.read_payload(k, t);
  }
  Buffer allocate(uint64_t bytes) override { return cpu.allocate(bytes); }
  void release(Buffer b) override { cpu.release(b); }
  std::unique_ptr<Queue> make_queue() override { return cpu.make_queue(); }
  void upload(Buffer d, uint64_t o, const void* s, uint64_t n, Queue* q = nullptr) override {
    cpu.upload(d, o, s, n, q);
  }
  void download(void* d, Buffer s, uint64_t o, uint64_t n, Queue* q = nullptr) override {
    cpu.download(d, s, o, n, q);
  }
  void copy(Buffer d, Buffer s, uint64_t n, Queue* q = nullptr) override { cpu.copy(d, s, n, q); }
  Buffer wrap_host(const void* p, uint64_t n) override { return cpu.wrap_host(p, n); }
  void sync(Queue* q = nullptr) override { cpu.sync(q); }

  cpu::CpuBackend cpu;
};

}  // namespace luminal::testing
