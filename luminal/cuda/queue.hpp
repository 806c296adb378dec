#pragma once
// One ordered queue of work on a Device (internal to luminal/cuda): a non-blocking stream (not
// ordered with other queues' streams), the pinned staging its large uploads go through, and the
// error word its kernels report a bad index in (1: a Gather's index, 2: an expert id of
// cuda.ExpertGemv / cuda.ExpertRows; check_error_word() waits, then throws when it is set, naming
// which). Each session makes one (CudaBackend::make_queue); Device::default_queue serves calls
// given no queue. Destroying a queue waits for its stream.
// Example: examples/snippets/cuda/queue.cpp (a set error word throws, then is cleared).
#include <cuda.h>

#include <array>
#include <cstdint>

#include "luminal/cuda/device.hpp"
#include "luminal/cuda/staged_upload.hpp"
#include "luminal/program/backend.hpp"

namespace luminal::cuda {

struct CudaQueue final : Queue {
  explicit CudaQueue(Device& dev);
  ~CudaQueue() override;
  CudaQueue(const CudaQueue&) = delete;
  CudaQueue& operator=(const CudaQueue&) = delete;

  Device& dev;
  CUstream stream = nullptr;
  CUdeviceptr err = 0;  // one unsigned int: nonzero after a kernel saw a bad index

  // Pinned staging for large uploads (staged_upload.hpp): a ring of kStagingSlots slots of
  // kStagingBytes in one pinned allocation, each refilled once its event fired (allocated on
  // the first large upload).
  static constexpr int kStagingSlots = 4;
  static constexpr uint64_t kStagingBytes = uint64_t{16} << 20;
  void* staging_host = nullptr;
  StagingRing staging;  // slots point into staging_host
  std::array<CUevent, kStagingSlots> staging_done{};

  /// Waits for the stream, then throws when the error word is set (and clears it).
  void check_error_word();

  // Ordering with another library's stream (CudaBackend::wait_external / signal_external),
  // events made on first use. signal() also copies the error word to pinned host memory
  // (one copy in flight at a time), read by a later wait() or signal() once that copy has
  // landed (no host wait); either throws what it read, after ordering the streams.
  /// The queue's later work waits for what `other` has been given so far.
  void wait(CUstream other);
  /// `other`'s later work waits for what this queue has been given so far.
  void signal(CUstream other);

  // A download that does not wait (CudaBackend::start_download / finish_download): the bytes
  // and then the error word copied into pinned memory behind the work given so far, an event
  // after them; finish_read() waits for that event alone, so the work launched after the start
  // (the next decode step) keeps running. One in flight: a second start finishes the first.
  void start_read(void* dst, CUdeviceptr src, uint64_t bytes);
  void finish_read();

 private:
  /// Throws (and clears the word) when a signal()'s copy of the error word has landed nonzero.
  void check_copied_error_word();
  /// Clears the error word on the stream and throws what `word`, a copy of it, says.
  [[noreturn]] void raise_copied_error_word(unsigned word);
  CUevent waited_ = nullptr, signalled_ = nullptr, err_copied_ = nullptr;
  unsigned* err_host_ = nullptr;  // pinned: the word as of the last signal()
  bool err_pending_ = false;      // a copy into err_host_ not yet read
  // start_read's pinned buffer (the error word, then the bytes at kReadData), its event, and
  // where finish_read() puts the bytes.
  static constexpr uint64_t kReadData = 16;
  void* read_host_ = nullptr;
  uint64_t read_cap_ = 0;
  CUevent read_done_ = nullptr;
  void* read_dst_ = nullptr;
  uint64_t read_bytes_ = 0;
  bool read_pending_ = false;
};

}  // namespace luminal::cuda
