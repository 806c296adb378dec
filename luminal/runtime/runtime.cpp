#include "luminal/runtime/runtime.hpp"

#include <cstring>

namespace luminal {

namespace {

// The node labelled `label`, which must be an Input (set) or an Output (get).
NodeId find_labelled(const Graph& g, std::string_view label, OpKind want) {
  const NodeId id = g.find(label);
  if (g.node(id).op == want) return id;
  throw Error(want == OpKind::Input
                  ? "set: '" + std::string(label) + "' is an output, not an input"
                  : "get: '" + std::string(label) + "' is an input, not an output");
}

}  // namespace

void Runtime::set(const Tensor& input, const std::vector<bool>& data) {
  std::vector<uint8_t> v(data.begin(), data.end());
  set(input, v);
}

void Runtime::set_bytes(const Tensor& input, const void* data, size_t bytes) {
  set_bytes(graph().node(resolve_input(input)).label, data, bytes);
}

void Runtime::set_bytes(std::string_view label, const void* data, size_t bytes) {
  NodeId id = resolve_input(label);
  DType dt = graph().node(id).dtype;
  detail::require_whole_units(label, dt, bytes);
  set_input_bytes(id, data, bytes);
}

void Runtime::set_input_bytes(NodeId id, const void* data, uint64_t bytes) {
  HostBuffer b{graph().node(id).dtype, std::vector<uint8_t>(bytes)};
  if (bytes) std::memcpy(b.bytes.data(), data, bytes);
  set_input(id, std::move(b));
}

std::vector<uint8_t> Runtime::get_bytes(const Tensor& output) const {
  return output_value(resolve_output(output)).bytes;
}

std::vector<int64_t> Runtime::shape(const Tensor& output) const {
  return output_shape(resolve_output(output));
}

NodeId Runtime::resolve_input(const Tensor& t) const {
  if (!(t.graph() == graph()))
    throw Error("set: the tensor belongs to a different graph than this runtime's");
  const Node& n = graph().node(t.id());
  if (n.op != OpKind::Input) {
    throw Error("set: the tensor is the result of " + std::string(op_name(n.op)) +
                ", not an input; only tensors made with graph.tensor(...) take data");
  }
  return t.id();
}

NodeId Runtime::resolve_input(std::string_view label) const {
  return find_labelled(graph(), label, OpKind::Input);
}

NodeId Runtime::resolve_output(const Tensor& t) const {
  if (!(t.graph() == graph()))
    throw Error("get: the tensor belongs to a different graph than this runtime's");
  const Node& n = graph().node(t.id());
  if (n.op == OpKind::Output) return t.id();
  for (NodeId o : graph().outputs()) {
    const Operand& in = graph().node(o).inputs[0];
    if (in.node == t.id() && in.view == t.view()) return o;
  }
  throw Error("get: this tensor (" + std::string(op_name(n.op)) + " " + shape_to_string(t.shape()) +
              ") is not an output; call .output(\"name\") on it before building the runtime");
}

NodeId Runtime::resolve_output(std::string_view label) const {
  return find_labelled(graph(), label, OpKind::Output);
}

void Runtime::dim_values(const DynMap& dyn, const Facts& facts, bool required, int64_t* out) const {
  if (dyn.count("z"))
    throw Error(
        "execute: 'z' is the index variable, not a dynamic dimension; remove it from the dyn "
        "map");
  const std::string* missing = nullptr;
  for (const auto& [k, range] : facts) {
    auto it = dyn.find(k);
    if (it == dyn.end()) it = graph().dims().find(k);
    if (it == graph().dims().end()) {
      if (!missing) missing = &k;
      *out++ = 0;
      continue;
    }
    check_range(k, it->second, range);
    *out++ = it->second;
  }
  if (required && missing) {
    const std::string& k = *missing;
    throw Error("dynamic dimension '" + k + "' has no value: call graph.set_dim(\"" + k +
                "\", n) or pass {{\"" + k + "\", n}} to execute()");
  }
}

DynMap Runtime::merged_dims(const DynMap& dyn) const {
  const Facts facts = graph().dim_facts();
  std::vector<int64_t> values(facts.size());
  dim_values(dyn, facts, /*required=*/true, values.data());
  DynMap all = graph().dims();
  for (const auto& [k, v] : dyn)
    all[k] = v;
  return all;
}

void Runtime::check_range(const std::string& dim, int64_t v, const Interval& range) {
  if (!range.contains(v)) {
    throw Error("dynamic dimension " + dim + " = " + std::to_string(v) +
                " is outside its declared range [" + std::to_string(range.lo) + ", " +
                std::to_string(range.hi) + "]");
  }
}

}  // namespace luminal

namespace luminal {

void Runtime::check_hand_off(NodeId output, NodeId input) const {
  const Node& out = graph().node(output);
  const Node& in = graph().node(input);
  if (out.dtype != in.dtype || out.shape != in.shape) {
    throw Error("hand_off: output '" + out.label + "' (" + std::string(name(out.dtype)) + " " +
                shape_to_string(out.shape) + ") and input '" + in.label + "' (" +
                std::string(name(in.dtype)) + " " + shape_to_string(in.shape) +
                ") must have the same dtype and shape");
  }
}

void Runtime::hand_off(const Tensor& output, const Tensor& input) {
  NodeId o = resolve_output(output), i = resolve_input(input);
  check_hand_off(o, i);
  move_output_to_input(o, i);
}

void Runtime::hand_off(std::string_view output, std::string_view input) {
  NodeId o = resolve_output(output), i = resolve_input(input);
  check_hand_off(o, i);
  move_output_to_input(o, i);
}

void Runtime::carry_state() {
  for (auto [o, i] : graph().carried())
    move_output_to_input(o, i);
}

}  // namespace luminal
