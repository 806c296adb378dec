#pragma once
// Graph: the HLIR nodes of one model plus its dynamic dimensions.
// Example: examples/snippets/ir/graph.cpp (a graph with a dynamic dim, run on the reference).
//
// A Graph is a handle: copies share the same nodes. Tensors keep their graph alive.
// Nodes are appended in creation order; every node's inputs come before it, so node order is
// a valid (and deterministic) execution order.
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "luminal/core/expr.hpp"
#include "luminal/core/shape.hpp"
#include "luminal/ir/op.hpp"

namespace luminal {

class Tensor;
struct GraphData;

class Graph {
 public:
  Graph();

  /// A named input. `shape` entries are numbers, dynamic-dimension names or Exprs.
  /// Throws luminal::Error if the label is empty or already used by another input.
  Tensor tensor(std::string_view label, const std::vector<Dim>& shape, DType dtype = DType::F32);
  /// A scalar constant (rank 0). Integer dtypes take `value` exactly when it is integral.
  Tensor constant(double value, DType dtype = DType::F32);
  /// A tensor of `shape` filled with `value` (a broadcast view of one constant: no memory).
  Tensor full(const std::vector<Dim>& shape, double value, DType dtype = DType::F32);
  Tensor zeros(const std::vector<Dim>& shape, DType dtype = DType::F32);
  Tensor ones(const std::vector<Dim>& shape, DType dtype = DType::F32);
  /// 0, 1, ..., n-1 as `dtype` (I32 by default).
  Tensor arange(Dim n, DType dtype = DType::I32);
  /// start, start+step, ... (n elements) as `dtype`.
  Tensor arange(Dim n, double start, double step, DType dtype);
  /// 1-D I32 tensor of length n with element i = expr(z = i).
  Tensor iota(Expr expr, Dim n);

  /// Sets the value of a dynamic dimension for the next executions.
  void set_dim(std::string_view name, int64_t value);
  /// Current values of the dynamic dimensions set with set_dim().
  const DynMap& dims() const;
  /// Declares the range a dynamic dimension can take (defaults: [0, 2^31-1]). Used to simplify
  /// expressions; values outside are rejected at execution.
  void declare_dim(std::string_view name, int64_t min, int64_t max);
  /// Ranges of every dynamic dimension used by the graph.
  Facts dim_facts() const;
  /// Range of one dynamic dimension (declared, or [0, 2^31-1]).
  Interval dim_range(std::string_view name) const;

  /// Declares state carried between runs (a KV cache): after every execute, the input takes the
  /// output's value, without a copy (the output stays readable until the next execute). Both
  /// must have the same dtype and shape. Lets the compiler update the input in place.
  void carry(const Tensor& output, const Tensor& input);
  /// (output, input) pairs declared with carry().
  const std::vector<std::pair<NodeId, NodeId>>& carried() const;

  /// Declares that `alt` computes exactly the values of `primary` (an exact reformulation, e.g.
  /// fewer kernels for more arithmetic): both must be whole nodes read contiguously, of the same
  /// dtype and shape, and neither an input, an output or a constant. The compiler lowers both
  /// into one e-class, so the search picks either form at every use (compiler/lower.hpp); the
  /// reference runtime computes `primary` (alt is never run by it, so its own tests must check
  /// it). Nothing else may read `alt`. With `at_most` = (e, n), only the buckets where
  /// expression e of the graph's dims is at most n get the alternative (an O(rows E^2) form
  /// for few rows). Example: nn::router_topk.
  void alternative(const Tensor& primary, const Tensor& alt,
                   std::optional<std::pair<Expr, int64_t>> at_most = std::nullopt);
  struct Alternative {
    NodeId primary = -1, alt = -1;
    std::optional<std::pair<Expr, int64_t>> at_most;
  };
  /// The declarations of alternative(), in order.
  const std::vector<Alternative>& alternatives() const;

  const std::vector<Node>& nodes() const;
  const Node& node(NodeId id) const;
  /// Output nodes in creation order.
  std::vector<NodeId> outputs() const;
  /// Input nodes in creation order.
  std::vector<NodeId> inputs() const;
  /// The input or output with this label; throws luminal::Error listing the labels if none.
  NodeId find(std::string_view label) const;

  /// One line per node: "%3 = Add(%1 [dims..strides..], %2 [...]) : f32[s, 4]".
  std::string to_text() const;
  /// Graphviz DOT.
  std::string to_dot() const;

  /// Appends a node after checking it (internal; used by the Tensor API).
  NodeId add_node(Node n);
  Node& mutable_node(NodeId id);
  bool operator==(const Graph& o) const { return data_ == o.data_; }

 private:
  friend class Tensor;
  explicit Graph(std::shared_ptr<GraphData> d) : data_(std::move(d)) {}
  std::shared_ptr<GraphData> data_;
};

}  // namespace luminal
