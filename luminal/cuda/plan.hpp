#pragma once
// One loaded LLIR program on CUDA for one bucket (internal; CudaBackend::load makes it).
//
// Every compute node has a KernelGen (its source and launches); the plan's kernels are compiled
// together (in parallel, through the backend's cache). The arena is placed once at load with every
// buffer at its bucket upper bound (the shared memory planner), so each node's device address is
// fixed per parity. Dims live in a small device array: execute() copies changed values there on the
// bound stream from a pinned slot (reused only after the copy that last read it has run), and
// kernels read them at start, so launch arguments never change between executes. A node whose
// whole value an Output exposes writes straight into the Output's buffer (no copy) when nothing
// writes into its buffer in place afterwards.
//
// Executors (CudaOptions::executor):
//  - Graph (default): bind() builds one CUDA graph per parity, the launches as kernel nodes in a
//    plain chain (each after the previous one: the order the stream executor runs them in, which
//    also orders every arena reuse), and instantiates it; execute() is the dims copy plus one
//    cuGraphLaunch. Every kernel loops grid-stride, so a launch whose grid depends on a dim that
//    varies inside the bucket gets a fixed grid: its largest grid in the bucket, capped at
//    kLoopBlocksPerSm blocks per SM (never sized at the bound when that is larger: idle blocks
//    cost). No dim change updates a node. A re-bind that moves a buffer (hand_off, a bucket
//    switch, an external binding) updates the arguments of exactly the nodes that read or write
//    it, in the executable graph and in its template; if the driver refuses an update, the
//    executable is re-instantiated from the template. Both are counted (GraphStats).
//  - Stream: the launches one by one on the bound stream, each grid sized to the current dims.
// Launches go to the stream of the queue each parity was bound with (Bindings::queue; null: the
// backend's default queue), with that queue's error word in the launch arguments.
#include <cuda.h>

#include <array>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "luminal/core/slot_expr.hpp"
#include "luminal/cuda/codegen.hpp"
#include "luminal/cuda/counters.hpp"
#include "luminal/cuda/device.hpp"
#include "luminal/cuda/modules.hpp"
#include "luminal/cuda/plan_layout.hpp"
#include "luminal/cuda/queue.hpp"
#include "luminal/program/backend.hpp"

namespace luminal::cuda {

/// The profile as a table: node, op, ms, GB/s, GFLOP/s, share of the total
/// (CudaBackend::format_profile).
std::string format_kernel_stats(const std::vector<KernelStat>& stats);

class CudaPlan final : public Plan {
 public:
  CudaPlan(Device& dev, const LlirGraph& g, const PlanSpec& spec);
  ~CudaPlan() override;

  uint64_t arena_bytes() const override { return static_cast<uint64_t>(layout_.mem.arena_bytes); }
  /// The cuBLASLt workspace (CudaOptions::lt_workspace_bytes when the plan has cuBLASLt steps).
  uint64_t workspace_bytes() const override { return lt_workspace_bytes_; }
  void bind(int parity, const Bindings& b) override;
  void execute(int parity, const int64_t* dims) override;

  /// Median of `trials` executes timed with CUDA events on the bound stream after one warm-up
  /// run (CudaBackend::time); by wall clock when a cuBLASLt step's spec follows a varying dim.
  double time(int parity, const int64_t* dims, int trials, double timeout_s);
  /// Per-launch event times (median over `trials`), for CudaBackend::profile.
  std::vector<KernelStat> profile(int parity, const int64_t* dims, int trials);

  /// The queue `parity` was bound with (the backend's default queue for a null
  /// Bindings::queue); throws before bind.
  CudaQueue& queue(int parity) const;
  /// Its stream.
  CUstream stream(int parity) const { return queue(parity).stream; }

  static constexpr int64_t kAlignment = 256;
  /// Blocks per SM of a grid-stride launch whose grid depends on a dim varying in the bucket
  /// (graph executor): 4 x 256 threads keeps 32 warps per SM in flight.
  static constexpr int kLoopBlocksPerSm = 4;

