#pragma once
// A plan's dims on the device (internal to luminal/cuda): a small device array the kernels read
// at their start (device(), a launch argument), so launch arguments never change between
// executes. update() copies changed values there on the bound stream from a pinned slot of a
// ring of kSlots, each slot reused only after the copy that last read it has run.
// Example: examples/snippets/cuda/dims_staging.cpp (copied only when the values change).
#include <cuda.h>

#include <array>
#include <cstdint>
#include <vector>

#include "luminal/cuda/driver.hpp"

namespace luminal::cuda {

class DimsStaging {
 public:
  /// `count` dims (the device array holds at least one value).
  DimsStaging(const CudaApi& cu, size_t count);
  ~DimsStaging();
  DimsStaging(const DimsStaging&) = delete;
  DimsStaging& operator=(const DimsStaging&) = delete;

  /// Copies `dims` to the device on `stream` when they differ from the values last copied (or on
  /// the first call); returns whether it copied. Moving to another stream first waits for the
  /// stream the array was last used on.
  bool update(const int64_t* dims, CUstream stream);
  /// The device array (a kernel argument).
  CUdeviceptr device() const { return dev_; }
  /// The values last copied (zeros before the first update).
  const std::vector<int64_t>& values() const { return dims_; }
  /// Bumped whenever the values change (what depends on them compares it).
  uint64_t version() const { return version_; }
  /// Where the array was last written and read (null before the first update).
  CUstream stream() const { return stream_; }

 private:
  static constexpr int kSlots = 8;
  const CudaApi& cu_;
  std::vector<int64_t> dims_;  // values last copied to the device
  bool valid_ = false;
  uint64_t version_ = 0;
  CUdeviceptr dev_ = 0;
  int64_t* staging_ = nullptr;  // pinned, kSlots slots of dims_.size() values
  std::array<CUevent, kSlots> done_{};
  int next_slot_ = 0;
  CUstream stream_ = nullptr;
};

}  // namespace luminal::cuda
