#pragma once
// Helpers over the nodes of a CUDA graph (internal to luminal/cuda): what the graph executor and
// cuBLASLt islands need to find, order, compare and update captured nodes. Only the driver API.
// Example: examples/snippets/cuda/graph_nodes.cpp (a small graph's nodes listed, ordered and
// compared with another's).
#include <cuda.h>

#include <compare>
#include <unordered_set>
#include <vector>

#include "luminal/cuda/driver.hpp"

namespace luminal::cuda {

/// Every node of `g`.
std::vector<CUgraphNode> graph_nodes(const CudaApi& cu, CUgraph g);
/// The nodes of `g` that are not in `before`.
std::vector<CUgraphNode> added_nodes(const CudaApi& cu, CUgraph g,
                                     const std::unordered_set<CUgraphNode>& before);
/// The nodes that depend on `n`.
std::vector<CUgraphNode> dependents(const CudaApi& cu, CUgraphNode n);
/// `set` in an order where each node comes after the nodes of `set` it depends on (ties in
/// `set`'s order): two captures of the same calls pair up node by node.
std::vector<CUgraphNode> topo_order(const CudaApi& cu, const std::vector<CUgraphNode>& set);
/// The nodes of `set` with no dependency inside `set` (its entry nodes).
std::vector<CUgraphNode> entry_nodes(const CudaApi& cu, const std::vector<CUgraphNode>& set);
/// The nodes captured after `pred`: reached from pred's dependents (nothing depends on the
/// captured nodes yet, and pred's old dependents are gone); with no pred, every node of `g` that
/// is not in `before`.
std::vector<CUgraphNode> captured_nodes(const CudaApi& cu, CUgraph g,
                                        const std::vector<CUgraphNode>& pred,
                                        const std::unordered_set<CUgraphNode>& before);

/// What a parameter update must not change in a captured node: its type, its edges inside the
/// set, and for a kernel its function and thread-block-cluster launch attributes (an update
/// takes another cluster shape without applying it), node by node in the order given.
struct NodeSig {
  int type = 0;
  const void *fn = nullptr, *kern = nullptr;
  unsigned cx = 0, cy = 0, cz = 0;
  int policy = 0;
  std::vector<size_t> next;  // the positions (in the order given) of its dependents in the set
  auto operator<=>(const NodeSig&) const = default;
};
/// The NodeSig of each of `nodes`, in the order given.
std::vector<NodeSig> node_signature(const CudaApi& cu, const std::vector<CUgraphNode>& nodes);
/// Whether every node of a signature is a kernel node.
bool kernels_only(const std::vector<NodeSig>& sig);

/// Sets each kernel node of `to` to the parameters of the same node of `from` (paired in order),
/// in the template; and in `exec` too when given. Returns false when the executable refused one.
bool copy_kernel_params(const CudaApi& cu, const std::vector<CUgraphNode>& from,
                        const std::vector<CUgraphNode>& to, CUgraphExec exec);

/// A scratch graph, destroyed on every path out.
struct ScratchGraph {
  const CudaApi& cu;
  CUgraph g = nullptr;
  explicit ScratchGraph(const CudaApi& c) : cu(c) {
    check(cu.cuGraphCreate(&g, 0), "cuGraphCreate");
  }
  ~ScratchGraph() { cu.cuGraphDestroy(g); }
  ScratchGraph(const ScratchGraph&) = delete;
  ScratchGraph& operator=(const ScratchGraph&) = delete;
};

}  // namespace luminal::cuda
