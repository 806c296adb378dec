#pragma once
// Which earlier steps each step of a plan must wait for (internal to luminal/cuda), for the graph
// executor's dataflow edges (CudaOptions::graph_edges): a kernel waits for the steps whose bytes
// it reads (read after write), whose reads it overwrites (write after read: an arena range taken
// over) and whose writes it overwrites (write after write), and nothing else, so independent
// kernels (the q, k and v projections of a layer) may run at once. Pure host code: the plan
// gives each step's byte ranges at the addresses it is bound with.
//
// A library step (a cuBLASLt call, which shares one workspace with the plan's other calls) is a
// barrier: it waits for every step since the barrier before it, and every later step waits for
// it (directly, or through another step). The launches of one node run in order. The result is
// transitively reduced: no step lists a step it already waits for through another.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "luminal/program/llir.hpp"

namespace luminal::cuda {

/// Bytes [begin, end) of device memory (addresses).
struct DeviceRange {
  uint64_t begin = 0, end = 0;
  bool overlaps(const DeviceRange& o) const { return begin < o.end && o.begin < end; }
};

/// What one step does, in plan order.
struct StepAccess {
  bool runs = true;      // false: not in the graph (a skipped copy); it has no edges
  bool library = false;  // a barrier (cuBLASLt call)
  int node = -1;         // the launches of one node run in order
  std::vector<DeviceRange> reads, writes;
};

/// What a step of node `node` of `g` touches: its value's bytes written and its inputs' read,
/// each [ptr[i], ptr[i] + extent[i]) (clamped to the address space) with the addresses and extents
/// PlanLayout gives a binding (addresses(), extents()).
StepAccess node_access(const LlirGraph& g, int node, const std::vector<unsigned long long>& ptr,
                       const std::vector<uint64_t>& extent);

/// Per step, the earlier running steps it waits for (ascending, transitively reduced); empty for
/// a step that waits for nothing or does not run.
std::vector<std::vector<size_t>> step_dependencies(const std::vector<StepAccess>& steps);

}  // namespace luminal::cuda
