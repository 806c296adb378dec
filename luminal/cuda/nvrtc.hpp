#pragma once
// NVRTC, loaded at run time like the driver (internal to luminal/cuda). It needs no GPU, so CI
// compiles every generated kernel for sm_90 on machines without one.
// Example: examples/snippets/cuda/nvrtc.cpp (a kernel compiled to an sm_90 cubin).
#include <cstdint>
#include <string>
#include <vector>

namespace luminal::cuda {

/// True when libnvrtc can be loaded; otherwise `why` (if given) says what was tried.
bool nvrtc_available(std::string* why = nullptr);
/// "nvrtc-13.0". Throws luminal::Error when NVRTC is unavailable.
std::string nvrtc_version();

/// Compiles CUDA C++ `source` to a cubin for `arch` ("sm_90"), without fast math and without
/// FMA contraction (kernels round like the reference). Throws luminal::Error naming `what`, with
/// NVRTC's log and the numbered source lines around each error.
std::vector<uint8_t> compile_cubin(const std::string& source, const std::string& arch,
                                   const std::string& what);

}  // namespace luminal::cuda
