#include "luminal/cuda/queue.hpp"

#include <algorithm>
#include <cstring>

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
  for (CUevent e : {waited_, signalled_, err_copied_, read_done_})
    if (e) cu.cuEventDestroy(e);
  if (err_host_) cu.cuMemFreeHost(err_host_);
  if (read_host_) cu.cuMemFreeHost(read_host_);
  if (staging_host) cu.cuMemFreeHost(staging_host);
  if (err) cu.cuMemFree(err);
  if (stream) cu.cuStreamDestroy(stream);
}

namespace {

[[noreturn]] void throw_error_word(unsigned word) {
  if (word == 2)
    throw Error(
        "cuda: an expert matmul (cuda.ExpertGemv / cuda.ExpertRows) read an expert id outside "
        "[0, E) (the CPU backend names the row and the id); check the ids fed to expert_linear");
  throw Error(
      "cuda: a Gather read an index outside its data (the CPU backend names the index "
      "and position); check the indexes fed to the graph");
}

}  // namespace

void CudaQueue::check_error_word() {
  const CudaApi& cu = *dev.cu;
  unsigned int word = 0;
  check(cu.cuMemcpyDtoHAsync(&word, err, sizeof word, stream), "cuMemcpyDtoHAsync (error word)");
  check(cu.cuStreamSynchronize(stream), "cuStreamSynchronize");
  err_pending_ = false;  // the word is read now
  if (word == 0) return;
  check(cu.cuMemsetD32Async(err, 0, 1, stream), "cuMemsetD32Async (error word)");
  check(cu.cuStreamSynchronize(stream), "cuStreamSynchronize");
  throw_error_word(word);
}

void CudaQueue::check_copied_error_word() {
  if (!err_pending_) return;
  const CudaApi& cu = *dev.cu;
  const CUresult r = cu.cuEventQuery(err_copied_);
  if (r == CUDA_ERROR_NOT_READY) return;  // read at a later call
  check(r, "cuEventQuery");
  err_pending_ = false;
  const unsigned word = *err_host_;
  if (word == 0) return;
  *err_host_ = 0;
  raise_copied_error_word(word);
}

void CudaQueue::raise_copied_error_word(unsigned word) {
  // Cleared on the stream, behind the work already launched (no host wait).
  check(dev.cu->cuMemsetD32Async(err, 0, 1, stream), "cuMemsetD32Async (error word)");
  throw_error_word(word);
}

void CudaQueue::wait(CUstream other) {
  const CudaApi& cu = *dev.cu;
  dev.bind_context();
  if (!waited_) check(cu.cuEventCreate(&waited_, CU_EVENT_DISABLE_TIMING), "cuEventCreate");
  check(cu.cuEventRecord(waited_, other), "cuEventRecord");
  check(cu.cuStreamWaitEvent(stream, waited_, 0), "cuStreamWaitEvent");
  check_copied_error_word();
}

void CudaQueue::signal(CUstream other) {
  const CudaApi& cu = *dev.cu;
  dev.bind_context();
  check_copied_error_word();
  // `other` ordered first: an error thrown below leaves no work of `other` racing this queue's.
  if (!signalled_) check(cu.cuEventCreate(&signalled_, CU_EVENT_DISABLE_TIMING), "cuEventCreate");
  check(cu.cuEventRecord(signalled_, stream), "cuEventRecord");
  check(cu.cuStreamWaitEvent(other, signalled_, 0), "cuStreamWaitEvent");
  check_copied_error_word();
  if (!err_host_) {
    void* p = nullptr;
    check(cu.cuMemAllocHost(&p, sizeof(unsigned)), "cuMemAllocHost (error word copy)");
    err_host_ = static_cast<unsigned*>(p);
    *err_host_ = 0;
  }
  if (!err_copied_) check(cu.cuEventCreate(&err_copied_, CU_EVENT_DISABLE_TIMING), "cuEventCreate");
  // The word as of this point, copied while the work runs; read by a later call once its own
  // event has fired (that copy only, however far the host runs ahead).
  if (!err_pending_) {
    check(cu.cuMemcpyDtoHAsync(err_host_, err, sizeof(unsigned), stream),
          "cuMemcpyDtoHAsync (error word)");
    check(cu.cuEventRecord(err_copied_, stream), "cuEventRecord");
    err_pending_ = true;
  }
}

void CudaQueue::start_read(void* dst, CUdeviceptr src, uint64_t bytes) {
  const CudaApi& cu = *dev.cu;
  dev.bind_context();
  finish_read();
  if (kReadData + bytes > read_cap_) {
    if (read_host_) check(cu.cuMemFreeHost(read_host_), "cuMemFreeHost (read)");
    read_host_ = nullptr;
    read_cap_ = 0;
    void* p = nullptr;
    const uint64_t cap = std::max<uint64_t>(4096, kReadData + bytes);
    check(cu.cuMemAllocHost(&p, cap), "cuMemAllocHost (read)");
    read_host_ = p;
    read_cap_ = cap;
  }
  if (!read_done_) check(cu.cuEventCreate(&read_done_, CU_EVENT_DISABLE_TIMING), "cuEventCreate");
  auto* host = static_cast<unsigned char*>(read_host_);
  if (bytes)
    check(cu.cuMemcpyDtoHAsync(host + kReadData, src, bytes, stream), "cuMemcpyDtoHAsync (read)");
  check(cu.cuMemcpyDtoHAsync(host, err, sizeof(unsigned), stream),
        "cuMemcpyDtoHAsync (error word)");
  check(cu.cuEventRecord(read_done_, stream), "cuEventRecord");
  read_dst_ = dst;
  read_bytes_ = bytes;
  read_pending_ = true;
}

void CudaQueue::finish_read() {
  if (!read_pending_) return;
  const CudaApi& cu = *dev.cu;
  dev.bind_context();
  read_pending_ = false;
  check(cu.cuEventSynchronize(read_done_), "cuEventSynchronize (read)");
  auto* host = static_cast<unsigned char*>(read_host_);
  unsigned word = 0;
  std::memcpy(&word, host, sizeof word);
  if (word != 0) raise_copied_error_word(word);
  if (read_bytes_) std::memcpy(read_dst_, host + kReadData, read_bytes_);
}

}  // namespace luminal::cuda
