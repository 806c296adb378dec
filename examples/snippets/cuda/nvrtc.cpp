// luminal/cuda/nvrtc.hpp: NVRTC loaded at run time; compiling needs no GPU.
#include <cstdint>
#include <iostream>
#include <string>
#include <vector>

#include "luminal/core/error.hpp"
#include "luminal/cuda/nvrtc.hpp"
#include "luminal/cuda/prelude.hpp"
#include "snippet.hpp"

using namespace luminal::cuda;

int main() {
  const std::string source = device_prelude() +
                             "extern \"C\" __global__ void add(float* out, const float* a) {\n"
                             "  out[threadIdx.x] = a[threadIdx.x] + 1.0f;\n}\n";
  try {
    std::vector<uint8_t> cubin = compile_cubin(source, "sm_90", "node %4 (Add)");
    expect(!cubin.empty(), "a cubin");
  } catch (const luminal::Error& e) {
    std::cerr << e.what() << "\n";  // no NVRTC library here
  }
}
