// luminal/cuda/device.hpp: one GPU as the CUDA backend uses it: the context, the compiled
// kernels, the default queue, the switches and the counters, and its memory calls. CudaBackend
// is a thin adapter over one. Needs a GPU to run.
#include <cstdint>
#include <iostream>
#include <vector>

#include "cuda/no_gpu.hpp"
#include "luminal/cuda/cublaslt/lt_islands.hpp"
#include "luminal/cuda/device.hpp"
#include "snippet.hpp"

using namespace luminal;
using namespace luminal::cuda;

int main() {
  if (no_gpu()) return 0;                   // nothing to run here
  Device dev(CudaOptions{}, lt_available);  // throws luminal::Error when the GPU cannot be used
  dev.bind_context();                       // before driver calls on a thread
  std::cout << dev.gpu_name << " (" << dev.arch << ", " << dev.nvrtc << ")\n";

  const std::vector<float> host = {1, 2, 3, 4};
  const uint64_t bytes = host.size() * sizeof(float);
  Buffer b = dev.allocate(bytes);
  dev.upload(b, 0, host.data(), bytes, nullptr);  // null: the default queue
  std::vector<float> back(host.size());
  dev.download(back.data(), b, 0, bytes, nullptr);  // waits for the queue
  dev.release(b);
  expect(back == host, "the bytes come back");
  const auto [free_bytes, total_bytes] = dev.memory_info();
  expect(free_bytes <= total_bytes, "free and total device memory");
}
