#include "luminal/cpu/plan.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <unordered_map>

#include "luminal/core/error.hpp"

namespace luminal::cpu {

namespace {

bool ident_char(char ch) {
  return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
         ch == '_';
}

// The dim slots a node reads (bit s for dim_names[s]; every bit for a slot past 63): the
// variables of its shape, views and iota, and any identifier of its payload's text that names a
// dim (a payload holds its Exprs in write_expr form; a name that only looks like a dim costs a
// re-plan, never a stale one).
// `memo`: the mask of each Expr seen (interned: one node per distinct expression).
uint64_t dims_read(const Attrs& a, const std::vector<std::string>& dim_names,
                   std::unordered_map<const void*, uint64_t>& memo) {
  uint64_t mask = 0;
  auto bit = [&](std::string_view name) {
    for (size_t s = 0; s < dim_names.size(); ++s)
      if (dim_names[s] == name) return s < 64 ? uint64_t{1} << s : ~uint64_t{0};
    return uint64_t{0};
  };
  auto add = [&](std::string_view name) { mask |= bit(name); };
  auto expr = [&](const Expr& e) {
    if (e.is_const()) return;
    auto [it, fresh] = memo.try_emplace(e.node(), 0);
    if (fresh)
      for (const std::string& v : e.vars())
        it->second |= bit(v);
    mask |= it->second;
  };
  for (const Expr& e : a.shape)
    expr(e);
  for (const View& v : a.views) {
    for (const Expr& e : v.dims)
      expr(e);
    for (const Expr& e : v.strides)
      expr(e);
    expr(v.base);
  }
  expr(a.iota_expr);
  expr(a.iota_len);
  if (a.payload) {
    const std::string text = a.payload->serialize();
    for (size_t i = 0; i < text.size();) {
      if (!ident_char(text[i])) {
        ++i;
        continue;
      }
      size_t j = i;
      while (j < text.size() && ident_char(text[j]))
        ++j;
      add(std::string_view(text).substr(i, j - i));
      i = j;
    }
  }
  return mask;
}

}  // namespace

CpuPlan::CpuPlan(const LlirGraph& g, const PlanSpec& spec, int threads) : g_(g), threads_(threads) {
  const int n = static_cast<int>(g_.nodes.size());
  check_llir(g_, "cpu", LlirChecks{.output_dtypes = true});
  g_.fill_input_dtypes();
  check_dim_slots(g_, spec, "cpu");
  for (const std::string& d : spec.dim_names) {
    dim_entry_.push_back(dyn_.emplace(d, 0).first);
    auto f = spec.facts.find(d);
    ranges_.push_back(f != spec.facts.end() ? f->second : Interval{0, 0});
  }
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
  node_dims_.resize(static_cast<size_t>(n));
  std::unordered_map<const void*, uint64_t> memo;
  for (int i = 0; i < n; ++i)
    node_dims_[i] = dims_read(g_.nodes[i].attrs, spec.dim_names, memo);
  node_version_.assign(static_cast<size_t>(n), 0);
  layout_ = PlanLayout(g_, spec, {.backend = "cpu", .alignment = kAlignment});
  io_ = layout_.io();
  out_view_.resize(static_cast<size_t>(n));
  size_t most_inputs = 0;
  for (const LlirNode& node : g_.nodes)
    most_inputs = std::max(most_inputs, node.inputs.size());
  in_scratch_.resize(most_inputs);
  const char* stats = std::getenv("LUMINAL_CPU_OPSTATS");
  opstats_ = stats != nullptr && std::string(stats) == "1";
  if (opstats_) node_sec_.assign(static_cast<size_t>(n), 0.0);
}

std::optional<std::vector<int64_t>> CpuPlan::alternate_dims(const int64_t* dims) const {
  std::optional<std::vector<int64_t>> alt;
  for (size_t k = 0; k < ranges_.size(); ++k) {
    const Interval r = ranges_[k];
    if (r.lo >= r.hi || dims[k] < r.lo || dims[k] > r.hi) continue;
    if (!alt) alt.emplace(dims, dims + ranges_.size());
    (*alt)[k] = dims[k] < r.hi ? dims[k] + 1 : dims[k] - 1;
  }
  return alt;
}

CpuPlan::~CpuPlan() {
  if (!opstats_ || executes_ == 0) return;
  std::map<std::string, std::pair<int, double>> by_op;
  double total = 0;
  for (size_t i = 0; i < g_.nodes.size(); ++i) {
    const LlirNode& node = g_.nodes[i];
    if (is_input(node)) continue;
    auto& e = by_op[std::string(node.op->name)];
    ++e.first;
    e.second += node_sec_[i];
    total += node_sec_[i];
  }
  std::fprintf(stderr, "cpu opstats: %zu nodes, %llu executes, %.3f ms an execute\n",
               g_.nodes.size(), static_cast<unsigned long long>(executes_),
               1e3 * total / static_cast<double>(executes_));
  for (const auto& [op, e] : by_op)
    std::fprintf(stderr, "  %-24s %5d %9.4f ms %5.1f%%\n", op.c_str(), e.first,
                 1e3 * e.second / static_cast<double>(executes_),
                 total > 0 ? 100 * e.second / total : 0.0);
  // The nodes grouped by op and attributes (payload aside), slowest groups first.
  std::map<std::string, std::pair<int, double>> by_kind;
  for (size_t i = 0; i < g_.nodes.size(); ++i) {
    const LlirNode& node = g_.nodes[i];
    if (is_input(node)) continue;
    std::string a = node.attrs.to_string();
    a = a.substr(0, std::min(a.find(" %0="), size_t{100}));
    auto& e = by_kind[std::string(node.op->name) + " " + a];
    ++e.first;
    e.second += node_sec_[i];
  }
  std::vector<std::pair<double, std::string>> kinds;
  for (const auto& [k, e] : by_kind)
    kinds.push_back({e.second, std::to_string(e.first) + "x " + k});
  std::sort(kinds.rbegin(), kinds.rend());
  for (size_t r = 0; r < std::min<size_t>(kinds.size(), 30); ++r)
    std::fprintf(stderr, "  %8.4f ms  %s\n", 1e3 * kinds[r].first / static_cast<double>(executes_),
                 kinds[r].second.c_str());
}

void CpuPlan::update_dims(const int64_t* dims) {
  uint64_t changed = 0;
  for (size_t s = 0; s < dims_.size(); ++s) {
    if (dims_[s] == dims[s]) continue;
    dims_[s] = dims[s];
    dim_entry_[s]->second = dims[s];
    changed |= s < 64 ? uint64_t{1} << s : ~uint64_t{0};
  }
  const bool first = version_ == 0;
  if (!changed && !first) return;
  ++version_;
  for (size_t i = 0; i < g_.nodes.size(); ++i) {
    if (!first && !(node_dims_[i] & changed)) continue;  // its kernel's caches still hold
    node_version_[i] = version_;
    ++node_updates_;
    if (is_output(g_.nodes[i])) out_view_[i] = eval_view(g_.nodes[i].attrs.views[0], dyn_);
  }
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
  KernelContext ctx{node, dyn_, node_version_[i], {in_scratch_.data(), k}, bd.ptr[i], threads_};
  kernels_[i]->run(ctx);
}

void CpuPlan::execute(int parity, const int64_t* dims) {
  Bound& bd = bound_[parity];
  if (!bd.bound) throw Error("cpu: execute before bind (parity " + std::to_string(parity) + ")");
  update_dims(dims);
  const int n = static_cast<int>(g_.nodes.size());
  if (opstats_) {
    ++executes_;
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < n; ++i) {
      run_node(i, bd);
      const auto t1 = std::chrono::steady_clock::now();
      node_sec_[static_cast<size_t>(i)] += std::chrono::duration<double>(t1 - t0).count();
      t0 = t1;
    }
    return;
  }
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
