// luminal/cuda/cublaslt/lt_prepare.hpp: a cuBLASLt matmul prepared once (descriptors and
// algorithm) and enqueued any number of times with new pointers. Needs a GPU to run.
#include <iostream>
#include <optional>
#include <string>

#include "luminal/cuda/cublaslt/lt_api.hpp"
#include "luminal/cuda/cublaslt/lt_prepare.hpp"
#include "luminal/cuda/cublaslt/lt_spec.hpp"
#include "luminal/cuda/driver.hpp"
#include "luminal/kernels/lib_gemm.hpp"
#include "snippet.hpp"

using namespace luminal;
using namespace luminal::cuda;

int main() {
  std::string why;
  if (!driver_available(&why) || !lt_api(&why)) {
    std::cerr << why << "\n";
    return 0;
  }
  const CudaApi& cu = cuda_api();
  check(cu.cuInit(0), "cuInit");
  CUdevice dev = 0;
  CUcontext ctx = nullptr;
  check(cu.cuDeviceGet(&dev, 0), "cuDeviceGet");
  check(cu.cuDevicePrimaryCtxRetain(&ctx, dev), "cuDevicePrimaryCtxRetain");
  check(cu.cuCtxSetCurrent(ctx), "cuCtxSetCurrent");

  const LtSpec spec =
      lt_spec(lib_gemm_of({8, 32, 16}, {16, 0, 1}, {0, 16, 1}, 2, GemmFamily::ColSwapped).value(),
              lt_types(DType::F32, DType::F32, DType::F32, false).value(), 32 << 20);
  CUdeviceptr a = 0, b = 0, d = 0, workspace = 0;
  check(cu.cuMemAlloc(&a, 8 * 16 * 4), "cuMemAlloc");
  check(cu.cuMemAlloc(&b, 32 * 16 * 4), "cuMemAlloc");
  check(cu.cuMemAlloc(&d, 8 * 32 * 4), "cuMemAlloc");
  check(cu.cuMemAlloc(&workspace, 32 << 20), "cuMemAlloc");
  CUstream stream = nullptr;
  {
    LtHandle h(*lt_api());                       // one per backend (its context current)
    LtPrepared p(h, spec, /*device=*/0);         // throws when no algorithm fits the spec
    p.enqueue({a, b, d, d}, workspace, stream);  // C = D: the call does not accumulate
    check(cu.cuStreamSynchronize(stream), "cuStreamSynchronize");
  }
  for (CUdeviceptr ptr : {a, b, d, workspace})
    check(cu.cuMemFree(ptr), "cuMemFree");
  check(cu.cuDevicePrimaryCtxRelease(dev), "cuDevicePrimaryCtxRelease");
}
