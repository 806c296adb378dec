#pragma once
// cuBLASLt in a device's plans (internal to luminal/cuda; no cuBLASLt header needed).
#include <string>

#include "luminal/cuda/device.hpp"

namespace luminal::cuda {

/// Whether libcublasLt loads (and luminal was built with its header); `why` says why not.
bool lt_available(std::string* why);
/// The device's cuBLASLt handle (created on first use, its context current).
LtHandle& lt_handle(Device& dev);
/// Whether a cuBLASLt call can be captured into a CUDA graph on `dev`: probed once (a 1 x 1 x 1
/// f32 product captured, launched and checked); when it cannot, stderr says so once and plans
/// with cuBLASLt steps run on the stream.
bool lt_capture_works(Device& dev);

}  // namespace luminal::cuda
