#include "luminal/program/plan_layout.hpp"

#include <algorithm>

#include "luminal/core/error.hpp"

namespace luminal {

namespace {

std::string prefix(std::string_view backend) { return std::string(backend) + ": "; }

std::vector<int> direct_outputs(const LlirGraph& g, const PlanIo& io,
                                const std::vector<BufferUse>& uses) {
  const int n = static_cast<int>(g.nodes.size());
  std::vector<int> out(static_cast<size_t>(n), -1);
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

}  // namespace

std::string node_name(const LlirGraph& g, int i) {
  return "%" + std::to_string(i) + " (" + std::string(g.nodes[i].op->name) + ")";
}

void check_llir(const LlirGraph& g, std::string_view backend, LlirChecks checks) {
  const std::string be = prefix(backend);
  for (int i = 0; i < static_cast<int>(g.nodes.size()); ++i) {
    const LlirNode& node = g.nodes[i];
    if (!node.op) throw Error(be + "node %" + std::to_string(i) + " has no op");
    for (int in : node.inputs)
      if (in < 0 || in >= i)
        throw Error(be + "node " + node_name(g, i) + " reads %" + std::to_string(in) +
                    ", which does not run before it");
    if (node.attrs.views.size() != node.inputs.size())
      throw Error(be + "node " + node_name(g, i) + " has " + std::to_string(node.inputs.size()) +
                  " inputs but " + std::to_string(node.attrs.views.size()) + " views");
    if (!is_output(node)) continue;
    if (node.inputs.size() != 1)
      throw Error(be + "Output node " + node_name(g, i) + " needs exactly one input");
    const DType in = g.nodes[node.inputs[0]].attrs.dtype;
    if (checks.output_dtypes && in != node.attrs.dtype)
      throw Error(be + "Output '" + node.attrs.label + "' is " +
                  std::string(name(node.attrs.dtype)) + " but its input is " +
                  std::string(name(in)));
  }
}

void check_dim_slots(const LlirGraph& g, const PlanSpec& spec, std::string_view backend) {
  for (const LlirNode& node : g.nodes) {
    std::vector<Expr> exprs(node.attrs.shape.begin(), node.attrs.shape.end());
    for (const View& v : node.attrs.views) {
      exprs.insert(exprs.end(), v.dims.begin(), v.dims.end());
      exprs.insert(exprs.end(), v.strides.begin(), v.strides.end());
      exprs.push_back(v.base);
    }
    for (const Expr& e : exprs)
      for (const std::string& d : e.vars()) {
        if (d == "z") continue;
        if (std::find(spec.dim_names.begin(), spec.dim_names.end(), d) == spec.dim_names.end())
          throw Error(prefix(backend) + "the program uses dynamic dimension '" + d +
                      "' but the plan has no slot for it");
      }
  }
}

std::vector<int> direct_outputs(const LlirGraph& g, const PlanIo& io) {
  return direct_outputs(g, io, buffer_uses(g));
}

PlanLayout::PlanLayout(const LlirGraph& g, const PlanSpec& spec, const LayoutOptions& opts)
    : backend_(opts.backend), io_(PlanIo::of(g)) {
  const size_t n = g.nodes.size();
  input_slot_.assign(n, -1);
  output_slot_.assign(n, -1);
  int inputs = 0, outputs = 0;
  for (size_t i = 0; i < n; ++i) {
    if (is_input(g.nodes[i])) input_slot_[i] = inputs++;
    if (is_output(g.nodes[i])) output_slot_[i] = outputs++;
  }

  // The arena: every buffer at its largest size in the bucket.
  const std::vector<BufferUse> uses = buffer_uses(g);
  direct_ = opts.direct_outputs ? direct_outputs(g, io_, uses) : std::vector<int>(n, -1);
  root_.resize(n);
  std::vector<int64_t> bytes(n, 0);
  for (size_t i = 0; i < n; ++i) {
    root_[i] = uses[i].alias_of >= 0 ? root_[uses[i].alias_of] : static_cast<int>(i);
    if (!uses[i].in_arena) continue;
    const Interval b = uses[i].bytes.bounds(spec.facts);
    if (b.hi == INT64_MAX || b.hi < 0) {
      std::string dims;
      for (const std::string& v : uses[i].bytes.vars())
        dims += (dims.empty() ? "'" : ", '") + v + "'";
      throw Error(prefix(backend_) + "the buffer of node " + node_name(g, static_cast<int>(i)) +
                  " (" + uses[i].bytes.to_string() +
                  " bytes) has no upper bound in this bucket; give " + dims +
                  " a range with graph.declare_dim or CompileOptions::dim_buckets");
    }
    bytes[i] = b.hi;
  }
  mem_ = plan_memory(uses, bytes, opts.alignment);
  if (opts.reuse_gap > 0 && n > 0) {
    // Every buffer held reuse_gap steps past its last reader (at most to the last step).
    std::vector<BufferUse> spaced = uses;
    const int last_step = static_cast<int>(n) - 1;
    for (BufferUse& u : spaced)
      u.last = std::min(last_step, u.last + opts.reuse_gap);
    MemoryPlan m = plan_memory(spaced, bytes, opts.alignment);
    if (m.arena_bytes <= mem_.arena_bytes + opts.reuse_gap_bytes) mem_ = std::move(m);
  }
  bytes_ = std::move(bytes);

  // Where each value lives, in the order bind resolves it.
  place_.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const LlirNode& node = g.nodes[i];
    Place& p = place_[i];
    if (input_slot_[i] >= 0) {
      p = {Place::Input, input_slot_[i]};
    } else if (output_slot_[i] >= 0) {
      // An output written in place reads its input's buffer; later nodes may read its value.
      p = io_.output_in_input[output_slot_[i]] >= 0 ? Place{Place::Node, node.inputs[0]}
                                                    : Place{Place::Output, output_slot_[i]};
    } else if (root_[i] != static_cast<int>(i)) {
      p = {Place::Node, root_[i]};
    } else if (direct_[i] >= 0) {
      p = {Place::Output, direct_[i]};
    } else {
      p = {Place::Arena, mem_.offsets[i]};
    }
  }
}

std::vector<uint64_t> PlanLayout::extents(const Bindings& b) const {
  check(b);
  auto whole = [](const Buffer& buf) { return buf.bytes ? buf.bytes : UINT64_MAX; };
  std::vector<uint64_t> out(place_.size(), 0);
  for (size_t i = 0; i < place_.size(); ++i) {
    const Place& p = place_[i];
    switch (p.kind) {
      case Place::Input: out[i] = whole(b.inputs[p.index]); break;
      case Place::Output: out[i] = whole(b.outputs[p.index]); break;
      case Place::Node: out[i] = out[p.index]; break;
      case Place::Arena: out[i] = static_cast<uint64_t>(bytes_[i]); break;
    }
  }
  return out;
}

void PlanLayout::check(const Bindings& b) const {
  if (b.inputs.size() != io_.inputs.size() || b.outputs.size() != io_.outputs.size())
    throw Error(prefix(backend_) + "bind got " + std::to_string(b.inputs.size()) + " inputs and " +
                std::to_string(b.outputs.size()) + " outputs; the plan has " +
                std::to_string(io_.inputs.size()) + " and " + std::to_string(io_.outputs.size()));
  if (b.arena.bytes < arena_bytes())
    throw Error(prefix(backend_) + "the bound arena has " + std::to_string(b.arena.bytes) +
                " bytes; the plan needs " + std::to_string(arena_bytes()));
}

}  // namespace luminal
