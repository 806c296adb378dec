#include "luminal/cpu/executable.hpp"

#include <cstring>
#include <string>

#include "luminal/core/error.hpp"

namespace luminal::cpu {

namespace {

bool is_input(const LlirNode& n) { return is_op(n.op, OpKind::Input); }
bool is_output(const LlirNode& n) { return is_op(n.op, OpKind::Output); }

std::string node_name(const LlirGraph& g, int i) {
  return "%" + std::to_string(i) + " (" + std::string(g.nodes[i].op->name) + ")";
}

}  // namespace

CpuExecutable::CpuExecutable(const LlirGraph& g, int threads) : g_(g), threads_(threads) {
  const int n = static_cast<int>(g_.nodes.size());
  g_.fill_input_dtypes();
  kernels_.resize(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    const LlirNode& node = g_.nodes[i];
    if (!node.op) throw Error("cpu: node %" + std::to_string(i) + " has no op");
    for (int in : node.inputs) {
      if (in < 0 || in >= i) {
        throw Error("cpu: node " + node_name(g_, i) + " reads %" + std::to_string(in) +
                    ", which does not run before it");
      }
    }
    if (node.attrs.views.size() != node.inputs.size()) {
      throw Error("cpu: node " + node_name(g_, i) + " has " + std::to_string(node.inputs.size()) +
                  " inputs but " + std::to_string(node.attrs.views.size()) + " views");
    }
    if (is_input(node)) continue;
    if (is_output(node)) {
      if (node.inputs.size() != 1)
        throw Error("cpu: Output node " + node_name(g_, i) + " needs exactly one input");
      if (g_.nodes[node.inputs[0]].attrs.dtype != node.attrs.dtype) {
        throw Error("cpu: Output '" + node.attrs.label + "' is " +
                    std::string(name(node.attrs.dtype)) + " but its input is " +
                    std::string(name(g_.nodes[node.inputs[0]].attrs.dtype)));
      }
      continue;
    }
    const CpuOp* op = find_cpu_op(node.op);
    if (!op) {
      throw Error("cpu backend cannot run op '" + std::string(node.op->name) + "' (node %" +
                  std::to_string(i) + "); the extraction chose an op of another backend");
    }
    kernels_[i] = op->make(node);
    if (!kernels_[i]) throw Error("cpu: no kernel for node " + node_name(g_, i));
  }
  uses_ = buffer_uses(g_);
  root_.resize(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i)
    root_[i] = uses_[i].alias_of >= 0 ? root_[uses_[i].alias_of] : i;
  out_view_.resize(static_cast<size_t>(n));
  ptr_.assign(static_cast<size_t>(n), nullptr);
}

void CpuExecutable::prepare(const DynMap& dyn) {
  if (prepared_ && dyn == dyn_) return;
  prepared_ = false;
  const int n = static_cast<int>(g_.nodes.size());
  std::vector<int64_t> sizes(static_cast<size_t>(n), 0);
  numel_.assign(static_cast<size_t>(n), 0);
  for (int i = 0; i < n; ++i) {
    const LlirNode& node = g_.nodes[i];
    int64_t e = 1;
    for (int64_t d : eval_shape(node.attrs.shape, dyn))
      e *= d;
    numel_[i] = e;
    if (uses_[i].in_arena) sizes[i] = uses_[i].bytes.eval(dyn);
    if (is_output(node)) out_view_[i] = eval_view(node.attrs.views[0], dyn);
  }
  if (sizes != sizes_ || plan_.offsets.size() != sizes.size()) {
    plan_ = plan_memory(uses_, dyn, kAlignment);
    sizes_ = std::move(sizes);
  }
  dyn_ = dyn;
  prepared_ = true;
}

void CpuExecutable::grow_arena(int64_t bytes) {
  if (bytes <= arena_cap_ && arena_) return;
  const int64_t cap =
      (std::max<int64_t>(bytes, kAlignment) + kAlignment - 1) / kAlignment * kAlignment;
  arena_.reset();
  arena_cap_ = 0;
  auto* p = static_cast<uint8_t*>(std::aligned_alloc(kAlignment, static_cast<size_t>(cap)));
  if (!p) throw Error("cpu: cannot allocate the " + std::to_string(cap) + "-byte arena");
  arena_.reset(p);
  arena_cap_ = cap;
}

uint64_t CpuExecutable::memory_bytes(const DynMap& dyn) const {
  if (prepared_ && dyn == dyn_ && sizes_.size() == uses_.size()) {
    // The cached plan may be one made for other dims with the same sizes: still exact.
    return static_cast<uint64_t>(plan_.arena_bytes);
  }
  return static_cast<uint64_t>(plan_memory(uses_, dyn, kAlignment).arena_bytes);
}

void CpuExecutable::execute(const DynMap& dyn, IoTable& io) {
  prepare(dyn);
  const int n = static_cast<int>(g_.nodes.size());
  // Inputs first, so a bad input fails before anything runs.
  for (int i = 0; i < n; ++i) {
    const LlirNode& node = g_.nodes[i];
    if (!is_input(node)) continue;
    const std::string& label = node.attrs.label;
    auto it = io.inputs.find(label);
    if (it == io.inputs.end() || it->second == nullptr) {
      throw Error("input '" + label + "' has no data: the program reads it but the IoTable has " +
                  "no buffer under that label");
    }
    HostBuffer& b = *it->second;
    if (b.dtype != node.attrs.dtype) {
      throw Error("input '" + label + "' is " + std::string(name(b.dtype)) +
                  " but the program expects " + std::string(name(node.attrs.dtype)));
    }
    if (b.numel() != numel_[i] ||
        static_cast<int64_t>(b.bytes.size()) != numel_[i] * size_bytes(b.dtype)) {
      throw Error("input '" + label + "' was given " + std::to_string(b.numel()) +
                  " elements but its shape " + shape_to_string(node.attrs.shape) + " needs " +
                  std::to_string(numel_[i]) + " at these dims");
    }
    ptr_[i] = b.bytes.data();
  }
  grow_arena(plan_.arena_bytes);
  uint8_t* arena = arena_.get();
  for (int i = 0; i < n; ++i) {
    const LlirNode& node = g_.nodes[i];
    if (is_input(node)) continue;
    if (is_output(node)) {
      const int src = node.inputs[0];
      const int r = root(src);
      const std::string& label = node.attrs.label;
      if (r != src && is_input(g_.nodes[r]) && out_view_[i].identity() && numel_[i] == numel_[r]) {
        io.output_in_input[label] = g_.nodes[r].attrs.label;  // updated in place: no copy
        ptr_[i] = ptr_[src];  // later nodes may read the Output's value
        continue;
      }
      auto it = io.outputs.find(label);
      if (it == io.outputs.end() || it->second == nullptr) {
        throw Error("output '" + label +
                    "' has no buffer in the IoTable; add one under that label");
      }
      HostBuffer& out = *it->second;
      const int es = size_bytes(node.attrs.dtype);
      out.dtype = node.attrs.dtype;
      out.bytes.resize(static_cast<size_t>(numel_[i] * es));
      copy_view(ptr_[src], out_view_[i], out.bytes.data(), es, threads_);
      io.output_in_input.erase(label);
      ptr_[i] = out.bytes.data();  // later nodes may read the Output's value (a Tensor API
                                   // output() result stays usable in the graph)
      continue;
    }
    if (uses_[i].alias_of >= 0)
      ptr_[i] = ptr_[uses_[i].alias_of];
    else
      ptr_[i] = arena + plan_.offsets[i];
    std::vector<const uint8_t*> in;
    in.reserve(node.inputs.size());
    for (int j : node.inputs) {
      LUMINAL_ASSERT(ptr_[j] != nullptr || numel_[j] == 0, "cpu: node " + node_name(g_, i) +
                                                               " reads %" + std::to_string(j) +
                                                               ", which has no buffer");
      in.push_back(ptr_[j]);
    }
    KernelContext ctx{node, dyn, std::move(in), ptr_[i], threads_};
    kernels_[i]->run(ctx);
  }
}

}  // namespace luminal::cpu
