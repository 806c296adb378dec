#pragma once
// The compiled kernels of a device (internal to luminal/cuda): each generated source's kernels,
// from memory, else from disk (<cache root>/kernels, keyed by the full source text, the
// architecture and the NVRTC version), else compiled with NVRTC, the missing ones batched several
// to a program and the batches compiled in parallel. A batch is one loaded module, unloaded when
// the last plan using it goes.
// Example: examples/snippets/cuda/modules.cpp (two sources compiled, then found in memory).
#include <cuda.h>

#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "luminal/cuda/driver.hpp"
#include "luminal/cuda/options.hpp"
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

class ModuleCache {
 public:
  /// Modules are loaded with `ctx` current; `compile_threads` as CudaOptions::compile_threads;
  /// `disk` null: nothing on disk.
  ModuleCache(const CudaApi& cu, CUcontext ctx, std::string arch, std::string nvrtc,
              int compile_threads, std::unique_ptr<KernelCache> disk);

  /// The kernels of `sources` (`whats` name them in errors): from memory, else from disk, else
  /// compiled with NVRTC, the missing ones batched several to a program (NVRTC's fixed cost
  /// per program dominates small kernels) and the batches compiled in parallel.
  std::vector<KernelHandle> kernels_of(const std::vector<std::string>& sources,
                                       const std::vector<std::string>& whats);
  KernelCacheStats stats() const;
  /// Forgets every kernel and module (the device's context is about to go).
  void clear();

 private:
  const CudaApi& cu_;
  const CUcontext ctx_;
  const std::string arch_, nvrtc_;
  const int compile_threads_;
  std::unique_ptr<KernelCache> disk_;  // cubins on disk
  mutable std::mutex mu_;
  std::unordered_map<std::string, KernelHandle> kernels_;                   // by source
  std::unordered_map<std::string, std::shared_ptr<const Module>> batches_;  // by batch key
  KernelCacheStats stats_;
};

}  // namespace luminal::cuda
