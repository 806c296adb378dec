#include "luminal/cuda/graph_nodes.hpp"

#include <algorithm>

namespace luminal::cuda {

std::vector<CUgraphNode> graph_nodes(const CudaApi& cu, CUgraph g) {
  size_t n = 0;
  check(cu.cuGraphGetNodes(g, nullptr, &n), "cuGraphGetNodes");
  std::vector<CUgraphNode> out(n);
  if (n) check(cu.cuGraphGetNodes(g, out.data(), &n), "cuGraphGetNodes");
  out.resize(n);
  return out;
}

std::vector<CUgraphNode> added_nodes(const CudaApi& cu, CUgraph g,
                                     const std::unordered_set<CUgraphNode>& before) {
  std::vector<CUgraphNode> out;
  for (CUgraphNode n : graph_nodes(cu, g))
    if (!before.count(n)) out.push_back(n);
  return out;
}

std::vector<CUgraphNode> dependents(const CudaApi& cu, CUgraphNode n) {
  size_t count = 0;
  // (with edge data: a query without it fails on a programmatic edge cuBLASLt may capture)
  check(cu.cuGraphNodeGetDependentNodes(n, nullptr, nullptr, &count),
        "cuGraphNodeGetDependentNodes");
  std::vector<CUgraphNode> next(count);
  std::vector<CUgraphEdgeData> edges(count);
  if (count)
    check(cu.cuGraphNodeGetDependentNodes(n, next.data(), edges.data(), &count),
          "cuGraphNodeGetDependentNodes");
  next.resize(count);
  return next;
}

std::vector<CUgraphNode> topo_order(const CudaApi& cu, const std::vector<CUgraphNode>& set) {
  std::vector<int> indegree(set.size(), 0);
  std::vector<std::vector<size_t>> next(set.size());
  for (size_t i = 0; i < set.size(); ++i)
    for (CUgraphNode d : dependents(cu, set[i])) {
      const auto it = std::find(set.begin(), set.end(), d);
      if (it == set.end()) continue;
      const size_t j = static_cast<size_t>(it - set.begin());
      next[i].push_back(j);
      ++indegree[j];
    }
  std::vector<CUgraphNode> out;
  std::vector<bool> done(set.size(), false);
  while (out.size() < set.size()) {
    size_t pick = set.size();
    for (size_t i = 0; i < set.size() && pick == set.size(); ++i)
      if (!done[i] && indegree[i] == 0) pick = i;
    if (pick == set.size()) break;  // a cycle cannot happen in a graph
    done[pick] = true;
    out.push_back(set[pick]);
    for (size_t j : next[pick])
      --indegree[j];
  }
  return out;
}

std::vector<CUgraphNode> entry_nodes(const CudaApi& cu, const std::vector<CUgraphNode>& set) {
  std::unordered_set<CUgraphNode> reached;
  for (CUgraphNode n : set)
    for (CUgraphNode d : dependents(cu, n))
      reached.insert(d);
  std::vector<CUgraphNode> out;
  for (CUgraphNode n : set)
    if (!reached.count(n)) out.push_back(n);
  return out;
}

std::vector<CUgraphNode> captured_nodes(const CudaApi& cu, CUgraph g,
                                        const std::vector<CUgraphNode>& pred,
                                        const std::unordered_set<CUgraphNode>& before) {
  if (pred.empty()) return added_nodes(cu, g, before);
  std::vector<CUgraphNode> out, todo;
  for (CUgraphNode n : pred)
    for (CUgraphNode d : dependents(cu, n))
      todo.push_back(d);
  while (!todo.empty()) {
    CUgraphNode n = todo.back();
    todo.pop_back();
    if (std::find(out.begin(), out.end(), n) != out.end()) continue;
    out.push_back(n);
    for (CUgraphNode d : dependents(cu, n))
      todo.push_back(d);
  }
  return out;
}

std::vector<NodeSig> node_signature(const CudaApi& cu, const std::vector<CUgraphNode>& nodes) {
  std::vector<NodeSig> out;
  for (CUgraphNode n : nodes) {
    NodeSig sig;
    CUgraphNodeType type{};
    check(cu.cuGraphNodeGetType(n, &type), "cuGraphNodeGetType");
    sig.type = static_cast<int>(type);
    if (type == CU_GRAPH_NODE_TYPE_KERNEL) {
      CUDA_KERNEL_NODE_PARAMS p{};
      check(cu.cuGraphKernelNodeGetParams(n, &p), "cuGraphKernelNodeGetParams");
      sig.fn = p.func;
      sig.kern = p.kern;
      CUkernelNodeAttrValue v{};
      check(cu.cuGraphKernelNodeGetAttribute(n, CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION, &v),
            "cuGraphKernelNodeGetAttribute");
      sig.cx = v.clusterDim.x;
      sig.cy = v.clusterDim.y;
      sig.cz = v.clusterDim.z;
      check(cu.cuGraphKernelNodeGetAttribute(
                n, CU_LAUNCH_ATTRIBUTE_CLUSTER_SCHEDULING_POLICY_PREFERENCE, &v),
            "cuGraphKernelNodeGetAttribute");
      sig.policy = static_cast<int>(v.clusterSchedulingPolicyPreference);
    }
    for (CUgraphNode d : dependents(cu, n)) {
      const auto it = std::find(nodes.begin(), nodes.end(), d);
      if (it != nodes.end()) sig.next.push_back(static_cast<size_t>(it - nodes.begin()));
    }
    std::sort(sig.next.begin(), sig.next.end());
    out.push_back(sig);
  }
  return out;
}

bool kernels_only(const std::vector<NodeSig>& sig) {
  for (const NodeSig& n : sig)
    if (n.type != CU_GRAPH_NODE_TYPE_KERNEL) return false;
  return true;
}

bool copy_kernel_params(const CudaApi& cu, const std::vector<CUgraphNode>& from,
                        const std::vector<CUgraphNode>& to, CUgraphExec exec) {
  bool ok = true;
  for (size_t i = 0; i < from.size(); ++i) {
    CUDA_KERNEL_NODE_PARAMS kp{};
    check(cu.cuGraphKernelNodeGetParams(from[i], &kp), "cuGraphKernelNodeGetParams");
    check(cu.cuGraphKernelNodeSetParams(to[i], &kp), "cuGraphKernelNodeSetParams");
    if (exec) ok = cu.cuGraphExecKernelNodeSetParams(exec, to[i], &kp) == CUDA_SUCCESS && ok;
  }
  return ok;
}

}  // namespace luminal::cuda
