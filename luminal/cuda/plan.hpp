#pragma once
// One loaded LLIR program on CUDA for one bucket (internal; CudaBackend::load makes it). Three
// objects, each depending only on the ones after it:
//  - the plan (this class): its steps, the layout (program/plan_layout.hpp: the arena placed
//    once at the bucket's upper bounds, so each node's device address is fixed per parity), the
//    per-node pointers and launch arguments of each parity, the dims staging (dims_staging.hpp)
//    and the stream executor;
//  - the graph executor (graph_exec.hpp), with the graph executor only: one CUDA graph per
//    parity, which asks the plan for its kernel nodes (the plan is its GraphSteps) and the
//    cuBLASLt islands for theirs;
//  - the cuBLASLt islands (cublaslt/lt_islands.hpp), only when the plan has cuBLASLt steps: their
//    specs, prepares, workspace and capture stream, and each island's nodes.
//
// Every compute node has a KernelGen (its source and launches); the plan's kernels are compiled
// together (in parallel, through the device's module cache). Dims live in a small device array:
// execute() copies changed values there on the bound stream, and kernels read them at start, so
// launch arguments never change between executes. A node whose whole value an Output exposes
// writes straight into the Output's buffer (no copy) when nothing writes into its buffer in place
// afterwards.
//
// Executors (CudaOptions::executor):
//  - Graph (default): bind() builds the graph of its parity (or updates it after a re-bind);
//    execute() is the dims copy (with the cuBLASLt specs resolved again and stale islands
//    recaptured when the plan has them) plus one cuGraphLaunch. At dims that move a cuBLASLt
//    step's spec (CudaOptions::NewDims::Stream, the default) that execute runs its steps on the
//    stream instead, as the stream executor does, and the next execute at the same dims
//    recaptures. Every kernel loops grid-stride,
//    so a launch whose grid depends on a dim that varies inside the bucket gets a fixed grid: its
//    largest grid in the bucket, capped at kLoopBlocksPerSm blocks per SM (never sized at the
//    bound when that is larger: idle blocks cost). No dim change updates a node.
//  - Stream: the steps one by one on the bound stream (kernels with their grids sized to the
//    current dims, cuBLASLt calls enqueued).
// Launches go to the stream of the queue each parity was bound with (Bindings::queue; null: the
// device's default queue), with that queue's error word in the launch arguments.
#include <cuda.h>

#include <array>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "luminal/core/slot_expr.hpp"
#include "luminal/cuda/codegen.hpp"
#include "luminal/cuda/cublaslt/lt_islands.hpp"
#include "luminal/cuda/device.hpp"
#include "luminal/cuda/dims_staging.hpp"
#include "luminal/cuda/graph_exec.hpp"
#include "luminal/cuda/modules.hpp"
#include "luminal/cuda/queue.hpp"
#include "luminal/program/backend.hpp"
#include "luminal/program/plan_layout.hpp"

namespace luminal::cuda {

/// The profile as a table: node, op, ms, GB/s, GFLOP/s, share of the total
/// (CudaBackend::format_profile).
std::string format_kernel_stats(const std::vector<KernelStat>& stats);

class CudaPlan final : public Plan, private GraphSteps {
 public:
  CudaPlan(Device& dev, const LlirGraph& g, const PlanSpec& spec);
  ~CudaPlan() override;

  uint64_t arena_bytes() const override { return layout_.arena_bytes(); }
  /// The cuBLASLt workspace (CudaOptions::lt_workspace_bytes when the plan has cuBLASLt steps).
  uint64_t workspace_bytes() const override { return lt_ ? lt_->workspace_bytes() : 0; }
  void bind(int parity, const Bindings& b) override;
  void execute(int parity, const int64_t* dims) override;

  /// Median of `trials` executes timed with CUDA events on the bound stream after one warm-up
  /// run (CudaBackend::time); by wall clock when a cuBLASLt step's spec follows a varying dim.
  double time(int parity, const int64_t* dims, int trials, double timeout_s);
  /// Per-launch event times (median over `trials`), for CudaBackend::profile.
  std::vector<KernelStat> profile(int parity, const int64_t* dims, int trials);

  /// The queue `parity` was bound with (the device's default queue for a null
  /// Bindings::queue); throws before bind.
  CudaQueue& queue(int parity) const;
  /// Its stream.
  CUstream stream(int parity) const { return queue(parity).stream; }

  static constexpr int64_t kAlignment = 256;
  /// Steps an arena range stays unused after its last reader, with dataflow edges
  /// (LayoutOptions::reuse_gap; LUMINAL_CUDA_REUSE_GAP overrides it, 0: reuse at once). On an
  /// 8B-shaped q4_0 decode of 4 layers it shortens the longest chain of dependent kernels from
  /// 85 to 70, for 0.2 MB more arena (step_deps_test; not yet timed on a GPU).
  static constexpr int kReuseGap = 16;
  /// Blocks per SM of a grid-stride launch whose grid depends on a dim varying in the bucket
  /// (graph executor): 4 x 256 threads keeps 32 warps per SM in flight.
  static constexpr int kLoopBlocksPerSm = 4;

