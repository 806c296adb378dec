#pragma once
// Test helper: a backend with only the fusion and row rules over test ops (test.Fused,
// test.Row), for saturating graphs and reading the e-graph; it loads nothing.
#include <memory>
#include <string>
#include <vector>

#include "luminal/core/error.hpp"
#include "luminal/kernels/fusion.hpp"
#include "luminal/kernels/row_rule.hpp"
#include "luminal/program/backend.hpp"

namespace luminal::testing {

inline const OpDef kTestFused{"test.Fused"};
inline const OpDef kTestRow{"test.Row"};

/// The fusion and row rules over the test ops (the row rule growing regions as `growth`).
class RowRulesOnly : public Backend {
 public:
  explicit RowRulesOnly(RowGrowth growth = RowGrowth::Memo) : growth_(growth) {}
  std::string name() const override { return "test"; }
  std::vector<RuleSet> rulesets() const override {
    return {RuleSet{"test.fusion", fusion_rules(&kTestFused, "test")},
            RuleSet{"test.rows", row_rules(&kTestRow, &kTestFused, "test", growth_)}};
  }
  bool executes(const OpDef* op) const override {
    return op->is_hlir || op == &kTestFused || op == &kTestRow;
  }
  std::unique_ptr<Plan> load(const LlirGraph&, const PlanSpec&) override {
    throw Error("RowRulesOnly cannot load programs");
  }
  std::string device_key() const override { return "row rules only"; }
  Buffer allocate(uint64_t) override { throw Error("RowRulesOnly has no memory"); }
  void release(Buffer) override {}
  void upload(Buffer, uint64_t, const void*, uint64_t, Queue* = nullptr) override {}
  void download(void*, Buffer, uint64_t, uint64_t, Queue* = nullptr) override {}
  void copy(Buffer, Buffer, uint64_t, Queue* = nullptr) override {}
  void sync(Queue* = nullptr) override {}

 private:
  RowGrowth growth_;
};

}  // namespace luminal::testing
