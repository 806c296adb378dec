#pragma once
// What the graph executor (graph_exec.hpp) asks of steps that put their own nodes into a plan's
// CUDA graph: a library call, captured (cuBLASLt islands, cublaslt/lt_islands.hpp). The executor
// hands such a step the graph and the last nodes of the step before; the step returns its entry
// and last nodes and what the executable then needs. The executor never captures a call itself.
#include <cuda.h>

#include <cstddef>
#include <vector>

namespace luminal::cuda {

class GraphSplicer {
 public:
  /// What the executable needs after a step's nodes were spliced, least first.
  enum class Need { InPlace, Update, Reinstantiate };

  /// The graph as the executor hands it to one step.
  struct Splice {
    CUgraph graph = nullptr;
    CUgraphExec exec = nullptr;            // null while the graph is being built
    const std::vector<CUgraphNode>& pred;  // the last nodes of the steps it waits for (or none)
    bool in_exec = false;                  // the step's nodes are ones `exec` was made from
    std::vector<CUgraphNode>& heads;       // the step's entry nodes (after pred)
    std::vector<CUgraphNode>& tails;       // its last nodes (the steps after depend on them)
    bool replaced = false;                 // set by the step: new nodes (link the steps after)
  };

  virtual ~GraphSplicer() = default;
  /// Puts step `step`'s nodes for `parity` into `sp.graph` after `sp.pred`, or updates the ones
  /// it put there before (in the template and, given `sp.exec`, in the executable). Replacing
  /// them, it clears `sp.heads` and `sp.tails` before destroying its old nodes, then sets them.
  virtual Need splice(int parity, size_t step, Splice& sp) = 0;
  /// Whether step `step` must be spliced again for `parity` (its pointers or its call changed).
  virtual bool stale(int parity, size_t step) const = 0;
  /// The graph of `parity` is gone, with every node the steps put there.
  virtual void forget(int parity) = 0;
};

}  // namespace luminal::cuda
