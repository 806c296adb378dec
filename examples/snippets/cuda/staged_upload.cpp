// luminal/cuda/staged_upload.hpp: large uploads staged through a ring of pinned slots, filled by
// several reader threads while earlier slots are sent. Nothing here calls CUDA: this "device"
// copies each sent slot into a host vector.
#include <cstdint>
#include <cstring>
#include <vector>

#include "luminal/cuda/staged_upload.hpp"
#include "snippet.hpp"

using namespace luminal::cuda;

struct HostDevice : StagingDevice {
  StagingRing* ring = nullptr;
  std::vector<uint8_t> memory;
  void wait(int) override {}  // the slot's last send has finished (synchronous here)
  void send(int slot, uint64_t offset, uint64_t n) override {
    std::memcpy(memory.data() + offset, ring->slots[static_cast<size_t>(slot)], n);
  }
};

int main() {
  const uint64_t slot_bytes = 1 << 20;
  std::vector<std::vector<uint8_t>> storage(4, std::vector<uint8_t>(slot_bytes));
  std::vector<uint8_t> src(5 * slot_bytes + 123);
  for (size_t i = 0; i < src.size(); ++i)
    src[i] = static_cast<uint8_t>(i * 7);

  ReaderPool pool(8);
  StagingRing ring{{storage[0].data(), storage[1].data(), storage[2].data(), storage[3].data()},
                   slot_bytes};
  HostDevice device;
  device.ring = &ring;
  device.memory.resize(src.size());
  staged_upload(src.data(), src.size(), ring, device, pool);  // returns once the last chunk is sent
  expect(device.memory == src, "every byte arrived");
}
