#include "luminal/cpu/plan.hpp"

#include <algorithm>
#include <chrono>
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

void check_structure(const LlirGraph& g) {
  const int n = static_cast<int>(g.nodes.size());
  for (int i = 0; i < n; ++i) {
    const LlirNode& node = g.nodes[i];
    if (!node.op) throw Error("cpu: node %" + std::to_string(i) + " has no op");
    for (int in : node.inputs) {
      if (in < 0 || in >= i) {
        throw Error("cpu: node " + node_name(g, i) + " reads %" + std::to_string(in) +
                    ", which does not run before it");
      }
    }
    if (node.attrs.views.size() != node.inputs.size()) {
      throw Error("cpu: node " + node_name(g, i) + " has " + std::to_string(node.inputs.size()) +
                  " inputs but " + std::to_string(node.attrs.views.size()) + " views");
    }
    if (is_output(node)) {
      if (node.inputs.size() != 1)
        throw Error("cpu: Output node " + node_name(g, i) + " needs exactly one input");
      if (g.nodes[node.inputs[0]].attrs.dtype != node.attrs.dtype) {
        throw Error("cpu: Output '" + node.attrs.label + "' is " +
                    std::string(name(node.attrs.dtype)) + " but its input is " +
                    std::string(name(g.nodes[node.inputs[0]].attrs.dtype)));
      }
    }
  }
}

}  // namespace

