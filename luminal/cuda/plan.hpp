#pragma once
// One loaded LLIR program on CUDA for one bucket (internal; CudaBackend::load makes it).
//
// Every compute node has a KernelGen (its source and launches); the plan's kernels are compiled
// together (in parallel, through the backend's cache) and launched in order on the stream of the
// queue each parity was bound with (Bindings::queue; null: the backend's default queue), with
// that queue's error word in the launch arguments. The arena is placed once at load with every
// buffer at its bucket upper bound (the shared memory planner), so each node's device address is
// fixed per parity. Dims live in a small device array: execute() copies changed values there on the
// bound stream from a pinned slot (reused only after the copy that last read it has run), and
// kernels read them at start, so launch arguments never change between executes (what CUDA graph
// capture will need). A node whose whole value an Output exposes writes straight into the Output's
// buffer (no copy) when nothing writes into its buffer in place afterwards.
#include <cuda.h>

#include <array>
#include <memory>
#include <string>
#include <vector>

#include "luminal/core/slot_expr.hpp"
#include "luminal/cuda/backend_impl.hpp"
#include "luminal/cuda/codegen.hpp"
#include "luminal/program/backend.hpp"
#include "luminal/runtime/memory_plan.hpp"

namespace luminal::cuda {

class CudaPlan final : public Plan {
 public:
  CudaPlan(CudaBackend::Impl& be, const LlirGraph& g, const PlanSpec& spec);
  ~CudaPlan() override;

  uint64_t arena_bytes() const override { return static_cast<uint64_t>(mem_.arena_bytes); }
  void bind(int parity, const Bindings& b) override;
  void execute(int parity, const int64_t* dims) override;

  /// Per-launch event times (median over `trials`), for CudaBackend::profile.
  std::vector<KernelStat> profile(int parity, const int64_t* dims, int trials);

  /// The queue `parity` was bound with (the backend's default queue for a null
  /// Bindings::queue); throws before bind.
  CudaQueue& queue(int parity) const;
  /// Its stream.
  CUstream stream(int parity) const { return queue(parity).stream; }

  static constexpr int64_t kAlignment = 256;

  /// The KernelGen of every compute node and non-in-place Output of `g` (input dtypes filled),
  /// in execution order; `nodes` gets the node of each.
  static std::vector<KernelGen> generate(const LlirGraph& g, const PlanSpec& spec, int sm_count,
                                         std::vector<int>* nodes);

 private:
  struct Step {
    int node = 0;
    CUfunction fn = nullptr;
    Launch launch;
    std::array<SlotExpr, 3> grid;
    std::array<unsigned, 3> grid_now{0, 0, 0};
    SlotExpr bytes, flops;
  };
  void update_dims(const int64_t* dims, CUstream stream);
  void launch(int parity, size_t s);

  CudaBackend::Impl& be_;
  LlirGraph g_;
  std::vector<std::string> dim_names_;
  std::vector<KernelHandle> kernels_;
  std::vector<Step> steps_;
  std::vector<int> root_, input_slot_, output_slot_;
  std::vector<int> direct_;  // per node: the Output slot it writes directly, or -1
  MemoryPlan mem_;

  std::vector<int64_t> dims_;  // values last copied to the device
  bool dims_valid_ = false;
  CUdeviceptr dims_dev_ = 0;
  static constexpr int kStaging = 8;
  int64_t* staging_ = nullptr;  // pinned, kStaging slots of dims_.size() values
  std::array<CUevent, kStaging> staging_done_{};
  int next_slot_ = 0;
  CUstream dims_stream_ = nullptr;  // where the dims array was last written and read

  struct Bound {
    bool bound = false;
    CudaQueue* queue = nullptr;                  // launches go to its stream
    std::vector<CUdeviceptr> ptr;                // per node
    std::vector<std::vector<CUdeviceptr>> args;  // per step: out, inputs..., dims, err
    std::vector<std::vector<void*>> argp;        // per step: pointers into args
    std::vector<bool> skip;                      // per step: aliased copy skipped
  };
  std::array<Bound, 2> bound_;
};

}  // namespace luminal::cuda