  /// Tests: the next `n` graph updates are refused as the driver would refuse them.
  static void refuse_updates_for_testing(int n);
  /// Whether this plan runs as CUDA graphs.
  bool graph_executor() const { return graph_; }
  /// For timing: when a cuBLASLt step's spec depends on a dim that varies in the bucket, `dims`
  /// with each such dim moved by one inside its range (CudaBackend::time alternates the two, so
  /// the re-prepare and recapture a changing dim costs are inside the timing); else nothing.
  std::optional<std::vector<int64_t>> alternate_dims(const int64_t* dims) const;

  /// The KernelGen of every compute node and non-in-place Output of `g` (input dtypes filled),
  /// in execution order; `nodes` gets the node of each.
  static std::vector<KernelGen> generate(const LlirGraph& g, const PlanSpec& spec, int sm_count,
                                         std::vector<int>* nodes);

  struct LtStep;     // a cuBLASLt step (plan_lt.cpp)
  struct IslandSig;  // what a captured call's kernels are (plan_lt.cpp)
  /// What the plan's cuBLASLt steps are and did: steps by family and epilogue, prepared specs
  /// (each step's current one), captures and recaptures, re-instantiations, stream calls and the
  /// workspace ("" without cuBLASLt steps). LUMINAL_TRACE's profile of each bucket's winner ends
  /// with it.
  std::string lt_summary() const;
  /// Each cuBLASLt step's spec at the dims it last ran (LtSpec::to_string), in step order.
  std::vector<std::string> lt_specs() const;
  /// Tests: the next backend's cuBLASLt capture probe fails as on a driver that cannot capture
  /// library calls (its plans with cuBLASLt steps then run on the stream).
  static void fail_lt_capture_probe_for_testing(bool fail);

 private:
  struct Step {
    int node = 0;
    CUfunction fn = nullptr;
    Launch launch;
    std::array<SlotExpr, 3> grid;
    std::array<unsigned, 3> grid_now{0, 0, 0};
    std::array<unsigned, 3> graph_grid{0, 0, 0};  // its grid in the CUDA graph
    SlotExpr bytes, flops;
    int lt = -1;  // a cuBLASLt call: its index in lt_ (no kernel)
  };
  /// Copies the dims to the device when they changed; returns whether it did.
  bool update_dims(const int64_t* dims, CUstream stream);
  /// Evaluates every step's launch grid at the current dims (once per dim change, on first use).
  void update_grids();
  void launch(int parity, size_t s);
  /// A step on the stream: its kernel launch or its cuBLASLt call.
  void run_step(int parity, size_t s);
  // cuBLASLt steps (plan_lt.cpp). load_lt: a step for LLIR node `node`, its spec resolved at the
  // bucket's upper bounds and prepared (a spec no algorithm fits throws: the search rejects the
  // candidate). bind_lt: its pointers for `parity` (an island whose pointers moved is marked for
  // capture). resolve_lt: after a dims change, re-resolve each spec and re-prepare (sharing an
  // equal prepared spec) the steps whose spec changed, marking their islands in both parities.
  // run_lt: the call on the bound stream. capture_island: the call of the step at chain
  // position `pos` captured again: into a scratch graph first, and when it comes out as the
  // island's kernels again, their new parameters set on the island's nodes (template and
  // executable: InPlace); else into the graph after the tails of the step before (its old nodes
  // destroyed first), with the step after linked to its tails (Update, or Reinstantiate after a
  // spec change: other kernels may have other cluster attributes). refresh_islands: recaptures
  // marked islands, then updates the executable (re-instantiating when a spec changed, when the
  // driver refuses, or when asked to); returns whether it recaptured any.
  void load_lt(const PlanSpec& spec, Step& step);
  void bind_lt(int parity);
  void resolve_lt();
  void run_lt(int parity, size_t s);
  bool refresh_islands(int parity, bool reinstantiate_anyway = false);
  enum class Recapture { InPlace, Update, Reinstantiate };  // what the executable then needs
  Recapture capture_island(int parity, size_t pos);
  /// Destroys the island of step `s` (its nodes, heads, tails and signature forgotten first).
  void drop_island(int parity, size_t s);
  /// The step's call captured (on the plan's side stream) into `g` after `deps`; the stream
  /// never stays capturing. Returns cuStreamEndCapture's result; throws what the call threw.
  CUresult capture_call(int parity, const LtStep& st, CUgraph g,
                        const std::vector<CUgraphNode>& deps);
  void destroy_lt();
  // The graph executor (plan_graph.cpp).
  CUDA_KERNEL_NODE_PARAMS node_params(int parity, size_t s) const;
  void build_graph(int parity);
  /// Edges from `from` to the heads of step `to`: programmatic where both ends are kernels and
  /// the head is one of the plan's (it waits for the whole grid before it reads), else full.
  void link(int parity, const std::vector<CUgraphNode>& from, size_t to);
  void destroy_graph(int parity);
  /// After a re-bind: updates the nodes whose arguments differ from `old_args`, or rebuilds the
  /// graph when the launches skipped changed.
  void update_graph(int parity, const std::vector<std::vector<CUdeviceptr>>& old_args,
                    const std::vector<bool>& old_skip);
  /// A new executable from the template (counted in GraphStats::reinstantiations).
  void reinstantiate(int parity);
  std::vector<KernelStat> profile_graph(int parity, const int64_t* dims, int trials);
  /// Per step with times: the median and the step's cost hints at `dims`.
  std::vector<KernelStat> summarize(std::vector<std::vector<float>>& times,
                                    const int64_t* dims) const;

