#pragma once
// CudaBackend's state (internal to luminal/cuda): the device, its primary context, the module
// cache shared by every plan of the backend, the default queue and the reader threads of large
// uploads. A CudaQueue (one per session) is a stream with its own pinned upload staging and its
// own error word.
#include <cuda.h>

#include <array>
#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "luminal/cuda/cuda_backend.hpp"
#include "luminal/cuda/driver.hpp"
#include "luminal/cuda/staged_upload.hpp"
#include "luminal/program/kernel_cache.hpp"

namespace luminal::cuda {

class LtHandle;  // cublaslt/lt_prepare.hpp
/// Whether libcublasLt loads (and luminal was built with its header); `why` says why not.
bool lt_available(std::string* why);

/// A loaded module: one NVRTC batch of kernels (unloaded when the last plan using it goes).
struct Module {
  CUmodule module = nullptr;
  ~Module();
};

/// One generated source's kernels inside a batch module: entry `e` is `e` + suffix there.
struct KernelHandle {
  std::shared_ptr<const Module> module;
  std::string suffix;
  CUfunction function(const std::string& entry) const;
};

/// One ordered queue of work: a non-blocking stream (not ordered with other queues' streams),
/// the pinned staging its large uploads go through, and the error word its kernels report a bad
/// Gather index in. Destroying it waits for the stream.
struct CudaQueue final : Queue {
  explicit CudaQueue(CudaBackend::Impl& be);
  ~CudaQueue() override;
  CudaQueue(const CudaQueue&) = delete;
  CudaQueue& operator=(const CudaQueue&) = delete;

  CudaBackend::Impl& be;
  CUstream stream = nullptr;
  CUdeviceptr err = 0;  // one unsigned int: nonzero after a kernel saw a bad index

  // Pinned staging for large uploads (staged_upload.hpp): a ring of kStagingSlots slots of
  // kStagingBytes in one pinned allocation, each refilled once its event fired (allocated on
  // the first large upload).
  static constexpr int kStagingSlots = 4;
  static constexpr uint64_t kStagingBytes = uint64_t{16} << 20;
  void* staging_host = nullptr;
  StagingRing staging;  // slots point into staging_host
  std::array<CUevent, kStagingSlots> staging_done{};

  /// Waits for the stream, then throws when the error word is set (and clears it).
  void check_error_word();
};

struct CudaBackend::Impl {
  CudaOptions opts;
  const CudaApi* cu = nullptr;
  CUdevice device = 0;
  CUcontext ctx = nullptr;
  std::string gpu_name, arch, nvrtc;
  int sm_count = 0, driver_version = 0, cc_major = 0, cc_minor = 0;

  /// The queue of calls given a null queue (the search, tools, tests).
  std::unique_ptr<CudaQueue> default_queue;
  /// The threads that fill the staging of large uploads (every queue's; made on the first one).
  ReaderPool& readers();
  std::once_flag readers_once;
  std::unique_ptr<ReaderPool> reader_pool;
  /// The CudaQueue behind `q` (null: the default queue); throws for a queue of another backend.
  CudaQueue& queue(Queue* q);

  std::unique_ptr<KernelCache> disk;  // cubins on disk
  mutable std::mutex mu;
  std::unordered_map<std::string, KernelHandle> kernels;                   // by source
  std::unordered_map<std::string, std::shared_ptr<const Module>> batches;  // by batch key
  KernelCacheStats stats;
  CudaOptions::Executor executor = CudaOptions::Executor::Graph;
  bool programmatic = false;  // programmatic edges between graph kernel nodes (PDL)
  bool lt_on = false;         // cuBLASLt matmuls join the search
  bool tf32 = false;          // ... and f32 ones may round their operands to TF32
  std::string lt_why;         // why not, when they do not
  std::mutex lt_mu;
  std::shared_ptr<LtHandle> lt;  // made by the first plan with cuBLASLt steps (lt_handle())
  struct {
    std::atomic<uint64_t> prepares{0}, captures{0}, recaptures{0}, calls{0}, in_place{0},
        algo_kept{0}, resolve_host_ns{0}, refresh_host_ns{0};
  } lt_stats;
  /// The backend's cuBLASLt handle (created on first use, its context current).
  LtHandle& lt_handle();
  /// Whether a cuBLASLt call can be captured into a CUDA graph here: probed once (a 1 x 1 x 1
  /// f32 product captured, launched and checked); when it cannot, stderr says so once and plans
  /// with cuBLASLt steps run on the stream.
  bool lt_capture_works();
  int lt_probe = -1;  // -1 not probed, 0 failed, 1 works (under lt_mu)
  struct {
    std::atomic<uint64_t> instantiations{0}, launches{0}, node_updates{0}, reinstantiations{0};
    std::atomic<uint64_t> dims_copies{0}, dims_host_ns{0}, launch_host_ns{0};
  } graphs;

  /// Makes the backend's context current on the calling thread (cheap when it already is).
  void bind_context() const;
  /// The kernels of `sources` (`whats` name them in errors): from memory, else from disk, else
  /// compiled with NVRTC, the missing ones batched several to a program (NVRTC's fixed cost
  /// per program dominates small kernels) and the batches compiled in parallel.
  std::vector<KernelHandle> kernels_of(const std::vector<std::string>& sources,
                                       const std::vector<std::string>& whats);
};

}  // namespace luminal::cuda
