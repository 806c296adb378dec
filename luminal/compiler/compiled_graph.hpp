#pragma once
// CompiledGraph: the result of Graph::compile, a Runtime that runs the best plan per bucket.
//
//   luminal::cpu::CpuBackend cpu;
//   luminal::CompiledGraph model = g.compile(cpu, luminal::CompileOptions().seed(1));
//   model.set(x, data);
//   model.execute({{"s", 3}});
//   auto y = model.get<float>(out);
//   std::cout << model.report();
#include <memory>
#include <string>
#include <vector>

#include "luminal/compiler/options.hpp"
#include "luminal/compiler/search.hpp"
#include "luminal/program/backend.hpp"
#include "luminal/runtime/runtime.hpp"

namespace luminal {

struct CompiledBucket;  // compiled_graph.cpp

class CompiledGraph : public Runtime {
 public:
  CompiledGraph(Graph g, Backend& backend, const CompileOptions& opts);
  CompiledGraph(CompiledGraph&&) noexcept;
  CompiledGraph& operator=(CompiledGraph&&) noexcept;
  ~CompiledGraph() override;

  /// Picks the bucket of the dyn values (throws listing the buckets when none matches), runs it,
  /// then carries outputs into inputs as the graph declares (Graph::carry).
  void execute(const DynMap& dyn = {}) override;
  const Graph& graph() const override;

  /// The search reports of every bucket, joined.
  std::string report() const;
  const std::vector<SearchReport>& reports() const;
  /// The chosen LLIR of the bucket that `dyn` selects.
  const LlirGraph& llir(const DynMap& dyn = {}) const;

 protected:
  void set_input(NodeId id, HostBuffer data) override;
  const HostBuffer& output_buffer(NodeId id) const override;
  std::vector<int64_t> output_shape(NodeId id) const override;
  void move_output_to_input(NodeId output, NodeId input) override;

 private:
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace luminal
