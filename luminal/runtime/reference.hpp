#pragma once
// ReferenceRuntime: the correctness oracle. Interprets HLIR directly on the CPU, one element at a
// time, for every dtype. Simple and slow by design.
//
// Numerics: f16/bf16/tf32/fp8 ops compute in f32 and round once when stored; f64 in f64;
// reductions of floats accumulate in f64 and round once; integers compute exactly in 64 bits and
// wrap (two's complement) to their width on store; Bool is one byte 0/1 (Add is or, Mul is and).
// Integer x % 0 is 0. Float -> integer casts truncate toward zero (NaN -> 0) and wrap.
// MaxReduce propagates NaN; an empty max is -inf (floats) or the dtype's minimum.
// Gather with an index outside the data throws; Scatter skips such indices.
#include <map>
#include <vector>

#include "luminal/runtime/runtime.hpp"

namespace luminal {

class ReferenceRuntime : public Runtime {
 public:
  explicit ReferenceRuntime(Graph graph);

  void execute(const DynMap& dyn = {}) override;
  const Graph& graph() const override { return graph_; }

 protected:
  void set_input(NodeId id, HostBuffer data) override;
  HostBuffer output_value(NodeId id) const override;
  std::vector<int64_t> output_shape(NodeId id) const override;
  void move_output_to_input(NodeId output, NodeId input) override;

 private:
  /// The data set for an input, checked against its shape at these dims.
  const HostBuffer& checked_input(NodeId id, const std::vector<int64_t>& shape) const;

  Graph graph_;
  std::map<NodeId, HostBuffer> inputs_;
  std::vector<HostBuffer> values_;
  std::vector<std::vector<int64_t>> shapes_;
  bool executed_ = false;
};

}  // namespace luminal
