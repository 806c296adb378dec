#include "luminal/cuda/graph_exec.hpp"

#include <algorithm>
#include <atomic>
#include <cstdio>

#include "luminal/compiler/trace.hpp"
#include "luminal/core/error.hpp"
#include "luminal/cuda/testing.hpp"

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

}  // namespace

void TestHooks::refuse_graph_updates(int n) { g_refuse_updates.store(n); }

GraphExecutor::GraphExecutor(Device& dev, const GraphSteps& steps, GraphSplicer* library,
                             const void* plan)
    : dev_(dev), steps_(steps), library_(library), plan_(plan) {}

GraphExecutor::~GraphExecutor() {
  for (int p = 0; p < 2; ++p)
    destroy(p);
}

void GraphExecutor::build(int parity, CUstream stream) {
  const CudaApi& cu = *dev_.cu;
  destroy(parity);
  Graph& gr = graphs_[parity];
  gr.stream = stream;
  const size_t n = steps_.step_count();
  check(cu.cuGraphCreate(&gr.graph, 0), "cuGraphCreate");
  gr.nodes.assign(n, nullptr);
  gr.heads.assign(n, {});
  gr.tails.assign(n, {});
  gr.deps.assign(n, {});
  gr.succ.assign(n, {});
  gr.replaced.assign(n, false);
  gr.stale = false;
  gr.chain.clear();
  const std::vector<std::vector<size_t>>* flow = steps_.dependencies(parity);
  for (size_t s = 0; s < n; ++s) {
    const bool library = steps_.library_step(s);
    if (!library && !steps_.in_graph(parity, s)) continue;
    if (flow)
      gr.deps[s] = (*flow)[s];
    else if (!gr.chain.empty())
      gr.deps[s] = {gr.chain.back()};
    for (size_t d : gr.deps[s]) {
      LUMINAL_ASSERT(d < s && (gr.nodes[d] || steps_.library_step(d)),
                     "cuda graph: step " + std::to_string(s) + " waits for step " +
                         std::to_string(d) + ", which is not in the graph before it");
      gr.succ[d].push_back(s);
    }
    gr.chain.push_back(s);
    if (library) {  // a library call: spliced after the steps it waits for
      splice(parity, s);
      continue;
    }
    const CUDA_KERNEL_NODE_PARAMS p = steps_.kernel_params(parity, s);
    check(cu.cuGraphAddKernelNode(&gr.nodes[s], gr.graph, nullptr, 0, &p), "cuGraphAddKernelNode");
    gr.heads[s] = gr.tails[s] = {gr.nodes[s]};
    for (size_t d : gr.deps[s])
      link(parity, gr.tails[d], s);
  }
  check(cu.cuGraphInstantiateWithFlags(&gr.exec, gr.graph, 0), "cuGraphInstantiateWithFlags");
  // Upload now, so the first launch does not pay for it (the search times launches only).
  check(cu.cuGraphUpload(gr.exec, gr.stream), "cuGraphUpload");
  dev_.graphs.instantiated();
}

void GraphExecutor::link(int parity, const std::vector<CUgraphNode>& from, size_t to) {
  const CudaApi& cu = *dev_.cu;
  Graph& gr = graphs_[parity];
  // A programmatic edge lets a kernel's blocks launch before the kernel it depends on has
  // finished; they wait at griddepcontrol.wait (the prelude's lmn_pdl, which every kernel of the
  // plan runs before it reads another kernel's output) until it has, with its writes visible: the
  // same order as a full
  // edge, minus the launch gap. A cuBLASLt kernel may not wait, so edges into one are full.
  CUgraphEdgeData programmatic{};
  programmatic.from_port = CU_GRAPH_KERNEL_NODE_PORT_PROGRAMMATIC;
  programmatic.type = CU_GRAPH_DEPENDENCY_TYPE_PROGRAMMATIC;
  const bool ours = !steps_.library_step(to);
  for (CUgraphNode f : from) {
    CUgraphNodeType type{};
    check(cu.cuGraphNodeGetType(f, &type), "cuGraphNodeGetType");
    const bool pdl = dev_.programmatic && ours && type == CU_GRAPH_NODE_TYPE_KERNEL;
    for (CUgraphNode h : gr.heads[to])
      check(cu.cuGraphAddDependencies(gr.graph, &f, &h, pdl ? &programmatic : nullptr, 1),
            "cuGraphAddDependencies");
  }
}

GraphSplicer::Need GraphExecutor::splice(int parity, size_t s) {
  Graph& gr = graphs_[parity];
  std::vector<CUgraphNode> pred;
  for (size_t d : gr.deps[s])
    pred.insert(pred.end(), gr.tails[d].begin(), gr.tails[d].end());
  GraphSplicer::Splice sp{.graph = gr.graph,
                          .exec = gr.exec,
                          .pred = pred,
                          .in_exec = !gr.replaced[s],
                          .heads = gr.heads[s],
                          .tails = gr.tails[s]};
  const GraphSplicer::Need need = library_->splice(parity, s, sp);
  if (sp.replaced) {
    if (gr.exec) gr.replaced[s] = true;
    for (size_t t : gr.succ[s])
      link(parity, gr.tails[s], t);
  }
  return need;
}