  /// Whether this plan runs as CUDA graphs.
  bool graph_executor() const { return graph_; }
  /// Per step, the steps it would wait for with dataflow edges at `parity`'s bound addresses
  /// (step_dependencies; what the graph uses with CudaOptions::GraphEdges::Dataflow).
  std::vector<std::vector<size_t>> dataflow(int parity) const;
  /// For timing: when a cuBLASLt step's spec depends on a dim that varies in the bucket, `dims`
  /// with each such dim moved by one inside its range (time() alternates the two, so the
  /// re-prepare and recapture a changing dim costs are inside the timing); else nothing.
  std::optional<std::vector<int64_t>> alternate_dims(const int64_t* dims) const;

  /// The KernelGen of every compute node and non-in-place Output of `g` (input dtypes filled),
  /// in execution order; `nodes` gets the node of each.
  static std::vector<KernelGen> generate(const LlirGraph& g, const PlanSpec& spec, int sm_count,
                                         std::vector<int>* nodes);

  /// What the plan's cuBLASLt steps are and did: steps by family and epilogue, prepared specs
  /// (each step's current one), captures and recaptures, re-instantiations, stream calls and the
  /// workspace ("" without cuBLASLt steps). LUMINAL_TRACE's profile of each bucket's winner ends
  /// with it.
  std::string lt_summary() const;
  /// Each cuBLASLt step's spec at the dims it last ran (LtSpec::to_string), in step order.
  std::vector<std::string> lt_specs() const;

 private:
  struct Step {
    int node = 0;
    CUfunction fn = nullptr;
    Launch launch;
    std::array<SlotExpr, 3> grid;
    std::array<unsigned, 3> grid_now{0, 0, 0};
    std::array<unsigned, 3> graph_grid{0, 0, 0};  // its grid in the CUDA graph
    SlotExpr bytes, flops;
    bool library = false;  // a cuBLASLt call (no kernel): a step of lt_
  };
  /// Copies the dims to the device when they changed; returns whether it did.
  bool update_dims(const int64_t* dims, CUstream stream);
  /// Evaluates every step's launch grid at the current dims (once per dim change, on first use).
  void update_grids();
  /// `pdl`: launched with programmatic stream serialization (its blocks may start while the
  /// kernel before runs; they wait for it in lmn_pdl).
  void launch(int parity, size_t s, bool pdl = false);
  /// A step on the stream: its kernel launch or its cuBLASLt call.
  void run_step(int parity, size_t s, bool pdl = false);
  /// Per step with times: the median and the step's cost hints at `dims`.
  std::vector<KernelStat> summarize(std::vector<std::vector<float>>& times,
                                    const int64_t* dims) const;

  // GraphSteps: what the graph executor asks.
  size_t step_count() const override { return steps_.size(); }
  bool library_step(size_t s) const override { return steps_[s].library; }
  bool in_graph(int parity, size_t s) const override;
  CUDA_KERNEL_NODE_PARAMS kernel_params(int parity, size_t s) const override;
  std::string dims_text() const override;
  const std::vector<std::vector<size_t>>* dependencies(int parity) const override;

  Device& dev_;
  LlirGraph g_;
  std::vector<std::string> dim_names_;
  std::vector<KernelHandle> kernels_;
  std::vector<Step> steps_;
  PlanLayout layout_;  // slots, aliases, the arena and each node's address for a binding
  std::unique_ptr<DimsStaging> dims_;
  uint64_t grids_at_ = ~uint64_t{0};  // the dims version grid_now was evaluated at (~0: never)

  struct Bound {
    bool bound = false;
    CudaQueue* queue = nullptr;                  // launches go to its stream
    std::vector<CUdeviceptr> ptr;                // per node
    std::vector<std::vector<CUdeviceptr>> args;  // per step: out, inputs..., dims, err
    std::vector<std::vector<void*>> argp;        // per step: pointers into args
    std::vector<bool> skip;                      // per step: aliased copy skipped
    std::vector<uint64_t> extent;                // per node: bytes from ptr its value may use
    std::vector<std::vector<size_t>> deps;       // per step, with dataflow edges
  };
  std::array<Bound, 2> bound_;
  bool graph_ = true;
  bool dataflow_ = false;  // the graph's edges follow the data (CudaOptions::GraphEdges)
  // A graph plan's executes on the stream at new dims launch with programmatic stream
  // serialization (unless LUMINAL_CUDA_STREAM_PDL=0).
  bool stream_pdl_ = false;

  std::unique_ptr<LtIslands> lt_;              // with cuBLASLt steps
  std::unique_ptr<GraphExecutor> graph_exec_;  // with the graph executor
};

}  // namespace luminal::cuda
