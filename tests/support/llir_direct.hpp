#pragma once
// Test helpers: run an HLIR Graph on a Backend without the compiler.
//
//   LlirGraph llir = testing::llir_direct(g);          // one LLIR node per HLIR node
//   auto outs = testing::run_backend(cpu, g, {{"x", buf}}, {{"s", 3}});
//   HostBuffer y = outs.at("y");
//   LoadedPlan lp = testing::load_plan(cpu, llir, {{{"s", 1}}, {{"s", 9}}});  // s in [1, 9]
//   PlanRun r = testing::run_plan(lp, inputs, {{"s", 4}});
//
// llir_direct keeps every node an output depends on, in graph order, as
// LlirNode{hlir_op(n.op), attrs_of(n), input indices}.
#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "luminal/compiler/lower.hpp"
#include "luminal/core/error.hpp"
#include "luminal/core/shape.hpp"
#include "luminal/egraph/op_def.hpp"
#include "luminal/ir/graph.hpp"
#include "luminal/program/backend.hpp"
#include "luminal/program/llir.hpp"
#include "luminal/runtime/host_buffer.hpp"

namespace luminal::testing {

/// The LLIR program that runs `g` node for node (only nodes an output depends on).
/// How many nodes of `l` run op `op` (by name).
inline int count_op(const LlirGraph& l, std::string_view op) {
  int n = 0;
  for (const LlirNode& node : l.nodes)
    n += node.op->name == op;
  return n;
}

inline LlirGraph llir_direct(const Graph& g) {
  const std::vector<Node>& nodes = g.nodes();
  std::vector<bool> needed(nodes.size(), false);
  for (NodeId o : g.outputs())
    needed[o] = true;
  for (size_t i = nodes.size(); i-- > 0;) {
    if (!needed[i]) continue;
    for (const Operand& in : nodes[i].inputs)
      needed[in.node] = true;
  }
  LlirGraph out;
  std::vector<int> index(nodes.size(), -1);
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (!needed[i]) continue;
    LlirNode n;
    n.op = hlir_op(nodes[i].op);
    n.attrs = attrs_of(nodes[i]);
    for (const Operand& in : nodes[i].inputs)
      n.inputs.push_back(index[in.node]);
    index[i] = static_cast<int>(out.nodes.size());
    out.nodes.push_back(std::move(n));
  }
  return out;
}

using BufferMap = std::map<std::string, HostBuffer, std::less<>>;

/// A plan loaded for host-side tests, with the program and spec it was loaded for.
struct LoadedPlan {
  Backend* backend = nullptr;
  LlirGraph llir;
  PlanSpec spec;
  std::unique_ptr<Plan> plan;
  Plan* operator->() const { return plan.get(); }
};

/// Loads `llir` for a bucket covering every dyn map in `dyns` (each dim ranges over the values
/// given; slots are the dims in name order).
inline LoadedPlan load_plan(Backend& backend, const LlirGraph& llir,
                            const std::vector<DynMap>& dyns = {DynMap{}}) {
  LoadedPlan lp;
  lp.backend = &backend;
  lp.llir = llir;
  for (const DynMap& dyn : dyns)
    for (const auto& [d, v] : dyn) {
      auto it = lp.spec.facts.find(d);
      if (it == lp.spec.facts.end())
        lp.spec.facts[d] = Interval{v, v};
      else
        it->second = Interval{std::min(it->second.lo, v), std::max(it->second.hi, v)};
    }
  for (const auto& [d, r] : lp.spec.facts)
    lp.spec.dim_names.push_back(d);
  lp.plan = backend.load(llir, lp.spec);
  return lp;
}

/// One run of a loaded plan over host data.
struct PlanRun {
  BufferMap outputs;  // an output updated inside an input's buffer holds that input's bytes
  BufferMap inputs;   // the inputs' bytes after the run (in-place updates show here)
  std::map<std::string, std::string> output_in_input;  // output label -> input label
};

/// Uploads `inputs` into fresh backend buffers, binds them (parity 0) and runs once at `dyn`.
inline PlanRun run_plan(LoadedPlan& lp, const BufferMap& inputs, const DynMap& dyn) {
  Backend& be = *lp.backend;
  const PlanIo& io = lp->io();
  std::vector<Buffer> owned;
  struct Release {
    Backend& be;
    std::vector<Buffer>& bufs;
    ~Release() {
      for (Buffer b : bufs)
        be.release(b);
    }
  } release{be, owned};
  auto alloc = [&](uint64_t bytes) {
    owned.push_back(be.allocate(bytes));
    return owned.back();
  };
  std::vector<int64_t> dims;
  for (const std::string& d : lp.spec.dim_names) {
    auto it = dyn.find(d);
    if (it == dyn.end()) throw Error("run_plan: no value for dynamic dimension '" + d + "'");
    dims.push_back(it->second);
  }
  Bindings b;
  std::vector<DType> in_dtype;
  for (const std::string& l : io.inputs) {
    auto it = inputs.find(l);
    if (it == inputs.end()) throw Error("input '" + l + "' has no data in the test's buffers");
    Buffer buf = alloc(it->second.bytes.size());
    be.upload(buf, 0, it->second.bytes.data(), it->second.bytes.size());
    b.inputs.push_back(buf);
    in_dtype.push_back(it->second.dtype);
  }
  std::vector<HostBuffer> outs;
  for (const LlirNode& n : lp.llir.nodes) {
    if (!is_op(n.op, OpKind::Output)) continue;
    int64_t numel = 1;
    for (int64_t d : eval_shape(n.attrs.shape, dyn))
      numel *= d;
    outs.push_back(HostBuffer{n.attrs.dtype, std::vector<uint8_t>(static_cast<size_t>(
                                                 storage_bytes(n.attrs.dtype, numel)))});
    b.outputs.push_back(alloc(outs.back().bytes.size()));
  }
  b.arena = alloc(lp->arena_bytes());
  lp->bind(0, b);
  lp->execute(0, dims.data());
  be.sync();
  PlanRun run;
  for (size_t i = 0; i < io.inputs.size(); ++i) {
    HostBuffer hb{in_dtype[i], std::vector<uint8_t>(b.inputs[i].bytes)};
    be.download(hb.bytes.data(), b.inputs[i], 0, hb.bytes.size());
    run.inputs[io.inputs[i]] = std::move(hb);
  }
  for (size_t k = 0; k < io.outputs.size(); ++k) {
    const int src = io.output_in_input[k];
    if (src >= 0) {
      run.output_in_input[io.outputs[k]] = io.inputs[src];
      run.outputs[io.outputs[k]] = run.inputs.at(io.inputs[src]);
      continue;
    }
    be.download(outs[k].bytes.data(), b.outputs[k], 0, outs[k].bytes.size());
    run.outputs[io.outputs[k]] = std::move(outs[k]);
  }
  return run;
}

/// Runs a loaded plan once over `inputs` and returns every Output's buffer (an output updated
/// inside an input's buffer is returned from that input).
inline BufferMap run_executable(LoadedPlan& lp, const Graph&, const BufferMap& inputs,
                                const DynMap& dyn = {}) {
  return run_plan(lp, inputs, dyn).outputs;
}

/// Loads llir_direct(g) on `backend` for `dyn` and runs it once.
inline BufferMap run_backend(Backend& backend, const Graph& g, BufferMap inputs,
                             const DynMap& dyn = {}) {
  LoadedPlan lp = load_plan(backend, llir_direct(g), {dyn});
  return run_executable(lp, g, inputs, dyn);
}

}  // namespace luminal::testing
