#pragma once
// A backend's op registry as the compiler sees it, shared by the CPU and CUDA backends: each op
// with the rules that introduce it (RegisteredOp; CpuOp and CudaOp add how the op runs), the
// payload kinds the ops carry, and the Backend calls answered from them (RegistryBackend).
#include <memory>
#include <string_view>
#include <utility>
#include <vector>

#include "luminal/egraph/rule.hpp"
#include "luminal/program/backend.hpp"

namespace luminal {

/// One op of a backend's registry: the op and the rules that introduce it.
struct RegisteredOp {
  const OpDef* def;
  /// Ruleset its rules belong to ("cpu.fusion", "cuda.library", "cuda.inplace"); empty if none.
  std::string_view ruleset;
  std::vector<Rule> (*rules)();  // may be null
};

/// Reads a payload of a registry's ops from its serialised form; null for a kind they do not use.
using PayloadReader = std::shared_ptr<const Payload> (*)(std::string_view kind,
                                                         std::string_view text);

/// Every op of one backend (HLIR primitives included), in registry order.
class OpRegistry {
 public:
  OpRegistry(std::vector<const RegisteredOp*> ops, PayloadReader payloads)
      : ops_(std::move(ops)), payloads_(payloads) {}

  /// The op implementing `def`, or null.
  const RegisteredOp* find(const OpDef* def) const;
  /// The op named `name`, or null.
  const OpDef* named(std::string_view name) const;
  /// Input, Output, or an op of the registry.
  bool executes(const OpDef* op) const;
  /// The ops' rules grouped by ruleset in registry order (add_rules), leaving out the ruleset
  /// `left_out` when it is not empty.
  std::vector<RuleSet> rulesets(std::string_view left_out = {}) const;
  /// A payload of the ops from its serialised form; null for a kind they do not use.
  std::shared_ptr<const Payload> read_payload(std::string_view kind, std::string_view text) const {
    return payloads_(kind, text);
  }

 private:
  std::vector<const RegisteredOp*> ops_;
  PayloadReader payloads_;
};

/// A Backend whose ops are those of a registry: rulesets, executes, op_named and read_payload
/// answer from it, op_named and read_payload then fall back to Backend's (the HLIR primitives; an
/// error naming the kind).
class RegistryBackend : public Backend {
 public:
  std::vector<RuleSet> rulesets() const override { return ops_.rulesets(); }
  bool executes(const OpDef* op) const override { return ops_.executes(op); }
  const OpDef* op_named(std::string_view name) const override;
  std::shared_ptr<const Payload> read_payload(std::string_view kind,
                                              std::string_view text) const override;

 protected:
  explicit RegistryBackend(const OpRegistry& ops) : ops_(ops) {}

 private:
  const OpRegistry& ops_;
};

}  // namespace luminal
