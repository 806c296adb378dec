#pragma once
// One loaded LLIR program on the CPU for one bucket (internal; CpuBackend::load makes it).
//
// Each node has a Kernel (Input and Output nodes are handled here). Where each node's value lives
// is the backend-neutral PlanLayout (luminal/program/plan_layout.hpp): intermediates in the bound
// arena at offsets placed at load, with every buffer sized at the bucket's upper bounds, so
// nothing is re-planned while executing and every intermediate address is the same on every
// execute. In-place nodes write into their in-place input's buffer; an
// Output whose value ends up in an Input's buffer that way is not copied (PlanIo says which).
//
// Kernels see the dims as a DynMap whose values are refreshed in place when a slot changes, and
// a version number per node that changes only when a dim the node reads changes (its shape,
// views, iota and payload, found at load): a decode step moves c, so only the attention's kernels
// re-plan, not every matmul and norm (their caches compare the version, not the map).
#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "luminal/cpu/cpu_op.hpp"
#include "luminal/cpu/primitive_util.hpp"
#include "luminal/program/backend.hpp"
#include "luminal/program/plan_layout.hpp"

namespace luminal::cpu {

class CpuPlan final : public Plan {
 public:
  /// Makes a kernel per node and places the arena. Throws luminal::Error naming a node no CPU op
  /// implements, or a dim of the program that `spec` gives no slot or range.
  CpuPlan(const LlirGraph& g, const PlanSpec& spec, int threads);
  /// With LUMINAL_CPU_OPSTATS=1, prints to stderr the time of every execute per op (wall time of
  /// its kernels, counts per execute), as the process runs them (not each kernel alone).
  ~CpuPlan() override;

  uint64_t arena_bytes() const override { return layout_.arena_bytes(); }
  void bind(int parity, const Bindings& b) override;
  void execute(int parity, const int64_t* dims) override;

  /// Every node's buffer address for `parity` (as bound; tests check they never move).
  const std::vector<uint8_t*>& addresses(int parity) const { return bound_[parity].ptr; }
  /// Per node (LLIR order): the median seconds of its kernel (an Output: its copy; an Input or an
  /// Output written in place: ~0) over `trials` runs of the whole program after a warm-up run,
  /// each node timed on its own.
  std::vector<double> profile(int parity, const int64_t* dims, int trials);
  const LlirGraph& llir() const { return g_; }
  /// The dims as kernels see them (the values of the last execute or profile).
  const DynMap& dyn() const { return dyn_; }
  /// An Output node's index into PlanIo::outputs (-1 for other nodes).
  int output_slot(size_t node) const { return layout_.output_slot(node); }
  /// How many times the dims changed (each re-evaluates the shapes of the nodes reading a
  /// changed dim; the arena is never re-planned).
  uint64_t dim_updates() const { return version_; }
  /// How many nodes' shapes the dims changes re-evaluated so far (tests).
  uint64_t node_updates() const { return node_updates_; }

  /// For timing: `dims` with each dim that varies in the plan's bucket moved by one inside its
  /// range (CpuBackend::time alternates the two, as a decode loop moves c every step, so the
  /// shapes each change re-evaluates count); nothing when no dim varies.
  std::optional<std::vector<int64_t>> alternate_dims(const int64_t* dims) const;

  /// Buffers allocated by the CPU backend are aligned to this.
  static constexpr int64_t kAlignment = 256;

 private:
  struct Bound;
  void run_node(int i, const Bound& bd);
  /// Refreshes the DynMap and the Output views when a dim value changed.
  void update_dims(const int64_t* dims);

  LlirGraph g_;
  int threads_;
  std::vector<std::unique_ptr<Kernel>> kernels_;  // null for Input / Output
  PlanLayout layout_;  // slots, arena offsets, where each node's value lives

  // Dims: slot values seen last, the DynMap kernels read, and its version.
  std::vector<int64_t> dims_;
  std::vector<Interval> ranges_;             // per slot: the dim's range in the bucket (spec.facts)
  std::vector<DynMap::iterator> dim_entry_;  // per slot, its entry in dyn_ (or end())
  DynMap dyn_;
  uint64_t version_ = 0;
  // Per node: the dim slots it reads (bit s; all bits past 64 slots) and the version its
  // kernel sees (version_ when one of them last changed).
  std::vector<uint64_t> node_dims_;
  std::vector<uint64_t> node_version_;
  uint64_t node_updates_ = 0;
  std::vector<EvalView> out_view_;  // per Output node

  struct Bound {
    bool bound = false;
    std::vector<uint8_t*> ptr;  // per node
  };
  std::array<Bound, 2> bound_;
  std::vector<const uint8_t*> in_scratch_;
  // LUMINAL_CPU_OPSTATS: per node, the seconds spent in run_node over every execute.
  bool opstats_ = false;
  uint64_t executes_ = 0;
  std::vector<double> node_sec_;
};

}  // namespace luminal::cpu
