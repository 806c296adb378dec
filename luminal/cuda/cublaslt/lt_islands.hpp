#pragma once
// cuBLASLt in a device's plans (internal to luminal/cuda). Needs no cuBLASLt header: a build
// without cublasLt.h compiles cublaslt_absent.cpp instead of cublaslt/ (no cuBLASLt op is
// registered there, so no plan has cuBLASLt steps).
//
// A plan with cuBLASLt steps (cuda.LtMatmul nodes: no kernel) makes one LtIslands. Each step's
// LtSpec is resolved from the node's views at the current dims (lt_node_gemm, lib_gemm, lt_spec)
// and prepared once per distinct spec in the plan (equal specs share one: the plan's steps run in
// a chain, so no two calls use the workspace at once); the plan has one workspace. The stream
// executor enqueues the call (run). With the graph executor each call is an island of the
// bucket's graph, spliced in when the executor asks (GraphSplicer): captured (thread-local
// capture on the plan's side stream) straight into the graph after the nodes of the step before,
// the step after then depending on the island's last nodes; no empty nodes, so the chain keeps
// its programmatic edges out of the island. Moved pointers (a re-bind) or a new spec (a dim the
// matmul reads changed) make the island stale: the call is captured again on its own; when it
// comes out as the island's kernels again (functions and cluster attributes: the algorithm
// kept), their new parameters are set on the island's nodes, in the template and in the
// executable (Need::InPlace). Otherwise the island's nodes are replaced (Need::Update), or after
// a spec change that brought other kernels, Need::Reinstantiate: other kernels may have other
// thread block cluster attributes, which an exec update accepts without applying them.
//
// A plan (plan.cpp) makes its islands with make_lt_islands(), add()s each cuBLASLt step in step
// order, bind()s each parity's pointers, resolve()s the specs when the dims change, and run()s a
// step on the stream executor or hands the islands to the graph executor as its GraphSplicer.
// At dims that move a spec the graph executor may instead defer() the specs and run the steps on
// the stream (CudaOptions::NewDims): each step is resolved just before its call. Prepared specs
// are kept (the last kRecentPrepares distinct ones), so a length met again prepares nothing.
#include <cuda.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "luminal/cuda/device.hpp"
#include "luminal/cuda/graph_splice.hpp"
#include "luminal/program/backend.hpp"

namespace luminal::cuda {

/// Distinct prepared specs a plan's islands keep beyond its steps' current ones.
inline constexpr size_t kRecentPrepares = 32;

class LtIslands : public GraphSplicer {
 public:
  /// A step for LLIR node `node`, the plan's step `step`: its spec resolved at the bucket's upper
  /// bounds (until the first execute brings the real dims) and prepared. A spec no algorithm
  /// fits throws luminal::Error here, so the search rejects the candidate.
  virtual void add(const PlanSpec& spec, int node, size_t step) = 0;
  /// The steps' pointers for `parity` from each node's address (`ptr`, per LLIR node): an island
  /// whose pointers moved goes stale; a pointer less aligned than its step's spec prepares for
  /// it (once). The first bind allocates the workspace and the capture stream.
  virtual void bind(int parity, const std::vector<CUdeviceptr>& ptr) = 0;
  /// After a dims change: each step's spec resolved at `dims`; a step whose spec changed is
  /// prepared again (sharing an equal prepared spec of another step) and its islands go stale.
  virtual void resolve(const std::vector<int64_t>& dims) = 0;
  /// Whether `dims` differ from the dims the specs were last resolved at (or deferred to) in a
  /// dim that some step's spec reads and that varies in the bucket.
  virtual bool moves_spec(const std::vector<int64_t>& dims) const = 0;
  /// resolve(), step by step: the specs follow `dims` from now on, each step resolved (and
  /// prepared when its spec changed) just before its next run() or splice, or by settle().
  virtual void defer(const std::vector<int64_t>& dims) = 0;
  /// Resolves every step defer() left pending.
  virtual void settle() = 0;
  /// Counts a graph-executor execute run on the stream at new dims (LtStats::stream_runs).
  virtual void ran_on_stream() = 0;
  /// Step `step`'s call on `stream` (the stream executor, profiles, the graph executor at new
  /// dims).
  virtual void run(int parity, size_t step, CUstream stream) = 0;
  /// The workspace (CudaOptions::lt_workspace_bytes).
  virtual uint64_t workspace_bytes() const = 0;
  /// For timing: when a step's spec depends on a dim that varies in the bucket, `dims` with each
  /// such dim moved by one inside its range; else nothing.
  virtual std::optional<std::vector<int64_t>> alternate_dims(const int64_t* dims) const = 0;
  /// Each step's spec at the dims it last ran (LtSpec::to_string), in step order.
  virtual std::vector<std::string> specs() const = 0;
  /// Steps by family and epilogue, prepared specs (each step's current one), prepares, captures
  /// and recaptures, `reinstantiations` (executables rebuilt after a recapture), stream calls and
  /// the workspace; `stream_executor` notes that the plan runs on the stream.
  virtual std::string summary(bool stream_executor, uint64_t reinstantiations) const = 0;
};

/// The cuBLASLt steps of a plan over `g` (dims in `dim_names` order). Throws luminal::Error
/// "cuda: built without cuBLASLt" in a build without cublasLt.h.
std::unique_ptr<LtIslands> make_lt_islands(Device& dev, const LlirGraph& g,
                                           const std::vector<std::string>& dim_names);

/// Whether libcublasLt loads (and luminal was built with its header); `why` says why not.
bool lt_available(std::string* why);
/// The device's cuBLASLt handle (created on first use, its context current).
LtHandle& lt_handle(Device& dev);
/// Whether a cuBLASLt call can be captured into a CUDA graph on `dev`: probed once (a 1 x 1 x 1
/// f32 product captured, launched and checked); when it cannot, stderr says so once and plans
/// with cuBLASLt steps run on the stream (TestHooks::fail_lt_capture_probe forces a failure).
bool lt_capture_works(Device& dev);

}  // namespace luminal::cuda
