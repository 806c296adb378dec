#include "luminal/cuda/plan_layout.hpp"

#include "luminal/core/error.hpp"

namespace luminal::cuda {

std::string PlanLayout::node_name(const LlirGraph& g, int i) {
  return "%" + std::to_string(i) + " (" + std::string(g.nodes[i].op->name) + ")";
}

void PlanLayout::check_structure(const LlirGraph& g) {
  for (int i = 0; i < static_cast<int>(g.nodes.size()); ++i) {
    const LlirNode& node = g.nodes[i];
    if (!node.op) throw Error("cuda: node %" + std::to_string(i) + " has no op");
    for (int in : node.inputs)
      if (in < 0 || in >= i)
        throw Error("cuda: node " + node_name(g, i) + " reads %" + std::to_string(in) +
                    ", which does not run before it");
    if (node.attrs.views.size() != node.inputs.size())
      throw Error("cuda: node " + node_name(g, i) + " has " + std::to_string(node.inputs.size()) +
                  " inputs but " + std::to_string(node.attrs.views.size()) + " views");
    if (is_output(node) && node.inputs.size() != 1)
      throw Error("cuda: Output node " + node_name(g, i) + " needs exactly one input");
  }
}

std::vector<int> PlanLayout::direct_outputs(const LlirGraph& g, const PlanIo& io) {
  const int n = static_cast<int>(g.nodes.size());
  std::vector<int> out(static_cast<size_t>(n), -1);
  std::vector<BufferUse> uses = buffer_uses(g);
  std::vector<bool> aliased(static_cast<size_t>(n), false);
  for (int i = 0; i < n; ++i)
    if (uses[i].alias_of >= 0) aliased[uses[i].alias_of] = true;
  int k = -1;
  for (int i = 0; i < n; ++i) {
    const LlirNode& o = g.nodes[i];
    if (!is_output(o)) continue;
    ++k;
    if (io.output_in_input[k] >= 0) continue;
    const int src = o.inputs.at(0);
    const LlirNode& node = g.nodes[src];
    if (is_input(node) || is_output(node) || uses[src].alias_of >= 0 || aliased[src]) continue;
    if (out[src] >= 0 || node.attrs.dtype != o.attrs.dtype) continue;
    const View& v = o.attrs.views.at(0);
    if (!v.is_contiguous() || v.numel() != numel(node.attrs.shape)) continue;
    out[src] = k;
  }
  return out;
}

void PlanLayout::slots(const LlirGraph& g) {
  const int n = static_cast<int>(g.nodes.size());
  input_slot.assign(static_cast<size_t>(n), -1);
  output_slot.assign(static_cast<size_t>(n), -1);
  int inputs = 0, outputs = 0;
  for (int i = 0; i < n; ++i) {
    if (is_input(g.nodes[i])) input_slot[i] = inputs++;
    if (is_output(g.nodes[i])) output_slot[i] = outputs++;
  }
}

void PlanLayout::place(const LlirGraph& g, const PlanSpec& spec, const PlanIo& io,
                       int64_t alignment) {
  const int n = static_cast<int>(g.nodes.size());
  direct = direct_outputs(g, io);

  // The arena: every buffer at its largest size in the bucket.
  std::vector<BufferUse> uses = buffer_uses(g);
  root.resize(static_cast<size_t>(n));
  std::vector<int64_t> bytes(static_cast<size_t>(n), 0);
  for (int i = 0; i < n; ++i) {
    root[i] = uses[i].alias_of >= 0 ? root[uses[i].alias_of] : i;
    if (!uses[i].in_arena) continue;
    const Interval b = uses[i].bytes.bounds(spec.facts);
    if (b.hi == INT64_MAX || b.hi < 0)
      throw Error("cuda: the buffer of node " + node_name(g, i) + " (" + uses[i].bytes.to_string() +
                  " bytes) has no upper bound in this bucket; give its dims a range with "
                  "graph.declare_dim or CompileOptions::dim_buckets");
    bytes[i] = b.hi;
  }
  mem = plan_memory(uses, bytes, alignment);
}

void PlanLayout::addresses(const LlirGraph& g, const PlanIo& io, const Bindings& b,
                           std::vector<CUdeviceptr>& ptr) const {
  const int n = static_cast<int>(g.nodes.size());
  ptr.assign(static_cast<size_t>(n), 0);
  const auto arena = reinterpret_cast<CUdeviceptr>(b.arena.ptr);
  for (int i = 0; i < n; ++i) {
    const LlirNode& node = g.nodes[i];
    if (is_input(node)) {
      ptr[i] = reinterpret_cast<CUdeviceptr>(b.inputs[input_slot[i]].ptr);
    } else if (is_output(node)) {
      const int k = output_slot[i];
      ptr[i] = io.output_in_input[k] >= 0 ? ptr[node.inputs[0]]
                                          : reinterpret_cast<CUdeviceptr>(b.outputs[k].ptr);
    } else if (root[i] != i) {
      ptr[i] = ptr[root[i]];
    } else if (direct[i] >= 0) {
      ptr[i] = reinterpret_cast<CUdeviceptr>(b.outputs[direct[i]].ptr);
    } else {
      ptr[i] = arena + static_cast<CUdeviceptr>(mem.offsets[i]);
    }
  }
}

}  // namespace luminal::cuda
