#pragma once
// Where each node of a loaded program keeps its value: the backend-neutral part of a Plan. A
// backend's load() checks the program (check_llir: errors start with the backend's name), fills
// its input dtypes and lays it out (PlanLayout: the arena at the bucket's upper bounds); each
// bind resolves every node's address from the bound buffers (addresses(): a pointer on the CPU,
// a CUdeviceptr on CUDA).
// Example: examples/snippets/program/plan_layout.cpp (a CPU program's layout and addresses).
//
// Every node's value lives in one of four places: an Input's bound buffer; an Output's bound
// buffer (for an Output written in place: its input's buffer); the buffer of an earlier node
// (an in-place op writes into its in-place input's buffer); or the arena, at an offset the
// memory planner (memory_plan.hpp) chose with every buffer sized at the bucket's upper bounds,
// so nothing is re-planned while executing. With `direct_outputs`, a node whose whole value an
// Output exposes writes straight into that Output's buffer (see direct_outputs()).
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "luminal/program/backend.hpp"
#include "luminal/program/llir.hpp"
#include "luminal/program/memory_plan.hpp"

namespace luminal {

inline bool is_input(const LlirNode& n) { return is_op(n.op, OpKind::Input); }
inline bool is_output(const LlirNode& n) { return is_op(n.op, OpKind::Output); }

/// "%3 (cpu.Fused)": a node's index and op name, for messages.
std::string node_name(const LlirGraph& g, int i);

struct LlirChecks {
  /// Also require every Output to have its input's dtype (a backend whose Output is a plain copy).
  bool output_dtypes = false;
};

/// Throws luminal::Error, starting "<backend>: ", for a node without an op, a node reading one
/// that does not run before it, a node without one view per input, or an Output without exactly
/// one input (and, with checks.output_dtypes, an Output of another dtype than its input).
void check_llir(const LlirGraph& g, std::string_view backend, LlirChecks checks = {});

/// Throws luminal::Error, starting "<backend>: ", naming a dim the program uses (in a shape,
/// view dim or stride) that `spec` gives no slot.
void check_dim_slots(const LlirGraph& g, const PlanSpec& spec, std::string_view backend);

/// Per node: the index of the Output whose buffer it writes directly (-1: none). A compute node
/// read by an Output of its dtype through a contiguous view of its whole value writes straight
/// into that Output's buffer, saving the copy, unless an in-place op later writes into its buffer
/// (which must not touch a user's output) or it already aliases another buffer. An Output written
/// in place (PlanIo::output_in_input) takes no node; a node read by several Outputs writes the
/// first one's buffer.
std::vector<int> direct_outputs(const LlirGraph& g, const PlanIo& io);

struct LayoutOptions {
  std::string_view backend;  // starts error messages ("cpu")
  int64_t alignment = 256;   // of every arena offset
  /// Nodes write straight into the Output buffers direct_outputs() names.
  bool direct_outputs = false;
  /// An arena range is taken over only `reuse_gap` steps after its previous occupant's last
  /// reader (0: right after), so that with dataflow edges (CUDA) a reuse does not tie a kernel
  /// to an unrelated recent one; kept only while the arena grows by at most `reuse_gap_bytes`.
  int reuse_gap = 0;
  int64_t reuse_gap_bytes = int64_t{64} << 20;
};

class PlanLayout {
 public:
  PlanLayout() = default;
  /// `g` passed check_llir. Places the arena with every buffer at its largest size in the bucket
  /// `spec`; throws luminal::Error naming a node whose buffer has no upper bound there.
  PlanLayout(const LlirGraph& g, const PlanSpec& spec, const LayoutOptions& opts);

  const PlanIo& io() const { return io_; }
  uint64_t arena_bytes() const { return static_cast<uint64_t>(mem_.arena_bytes); }
  const MemoryPlan& memory() const { return mem_; }
  /// Per node: its index into PlanIo::inputs / PlanIo::outputs, or -1.
  int input_slot(size_t node) const { return input_slot_[node]; }
  int output_slot(size_t node) const { return output_slot_[node]; }
  /// The node whose buffer holds node i's value through in-place ops (i itself when none).
  int root(size_t node) const { return root_[node]; }
  /// The Output slot node i writes directly (with LayoutOptions::direct_outputs), or -1.
  int direct_output(size_t node) const { return direct_[node]; }
  /// Per node, how many bytes from its address its value may occupy with the buffers `b`: the
  /// whole bound buffer for an Input's or an Output's (UINT64_MAX when the binding gives no size),
  /// its size at the bucket's upper bounds in the arena, its root's for a node that shares one.
  /// With addresses(), the byte ranges a step reads and writes (the CUDA graph's dataflow edges).
  std::vector<uint64_t> extents(const Bindings& b) const;

  /// Throws luminal::Error, starting "<backend>: ", unless `b` has one buffer per input and output
  /// and an arena of at least arena_bytes().
  void check(const Bindings& b) const;
  /// Per node, the address of its value with the buffers `b` (checked first; `out` is unchanged
  /// when that throws). P is the backend's address type: a pointer (uint8_t*) or an integer
  /// (CUdeviceptr).
  template <class P>
  void addresses(const Bindings& b, std::vector<P>& out) const {
    check(b);
    out.assign(place_.size(), P{});
    for (size_t i = 0; i < place_.size(); ++i) {
      const Place& p = place_[i];
      switch (p.kind) {
        case Place::Input: out[i] = at<P>(b.inputs[p.index].ptr, 0); break;
        case Place::Output: out[i] = at<P>(b.outputs[p.index].ptr, 0); break;
        case Place::Node: out[i] = out[p.index]; break;
        case Place::Arena: out[i] = at<P>(b.arena.ptr, p.index); break;
      }
    }
  }

 private:
  /// Where node i's value is: an input or output binding, an earlier node's buffer, or the arena.
  struct Place {
    enum Kind : uint8_t { Input, Output, Node, Arena } kind = Arena;
    int64_t index = 0;  // the binding slot, the node, or the arena offset
  };
  template <class P>
  static P at(void* base, int64_t offset) {
    if constexpr (std::is_pointer_v<P>)
      return reinterpret_cast<P>(static_cast<uint8_t*>(base) + offset);
    else
      return static_cast<P>(reinterpret_cast<uintptr_t>(base)) + static_cast<P>(offset);
  }

  std::string backend_;
  PlanIo io_;
  std::vector<int> input_slot_, output_slot_, root_, direct_;
  std::vector<int64_t> bytes_;  // per arena node: its size at the bucket's upper bounds
  MemoryPlan mem_;
  std::vector<Place> place_;
};

}  // namespace luminal
