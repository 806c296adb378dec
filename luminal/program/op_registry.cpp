#include "luminal/program/op_registry.hpp"

#include "luminal/egraph/rule_sets.hpp"

namespace luminal {

const RegisteredOp* OpRegistry::find(const OpDef* def) const {
  for (const RegisteredOp* op : ops_)
    if (op->def == def) return op;
  return nullptr;
}

const OpDef* OpRegistry::named(std::string_view name) const {
  for (const RegisteredOp* op : ops_)
    if (op->def->name == name) return op->def;
  return nullptr;
}

bool OpRegistry::executes(const OpDef* op) const {
  return is_op(op, OpKind::Input) || is_op(op, OpKind::Output) || find(op) != nullptr;
}

std::vector<RuleSet> OpRegistry::rulesets(std::string_view left_out) const {
  std::vector<RuleSet> sets;
  for (const RegisteredOp* op : ops_)
    if (op->rules && (left_out.empty() || op->ruleset != left_out))
      add_rules(sets, op->ruleset, op->rules());
  return sets;
}

const OpDef* RegistryBackend::op_named(std::string_view name) const {
  if (const OpDef* op = ops_.named(name)) return op;
  return Backend::op_named(name);
}

std::shared_ptr<const Payload> RegistryBackend::read_payload(std::string_view kind,
                                                             std::string_view text) const {
  if (auto p = ops_.read_payload(kind, text)) return p;
  return Backend::read_payload(kind, text);
}

}  // namespace luminal
