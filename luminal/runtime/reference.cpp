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
  const DynMap dyn = merged_dims(dyn_in);
  check_dims(dyn);
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
  values_.assign(nodes.size(), HostBuffer{});
  shapes_.assign(nodes.size(), {});
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (!needed[i]) continue;
    const Node& n = nodes[i];
    shapes_[i] = eval_shape(n.shape, dyn);
    if (n.op == OpKind::Input) {
      auto it = inputs_.find(static_cast<NodeId>(i));
      if (it == inputs_.end()) {
        throw Error("input '" + n.label + "' has no data: call runtime.set(\"" + n.label +
                    "\", ...) before execute()");
      }
      int64_t need = 1;
      for (int64_t d : shapes_[i])
        need *= d;
      if (it->second.numel() != need) {
        throw Error("input '" + n.label + "' was given " + std::to_string(it->second.numel()) +
                    " elements but its shape " + shape_to_string(n.shape) + " needs " +
                    std::to_string(need) + " at these dims");
      }
      values_[i] = it->second;
      continue;
    }
    std::vector<const HostBuffer*> in;
    for (const Operand& o : n.inputs)
      in.push_back(&values_[o.node]);
    values_[i] = reference::run_node(n, in, dyn, shapes_[i]);
  }
  // Free what no output needs to keep.
  for (size_t i = 0; i < nodes.size(); ++i)
    if (nodes[i].op != OpKind::Output) values_[i] = HostBuffer{};
  executed_ = true;
}

const HostBuffer& ReferenceRuntime::output_buffer(NodeId id) const {
  if (!executed_) {
    throw Error("get: output '" + graph_.node(id).label +
                "' has no value yet: call execute() first");
  }
  return values_[id];
}

std::vector<int64_t> ReferenceRuntime::output_shape(NodeId id) const {
  output_buffer(id);
  return shapes_[id];
}

}  // namespace luminal
