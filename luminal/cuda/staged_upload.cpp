#include "luminal/cuda/staged_upload.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <utility>

namespace luminal::cuda {

// ---------------------------------------------------------------- reader pool

ReaderPool::ReaderPool(int threads) : threads_(std::max(1, threads)) {}

ReaderPool::~ReaderPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  start_.notify_all();
  for (std::thread& t : workers_)
    t.join();
}

void ReaderPool::run(int n, const std::function<void(int)>& fn) {
  n = std::min(n, threads_);
  if (n <= 0) return;
  if (n == 1) {
    fn(0);
    return;
  }
  std::lock_guard<std::mutex> one_run(run_mu_);
  {
    std::lock_guard<std::mutex> lock(mu_);
    while (static_cast<int>(workers_.size()) < n - 1) {
      const int part = static_cast<int>(workers_.size()) + 1;
      workers_.emplace_back([this, part] { work(part); });
    }
    fn_ = &fn;
    parts_ = n;
    pending_ = n - 1;
    error_ = nullptr;
    ++generation_;
  }
  start_.notify_all();
  std::exception_ptr mine;
  try {
    fn(0);
  } catch (...) {
    mine = std::current_exception();
  }
  std::unique_lock<std::mutex> lock(mu_);
  done_.wait(lock, [&] { return pending_ == 0; });
  fn_ = nullptr;
  if (!mine) mine = std::exchange(error_, nullptr);
  if (mine) std::rethrow_exception(mine);
}

void ReaderPool::work(int part) {
  uint64_t seen = 0;
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    start_.wait(lock, [&] { return stop_ || generation_ != seen; });
    if (stop_) return;
    seen = generation_;
    if (part >= parts_) continue;  // this run needs fewer threads
    const std::function<void(int)>* fn = fn_;
    lock.unlock();
    std::exception_ptr err;
    try {
      (*fn)(part);
    } catch (...) {
      err = std::current_exception();
    }
    lock.lock();
    if (err && !error_) error_ = err;
    if (--pending_ == 0) done_.notify_one();
  }
}

// ---------------------------------------------------------------- staged upload

std::vector<ByteRange> split_chunk(uint64_t addr, uint64_t n, int max_parts, uint64_t min_part,
                                   uint64_t align) {
  std::vector<ByteRange> out;
  if (n == 0) return out;
  const uint64_t parts =
      std::clamp<uint64_t>(n / std::max<uint64_t>(min_part, 1), 1, std::max(max_parts, 1));
  align = std::max<uint64_t>(align, 1);
  uint64_t begin = 0;
  for (uint64_t k = 1; k < parts; ++k) {
    // The even split's boundary, moved down to the alignment in address space.
    const uint64_t aligned = (addr + n / parts * k) / align * align;
    if (aligned <= addr + begin || aligned - addr >= n) continue;  // no room left for a slice
    out.push_back({begin, aligned - addr});
    begin = aligned - addr;
  }
  out.push_back({begin, n});
  return out;
}

namespace {

/// Asks the kernel to read [p, p + n) of a file mapping ahead (a hint: errors are ignored; on
/// anonymous memory it does nothing).
void will_need(const uint8_t* p, uint64_t n) {
  if (n == 0) return;
  static const uintptr_t page = static_cast<uintptr_t>(sysconf(_SC_PAGESIZE));
  const uintptr_t start = reinterpret_cast<uintptr_t>(p) & ~(page - 1);
  const uintptr_t end = reinterpret_cast<uintptr_t>(p) + n;
  (void)madvise(reinterpret_cast<void*>(start), end - start, MADV_WILLNEED);
}

}  // namespace

void staged_upload(const uint8_t* src, uint64_t bytes, StagingRing& ring, StagingDevice& device,
                   ReaderPool& pool) {
  const uint64_t chunk = ring.slot_bytes;
  const int slots = static_cast<int>(ring.slots.size());
  const uint64_t chunks = (bytes + chunk - 1) / chunk;
  uint64_t advised = 0;  // chunks [0, advised) were advised
  for (uint64_t i = 0; i < chunks; ++i) {
    const uint64_t offset = i * chunk, n = std::min(chunk, bytes - offset);
    const int slot = ring.next;
    ring.next = (ring.next + 1) % slots;
    device.wait(slot);
    // This chunk and up to `slots` after it (the ring's depth) are read next: each reader advises
    // its share of those not advised yet, then copies its slice.
    const uint64_t advise_from = advised, advise_to = std::min(chunks, i + 1 + slots);
    advised = std::max(advised, advise_to);
    const std::vector<ByteRange> parts = split_chunk(reinterpret_cast<uintptr_t>(src + offset), n,
                                                     pool.threads(), kMinSliceBytes, kSliceAlign);
    const uint64_t p = parts.size();
    uint8_t* to = ring.slots[slot];
    pool.run(static_cast<int>(p), [&](int t) {
      for (uint64_t a = advise_from; a < advise_to; ++a) {
        const uint64_t at = a * chunk, len = std::min(chunk, bytes - at);
        will_need(src + at + len * t / p, len * (t + 1) / p - len * t / p);
      }
      const ByteRange r = parts[t];
      std::memcpy(to + r.begin, src + offset + r.begin, r.end - r.begin);
    });
    device.send(slot, offset, n);
  }
}

int default_host_threads() {
  const unsigned hw = std::thread::hardware_concurrency();
  return static_cast<int>(std::clamp(hw, 1u, 8u));
}

}  // namespace luminal::cuda
