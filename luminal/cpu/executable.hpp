#pragma once
// One loaded LLIR program on the CPU (internal; CpuBackend::load makes it).
//
// Each node has a Kernel (Input and Output nodes are handled here). Intermediates live in one
// 64-byte-aligned arena placed by the shared memory planner; the plan is kept for the last dyn
// map (and reused when the buffer sizes do not change). In-place nodes write into their in-place
// input's buffer; an Output whose value ends up in an Input's buffer that way is reported in
// IoTable::output_in_input instead of being copied.
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <vector>

#include "luminal/cpu/cpu_op.hpp"
#include "luminal/cpu/primitive_util.hpp"
#include "luminal/program/backend.hpp"
#include "luminal/runtime/memory_plan.hpp"

namespace luminal::cpu {

class CpuExecutable final : public Executable {
 public:
  /// Makes a kernel per node. Throws luminal::Error naming a node no CPU op implements.
  CpuExecutable(const LlirGraph& g, int threads);

  void execute(const DynMap& dyn, IoTable& io) override;
  uint64_t memory_bytes(const DynMap& dyn) const override;

  static constexpr int64_t kAlignment = 64;

 private:
  struct FreeDeleter {
    void operator()(uint8_t* p) const { std::free(p); }
  };

  /// Shapes, memory plan and Output views at `dyn` (cached for the last dyn map).
  void prepare(const DynMap& dyn);
  void grow_arena(int64_t bytes);
  /// The node whose buffer holds node i's value (follows in-place aliases).
  int root(int i) const { return root_[i]; }

  LlirGraph g_;
  int threads_;
  std::vector<std::unique_ptr<Kernel>> kernels_;  // null for Input / Output
  std::vector<BufferUse> uses_;
  std::vector<int> root_;

  // per dyn map
  bool prepared_ = false;
  DynMap dyn_;
  std::vector<int64_t> numel_;      // per node
  std::vector<int64_t> sizes_;      // per node, bytes (what the plan was made for)
  std::vector<EvalView> out_view_;  // per Output node
  MemoryPlan plan_;

  std::unique_ptr<uint8_t, FreeDeleter> arena_;
  int64_t arena_cap_ = 0;
  std::vector<uint8_t*> ptr_;  // per node, during execute
};

}  // namespace luminal::cpu
