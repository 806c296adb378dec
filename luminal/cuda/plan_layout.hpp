#pragma once
// The layout of a CUDA plan (internal), in one place so that it can give way to the layout shared
// by every backend (luminal/program): the LLIR structure checks, node names, input and output
// slots, aliases, the arena placed once at the bucket's upper bounds, and each node's device
// address for one binding. `direct` is CUDA's own: a node whose whole value an Output exposes
// writes straight into the Output's buffer.
//
//   PlanLayout::check_structure(g);  layout.slots(g);  ...  layout.place(g, spec, io, 256);
//   layout.addresses(g, io, bindings, ptr);   // ptr[i]: node i's buffer
#include <cuda.h>

#include <cstdint>
#include <string>
#include <vector>

#include "luminal/program/backend.hpp"
#include "luminal/runtime/memory_plan.hpp"

namespace luminal::cuda {

inline bool is_input(const LlirNode& n) { return is_op(n.op, OpKind::Input); }
inline bool is_output(const LlirNode& n) { return is_op(n.op, OpKind::Output); }

struct PlanLayout {
  /// Throws luminal::Error for a node without an op, one reading a node that does not run before
  /// it, inputs and views that do not pair up, or an Output without exactly one input.
  static void check_structure(const LlirGraph& g);
  /// "%3 (cuda.Fused)".
  static std::string node_name(const LlirGraph& g, int i);
  /// Per node: the index of the Output whose buffer it writes directly (-1: none). A compute node
  /// read by an Output through a contiguous view of its whole value writes straight into that
  /// Output's buffer, saving the copy, unless an in-place op later writes into its buffer (which
  /// must not touch a user's output) or it already aliases another buffer.
  static std::vector<int> direct_outputs(const LlirGraph& g, const PlanIo& io);

  /// The input and output slot of each node.
  void slots(const LlirGraph& g);
  /// `direct`, each node's alias root and the arena: every buffer at its largest size in the
  /// bucket. Throws luminal::Error for a buffer with no upper bound there.
  void place(const LlirGraph& g, const PlanSpec& spec, const PlanIo& io, int64_t alignment);
  /// Each node's device address for `b` (`ptr` resized to the node count).
  void addresses(const LlirGraph& g, const PlanIo& io, const Bindings& b,
                 std::vector<CUdeviceptr>& ptr) const;

  std::vector<int> input_slot, output_slot;  // per node: its Input's / Output's index, or -1
  std::vector<int> root;                     // per node: the node whose buffer it uses
  std::vector<int> direct;                   // per node: direct_outputs
  MemoryPlan mem;
};

}  // namespace luminal::cuda
