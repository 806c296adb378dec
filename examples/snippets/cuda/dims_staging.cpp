// luminal/cuda/dims_staging.hpp: a plan's dims in a small device array the kernels read at their
// start, copied only when the values change. Needs a GPU to run.
#include <cstdint>
#include <vector>

#include "cuda/no_gpu.hpp"
#include "luminal/cuda/cublaslt/lt_islands.hpp"
#include "luminal/cuda/device.hpp"
#include "luminal/cuda/dims_staging.hpp"
#include "luminal/cuda/queue.hpp"
#include "snippet.hpp"

using namespace luminal;
using namespace luminal::cuda;

int main() {
  if (no_gpu()) return 0;  // nothing to run here
  Device dev(CudaOptions{}, lt_available);
  const CudaApi& cu = *dev.cu;
  CUstream stream = dev.default_queue->stream;

  DimsStaging dims(cu, 2);  // slots s and c
  const int64_t step[2] = {1, 17};
  expect(dims.update(step, stream), "the first update copies");
  expect(!dims.update(step, stream), "the same values: no copy");
  const int64_t next[2] = {1, 18};
  expect(dims.update(next, stream), "copied: the values changed");
  // Kernels read dims.device(), a launch argument that never changes.
  std::vector<int64_t> on_device(2);
  check(cu.cuMemcpyDtoHAsync(on_device.data(), dims.device(), 2 * sizeof(int64_t), stream),
        "cuMemcpyDtoHAsync");
  check(cu.cuStreamSynchronize(stream), "cuStreamSynchronize");
  expect(on_device == dims.values() && on_device[1] == 18, "the device holds the last values");
}
