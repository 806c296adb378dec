#include "luminal/cuda/queue.hpp"

#include "luminal/core/error.hpp"

namespace luminal::cuda {

CudaQueue::CudaQueue(Device& device) : dev(device) {
  dev.bind_context();
  const CudaApi& cu = *dev.cu;
  try {
    check(cu.cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
    check(cu.cuMemAlloc(&err, 4), "cuMemAlloc (error word)");
    check(cu.cuMemsetD32Async(err, 0, 1, stream), "cuMemsetD32Async (error word)");
    check(cu.cuStreamSynchronize(stream), "cuStreamSynchronize");
  } catch (...) {
    if (err) cu.cuMemFree(err);
    if (stream) cu.cuStreamDestroy(stream);
    throw;
  }
}

CudaQueue::~CudaQueue() {
  const CudaApi& cu = *dev.cu;
  dev.bind_context();
  cu.cuStreamSynchronize(stream);
  for (CUevent e : staging_done)
    if (e) cu.cuEventDestroy(e);
  if (staging_host) cu.cuMemFreeHost(staging_host);
  if (err) cu.cuMemFree(err);
  if (stream) cu.cuStreamDestroy(stream);
}

void CudaQueue::check_error_word() {
  const CudaApi& cu = *dev.cu;
  unsigned int word = 0;
  check(cu.cuMemcpyDtoHAsync(&word, err, sizeof word, stream), "cuMemcpyDtoHAsync (error word)");
  check(cu.cuStreamSynchronize(stream), "cuStreamSynchronize");
  if (word == 0) return;
  check(cu.cuMemsetD32Async(err, 0, 1, stream), "cuMemsetD32Async (error word)");
  check(cu.cuStreamSynchronize(stream), "cuStreamSynchronize");
  if (word == 2)
    throw Error(
        "cuda: an expert matmul (cuda.ExpertGemv / cuda.ExpertRows) read an expert id outside "
        "[0, E) (the CPU backend names the row and the id); check the ids fed to expert_linear");
  throw Error(
      "cuda: a Gather read an index outside its data (the CPU backend names the index "
      "and position); check the indexes fed to the graph");
}

}  // namespace luminal::cuda