  Device& dev_;
  LlirGraph g_;
  std::vector<std::string> dim_names_;
  std::vector<KernelHandle> kernels_;
  std::vector<Step> steps_;
  PlanLayout layout_;  // slots, aliases, the arena and each node's address for a binding

  std::vector<int64_t> dims_;  // values last copied to the device
  bool dims_valid_ = false;
  bool grids_valid_ = false;  // grid_now evaluated at dims_
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
    CUgraph graph = nullptr;                     // the template (graph executor)
    CUgraphExec exec = nullptr;
    std::vector<CUgraphNode> nodes;  // per step: its kernel node, null when not in the graph
    // The graph's chain: the steps in it, in order, and per step the nodes that depend on the
    // step before (heads) and the nodes the step after depends on (tails): a kernel step's node;
    // the nodes a cuBLASLt call was captured as (`island`: all of them).
    std::vector<size_t> chain;
    std::vector<std::vector<CUgraphNode>> heads, tails, island;
    std::vector<bool> replaced;  // per step: its island's nodes added since the instantiation
    // per step: the island's kernels as captured (what an in-place update must find again)
    std::vector<std::shared_ptr<const IslandSig>> sig;
    bool stale = false;  // islands recaptured but the executable not updated (a throw)
  };
  std::array<Bound, 2> bound_;
  bool graph_ = true;

  std::vector<std::shared_ptr<LtStep>> lt_;
  CUdeviceptr lt_workspace_ = 0;
  uint64_t lt_workspace_bytes_ = 0;
  CUstream lt_capture_ = nullptr;  // the side stream islands are captured on
  LtCounts lt_counts_{dev_.lt_totals};
  uint64_t lt_reinstantiations_ = 0;  // executables rebuilt after island recaptures
  std::vector<int64_t> lt_dims_;      // the dims the steps' specs were last resolved at
  std::vector<Interval> lt_vary_;     // per dim slot: its range when a step's spec reads it and it
                                      // varies in the bucket, else empty (lo > hi)
};

}  // namespace luminal::cuda
