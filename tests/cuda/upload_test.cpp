// Large uploads staged through pinned memory (luminal/cuda/staged_upload.hpp). Without a GPU: the
// chunk split, the reader pool, and staged_upload against a fake device whose copies happen late
// (at the slot's next wait), so a slot refilled too early shows up as wrong bytes. On a GPU
// (skipped without one): weights bound from a cold safetensors file (a tensor of 100 MiB + an odd
// tail at an odd offset, with the binding progress), uploads smaller than one chunk, and uploads
// back to back whose source is overwritten as soon as each returns, downloaded and compared byte
// for byte.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <filesystem>
#include <memory>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "cuda/cuda_test_util.hpp"
#include "luminal/cuda/staged_upload.hpp"
#include "luminal/io/safetensors.hpp"
#include "luminal/luminal.hpp"

namespace luminal {
namespace {

namespace fs = std::filesystem;
using cuda::ByteRange;
using cuda::ReaderPool;
using cuda::split_chunk;
using cuda::staged_upload;
using cuda::StagingDevice;
using cuda::StagingRing;

constexpr uint64_t MiB = uint64_t{1} << 20;

std::vector<uint8_t> random_bytes(uint64_t n, uint32_t seed) {
  std::vector<uint8_t> v(n);
  std::mt19937 rng(seed);
  for (uint64_t i = 0; i < n; i += 4) {
    const uint32_t r = rng();
    std::memcpy(v.data() + i, &r, std::min<uint64_t>(4, n - i));
  }
  return v;
}

/// Writes `bytes` to `file`, flushes it to the disk and drops it from the page cache, so a
/// mapping of it faults every page in from the disk.
void write_cold(const fs::path& file, const std::vector<uint8_t>& bytes) {
  const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::write(fd, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
  ::fsync(fd);
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  ::close(fd);
}

/// Writes `file` back to the disk and drops it from the page cache.
void drop_from_page_cache(const fs::path& file) {
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  ::fdatasync(fd);
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  ::close(fd);
}

// ---------------------------------------------------------------- without a GPU

TEST(StagedUpload, SplitChunkCoversEveryByteOnAlignedBoundaries) {
  const uint64_t align = 64 << 10;
  for (uint64_t addr : {uint64_t{0}, uint64_t{4096}, uint64_t{12345}, uint64_t{(1 << 20) + 3}})
    for (uint64_t n : {uint64_t{1}, MiB - 1, 2 * MiB - 1, 2 * MiB, 5 * MiB + 3, 16 * MiB})
      for (int parts : {1, 2, 3, 8, 64}) {
        const std::vector<ByteRange> s = split_chunk(addr, n, parts, MiB, align);
        SCOPED_TRACE(std::to_string(addr) + " " + std::to_string(n) + " " + std::to_string(parts));
        ASSERT_FALSE(s.empty());
        EXPECT_LE(s.size(), static_cast<size_t>(parts));
        EXPECT_LE(s.size(), std::max<size_t>(1, n / MiB));
        EXPECT_EQ(s.front().begin, 0u);
        EXPECT_EQ(s.back().end, n);
        for (size_t i = 0; i < s.size(); ++i) {
          EXPECT_LT(s[i].begin, s[i].end);
          if (i > 0) {
            EXPECT_EQ(s[i].begin, s[i - 1].end);
            EXPECT_EQ((addr + s[i].begin) % align, 0u);  // readers never share a page
          }
        }
        if (n < 2 * MiB) {
          EXPECT_EQ(s.size(), 1u);
        }
        if (n == 16 * MiB) {
          EXPECT_EQ(s.size(), static_cast<size_t>(std::min(parts, 16)));
        }
      }
  EXPECT_TRUE(split_chunk(5, 0, 4, MiB, align).empty());
  // Slices smaller than the alignment cannot all be placed: fewer, still covering everything.
  const std::vector<ByteRange> s = split_chunk(100, 3000, 8, 1, 1024);
  EXPECT_EQ(s.front().begin, 0u);
  EXPECT_EQ(s.back().end, 3000u);
  EXPECT_LE(s.size(), 3u);
}

TEST(StagedUpload, ReaderPoolRunsEveryPartOnceAndRethrows) {
  ReaderPool pool(4);
  EXPECT_EQ(pool.threads(), 4);
  for (int n : {0, 1, 2, 4, 9, 3, 4}) {
    std::vector<std::atomic<int>> hits(4);
    pool.run(n, [&](int part) { ++hits[part]; });
    for (int p = 0; p < 4; ++p)
      EXPECT_EQ(hits[p].load(), p < std::min(n, 4) ? 1 : 0) << "n=" << n << " part " << p;
  }
  EXPECT_THROW(pool.run(4,
                        [](int part) {
                          if (part == 2) throw std::runtime_error("part 2");
                        }),
               std::runtime_error);
  std::atomic<int> after{0};
  pool.run(4, [&](int) { ++after; });  // still usable
  EXPECT_EQ(after.load(), 4);
  EXPECT_EQ(ReaderPool(0).threads(), 1);
  EXPECT_GE(cuda::default_host_threads(), 1);
  EXPECT_LE(cuda::default_host_threads(), 8);
}

/// A device whose copies run late, like DMA on a stream: send() only queues the copy; wait(slot)
/// runs the queued copies in order up to the last one from that slot, reading the slot then. A
/// slot refilled before its wait would deliver the new bytes instead of the old ones.
class LateDevice final : public StagingDevice {
 public:
  LateDevice(StagingRing& ring, uint64_t bytes) : dst(bytes, 0xEE), ring_(ring) {}
  void wait(int slot) override {
    ++waits;
    size_t last = pending_.size();
    for (size_t i = 0; i < pending_.size(); ++i)
      if (pending_[i].slot == slot) last = i;
    if (last == pending_.size()) return;
    for (size_t i = 0; i <= last; ++i)
      run(pending_[i]);
    pending_.erase(pending_.begin(), pending_.begin() + static_cast<ptrdiff_t>(last) + 1);
  }
  void send(int slot, uint64_t offset, uint64_t n) override {
    EXPECT_LE(n, ring_.slot_bytes);
    slots_used.push_back(slot);
    pending_.push_back({slot, offset + base, n});
  }
  void flush() {
    for (const Send& s : pending_)
      run(s);
    pending_.clear();
  }
  std::vector<uint8_t> dst;
  uint64_t base = 0;  // where the current upload goes in dst
  std::vector<int> slots_used;
  int waits = 0;

 private:
  struct Send {
    int slot;
    uint64_t at, n;
  };
  void run(const Send& s) {
    ASSERT_LE(s.at + s.n, dst.size());
    std::memcpy(dst.data() + s.at, ring_.slots[s.slot], s.n);
  }
  StagingRing& ring_;
  std::vector<Send> pending_;
};

TEST(StagedUpload, LateDeviceGetsExactBytesAcrossBackToBackUploads) {
  const uint64_t slot_bytes = 4 * MiB + 4096;
  std::vector<std::vector<uint8_t>> slot_memory(4, std::vector<uint8_t>(slot_bytes));
  StagingRing ring;
  for (auto& m : slot_memory)
    ring.slots.push_back(m.data());
  ring.slot_bytes = slot_bytes;
  ReaderPool pool(4);
  // Sizes: many chunks with an odd tail, one byte past a chunk, under one chunk, exactly one.
  const std::vector<uint64_t> sizes = {21 * MiB + 12345, slot_bytes + 1, 3 * MiB + 7, slot_bytes};
  uint64_t total = 0;
  for (uint64_t n : sizes)
    total += n;
  LateDevice device(ring, total);
  std::vector<uint8_t> expected;
  std::vector<uint8_t> source(sizes[0] + 3);
  int chunks = 0;
  for (size_t k = 0; k < sizes.size(); ++k) {
    const std::vector<uint8_t> bytes = random_bytes(sizes[k], 100 + static_cast<uint32_t>(k));
    std::memcpy(source.data() + 3, bytes.data(), bytes.size());  // an odd source address
    staged_upload(source.data() + 3, sizes[k], ring, device, pool);
    std::fill(source.begin(), source.end(), uint8_t{0x5A});  // the source may be reused at once
    expected.insert(expected.end(), bytes.begin(), bytes.end());
    device.base += sizes[k];
    chunks += static_cast<int>((sizes[k] + slot_bytes - 1) / slot_bytes);
  }
  device.flush();
  ASSERT_EQ(device.dst.size(), expected.size());
  EXPECT_TRUE(device.dst == expected);
  ASSERT_EQ(static_cast<int>(device.slots_used.size()), chunks);
  EXPECT_EQ(device.waits, chunks);
  for (int i = 0; i < chunks; ++i)  // the ring is used in turn, across uploads
    EXPECT_EQ(device.slots_used[i], i % 4);
}

TEST(StagedUpload, FromAColdMappedFileAtAnOddOffset) {
  const fs::path file =
      fs::temp_directory_path() / ("luminal_staged_" + std::to_string(::getpid()) + ".bin");
  const uint64_t n = 37 * MiB + 4099;
  const std::vector<uint8_t> bytes = random_bytes(n, 7);
  write_cold(file, bytes);
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  void* map = ::mmap(nullptr, n, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  ASSERT_NE(map, MAP_FAILED);
  const uint64_t slot_bytes = 8 * MiB;
  std::vector<std::vector<uint8_t>> slot_memory(3, std::vector<uint8_t>(slot_bytes));
  StagingRing ring;
  for (auto& m : slot_memory)
    ring.slots.push_back(m.data());
  ring.slot_bytes = slot_bytes;
  ReaderPool pool(3);
  LateDevice device(ring, n - 5);
  staged_upload(static_cast<const uint8_t*>(map) + 5, n - 5, ring, device, pool);
  device.flush();
  ::munmap(map, n);
  fs::remove(file);
  EXPECT_TRUE(std::equal(device.dst.begin(), device.dst.end(), bytes.begin() + 5));
}

// ---------------------------------------------------------------- on a GPU

/// `bytes` uploaded at `dst_offset` of a fresh buffer on `queue`, then downloaded.
std::vector<uint8_t> round_trip(cuda::CudaBackend& be, const uint8_t* src, uint64_t bytes,
                                uint64_t dst_offset, Queue* queue) {
  const Buffer buf = be.allocate(dst_offset + bytes);
  be.upload(buf, dst_offset, src, bytes, queue);
  std::vector<uint8_t> back(bytes);
  be.download(back.data(), buf, dst_offset, bytes, queue);
  be.release(buf);
  return back;
}

TEST(CudaUpload, MultiChunkWeightBoundFromAColdFileIsExact) {
  LUMINAL_REQUIRE_GPU();
  // u8 tensors, so the big one starts at an odd offset of the file: "a" (3 bytes) before it.
  const uint64_t big = 100 * MiB + 4099;
  const std::vector<uint8_t> a = random_bytes(3, 1), b = random_bytes(big, 2),
                             c = random_bytes(5, 3);
  Graph g;
  g.tensor("a", {3}, DType::U8).persist().output("a.out");
  g.tensor("b", {static_cast<int64_t>(big)}, DType::U8).persist().output("b.out");
  g.tensor("c", {5}, DType::U8).persist().output("c.out");
  const fs::path file =
      fs::temp_directory_path() / ("luminal_upload_" + std::to_string(::getpid()) + ".safetensors");
  auto view = [](const char* name, const std::vector<uint8_t>& v) {
    return io::TensorView{name, DType::U8, {static_cast<int64_t>(v.size())}, v, {}};
  };
  io::write_safetensors(file,
                        std::vector<io::TensorView>{view("a", a), view("b", b), view("c", c)});
  drop_from_page_cache(file);
  auto weights = std::make_shared<const io::Weights>(io::Weights::open(file));
  ASSERT_EQ(reinterpret_cast<uintptr_t>(weights->get("b").bytes.data()) % 2, 1u);

  Session s(g, testing::gpu(), CompileOptions().search_graph_limit(2).verbose(false));
  io::BindOptions opts;
  std::vector<std::pair<uint64_t, uint64_t>> reports;
  opts.progress = [&](std::string_view stage, uint64_t done, uint64_t total) {
    EXPECT_EQ(stage, "binding");
    reports.emplace_back(done, total);
  };
  io::bind(s, weights, opts);
  weights.reset();  // the upload is done with the file (it may still be on its way)
  fs::remove(file);
  ASSERT_GE(reports.size(), 2u);
  EXPECT_EQ(reports.front().first, 0u);
  EXPECT_EQ(reports.back().first, big + 8);
  for (size_t i = 1; i < reports.size(); ++i)
    EXPECT_GE(reports[i].first, reports[i - 1].first);
  s.execute();
  EXPECT_EQ(s.get<uint8_t>("a.out"), a);
  EXPECT_EQ(s.get<uint8_t>("c.out"), c);
  const std::vector<uint8_t> got = s.get<uint8_t>("b.out");
  ASSERT_EQ(got.size(), b.size());
  EXPECT_TRUE(got == b) << "first difference at byte "
                        << (std::mismatch(got.begin(), got.end(), b.begin()).first - got.begin());
}

TEST(CudaUpload, SmallerThanOneChunkIsExact) {
  LUMINAL_REQUIRE_GPU();
  cuda::CudaBackend& be = testing::gpu();
  std::unique_ptr<Queue> q = be.make_queue();
  const std::vector<uint8_t> src = random_bytes(16 * MiB + 64, 11);
  // Under the 1 MiB staging threshold, just over it (one slice), several slices, one byte
  // under a whole chunk; odd source and device offsets.
  for (uint64_t n : {uint64_t{1000}, MiB + 1, 5 * MiB + 3, 16 * MiB - 1}) {
    SCOPED_TRACE(n);
    const std::vector<uint8_t> got = round_trip(be, src.data() + 7, n, 5, q.get());
    EXPECT_TRUE(std::equal(got.begin(), got.end(), src.begin() + 7));
  }
  // The default queue, and a backend with one reader thread.
  const std::vector<uint8_t> got = round_trip(be, src.data() + 1, 3 * MiB, 3, nullptr);
  EXPECT_TRUE(std::equal(got.begin(), got.end(), src.begin() + 1));
  cuda::CudaOptions one;
  one.upload_threads = 1;
  cuda::CudaBackend single(one);
  const std::vector<uint8_t> got1 = round_trip(single, src.data() + 9, 9 * MiB + 1, 1, nullptr);
  EXPECT_TRUE(std::equal(got1.begin(), got1.end(), src.begin() + 9));
}

TEST(CudaUpload, BackToBackUploadsMayReuseTheirSourceOnReturn) {
  LUMINAL_REQUIRE_GPU();
  cuda::CudaBackend& be = testing::gpu();
  std::unique_ptr<Queue> q = be.make_queue();
  // 12 uploads of 7 MiB + k (more chunks than the ring holds, in all) from one host buffer that
  // is overwritten as soon as each returns, into consecutive ranges of one device buffer.
  std::vector<uint64_t> at = {0};
  for (uint64_t k = 0; k < 12; ++k)
    at.push_back(at.back() + 7 * MiB + 3 * k + 1);
  const Buffer buf = be.allocate(at.back());
  std::vector<uint8_t> source(8 * MiB), expected;
  for (uint64_t k = 0; k < 12; ++k) {
    const std::vector<uint8_t> bytes =
        random_bytes(at[k + 1] - at[k], 50 + static_cast<uint32_t>(k));
    std::memcpy(source.data(), bytes.data(), bytes.size());
    be.upload(buf, at[k], source.data(), bytes.size(), q.get());
    std::fill(source.begin(), source.end(), uint8_t{0xA5});
    expected.insert(expected.end(), bytes.begin(), bytes.end());
  }
  std::vector<uint8_t> back(at.back());
  be.download(back.data(), buf, 0, back.size(), q.get());
  be.release(buf);
  EXPECT_TRUE(back == expected);
}

}  // namespace
}  // namespace luminal
