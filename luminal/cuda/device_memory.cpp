// Device memory and copies (device.hpp): what CudaBackend's allocate, release, upload, download,
// copy, sync and check_external do. Large uploads go through the queue's pinned staging ring
// (staged_upload.hpp).
#include <algorithm>

#include "luminal/core/error.hpp"
#include "luminal/cuda/device.hpp"
#include "luminal/cuda/queue.hpp"

namespace luminal::cuda {

namespace {

/// The device side of a staged upload on a queue: a slot is sent with an async copy on the
/// queue's stream and an event after it, which the slot's next fill waits for.
class QueueStaging final : public StagingDevice {
 public:
  QueueStaging(const CudaApi& cu, CudaQueue& q, CUdeviceptr dst) : cu_(cu), q_(q), dst_(dst) {}
  void wait(int slot) override {
    check(cu_.cuEventSynchronize(q_.staging_done[slot]), "cuEventSynchronize (staging)");
  }
  void send(int slot, uint64_t offset, uint64_t n) override {
    check(cu_.cuMemcpyHtoDAsync(dst_ + offset, q_.staging.slots[slot], n, q_.stream),
          "cuMemcpyHtoDAsync");
    check(cu_.cuEventRecord(q_.staging_done[slot], q_.stream), "cuEventRecord");
  }

 private:
  const CudaApi& cu_;
  CudaQueue& q_;
  CUdeviceptr dst_;
};

}  // namespace

void Device::check_external(const void* ptr, uint64_t bytes) const {
  bind_context();
  const auto p = static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(ptr));
  unsigned int type = 0;
  if (cu->cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p) != CUDA_SUCCESS)
    throw Error(
        "the pointer is not memory CUDA knows (host memory from malloc?); pass device memory "
        "of " +
        gpu_name);
  if (type != CU_MEMORYTYPE_DEVICE)
    throw Error("the pointer is CUDA host memory, not device memory; pass device memory of " +
                gpu_name);
  int ordinal = -1;
  check(cu->cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, p),
        "cuPointerGetAttribute");
  if (ordinal != opts.device)
    throw Error("the pointer is memory of GPU " + std::to_string(ordinal) +
                "; this backend runs on GPU " + std::to_string(opts.device));
  (void)bytes;
}

Buffer Device::allocate(uint64_t bytes) {
  bind_context();
  CUdeviceptr p = 0;
  const CUresult r = cu->cuMemAlloc(&p, std::max<uint64_t>(bytes, 1));
  if (r == CUDA_ERROR_OUT_OF_MEMORY) {
    auto [free, total] = memory_info();
    throw Error("cuda: cannot allocate " + std::to_string(bytes) + " bytes of device memory (" +
                std::to_string(free) + " of " + std::to_string(total) +
                " free); lower max_memory, the dim ranges or the model size");
  }
  check(r, "cuMemAlloc");
  return Buffer{reinterpret_cast<void*>(p), bytes};
}

void Device::release(Buffer b) {
  if (!b.ptr) return;
  bind_context();
  // Any queue may still use the buffer: wait for every stream of the context (releases are rare:
  // a session's end, a replaced input, the search's scratch arena).
  cu->cuCtxSynchronize();
  check(cu->cuMemFree(reinterpret_cast<CUdeviceptr>(b.ptr)), "cuMemFree");
}

void Device::upload(Buffer dst, uint64_t offset, const void* src, uint64_t bytes, Queue* queue) {
  LUMINAL_ASSERT(offset + bytes <= dst.bytes, "cuda: upload past the end of a buffer");
  if (!bytes) return;
  CudaQueue& q = this->queue(queue);
  bind_context();
  const CudaApi& api = *cu;
  const auto base = reinterpret_cast<CUdeviceptr>(dst.ptr) + offset;
  if (bytes < (uint64_t{1} << 20)) {
    // Small: straight from pageable memory; the caller may free it on return, so wait.
    check(api.cuMemcpyHtoDAsync(base, src, bytes, q.stream), "cuMemcpyHtoDAsync");
    check(api.cuStreamSynchronize(q.stream), "cuStreamSynchronize");
    return;
  }
  // Large (weights): read by the reader threads into the queue's ring of pinned buffers while
  // the chunks before are copied (staged_upload.hpp); returns once the last chunk is staged.
  if (q.staging.slots.empty()) {
    for (CUevent& e : q.staging_done)
      if (!e) check(api.cuEventCreate(&e, CU_EVENT_DISABLE_TIMING), "cuEventCreate");
    check(api.cuMemAllocHost(&q.staging_host, CudaQueue::kStagingSlots * CudaQueue::kStagingBytes),
          "cuMemAllocHost (staging)");
    for (int j = 0; j < CudaQueue::kStagingSlots; ++j)
      q.staging.slots.push_back(static_cast<uint8_t*>(q.staging_host) +
                                j * CudaQueue::kStagingBytes);
    q.staging.slot_bytes = CudaQueue::kStagingBytes;
  }
  QueueStaging device(api, q, base);
  staged_upload(static_cast<const uint8_t*>(src), bytes, q.staging, device, readers());
}

void Device::download(void* dst, Buffer src, uint64_t offset, uint64_t bytes, Queue* queue) {
  LUMINAL_ASSERT(offset + bytes <= src.bytes, "cuda: download past the end of a buffer");
  CudaQueue& q = this->queue(queue);
  bind_context();
  if (bytes)
    check(cu->cuMemcpyDtoHAsync(dst, reinterpret_cast<CUdeviceptr>(src.ptr) + offset, bytes,
                                q.stream),
          "cuMemcpyDtoHAsync");
  q.check_error_word();
}

void Device::start_download(void* dst, Buffer src, uint64_t offset, uint64_t bytes, Queue* queue) {
  LUMINAL_ASSERT(offset + bytes <= src.bytes, "cuda: download past the end of a buffer");
  CudaQueue& q = this->queue(queue);
  q.start_read(dst, reinterpret_cast<CUdeviceptr>(src.ptr) + offset, bytes);
}

void Device::finish_download(Queue* queue) { this->queue(queue).finish_read(); }

void Device::copy(Buffer dst, Buffer src, uint64_t bytes, Queue* queue) {
  LUMINAL_ASSERT(bytes <= dst.bytes && bytes <= src.bytes, "cuda: copy past the end of a buffer");
  if (!bytes || dst.ptr == src.ptr) return;
  CudaQueue& q = this->queue(queue);
  bind_context();
  check(cu->cuMemcpyDtoDAsync(reinterpret_cast<CUdeviceptr>(dst.ptr),
                              reinterpret_cast<CUdeviceptr>(src.ptr), bytes, q.stream),
        "cuMemcpyDtoDAsync");
}

void Device::sync(Queue* queue) {
  CudaQueue& q = this->queue(queue);
  bind_context();
  q.check_error_word();
}

std::pair<uint64_t, uint64_t> Device::memory_info() const {
  size_t free = 0, total = 0;
  bind_context();
  check(cu->cuMemGetInfo(&free, &total), "cuMemGetInfo");
  return {free, total};
}

}  // namespace luminal::cuda
