// GGUF dequantisation, bit-exact with gguf.quants.dequantize (gguf-py). Every formula below is
// the reference's, operation for operation, in f32; luminal/CMakeLists.txt compiles this file
// with -ffp-contract=off so that no a * b + c becomes an FMA.
#include "luminal/io/gguf_dequant.hpp"

#include <algorithm>
#include <cstring>

#include "luminal/core/blocks.hpp"

namespace luminal::io {

namespace {

constexpr GgmlType kSupported[] = {GgmlType::F32,  GgmlType::F16,  GgmlType::BF16, GgmlType::Q8_0,
                                   GgmlType::Q4_0, GgmlType::Q4_1, GgmlType::Q5_0, GgmlType::Q5_1,
                                   GgmlType::Q4_K, GgmlType::Q5_K, GgmlType::Q6_K};

void put_bits(float* out, uint32_t u) { std::memcpy(out, &u, 4); }

}  // namespace

bool can_dequantize(GgmlType t) {
  for (GgmlType s : kSupported)
    if (s == t) return true;
  return false;
}

std::string dequantizable_types() {
  std::string s;
  for (GgmlType t : kSupported)
    s += (s.empty() ? "" : ", ") + std::string(ggml_type_name(t));
  return s;
}

void dequantize_blocks(GgmlType type, std::span<const uint8_t> bytes, std::span<float> out) {
  const auto info = ggml_type_info(static_cast<uint32_t>(type));
  if (!info || !can_dequantize(type)) {
    throw Error("dequantising ggml type " +
                (info ? std::string(info->name) : std::to_string(static_cast<uint32_t>(type))) +
                " is not supported (supported: " + dequantizable_types() + ")");
  }
  const uint64_t n = out.size();
  const uint64_t bs = static_cast<uint64_t>(info->block_size);
  const uint64_t ts = static_cast<uint64_t>(info->type_size);
  if (n % bs != 0 || bytes.size() != n / bs * ts) {
    throw Error(
        "dequantising " + std::string(info->name) + ": " + std::to_string(n) + " values need " +
        (n % bs ? "a multiple of " + std::to_string(bs) : std::to_string(n / bs * ts) + " bytes") +
        ", got " + std::to_string(bytes.size()) + " bytes");
  }
  const uint8_t* in = bytes.data();
  float* o = out.data();
  switch (type) {
    case GgmlType::F32: {
      if (n) std::memcpy(o, in, n * 4);
      return;
    }
    case GgmlType::F16: {
      for (uint64_t i = 0; i < n; ++i)
        put_bits(o + i,
                 blocks::f16_to_f32_bits(static_cast<uint16_t>(in[2 * i] | (in[2 * i + 1] << 8))));
      return;
    }
    case GgmlType::BF16: {
      for (uint64_t i = 0; i < n; ++i)
        put_bits(o + i,
                 (static_cast<uint32_t>(in[2 * i]) | (static_cast<uint32_t>(in[2 * i + 1]) << 8))
                     << 16);
      return;
    }
    default: break;
  }
  blocks::dequantize(*dtype_of(type), in, o, static_cast<int64_t>(n));
}

void dequantize_into(const GgufTensor& t, std::span<float> out, ProgressMeter* meter) {
  const std::string where = "gguf '" + t.file + "': tensor '" + t.name + "': ";
  if (!can_dequantize(t.type)) {
    throw Error(where + "dequantising " + std::string(ggml_type_name(t.type)) +
                " is not supported (supported: " + dequantizable_types() + ")");
  }
  if (out.size() != static_cast<uint64_t>(t.numel())) {
    throw Error(where + "the output buffer has " + std::to_string(out.size()) +
                " floats, the tensor " + std::to_string(t.numel()) + " values");
  }
  try {
    const GgmlTypeInfo info = ggml_type_info(t.type);
    const uint64_t bs = static_cast<uint64_t>(info.block_size);
    const uint64_t ts = static_cast<uint64_t>(info.type_size);
    const uint64_t n = out.size();
    if (!meter || n % bs != 0 || t.data.size() != n / bs * ts) {
      dequantize_blocks(t.type, t.data, out);  // (its errors describe a bad size)
      if (meter) meter->advance(n * 4);
      return;
    }
    const uint64_t chunk = std::max<uint64_t>(1, (uint64_t(1) << 20) / bs) * bs;  // values
    for (uint64_t v = 0; v < n; v += chunk) {
      const uint64_t m = std::min(chunk, n - v);
      dequantize_blocks(t.type, t.data.subspan(v / bs * ts, m / bs * ts), out.subspan(v, m));
      meter->advance(m * 4);
    }
  } catch (const Error& e) {
    throw Error(where + e.what());
  }
}

std::vector<float> dequantize(const GgufTensor& t) {
  std::vector<float> out(static_cast<size_t>(t.numel()));
  dequantize_into(t, out);
  return out;
}

}  // namespace luminal::io
