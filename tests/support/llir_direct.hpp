#pragma once
// Test helpers: run an HLIR Graph on a Backend without the compiler.
//
//   LlirGraph llir = testing::llir_direct(g);          // one LLIR node per HLIR node
//   auto outs = testing::run_backend(cpu, g, {{"x", buf}}, {{"s", 3}});
//   HostBuffer y = outs.at("y");
//
// llir_direct keeps every node an output depends on, in graph order, as
// LlirNode{hlir_op(n.op), attrs_of(n), input indices}.
#include <map>
#include <string>
#include <vector>

#include "luminal/program/llir.hpp"
#include "luminal/compiler/lower.hpp"
#include "luminal/egraph/op_def.hpp"
#include "luminal/ir/graph.hpp"
#include "luminal/program/backend.hpp"
#include "luminal/runtime/host_buffer.hpp"

namespace luminal::testing {

/// The LLIR program that runs `g` node for node (only nodes an output depends on).
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

/// Runs an executable once over `inputs` (by label) and returns every Output's buffer (an output
/// updated inside an input's buffer is returned from that input).
inline BufferMap run_executable(Executable& exe, const Graph& g, BufferMap inputs,
                                const DynMap& dyn = {}) {
  IoTable io;
  for (auto& [label, buf] : inputs)
    io.inputs[label] = &buf;
  BufferMap outs;
  for (NodeId o : g.outputs())
    outs[g.node(o).label] = HostBuffer{};
  for (auto& [label, buf] : outs)
    io.outputs[label] = &buf;
  exe.execute(dyn, io);
  for (const auto& [out, in] : io.output_in_input)
    outs[out] = inputs.at(in);
  return outs;
}

/// Loads llir_direct(g) on `backend` and runs it once.
inline BufferMap run_backend(Backend& backend, const Graph& g, BufferMap inputs,
                             const DynMap& dyn = {}) {
  auto exe = backend.load(llir_direct(g));
  return run_executable(*exe, g, std::move(inputs), dyn);
}

}  // namespace luminal::testing
