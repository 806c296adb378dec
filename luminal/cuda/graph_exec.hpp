#pragma once
// The graph executor of a CudaPlan (internal to luminal/cuda): one CUDA graph per parity.
// Example: examples/snippets/cuda/graph_exec.cpp (two kernel steps as one graph, built, launched,
// re-bound to another buffer and launched again).
//
// build() makes the graph from the plan's steps, instantiates it and uploads it. Its edges: a
// plain chain (each step after the one before: the order the stream executor runs them in, which
// also orders every arena reuse), or the plan's dataflow edges (GraphSteps::dependencies: each
// step after the steps whose bytes it reads or overwrites, so independent kernels overlap). A
// kernel step is one kernel node whose parameters the plan gives (GraphSteps); a library step
// splices its own nodes in (GraphSplicer, graph_splice.hpp: cuBLASLt islands), handed the graph and
// the last nodes of the step before. Edges into a kernel node of the plan are programmatic on sm_90
// and later (Device::programmatic), full into anything else. rebind() after a re-bind that moved
// buffers: the nodes whose arguments changed are updated in the executable and in its template (a
// refused update re-instantiates from the template; a change in which launches run rebuilds the
// graph). refresh() splices again the library steps that went stale (moved pointers, a new spec)
// and brings the executable up to date: nothing, an exec update, or a re-instantiation, as the
// steps need. profile() times a separately instantiated copy of the kernel nodes with an event
// record after each. Every event is counted in the device's GraphCounters.
#include <cuda.h>

#include <array>
#include <chrono>
#include <string>
#include <vector>

#include "luminal/cuda/device.hpp"
#include "luminal/cuda/graph_splice.hpp"

namespace luminal::cuda {

/// What the graph executor asks of a plan: its steps, in order.
class GraphSteps {
 public:
  virtual ~GraphSteps() = default;
  virtual size_t step_count() const = 0;
  /// Whether step `s` is a library call (its nodes spliced by the GraphSplicer), not a kernel.
  virtual bool library_step(size_t s) const = 0;
  /// Whether kernel step `s` launches for `parity` in the graph (a nonzero graph grid, not a
  /// skipped copy).
  virtual bool in_graph(int parity, size_t s) const = 0;
  /// Kernel step `s`'s node for `parity`: its function, graph grid and bound arguments (the
  /// driver copies the argument values when a node is added or updated).
  virtual CUDA_KERNEL_NODE_PARAMS kernel_params(int parity, size_t s) const = 0;
  /// The dims last copied, "s=7 c=128" (the recapture trace).
  virtual std::string dims_text() const = 0;
  /// Per step, the earlier steps it waits for in `parity`'s graph (step_dependencies over the
  /// bound addresses: dataflow edges), or null: a plain chain, each step after the one before.
  virtual const std::vector<std::vector<size_t>>* dependencies(int /*parity*/) const {
    return nullptr;
  }
};

class GraphExecutor {
 public:
  using Clock = std::chrono::steady_clock;
  /// `library`: the splicer of the plan's library steps (null: none); `plan` names the plan in
  /// the recapture trace.
  GraphExecutor(Device& dev, const GraphSteps& steps, GraphSplicer* library, const void* plan);
  /// Destroys both parities' graphs.
  ~GraphExecutor();
  GraphExecutor(const GraphExecutor&) = delete;
  GraphExecutor& operator=(const GraphExecutor&) = delete;

  /// Whether `parity` has an executable graph.
  bool built(int parity) const { return graphs_[parity].exec != nullptr; }
  /// The graph of `parity` built, instantiated and uploaded on `stream` (counted as an
  /// instantiation).
  void build(int parity, CUstream stream);
  /// After a re-bind to `stream`: when the launches that run changed (`same_launches` false),
  /// a new graph (counted as a re-instantiation); else the nodes of the steps `moved` marks take
  /// their new arguments, then refresh(), re-instantiating when the driver refused an update.
  void rebind(int parity, CUstream stream, bool same_launches, const std::vector<bool>& moved);
  /// Splices again, in chain order, the library steps that went stale, then updates the
  /// executable as they need (re-instantiating anyway when asked); returns whether it spliced
  /// any. LUMINAL_TRACE=cuda.recapture prints one line for each pass that splices.
  bool refresh(int parity, bool reinstantiate_anyway = false);
  /// One launch of `parity`'s executable on `stream`, counted with the host time since `t0` (the
  /// execute's start) when the execute copied dims.
  void launch(int parity, CUstream stream, bool dims_copied, Clock::time_point t0);
  /// Per step: the event times (ms) of `trials` launches on `stream` of a separately
  /// instantiated copy of the kernel nodes with an event record after each, in chain order.
  std::vector<std::vector<float>> profile(int parity, CUstream stream, int trials);
  /// Executables rebuilt after library steps were spliced again (the cuBLASLt summary).
  uint64_t splice_reinstantiations() const { return splice_reinstantiations_; }

 private:
  struct Graph {
    CUgraph graph = nullptr;  // the template
    CUgraphExec exec = nullptr;
    CUstream stream = nullptr;       // where the executable is uploaded
    std::vector<CUgraphNode> nodes;  // per step: its kernel node, null when not in the graph
    // The steps in the graph, in plan order; per step the nodes that depend on the steps it
    // waits for (heads) and the nodes the steps waiting for it depend on (tails): a kernel
    // step's node; a library step's entry and last nodes. deps: the steps each waits for (the
    // one before in a chain); succ: the steps waiting for each.
    std::vector<size_t> chain;
    std::vector<std::vector<CUgraphNode>> heads, tails;
    std::vector<std::vector<size_t>> deps, succ;
    std::vector<bool> replaced;  // per step: library nodes added since the instantiation
    bool stale = false;          // steps spliced but the executable not updated (a throw)
  };
  /// Edges from `from` to the heads of step `to`: programmatic where both ends are kernels and
  /// the head is one of the plan's (it waits for the whole grid before it reads), else full.
  void link(int parity, const std::vector<CUgraphNode>& from, size_t to);
  /// Library step `s` spliced after the tails of the steps it waits for, and the steps waiting
  /// for it linked to it when its nodes are new.
  GraphSplicer::Need splice(int parity, size_t s);
  /// A new executable from the template (counted as a re-instantiation).
  void reinstantiate(int parity);
  void destroy(int parity);

  Device& dev_;
  const GraphSteps& steps_;
  GraphSplicer* const library_;
  const void* const plan_;
  std::array<Graph, 2> graphs_;
  uint64_t splice_reinstantiations_ = 0;
};

}  // namespace luminal::cuda
