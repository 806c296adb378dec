// The graph executor of CudaPlan (see plan.hpp): one CUDA graph per parity, its kernel nodes in a
// chain, built and instantiated at bind, updated in place when a re-bind moves a buffer.
#include <algorithm>
#include <atomic>

#include "luminal/core/error.hpp"
#include "luminal/cuda/plan.hpp"

namespace luminal::cuda {

namespace {

std::atomic<int> g_refuse_updates{0};

/// Consumes one refusal of the test hook, if any is left.
bool refuse_update() {
  int n = g_refuse_updates.load();
  while (n > 0)
    if (g_refuse_updates.compare_exchange_weak(n, n - 1)) return true;
  return false;
}

bool in_graph(const std::array<unsigned, 3>& grid, bool skip) {
  return !skip && grid[0] > 0 && grid[1] > 0 && grid[2] > 0;
}

}  // namespace

void CudaPlan::refuse_updates_for_testing(int n) { g_refuse_updates.store(n); }

CUDA_KERNEL_NODE_PARAMS CudaPlan::node_params(int parity, size_t s) const {
  const Bound& bd = bound_[parity];
  const Step& st = steps_[s];
  CUDA_KERNEL_NODE_PARAMS p{};
  p.func = st.fn;
  p.gridDimX = st.graph_grid[0];
  p.gridDimY = st.graph_grid[1];
  p.gridDimZ = st.graph_grid[2];
  p.blockDimX = static_cast<unsigned>(st.launch.block);
  p.blockDimY = 1;
  p.blockDimZ = 1;
  p.sharedMemBytes = 0;
  // The driver copies the argument values when the node is added or updated.
  p.kernelParams = const_cast<void**>(bd.argp[s].data());
  return p;
}

void CudaPlan::build_graph(int parity) {
  const CudaApi& cu = *dev_.cu;
  destroy_graph(parity);
  Bound& bd = bound_[parity];
  check(cu.cuGraphCreate(&bd.graph, 0), "cuGraphCreate");
  bd.nodes.assign(steps_.size(), nullptr);
  bd.heads.assign(steps_.size(), {});
  bd.tails.assign(steps_.size(), {});
  bd.island.assign(steps_.size(), {});
  bd.replaced.assign(steps_.size(), false);
  bd.sig.assign(steps_.size(), nullptr);
  bd.stale = false;
  bd.chain.clear();
  for (size_t s = 0; s < steps_.size(); ++s) {
    if (steps_[s].lt >= 0) {  // a cuBLASLt call: captured after the step before
      bd.chain.push_back(s);
      capture_island(parity, bd.chain.size() - 1);
      continue;
    }
    if (!in_graph(steps_[s].graph_grid, bd.skip[s])) continue;
    const CUDA_KERNEL_NODE_PARAMS p = node_params(parity, s);
    check(cu.cuGraphAddKernelNode(&bd.nodes[s], bd.graph, nullptr, 0, &p), "cuGraphAddKernelNode");
    bd.heads[s] = bd.tails[s] = {bd.nodes[s]};
    if (!bd.chain.empty()) link(parity, bd.tails[bd.chain.back()], s);
    bd.chain.push_back(s);
  }
  check(cu.cuGraphInstantiateWithFlags(&bd.exec, bd.graph, 0), "cuGraphInstantiateWithFlags");
  // Upload now, so the first launch does not pay for it (the search times launches only).
  check(cu.cuGraphUpload(bd.exec, bd.queue->stream), "cuGraphUpload");
  dev_.graphs.instantiated();
}

void CudaPlan::link(int parity, const std::vector<CUgraphNode>& from, size_t to) {
  const CudaApi& cu = *dev_.cu;
  Bound& bd = bound_[parity];
  // A programmatic edge lets a kernel's blocks launch before the kernel it depends on has
  // finished; they wait at griddepcontrol.wait (the prelude's lmn_pdl, the first statement of
  // every kernel of the plan) until it has, with its writes visible: the same order as a full
  // edge, minus the launch gap. A cuBLASLt kernel may not wait, so edges into one are full.
  CUgraphEdgeData programmatic{};
  programmatic.from_port = CU_GRAPH_KERNEL_NODE_PORT_PROGRAMMATIC;
  programmatic.type = CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC;
  const bool ours = steps_[to].lt < 0;
  for (CUgraphNode f : from) {
    CUgraphNodeType type{};
    check(cu.cuGraphNodeGetType(f, &type), "cuGraphNodeGetType");
    const bool pdl = dev_.programmatic && ours && type == CU_GRAPH_NODE_TYPE_KERNEL;
    for (CUgraphNode h : bd.heads[to])
      check(cu.cuGraphAddDependencies(bd.graph, &f, &h, pdl ? &programmatic : nullptr, 1),
            "cuGraphAddDependencies");
  }
}

void CudaPlan::destroy_graph(int parity) {
  const CudaApi& cu = *dev_.cu;
  Bound& bd = bound_[parity];
  if (bd.exec) cu.cuGraphExecDestroy(bd.exec);
  if (bd.graph) cu.cuGraphDestroy(bd.graph);
  bd.exec = nullptr;
  bd.graph = nullptr;
  bd.nodes.clear();
  bd.chain.clear();
  bd.heads.clear();
  bd.tails.clear();
  bd.island.clear();
  bd.replaced.clear();
  bd.sig.clear();
}

void CudaPlan::update_graph(int parity, const std::vector<std::vector<CUdeviceptr>>& old_args,
                            const std::vector<bool>& old_skip) {
  const CudaApi& cu = *dev_.cu;
  Bound& bd = bound_[parity];
  if (old_skip != bd.skip || old_args.size() != bd.args.size()) {
    // A different set of launches (an aliased copy now skipped, or now needed): a new graph.
    build_graph(parity);
    dev_.graphs.reinstantiated();
    return;
  }
  // An update applies to later launches; one already in flight keeps the old arguments.
  bool refused = false;
  for (size_t s = 0; s < steps_.size(); ++s) {
    if (!bd.nodes[s] || old_args[s] == bd.args[s]) continue;
    const CUDA_KERNEL_NODE_PARAMS p = node_params(parity, s);
    // The template first: a re-instantiation copies its parameters.
    check(cu.cuGraphKernelNodeSetParams(bd.nodes[s], &p), "cuGraphKernelNodeSetParams");
    if (!refused) {
      const CUresult r = refuse_update()
                             ? CUDA_ERROR_NOT_SUPPORTED
                             : cu.cuGraphExecKernelNodeSetParams(bd.exec, bd.nodes[s], &p);
      refused = r != CUDA_SUCCESS;
    }
    dev_.graphs.node_updated();
  }
  // cuBLASLt calls whose pointers moved are captured again; one re-instantiation covers a
  // refused node update and the islands.
  refresh_islands(parity, refused);
}

void CudaPlan::reinstantiate(int parity) {
  const CudaApi& cu = *dev_.cu;
  Bound& bd = bound_[parity];
  cu.cuGraphExecDestroy(bd.exec);
  bd.exec = nullptr;
  check(cu.cuGraphInstantiateWithFlags(&bd.exec, bd.graph, 0), "cuGraphInstantiateWithFlags");
  check(cu.cuGraphUpload(bd.exec, bd.queue->stream), "cuGraphUpload");
  dev_.graphs.reinstantiated();
  bd.replaced.assign(steps_.size(), false);
}

std::vector<KernelStat> CudaPlan::profile_graph(int parity, const int64_t* dims, int trials) {
  // A separate graph of the same launches with an event record after each, in chain order: the
  // graph that is timed and executed carries no events.
  const CudaApi& cu = *dev_.cu;
  Bound& bd = bound_[parity];
  const CUstream stream = bd.queue->stream;
  dev_.bind_context();
  execute(parity, dims);  // warm-up, and the dims copy
  std::vector<size_t> order;
  for (size_t s = 0; s < steps_.size(); ++s)
    if (bd.nodes[s]) order.push_back(s);
  std::vector<CUevent> ev(order.size() + 1, nullptr);
  CUgraph graph = nullptr;
  CUgraphExec exec = nullptr;
  std::vector<std::vector<float>> times(steps_.size());
  auto cleanup = [&] {
    if (exec) cu.cuGraphExecDestroy(exec);
    if (graph) cu.cuGraphDestroy(graph);
    for (CUevent e : ev)
      if (e) cu.cuEventDestroy(e);
  };
  try {
    for (CUevent& e : ev)
      check(cu.cuEventCreate(&e, CU_EVENT_DEFAULT), "cuEventCreate");
    check(cu.cuGraphCreate(&graph, 0), "cuGraphCreate");
    CUgraphNode prev = nullptr;
    check(cu.cuGraphAddEventRecordNode(&prev, graph, nullptr, 0, ev[0]),
          "cuGraphAddEventRecordNode");
    for (size_t j = 0; j < order.size(); ++j) {
      const CUDA_KERNEL_NODE_PARAMS p = node_params(parity, order[j]);
      CUgraphNode k = nullptr;
      check(cu.cuGraphAddKernelNode(&k, graph, &prev, 1, &p), "cuGraphAddKernelNode");
      check(cu.cuGraphAddEventRecordNode(&prev, graph, &k, 1, ev[j + 1]),
            "cuGraphAddEventRecordNode");
    }
    check(cu.cuGraphInstantiateWithFlags(&exec, graph, 0), "cuGraphInstantiateWithFlags");
    for (int t = 0; t < std::max(trials, 1); ++t) {
      check(cu.cuGraphLaunch(exec, stream), "cuGraphLaunch");
      check(cu.cuEventSynchronize(ev.back()), "cuEventSynchronize");
      for (size_t j = 0; j < order.size(); ++j) {
        float ms = 0;
        check(cu.cuEventElapsedTime(&ms, ev[j], ev[j + 1]), "cuEventElapsedTime");
        times[order[j]].push_back(ms);
      }
    }
  } catch (...) {
    cleanup();
    throw;
  }
  cleanup();
  bd.queue->check_error_word();
  return summarize(times, dims);
}

}  // namespace luminal::cuda
