#include "luminal/cuda/dims_staging.hpp"

#include <algorithm>
#include <cstring>

namespace luminal::cuda {

DimsStaging::DimsStaging(const CudaApi& cu, size_t count) : cu_(cu) {
  dims_.assign(count, 0);
  const size_t dim_bytes = std::max<size_t>(dims_.size(), 1) * sizeof(int64_t);
  check(cu_.cuMemAlloc(&dev_, dim_bytes), "cuMemAlloc (plan dims)");
  void* host = nullptr;
  check(cu_.cuMemAllocHost(&host, dim_bytes * kSlots), "cuMemAllocHost (dims staging)");
  staging_ = static_cast<int64_t*>(host);
  for (CUevent& e : done_)
    check(cu_.cuEventCreate(&e, CU_EVENT_DISABLE_TIMING), "cuEventCreate");
}

DimsStaging::~DimsStaging() {
  for (CUevent e : done_)
    if (e) cu_.cuEventDestroy(e);
  if (staging_) cu_.cuMemFreeHost(staging_);
  if (dev_) cu_.cuMemFree(dev_);
}

bool DimsStaging::update(const int64_t* dims, CUstream stream) {
  if (stream_ != stream) {
    // The dims array moves to another stream (a plan the search timed, now bound to a session's
    // queue): nothing on the old stream may still read it or write it.
    if (stream_) check(cu_.cuStreamSynchronize(stream_), "cuStreamSynchronize");
    stream_ = stream;
  }
  const size_t k = dims_.size();
  if (valid_ && (k == 0 || std::memcmp(dims_.data(), dims, k * sizeof(int64_t)) == 0)) return false;
  if (k > 0) {
    std::memcpy(dims_.data(), dims, k * sizeof(int64_t));
    const int slot = next_slot_;
    next_slot_ = (next_slot_ + 1) % kSlots;
    // The slot's previous copy must have run before its bytes change.
    check(cu_.cuEventSynchronize(done_[slot]), "cuEventSynchronize (dims staging)");
    int64_t* host = staging_ + static_cast<size_t>(slot) * k;
    std::memcpy(host, dims, k * sizeof(int64_t));
    check(cu_.cuMemcpyHtoDAsync(dev_, host, k * sizeof(int64_t), stream),
          "cuMemcpyHtoDAsync (dims)");
    check(cu_.cuEventRecord(done_[slot], stream), "cuEventRecord");
  }
  ++version_;  // (the stream executor's launch grids follow it; the graph's are fixed)
  valid_ = true;
  return k > 0;
}

}  // namespace luminal::cuda
