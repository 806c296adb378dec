#pragma once
// A prepared cuBLASLt matmul: the descriptors and the algorithm of one LtSpec, built once and
// enqueued any number of times with new pointers. Algorithms come from cuBLASLt's heuristic
// through a process-wide cache keyed by device and spec, so equal specs query it once. A backend
// holds one LtHandle (made with its context current); LtPrepared throws when no algorithm fits
// the spec; enqueue() takes the pointers (A, B, C, D: C = D does not accumulate), the workspace
// and the stream.
// Example: examples/snippets/cuda/lt_prepare.cpp (an f32 product prepared and enqueued).
#include <cuda.h>

#include <cstdint>

#include "luminal/cuda/cublaslt/lt_api.hpp"
#include "luminal/cuda/cublaslt/lt_spec.hpp"

namespace luminal::cuda {

static_assert(std::is_same_v<cudaStream_t, CUstream>, "cuBLASLt takes the driver's streams");

/// A cuBLASLt handle (cublasLtCreate / cublasLtDestroy) with the API it came from. Create it
/// with the backend's context current: cuBLASLt uses the context current on the calling thread.
class LtHandle {
 public:
  explicit LtHandle(const LtApi& api);
  ~LtHandle();
  LtHandle(const LtHandle&) = delete;
  LtHandle& operator=(const LtHandle&) = delete;
  const LtApi& api() const { return api_; }
  cublasLtHandle_t get() const { return h_; }

 private:
  const LtApi& api_;
  cublasLtHandle_t h_ = nullptr;
};

struct LtPointers {
  CUdeviceptr a = 0, b = 0, c = 0, d = 0;
  CUdeviceptr bias = 0;   // with a bias epilogue
  CUdeviceptr scale = 0;  // with LtSpec::scale_a: one f32
};

class LtPrepared {
 public:
  /// Descriptors for `spec` and its algorithm (from the heuristic cache, else one query with
  /// the spec's workspace limit and alignments). Throws luminal::Error naming the spec when
  /// cuBLASLt has no algorithm for it. With `keep` (the prepare of the same step at other dims,
  /// with the same alignments): its algorithm when cublasLtMatmulAlgoCheck accepts it for
  /// `spec` within the workspace limit (the same kernels then run: a captured island's nodes
  /// keep their functions and only their parameters change), else the heuristic's.
  LtPrepared(const LtHandle& h, const LtSpec& spec, int device, const LtPrepared* keep = nullptr);
  ~LtPrepared();
  LtPrepared(const LtPrepared&) = delete;
  LtPrepared& operator=(const LtPrepared&) = delete;

  /// cublasLtMatmul on `stream` with the prepared algorithm. `workspace` holds at least
  /// spec().workspace bytes (0 bytes: may be null). Pointers must be aligned as the spec says.
  /// With a bias epilogue the bias pointer, and with scale_a the scale pointer, are set on the
  /// descriptor first (steps sharing a prepare are enqueued one at a time).
  void enqueue(const LtPointers& p, CUdeviceptr workspace, CUstream stream) const;

  const LtSpec& spec() const { return spec_; }
  /// The workspace the chosen algorithm needs (at most spec().workspace).
  size_t algo_workspace() const { return algo_workspace_; }
  /// Whether the algorithm is the one `keep` had (not the heuristic's). (A test may force the
  /// heuristic's n-th answer: TestHooks::pick_lt_algorithm.)
  bool kept() const { return kept_; }

 private:
  void destroy();

  const LtHandle& h_;
  LtSpec spec_;
  cublasLtMatmulDesc_t desc_ = nullptr;
  cublasLtMatrixLayout_t a_ = nullptr, b_ = nullptr, c_ = nullptr, d_ = nullptr;
  cublasLtMatmulAlgo_t algo_{};
  size_t algo_workspace_ = 0;
  bool kept_ = false;
};

/// The process-wide heuristic cache's counters (tests, traces).
struct LtHeuristicStats {
  uint64_t queries = 0;  // cublasLtMatmulAlgoGetHeuristic calls
  uint64_t hits = 0;     // specs found in the cache
};
LtHeuristicStats lt_heuristic_stats();

/// Whether a test forces the heuristic's answer (TestHooks::pick_lt_algorithm): prepares then
/// reuse nothing, so each sees the hook.
bool lt_pick_forced();

}  // namespace luminal::cuda
