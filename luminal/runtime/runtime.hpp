#pragma once
// The data API every runtime offers (reference, CPU, CUDA): set inputs by tensor or label,
// execute with dyn values (merged over the graph's set_dim values), get outputs as a host type.
// Example: examples/snippets/runtime/runtime.cpp (y = 2x on the ReferenceRuntime).
//
// Inputs keep their data across executions until set again. Errors (each names the tensor or
// dimension): unknown label, a tensor that is not an input/output, unset input, wrong element
// count, missing dynamic dimension, dtype conversions that lose information.
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "luminal/core/expr.hpp"
#include "luminal/ir/graph.hpp"
#include "luminal/ir/tensor.hpp"
#include "luminal/runtime/host_buffer.hpp"

namespace luminal {

class Runtime {
 public:
  virtual ~Runtime() = default;

  template <class T>
  void set(const Tensor& input, const std::vector<T>& data) {
    set(input, std::span<const T>(data.data(), data.size()));
  }
  template <class T>
  void set(const Tensor& input, std::span<const T> data) {
    NodeId id = resolve_input(input);
    set_input(id, to_host_buffer(data.data(), data.size(), graph().node(id).dtype,
                                 graph().node(id).label));
  }
  template <class T>
  void set(std::string_view label, const std::vector<T>& data) {
    NodeId id = resolve_input(label);
    set_input(id, to_host_buffer(data.data(), data.size(), graph().node(id).dtype, label));
  }
  void set(const Tensor& input, const std::vector<bool>& data);
  /// Raw bytes already in the input's dtype (size must be a whole number of elements).
  void set_bytes(const Tensor& input, const void* data, size_t bytes);
  void set_bytes(std::string_view label, const void* data, size_t bytes);

  /// Runs the graph. Values in `dyn` override the graph's set_dim values.
  virtual void execute(const DynMap& dyn = {}) = 0;

  template <class T>
  std::vector<T> get(const Tensor& output) const {
    NodeId id = resolve_output(output);
    return from_host_buffer<T>(output_value(id), graph().node(id).label, type_name<T>());
  }
  template <class T>
  std::vector<T> get(std::string_view label) const {
    NodeId id = resolve_output(label);
    return from_host_buffer<T>(output_value(id), label, type_name<T>());
  }
  /// The output's bytes in its own dtype.
  std::vector<uint8_t> get_bytes(const Tensor& output) const;
  /// The output's shape at the last execution.
  std::vector<int64_t> shape(const Tensor& output) const;

  /// Makes `output`'s last value the new data of `input` without copying (a KV cache step).
  /// The output may have no value afterwards until the next execute. Same dtype and shape
  /// required.
  void hand_off(const Tensor& output, const Tensor& input);
  void hand_off(std::string_view output, std::string_view input);

  virtual const Graph& graph() const = 0;

 protected:
  /// Moves an output's buffer into an input (checked by hand_off).
  virtual void move_output_to_input(NodeId output, NodeId input) = 0;
  /// Calls move_output_to_input for every Graph::carry pair (after each execute).
  void carry_state();
  void check_hand_off(NodeId output, NodeId input) const;
  virtual void set_input(NodeId id, HostBuffer data) = 0;
  /// Raw bytes already in the input's dtype (checked to be whole elements). The default wraps
  /// them in a HostBuffer for set_input.
  virtual void set_input_bytes(NodeId id, const void* data, uint64_t bytes);
  /// An output's last value (a device runtime synchronises and downloads here).
  virtual HostBuffer output_value(NodeId id) const = 0;
  virtual std::vector<int64_t> output_shape(NodeId id) const = 0;

  NodeId resolve_input(const Tensor& t) const;
  NodeId resolve_input(std::string_view label) const;
  NodeId resolve_output(const Tensor& t) const;
  NodeId resolve_output(std::string_view label) const;
  /// The value of each dim of `facts` (the graph's dim_facts(), in its order) into `out`: `dyn`'s,
  /// else the graph's set_dim value, else 0. Throws for 'z' in `dyn`, then for a value outside
  /// its declared range, then (when `required`) naming the first dim without a value.
  void dim_values(const DynMap& dyn, const Facts& facts, bool required, int64_t* out) const;
  /// The graph's dims overlaid with `dyn`, checked as dim_values does (every dim needs a value).
  DynMap merged_dims(const DynMap& dyn) const;
  /// Throws naming `dim` unless `v` lies in its declared range.
  static void check_range(const std::string& dim, int64_t v, const Interval& range);
};

}  // namespace luminal