void GraphExecutor::destroy(int parity) {
  const CudaApi& cu = *dev_.cu;
  Graph& gr = graphs_[parity];
  if (gr.exec) cu.cuGraphExecDestroy(gr.exec);
  if (gr.graph) cu.cuGraphDestroy(gr.graph);
  gr.exec = nullptr;
  gr.graph = nullptr;
  gr.nodes.clear();
  gr.chain.clear();
  gr.heads.clear();
  gr.tails.clear();
  gr.deps.clear();
  gr.succ.clear();
  gr.replaced.clear();
  if (library_) library_->forget(parity);
}

void GraphExecutor::rebind(int parity, CUstream stream, bool same_launches,
                           const std::vector<bool>& moved) {
  const CudaApi& cu = *dev_.cu;
  Graph& gr = graphs_[parity];
  gr.stream = stream;
  if (!same_launches) {
    // A different set of launches (an aliased copy now skipped, or now needed): a new graph.
    build(parity, stream);
    dev_.graphs.reinstantiated();
    return;
  }
  // An update applies to later launches; one already in flight keeps the old arguments.
  bool refused = false;
  for (size_t s = 0; s < steps_.step_count(); ++s) {
    if (!gr.nodes[s] || !moved[s]) continue;
    const CUDA_KERNEL_NODE_PARAMS p = steps_.kernel_params(parity, s);
    // The template first: a re-instantiation copies its parameters.
    check(cu.cuGraphKernelNodeSetParams(gr.nodes[s], &p), "cuGraphKernelNodeSetParams");
    if (!refused) {
      const CUresult r = refuse_update()
                             ? CUDA_ERROR_NOT_SUPPORTED
                             : cu.cuGraphExecKernelNodeSetParams(gr.exec, gr.nodes[s], &p);
      refused = r != CUDA_SUCCESS;
    }
    dev_.graphs.node_updated();
  }
  // Library steps whose pointers moved are spliced again; one re-instantiation covers a refused
  // node update and the library steps.
  refresh(parity, refused);
}

bool GraphExecutor::refresh(int parity, bool reinstantiate_anyway) {
  Graph& gr = graphs_[parity];
  if (!gr.exec) return false;
  static const bool traced = Trace::category("cuda.recapture");
  const auto t0 = Clock::now();
  int spliced = 0;
  uint64_t in_place = 0;
  // A pass that threw part-way left steps spliced but the executable not brought up to date:
  // the next pass re-instantiates.
  using Need = GraphSplicer::Need;
  Need need = gr.stale ? Need::Reinstantiate : Need::InPlace;
  // In plan order: the steps a step waits for are current before it is spliced after them.
  for (size_t s : gr.chain) {
    if (!steps_.library_step(s) || !library_->stale(parity, s)) continue;
    gr.stale = true;
    const Need n = splice(parity, s);
    need = std::max(need, n);
    in_place += n == Need::InPlace;
    ++spliced;
  }
  gr.stale = false;
  CUgraphExecUpdateResultInfo info{};
  const char* how = spliced ? "parameters set in place" : "nothing";
  if (reinstantiate_anyway || need == Need::Reinstantiate ||
      (need == Need::Update &&
       dev_.cu->cuGraphExecUpdate(gr.exec, gr.graph, &info) != CUDA_SUCCESS)) {
    reinstantiate(parity);
    if (spliced) ++splice_reinstantiations_;
    how = "re-instantiated";
  } else if (need == Need::Update) {
    how = "exec update";
  }
  if (traced && spliced) {
    const double us = std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
    std::fprintf(stderr,
                 "[cuda.recapture] plan %p parity %d (%s): %d islands captured again (%llu in "
                 "place), %s, %.1f us host\n",
                 plan_, parity, steps_.dims_text().c_str(), spliced,
                 static_cast<unsigned long long>(in_place), how, us);
  }
  return spliced > 0;
}

void GraphExecutor::reinstantiate(int parity) {
  const CudaApi& cu = *dev_.cu;
  Graph& gr = graphs_[parity];
  cu.cuGraphExecDestroy(gr.exec);
  gr.exec = nullptr;
  check(cu.cuGraphInstantiateWithFlags(&gr.exec, gr.graph, 0), "cuGraphInstantiateWithFlags");
  check(cu.cuGraphUpload(gr.exec, gr.stream), "cuGraphUpload");
  dev_.graphs.reinstantiated();
  gr.replaced.assign(steps_.step_count(), false);
}

void GraphExecutor::launch(int parity, CUstream stream, bool dims_copied, Clock::time_point t0) {
  auto ns = [](Clock::time_point a, Clock::time_point b) {
    return static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(b - a).count());
  };
  const auto t1 = Clock::now();
  check(dev_.cu->cuGraphLaunch(graphs_[parity].exec, stream), "cuGraphLaunch");
  const auto t2 = Clock::now();
  dev_.graphs.launched(ns(t1, t2), dims_copied, ns(t0, t1));
}

std::vector<std::vector<float>> GraphExecutor::profile(int parity, CUstream stream, int trials) {
  // A separate graph of the same launches with an event record after each, in chain order: the
  // graph that is timed and executed carries no events.
  const CudaApi& cu = *dev_.cu;
  const Graph& gr = graphs_[parity];
  std::vector<size_t> order;
  for (size_t s = 0; s < steps_.step_count(); ++s)
    if (gr.nodes[s]) order.push_back(s);
  std::vector<CUevent> ev(order.size() + 1, nullptr);
  CUgraph graph = nullptr;
  CUgraphExec exec = nullptr;
  std::vector<std::vector<float>> times(steps_.step_count());
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
      const CUDA_KERNEL_NODE_PARAMS p = steps_.kernel_params(parity, order[j]);
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
  return times;
}

}  // namespace luminal::cuda
