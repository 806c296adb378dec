#include "luminal/runtime/reference.hpp"

#include "luminal/runtime/reference_ops.hpp"

namespace luminal {

ReferenceRuntime::ReferenceRuntime(Graph graph) : graph_(std::move(graph)) {}

void ReferenceRuntime::set_input(NodeId id, HostBuffer data) {
  const Node& n = graph_.node(id);
  bool constant_shape = true;
  for (const Expr& d : n.shape)
    constant_shape = constant_shape && d.is_const();
  if (constant_shape) {
    int64_t need = numel(n.shape).as_const();
    if (data.numel() != need) {
      throw Error("input '" + n.label + "' has shape " + shape_to_string(n.shape) + " (" +
                  std::to_string(need) + " elements) but was given " +
                  std::to_string(data.numel()) + " elements");
    }
  }
  inputs_[id] = std::move(data);
}

void ReferenceRuntime::execute(const DynMap& dyn_in) {
  executed_ = false;  // stays false if this run throws
  const DynMap dyn = merged_dims(dyn_in);
  const std::vector<Node>& nodes = graph_.nodes();
  // Only nodes an output depends on run.
  std::vector<bool> needed(nodes.size(), false);
  for (NodeId o : graph_.outputs())
    needed[o] = true;
  for (size_t i = nodes.size(); i-- > 0;) {
    if (!needed[i]) continue;
    for (const Operand& in : nodes[i].inputs)
      needed[in.node] = true;
  }
  // Each value is freed after its last consumer runs; inputs are read in place.
  std::vector<size_t> last_use(nodes.size(), 0);
  for (size_t i = 0; i < nodes.size(); ++i)
    if (needed[i])
      for (const Operand& in : nodes[i].inputs)
        last_use[in.node] = i;
  values_.assign(nodes.size(), HostBuffer{});
  shapes_.assign(nodes.size(), {});
  std::vector<const HostBuffer*> value_of(nodes.size(), nullptr);
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (!needed[i]) continue;
    const Node& n = nodes[i];
    shapes_[i] = eval_shape(n.shape, dyn);
    if (n.op == OpKind::Input) {
      value_of[i] = &checked_input(static_cast<NodeId>(i), shapes_[i]);
      continue;
    }
    std::vector<const HostBuffer*> in;
    for (const Operand& o : n.inputs)
      in.push_back(value_of[o.node]);
    values_[i] = reference::run_node(n, in, dyn, shapes_[i]);
    value_of[i] = &values_[i];
    for (const Operand& o : n.inputs)
      if (last_use[o.node] == i && nodes[o.node].op != OpKind::Input &&
          nodes[o.node].op != OpKind::Output)  // outputs are read after the run
        values_[o.node] = HostBuffer{};
  }
  executed_ = true;
  carry_state();
}

const HostBuffer& ReferenceRuntime::checked_input(NodeId id,
                                                  const std::vector<int64_t>& shape) const {
  const Node& n = graph_.node(id);
  auto it = inputs_.find(id);
  if (it == inputs_.end()) {
    throw Error("input '" + n.label + "' has no data: call runtime.set(\"" + n.label +
                "\", ...) before execute()");
  }
  int64_t need = 1;
  for (int64_t d : shape)
    need *= d;
  if (it->second.numel() != need) {
    throw Error("input '" + n.label + "' was given " + std::to_string(it->second.numel()) +
                " elements but its shape " + shape_to_string(n.shape) + " needs " +
                std::to_string(need) + " at these dims");
  }
  return it->second;
}

HostBuffer ReferenceRuntime::output_value(NodeId id) const {
  if (!executed_) {
    throw Error("get: output '" + graph_.node(id).label +
                "' has no value yet: call execute() first");
  }
  return values_[id];
}

void ReferenceRuntime::move_output_to_input(NodeId output, NodeId input) {
  inputs_[input] = output_value(output);  // the oracle copies; the output stays readable
}

std::vector<int64_t> ReferenceRuntime::output_shape(NodeId id) const {
  output_value(id);
  return shapes_[id];
}

}  // namespace luminal
