#pragma once
// The CUDA backend's options and counters (public; cuda_backend.hpp includes it): what a
// CudaBackend is made with and what it reports. Plain types, no CUDA headers.
#include <cstdint>
#include <filesystem>
#include <string>

namespace luminal::cuda {

struct CudaOptions {
  int device = 0;
  /// Where compiled kernels are kept on disk; empty: <cache root>/kernels (the compile cache's
  /// root: XDG_CACHE_HOME or ~/.cache), nothing on disk when LUMINAL_KERNEL_CACHE is "off"
  /// (LUMINAL_CACHE=off turns off only the program cache).
  std::filesystem::path kernel_dir;
  /// Threads compiling kernels in parallel; 0: the hardware threads, at most 8.
  int compile_threads = 0;
  /// How a plan runs: one CUDA graph per bucket and parity (the default), or its kernels
  /// launched one by one on the stream (for debugging: compute-sanitizer, a failing kernel).
  /// LUMINAL_CUDA_EXECUTOR=graph|stream overrides it.
  enum class Executor { Graph, Stream };
  Executor executor = Executor::Graph;
  /// Graph executor on sm_90 and later: each kernel node depends on the one before through a
  /// programmatic edge, so a kernel's blocks launch while the one before runs and wait for it at
  /// their start (griddepcontrol), which hides most of the launch gap between small kernels.
  /// false: full edges. LUMINAL_CUDA_PDL=0|1 overrides it.
  bool programmatic_launch = true;
  /// Graph executor: which kernel nodes wait for which. Dataflow (the default): each for the
  /// steps whose bytes it reads or overwrites (luminal/cuda/step_deps.hpp; a cuBLASLt call stays
  /// a barrier), so independent kernels (the q, k and v projections of a layer) run at once.
  /// Chain: each for the one before (the stream executor's order).
  /// LUMINAL_CUDA_GRAPH_EDGES=chain|dataflow overrides it.
  enum class GraphEdges { Chain, Dataflow };
  GraphEdges graph_edges = GraphEdges::Dataflow;
  /// Graph executor, a plan with cuBLASLt steps: what an execute does when the dims moved a dim
  /// a step's spec reads (a prefill at a new prompt length). Stream (the default): that execute
  /// runs its steps on the stream, as the stream executor does, each cuBLASLt step prepared for
  /// the new spec just before its call (so the device starts at once and the host prepares while
  /// it runs); the islands are captured again only when the next execute keeps those dims. A
  /// length seen once (a prompt) then costs no capture. Capture: re-prepare every step, capture
  /// the stale islands again and launch the graph. LUMINAL_CUDA_NEW_DIMS=stream|capture.
  enum class NewDims { Stream, Capture };
  NewDims new_dims = NewDims::Stream;
  /// cuBLASLt matmuls as alternatives in the search (cuda.LtMatmul, cuda.LtMatmulRow), when
  /// libcublasLt loads (else a note on stderr, once, and generated kernels only).
  /// LUMINAL_CUDA_CUBLASLT=0|1 overrides it.
  bool cublaslt = true;
  /// cuBLASLt f32 products may round their operands to TF32 (CUBLAS_COMPUTE_32F_FAST_TF32:
  /// tensor cores, a 10-bit mantissa in the products, f32 accumulation). Off by default: f32
  /// results then match the reference to f32 precision. Part of the device key (programs
  /// searched with it are cached apart). LUMINAL_CUDA_TF32=0|1 overrides it.
  bool allow_tf32 = false;
  /// Bytes of each cuBLASLt workspace (one per plan with cuBLASLt steps; algorithms needing more
  /// are not chosen).
  uint64_t lt_workspace_bytes = uint64_t{32} << 20;
  /// Threads that read the host memory of a large upload (a mapped weights file) into pinned
  /// staging together, the calling thread included; 0: the hardware threads, at most 8.
  int upload_threads = 0;
};

/// Counters of the graph executor, over every plan of a backend (tests, traces).
struct GraphStats {
  uint64_t instantiations = 0;    // graphs built and instantiated (one per plan and parity)
  uint64_t launches = 0;          // graph launches
  uint64_t node_updates = 0;      // kernel nodes whose arguments changed (a buffer moved)
  uint64_t reinstantiations = 0;  // an update was refused, or the graph's shape changed
  // Host time of the graph executor's execute, in two parts (for the dims-update benchmark):
  uint64_t dims_copies = 0;     // executes whose dims changed (one pinned-slot copy each)
  uint64_t dims_host_ns = 0;    // in those: event wait, staging and cuMemcpyHtoDAsync + record
  uint64_t launch_host_ns = 0;  // in every graph execute: cuGraphLaunch
};

/// Counters of the kernel cache (process-wide per backend; for tests and traces).
struct KernelCacheStats {
  uint64_t compiled = 0;     // NVRTC compilations
  uint64_t disk_hits = 0;    // cubins read from disk
  uint64_t memory_hits = 0;  // modules reused in this process
};

/// One kernel launch's measurement (CudaBackend::profile).
struct KernelStat {
  int node = 0;       // LLIR node
  std::string op;     // "cuda.Fused"
  std::string entry;  // "lmn_map"
  double ms = 0;      // median per launch
  double bytes = 0;   // bytes read + written (the op's cost hint)
  double flops = 0;
};

/// cuBLASLt counters over every plan of a backend (CudaBackend::lt_stats).
struct LtStats {
  uint64_t prepares = 0;     // LtPrepared built (descriptors; the heuristic cache may answer)
  uint64_t captures = 0;     // cuBLASLt calls captured into a graph (islands), first or again
  uint64_t recaptures = 0;   // of those, re-captures after a spec or pointer change
  uint64_t in_place = 0;     // of those, captured as the same kernels as before: their new
                             // parameters set on the island's nodes (no graph update)
  uint64_t calls = 0;        // calls enqueued on a stream (stream executor, profiles, and
                             // the graph executor's executes at new dims, below)
  uint64_t algo_kept = 0;    // prepares after a dims change that kept the step's algorithm
                             // (cublasLtMatmulAlgoCheck) instead of asking the heuristic
  uint64_t stream_runs = 0;  // graph-executor executes run on the stream at dims that changed a
                             // step's spec (CudaOptions::NewDims::Stream)
  // Host time of the graph executor's executes (not binds or loads) spent on cuBLASLt steps,
  // in two parts (GraphStats::dims_host_ns includes both):
  uint64_t resolve_host_ns = 0;  // specs resolved again after a dims change, with prepares
  uint64_t refresh_host_ns = 0;  // islands captured again and the executable updated
};

}  // namespace luminal::cuda