CpuPlan::CpuPlan(const LlirGraph& g, const PlanSpec& spec, int threads) : g_(g), threads_(threads) {
  const int n = static_cast<int>(g_.nodes.size());
  check_structure(g_);
  g_.fill_input_dtypes();
  io_ = PlanIo::of(g_);

  // Every dim the program uses needs a slot and a finite range.
  for (const LlirNode& node : g_.nodes) {
    std::vector<Expr> exprs(node.attrs.shape.begin(), node.attrs.shape.end());
    for (const View& v : node.attrs.views) {
      exprs.insert(exprs.end(), v.dims.begin(), v.dims.end());
      exprs.insert(exprs.end(), v.strides.begin(), v.strides.end());
    }
    for (const Expr& e : exprs)
      for (const std::string& d : e.vars()) {
        if (d == "z") continue;
        if (std::find(spec.dim_names.begin(), spec.dim_names.end(), d) == spec.dim_names.end()) {
          throw Error("cpu: the program uses dynamic dimension '" + d +
                      "' but the plan has no slot for it");
        }
      }
  }
  for (const std::string& d : spec.dim_names)
    dim_entry_.push_back(dyn_.emplace(d, 0).first);
  dims_.assign(spec.dim_names.size(), INT64_MIN);

  kernels_.resize(static_cast<size_t>(n));
  input_slot_.assign(static_cast<size_t>(n), -1);
  output_slot_.assign(static_cast<size_t>(n), -1);
  int inputs = 0, outputs = 0;
  for (int i = 0; i < n; ++i) {
    const LlirNode& node = g_.nodes[i];
    if (is_input(node)) {
      input_slot_[i] = inputs++;
      continue;
    }
    if (is_output(node)) {
      output_slot_[i] = outputs++;
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

  // The arena: every buffer at its largest size in the bucket.
  std::vector<BufferUse> uses = buffer_uses(g_);
  root_.resize(static_cast<size_t>(n));
  std::vector<int64_t> bytes(static_cast<size_t>(n), 0);
  for (int i = 0; i < n; ++i) {
    root_[i] = uses[i].alias_of >= 0 ? root_[uses[i].alias_of] : i;
    if (!uses[i].in_arena) continue;
    const Interval b = uses[i].bytes.bounds(spec.facts);
    if (b.hi == INT64_MAX || b.hi < 0) {
      std::string dims;
      for (const std::string& v : uses[i].bytes.vars())
        dims += (dims.empty() ? "'" : ", '") + v + "'";
      throw Error("cpu: the buffer of node " + node_name(g_, i) + " (" + uses[i].bytes.to_string() +
                  " bytes) has no upper bound in this bucket; give " + dims +
                  " a range with graph.declare_dim or CompileOptions::dim_buckets");
    }
    bytes[i] = b.hi;
  }
  mem_ = plan_memory(uses, bytes, kAlignment);
  out_view_.resize(static_cast<size_t>(n));
  size_t most_inputs = 0;
  for (const LlirNode& node : g_.nodes)
    most_inputs = std::max(most_inputs, node.inputs.size());
  in_scratch_.resize(most_inputs);
}

void CpuPlan::update_dims(const int64_t* dims) {
  bool changed = false;
  for (size_t s = 0; s < dims_.size(); ++s) {
    if (dims_[s] == dims[s]) continue;
    dims_[s] = dims[s];
    dim_entry_[s]->second = dims[s];
    changed = true;
  }
  if (!changed && version_ != 0) return;
  ++version_;
  for (size_t i = 0; i < g_.nodes.size(); ++i)
    if (is_output(g_.nodes[i])) out_view_[i] = eval_view(g_.nodes[i].attrs.views[0], dyn_);
}

void CpuPlan::bind(int parity, const Bindings& b) {
  LUMINAL_ASSERT(parity == 0 || parity == 1, "cpu: parity must be 0 or 1");
  if (b.inputs.size() != io_.inputs.size() || b.outputs.size() != io_.outputs.size()) {
    throw Error("cpu: bind got " + std::to_string(b.inputs.size()) + " inputs and " +
                std::to_string(b.outputs.size()) + " outputs; the plan has " +
                std::to_string(io_.inputs.size()) + " and " + std::to_string(io_.outputs.size()));
  }
  if (b.arena.bytes < arena_bytes()) {
    throw Error("cpu: the bound arena has " + std::to_string(b.arena.bytes) +
                " bytes; the plan needs " + std::to_string(arena_bytes()));
  }
  const int n = static_cast<int>(g_.nodes.size());
  Bound& bd = bound_[parity];
  bd.ptr.assign(static_cast<size_t>(n), nullptr);
  auto* arena = static_cast<uint8_t*>(b.arena.ptr);
  for (int i = 0; i < n; ++i) {
    const LlirNode& node = g_.nodes[i];
    if (is_input(node)) {
      bd.ptr[i] = static_cast<uint8_t*>(b.inputs[input_slot_[i]].ptr);
    } else if (is_output(node)) {
      const int k = output_slot_[i];
      // An output written in place reads the input's buffer; later nodes may read its value.
      bd.ptr[i] = io_.output_in_input[k] >= 0 ? bd.ptr[node.inputs[0]]
                                              : static_cast<uint8_t*>(b.outputs[k].ptr);
    } else if (root_[i] != i) {
      bd.ptr[i] = bd.ptr[root_[i]];
    } else {
      bd.ptr[i] = arena + mem_.offsets[i];
    }
  }
  bd.bound = true;
}

void CpuPlan::run_node(int i, const Bound& bd) {
  const LlirNode& node = g_.nodes[i];
  if (is_input(node)) return;
  if (is_output(node)) {
    if (io_.output_in_input[output_slot_[i]] >= 0) return;  // updated in place: no copy
    copy_view(bd.ptr[node.inputs[0]], out_view_[i], bd.ptr[i], size_bytes(node.attrs.dtype),
              threads_);
    return;
  }
  const size_t k = node.inputs.size();
  for (size_t j = 0; j < k; ++j)
    in_scratch_[j] = bd.ptr[node.inputs[j]];
  KernelContext ctx{node, dyn_, version_, {in_scratch_.data(), k}, bd.ptr[i], threads_};
  kernels_[i]->run(ctx);
}

void CpuPlan::execute(int parity, const int64_t* dims) {
  Bound& bd = bound_[parity];
  if (!bd.bound) throw Error("cpu: execute before bind (parity " + std::to_string(parity) + ")");
  update_dims(dims);
  const int n = static_cast<int>(g_.nodes.size());
  for (int i = 0; i < n; ++i)
    run_node(i, bd);
}

std::vector<double> CpuPlan::profile(int parity, const int64_t* dims, int trials) {
  Bound& bd = bound_[parity];
  if (!bd.bound) throw Error("cpu: profile before bind (parity " + std::to_string(parity) + ")");
  update_dims(dims);
  const int n = static_cast<int>(g_.nodes.size());
  trials = std::max(trials, 1);
  std::vector<std::vector<double>> t(static_cast<size_t>(n));
  for (int r = 0; r <= trials; ++r) {  // run 0 is a warm-up
    for (int i = 0; i < n; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      run_node(i, bd);
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (r > 0) t[i].push_back(s);
    }
  }
  std::vector<double> out(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    std::sort(t[i].begin(), t[i].end());
    out[i] = t[i][t[i].size() / 2];
  }
  return out;
}

}  // namespace luminal::cpu
