// luminal/cuda/driver.hpp: the CUDA driver API loaded at run time; every call goes through
// check(), which names the call and the driver's error.
#include <iostream>
#include <string>

#include "luminal/cuda/driver.hpp"
#include "snippet.hpp"

using namespace luminal::cuda;

int main() {
  std::string why;
  if (!driver_available(&why)) {
    std::cerr << why << "\n";
    return 0;  // no driver here
  }
  const CudaApi& cu = cuda_api();  // throws luminal::Error when unavailable
  check(cu.cuInit(0), "cuInit");
  int count = 0;
  check(cu.cuDeviceGetCount(&count), "cuDeviceGetCount");
  std::cout << count << " device(s)\n";
}
