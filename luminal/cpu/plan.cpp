#include "luminal/cpu/plan.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>

#include "luminal/core/error.hpp"

namespace luminal::cpu {

CpuPlan::CpuPlan(const LlirGraph& g, const PlanSpec& spec, int threads) : g_(g), threads_(threads) {
  const int n = static_cast<int>(g_.nodes.size());
  check_llir(g_, "cpu", LlirChecks{.output_dtypes = true});
  g_.fill_input_dtypes();
  check_dim_slots(g_, spec, "cpu");
  for (const std::string& d : spec.dim_names)
    dim_entry_.push_back(dyn_.emplace(d, 0).first);
  dims_.assign(spec.dim_names.size(), INT64_MIN);

  kernels_.resize(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    const LlirNode& node = g_.nodes[i];
    if (is_input(node) || is_output(node)) continue;
    const CpuOp* op = find_cpu_op(node.op);
    if (!op) {
      throw Error("cpu backend cannot run op '" + std::string(node.op->name) + "' (node %" +
                  std::to_string(i) + "); the extraction chose an op of another backend");
    }
    kernels_[i] = op->make(node);
    if (!kernels_[i]) throw Error("cpu: no kernel for node " + node_name(g_, i));
  }
  layout_ = PlanLayout(g_, spec, {.backend = "cpu", .alignment = kAlignment});
  io_ = layout_.io();
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
  Bound& bd = bound_[parity];
  layout_.addresses(b, bd.ptr);
  bd.bound = true;
}

void CpuPlan::run_node(int i, const Bound& bd) {
  const LlirNode& node = g_.nodes[i];
  if (is_input(node)) return;
  if (is_output(node)) {
    if (io_.output_in_input[layout_.output_slot(i)] >= 0) return;  // updated in place: no copy
    if (is_block(node.attrs.dtype)) {  // whole stored blocks (prim allows no other view)
      const int64_t n = out_view_[i].numel;
      std::memcpy(bd.ptr[i], bd.ptr[node.inputs[0]], storage_bytes(node.attrs.dtype, n));
      return;
    }
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
