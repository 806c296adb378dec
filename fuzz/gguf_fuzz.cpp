// libFuzzer target: arbitrary bytes as a whole GGUF file. The parser must either return a header
// whose every tensor lies, aligned and without overlap, inside the data section, or throw
// luminal::Error; anything else (a crash, a sanitizer report, another exception) is a bug. Small
// tensors of the types we dequantise are dequantised too (every byte pattern is valid input).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <vector>

#include "luminal/core/error.hpp"
#include "luminal/io/gguf.hpp"
#include "luminal/io/gguf_dequant.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    auto h = luminal::io::parse_gguf(std::span<const uint8_t>(data, size), "<fuzz>");
    if (h.data_offset + h.data_size != size) std::abort();
    if (h.alignment == 0 || (h.alignment & (h.alignment - 1)) != 0) std::abort();
    for (const auto& [key, value] : h.metadata)
      (void)value.describe();
    for (const auto& t : h.tensors) {
      if (t.offset % h.alignment != 0 || t.data.size() != t.size_bytes ||
          (t.size_bytes > 0 &&
           (t.data.data() < data || t.data.data() + t.data.size() > data + size ||
            t.data.data() != data + h.data_offset + t.offset)))
        std::abort();
      if (luminal::io::can_dequantize(t.type) && t.numel() <= (1 << 16)) {
        std::vector<float> out(static_cast<size_t>(t.numel()));
        luminal::io::dequantize_into(t, out);
      }
    }
  } catch (const luminal::Error&) {
  }
  return 0;
}
