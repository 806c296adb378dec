#pragma once
// CudaBackend's state (internal to luminal/cuda): the device, its primary context, the stream,
// the error word, and the module cache shared by every plan of the backend.
#include <cuda.h>

#include <array>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "luminal/cuda/cuda_backend.hpp"
#include "luminal/cuda/driver.hpp"
#include "luminal/program/kernel_cache.hpp"

namespace luminal::cuda {

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

struct CudaBackend::Impl {
  CudaOptions opts;
  const CudaApi* cu = nullptr;
  CUdevice device = 0;
  CUcontext ctx = nullptr;
  CUstream stream = nullptr;
  CUdeviceptr err = 0;  // one unsigned int: nonzero after a kernel saw a bad index
  std::string gpu_name, arch, nvrtc;
  int sm_count = 0, driver_version = 0, cc_major = 0, cc_minor = 0;

  // Pinned staging for uploads: two buffers used in turn, each free again once its event fired.
  static constexpr uint64_t kStagingBytes = uint64_t{32} << 20;
  std::array<void*, 2> staging{nullptr, nullptr};
  std::array<CUevent, 2> staging_done{nullptr, nullptr};
  int staging_next = 0;

  std::unique_ptr<KernelCache> disk;  // cubins on disk
  mutable std::mutex mu;
  std::unordered_map<std::string, KernelHandle> kernels;                   // by source
  std::unordered_map<std::string, std::shared_ptr<const Module>> batches;  // by batch key
  KernelCacheStats stats;

  /// Makes the backend's context current on the calling thread (cheap when it already is).
  void bind_context() const;
  /// The kernels of `sources` (`whats` name them in errors): from memory, else from disk, else
  /// compiled with NVRTC, the missing ones batched several to a program (NVRTC's fixed cost
  /// per program dominates small kernels) and the batches compiled in parallel.
  std::vector<KernelHandle> kernels_of(const std::vector<std::string>& sources,
                                       const std::vector<std::string>& whats);
  /// Throws when the error word is set (and clears it). Call after a stream sync.
  void check_error_word();
};

}  // namespace luminal::cuda
