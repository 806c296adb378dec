#pragma once
// Large host-to-device uploads, staged through pinned memory (internal to luminal/cuda). Nothing
// here calls CUDA: CudaBackend::upload plugs in the device side (StagingDevice: a
// cuMemcpyHtoDAsync and an event per slot) and the CPU tests plug in a fake one.
// Example: examples/snippets/cuda/staged_upload.cpp (a ring of four slots filled by eight readers
// into a host "device").
//
// A weight upload reads host memory that is usually a memory-mapped model file, so the cost is
// on the host: page faults (each maps a few pages of the page cache; on a cold file, each waits
// for a read of the disk) and a memcpy into pinned staging, both on one thread before. The DMA
// (~50 GB/s on an H200) is not the bottleneck. So:
//
//   - a ring of pinned staging slots (4 x 16 MiB per queue): chunk i goes to slot i % 4 once the
//     DMA that last read that slot is done (its event), so filling chunk i overlaps the DMAs of
//     the chunks before it, and an upload returns once its last chunk is staged (the next
//     upload's chunks overlap its DMAs too);
//   - each chunk is filled by several reader threads at once (a ReaderPool: the caller plus
//     CudaOptions::upload_threads - 1 workers), each copying one slice (64 KiB-aligned in the
//     source, at least 1 MiB: a small chunk stays on the calling thread), so page faults and
//     memcpy run in parallel;
//   - each reader first tells the kernel that its share of the next chunks (up to 4 chunks, the
//     ring's depth, ahead) will be read (madvise MADV_WILLNEED): on a cold file the reads are
//     queued early and in large requests instead of one fault's read-around at a time. On memory
//     that is not a file it does nothing.
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace luminal::cuda {

/// Threads that run the parts of one call together: run(n, fn) calls fn(0) on the caller and
/// fn(1) .. fn(n - 1) on workers (n is capped at threads()), and returns when every part is done,
/// rethrowing the first exception a part threw. One run at a time (a second caller waits).
class ReaderPool {
 public:
  /// `threads` in all, the caller included (at least 1); the workers start on the first run
  /// that needs them.
  explicit ReaderPool(int threads);
  ~ReaderPool();
  ReaderPool(const ReaderPool&) = delete;
  ReaderPool& operator=(const ReaderPool&) = delete;

  int threads() const { return threads_; }
  void run(int n, const std::function<void(int)>& fn);

 private:
  void work(int part);

  const int threads_;
  std::mutex run_mu_;  // one run at a time
  std::mutex mu_;      // everything below
  std::condition_variable start_, done_;
  std::vector<std::thread> workers_;  // part w + 1 runs on workers_[w]
  const std::function<void(int)>* fn_ = nullptr;
  int parts_ = 0, pending_ = 0;
  uint64_t generation_ = 0;
  bool stop_ = false;
  std::exception_ptr error_;
};

/// A half-open byte range [begin, end).
struct ByteRange {
  uint64_t begin = 0, end = 0;
};

/// `n` bytes starting at address `addr` split into at most `max_parts` consecutive slices of at
/// least `min_part` bytes (one slice when n < 2 * min_part), their inner boundaries on
/// multiples of `align` in address space (so readers never share a page). Offsets are relative
/// to `addr`; the slices cover [0, n) in order, none empty (none at all when n == 0).
std::vector<ByteRange> split_chunk(uint64_t addr, uint64_t n, int max_parts, uint64_t min_part,
                                   uint64_t align);

/// The device side of a staged upload.
class StagingDevice {
 public:
  virtual ~StagingDevice() = default;
  /// Returns once the device has read everything sent from `slot` so far (the slot may be
  /// refilled).
  virtual void wait(int slot) = 0;
  /// Starts copying `n` bytes of `slot` to the destination at `offset`, asynchronously, in
  /// order with the sends before it.
  virtual void send(int slot, uint64_t offset, uint64_t n) = 0;
};

/// A queue's pinned staging: slots of slot_bytes each, used in turn (next: the slot of the next
/// chunk; it carries over from one upload to the next).
struct StagingRing {
  std::vector<uint8_t*> slots;
  uint64_t slot_bytes = 0;
  int next = 0;
};

/// Slices of a chunk are at least this large (smaller ones cost more to hand out than to copy)
/// and start on this alignment in the source.
constexpr uint64_t kMinSliceBytes = uint64_t{1} << 20;
constexpr uint64_t kSliceAlign = uint64_t{64} << 10;

/// Copies `bytes` from `src` to the device through `ring` (chunks of slot_bytes, each waiting for
/// its slot, filled by `pool`'s threads, then sent; see the top of this file). Returns once the
/// last chunk is sent: `src` is no longer read, the device may still be copying.
void staged_upload(const uint8_t* src, uint64_t bytes, StagingRing& ring, StagingDevice& device,
                   ReaderPool& pool);

/// The default number of reader threads and of NVRTC compile threads: the hardware threads, at
/// most 8.
int default_host_threads();

}  // namespace luminal::cuda
