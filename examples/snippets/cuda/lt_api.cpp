// luminal/cuda/cublaslt/lt_api.hpp: cuBLASLt loaded at run time (no CUDA library is linked); a
// handle needs a GPU.
#include <iostream>
#include <string>

#include "luminal/cuda/cublaslt/lt_api.hpp"
#include "luminal/cuda/driver.hpp"
#include "snippet.hpp"

using namespace luminal::cuda;

int main() {
  std::string why;
  const LtApi* lt = lt_api(&why);  // null: why says what is missing
  if (!lt) {
    std::cerr << why << "\n";
    return 0;
  }
  if (!driver_available(&why)) {  // the library loads, but there is no GPU to run it on
    std::cerr << why << "\n";
    return 0;
  }
  cublasLtHandle_t handle = nullptr;
  check_lt(*lt, lt->cublasLtCreate(&handle), "cublasLtCreate");
  check_lt(*lt, lt->cublasLtDestroy(handle), "cublasLtDestroy");
}
