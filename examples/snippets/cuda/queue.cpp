// luminal/cuda/queue.hpp: one ordered queue of work on a Device: its stream, its upload staging
// and the error word its kernels report a bad Gather index in. Needs a GPU to run.

#include "luminal/cuda/queue.hpp"
#include "cuda/no_gpu.hpp"
#include "luminal/core/error.hpp"
#include "luminal/cuda/cublaslt/lt_islands.hpp"
#include "luminal/cuda/device.hpp"
#include "snippet.hpp"

using namespace luminal;
using namespace luminal::cuda;

int main() {
  if (no_gpu()) return 0;  // nothing to run here
  Device dev(CudaOptions{}, lt_available);
  CudaQueue q(dev);      // destroying it waits for its stream
  q.check_error_word();  // nothing reported: returns
  // A kernel that saw a bad index sets the word; here it is set by hand.
  check(dev.cu->cuMemsetD32Async(q.err, 1, 1, q.stream), "cuMemsetD32Async");
  expect(!error_of([&] { q.check_error_word(); }).empty(), "waits, then throws");
  q.check_error_word();  // ... and is cleared
  expect(&dev.queue(&q) == &q && &dev.queue(nullptr) == dev.default_queue.get(),
         "a null queue is the device's default queue");
}
