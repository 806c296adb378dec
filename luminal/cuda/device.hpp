#pragma once
// One GPU as the CUDA backend uses it (internal to luminal/cuda): the driver, the device and its
// primary context, the compiled kernels (modules.hpp), the default queue and the reader threads
// of large uploads, the switches (CudaOptions after the environment), the cuBLASLt handle, and
// the counters over every plan. What backends and plans share: CudaBackend (cuda_backend.hpp) is
// a thin adapter over a Device, and each plan holds a Device&. The constructor throws
// luminal::Error when the GPU cannot be used; bind_context() makes the device's context current
// before driver calls on a thread.
// Example: examples/snippets/cuda/device.cpp (a Device's memory calls).
#include <cuda.h>

#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "luminal/cuda/counters.hpp"
#include "luminal/cuda/driver.hpp"
#include "luminal/cuda/modules.hpp"
#include "luminal/cuda/options.hpp"
#include "luminal/cuda/staged_upload.hpp"
#include "luminal/program/backend.hpp"

namespace luminal::cuda {

class CudaQueue;  // queue.hpp
class LtHandle;   // cublaslt/lt_prepare.hpp

class Device {
 public:
  /// Whether a library loads; `why` says why not (cuBLASLt's: lt_available, cublaslt/).
  using LibraryCheck = bool (*)(std::string* why);
  /// Device `opts.device`, its primary context retained; the switches read (cuBLASLt's asks
  /// `cublaslt_loads` when it is on). Throws luminal::Error naming what is missing.
  Device(CudaOptions options, LibraryCheck cublaslt_loads);
  ~Device();
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  // The device.
  CudaOptions opts;
  const CudaApi* cu = nullptr;
  CUdevice cu_device = 0;
  CUcontext ctx = nullptr;
  std::string gpu_name, arch, nvrtc;
  int sm_count = 0, driver_version = 0, cc_major = 0, cc_minor = 0;

  // The switches (CudaOptions after the environment).
  CudaOptions::Executor executor = CudaOptions::Executor::Graph;
  CudaOptions::GraphEdges graph_edges = CudaOptions::GraphEdges::Dataflow;
  CudaOptions::NewDims new_dims = CudaOptions::NewDims::Stream;
  bool programmatic = false;  // programmatic edges between graph kernel nodes (PDL)
  bool lt_on = false;         // cuBLASLt matmuls join the search
  bool tf32 = false;          // ... and f32 ones may round their operands to TF32
  std::string lt_why;         // why not, when they do not

  /// Makes the device's context current on the calling thread (cheap when it already is).
  void bind_context() const;

  /// The compiled kernels of every plan on this device.
  std::unique_ptr<ModuleCache> modules;

  /// The queue of calls given a null queue (the search, tools, tests).
  std::unique_ptr<CudaQueue> default_queue;
  /// The CudaQueue behind `q` (null: the default queue); throws for a queue of another device.
  CudaQueue& queue(Queue* q);
  /// The threads that fill the staging of large uploads (every queue's; made on the first one).
  ReaderPool& readers();

  // Memory (device_memory.cpp): what CudaBackend's Backend calls do.
  Buffer allocate(uint64_t bytes);
  void release(Buffer b);
  void upload(Buffer dst, uint64_t offset, const void* src, uint64_t bytes, Queue* queue);
  void download(void* dst, Buffer src, uint64_t offset, uint64_t bytes, Queue* queue);
  void start_download(void* dst, Buffer src, uint64_t offset, uint64_t bytes, Queue* queue);
  void finish_download(Queue* queue);
  void copy(Buffer dst, Buffer src, uint64_t bytes, Queue* queue);
  void sync(Queue* queue);
  void check_external(const void* ptr, uint64_t bytes) const;
  /// Free and total device memory in bytes.
  std::pair<uint64_t, uint64_t> memory_info() const;

  /// cuBLASLt state shared by the device's plans (cublaslt/lt_device.cpp makes the handle and
  /// runs the capture probe).
  struct Lt {
    std::mutex mu;
    std::shared_ptr<LtHandle> handle;  // made by the first plan with cuBLASLt steps
    int probe = -1;                    // -1 not probed, 0 failed, 1 works (under mu)
  } lt;

  // Counters over every plan.
  GraphCounters graphs;
  LtTotals lt_totals;

 private:
  std::once_flag readers_once_;
  std::unique_ptr<ReaderPool> reader_pool_;
};

}  // namespace luminal::cuda
