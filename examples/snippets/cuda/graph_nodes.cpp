// luminal/cuda/graph_nodes.hpp: helpers over the nodes of a CUDA graph: list, order and compare
// them (what the graph executor and cuBLASLt islands use on captured nodes). Needs a GPU to run.
#include <iostream>
#include <string>
#include <vector>

#include "luminal/cuda/driver.hpp"
#include "luminal/cuda/graph_nodes.hpp"
#include "snippet.hpp"

using namespace luminal::cuda;

// a -> b, a -> c: three empty nodes.
std::vector<CUgraphNode> diamond_top(const CudaApi& cu, CUgraph g) {
  CUgraphNode a = nullptr, b = nullptr, c = nullptr;
  check(cu.cuGraphAddEmptyNode(&a, g, nullptr, 0), "cuGraphAddEmptyNode");
  check(cu.cuGraphAddEmptyNode(&b, g, &a, 1), "cuGraphAddEmptyNode");
  check(cu.cuGraphAddEmptyNode(&c, g, &a, 1), "cuGraphAddEmptyNode");
  return {a, b, c};
}

int main() {
  std::string why;
  if (!driver_available(&why)) {
    std::cerr << why << "\n";
    return 0;  // no driver or no GPU here
  }
  const CudaApi& cu = cuda_api();
  CUdevice dev = 0;
  CUcontext ctx = nullptr;
  check(cu.cuDeviceGet(&dev, 0), "cuDeviceGet");
  check(cu.cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
  check(cu.cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
  {
    ScratchGraph scratch(cu), other(cu);  // destroyed on every path out
    const std::vector<CUgraphNode> abc = diamond_top(cu, scratch.g);
    expect(graph_nodes(cu, scratch.g).size() == 3, "every node");
    std::vector<CUgraphNode> n = topo_order(cu, {abc[2], abc[1], abc[0]});
    expect(n.front() == abc[0], "a node after the ones it depends on");
    expect(entry_nodes(cu, abc) == std::vector<CUgraphNode>{abc[0]}, "a is the entry");
    expect(dependents(cu, abc[0]).size() == 2, "b and c depend on a");
    // Two builds of the same nodes pair up node by node; a parameter update may keep them.
    const std::vector<CUgraphNode> again = diamond_top(cu, other.g);
    expect(node_signature(cu, n) == node_signature(cu, topo_order(cu, again)), "the same shape");
    expect(!kernels_only(node_signature(cu, n)), "empty nodes are not kernels");
  }
  check(cu.cuDevicePrimaryCtxRelease(dev), "cuDevicePrimaryCtxRelease");
}
