// libFuzzer target: arbitrary bytes as a whole safetensors file. The parser must either return a
// header whose every tensor lies inside the buffer, or throw luminal::Error; anything else (a
// crash, a sanitizer report, another exception) is a bug.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>

#include "luminal/core/error.hpp"
#include "luminal/io/safetensors.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    auto h = luminal::io::parse_safetensors(std::span<const uint8_t>(data, size), "<fuzz>");
    for (const auto& t : h.tensors) {
      uint64_t n = 1;
      for (int64_t d : t.shape)
        n *= static_cast<uint64_t>(d);
      if (t.end < t.begin || t.end > h.data_size ||
          t.end - t.begin != n * static_cast<uint64_t>(luminal::size_bytes(t.dtype)) ||
          h.data_offset + h.data_size != size)
        std::abort();
    }
  } catch (const luminal::Error&) {
  }
  return 0;
}
