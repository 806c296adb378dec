// The reference activation quantizers (quantize_ref.hpp), one block at a time, in f32.
// luminal/CMakeLists.txt compiles this file with -ffp-contract=off (no a * b + c becomes an FMA).
#include "luminal/core/quantize_ref.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>

#include "luminal/core/blocks.hpp"
#include "luminal/core/error.hpp"

namespace luminal::blocks {

namespace {

constexpr uint16_t kF16NaN = 0x7E00;
constexpr uint32_t kF32NaN = 0x7FC00000u;

void put16(uint8_t* p, uint16_t v) { std::memcpy(p, &v, 2); }

// One Q8_0 (with_sum false) or Q8_1 block of 32 values.
void q8_32(const float* x, uint8_t* out, bool with_sum) {
  uint8_t* qs = out + (with_sum ? 4 : 2);
  std::memset(out, 0, with_sum ? 36 : 34);
  float amax = 0;
  bool finite = true;
  for (int j = 0; j < 32; ++j) {
    finite = finite && std::isfinite(x[j]);
    amax = std::fmax(amax, std::fabs(x[j]));
  }
  if (!finite) {
    put16(out, kF16NaN);
    if (with_sum) put16(out + 2, kF16NaN);
    return;
  }
  const float d = amax / 127.0f;
  const float id = amax != 0 ? 127.0f / amax : 0.0f;
  if (id == 0 || !std::isfinite(id)) return;  // zeros, d = s = 0
  int sum = 0;
  for (int j = 0; j < 32; ++j) {
    const float p = x[j] * id;
    const int q = static_cast<int>(std::nearbyint(p));
    qs[j] = static_cast<uint8_t>(static_cast<int8_t>(q));
    sum += q;
  }
  put16(out, f32_to_f16_bits(d));
  if (with_sum) put16(out + 2, f32_to_f16_bits(d * static_cast<float>(sum)));
}

void q8_k_block(const float* x, uint8_t* out) {
  Q8_K b;
  std::memset(&b, 0, sizeof b);
  float amax = 0, max = 0;
  bool finite = true;
  for (int j = 0; j < 256; ++j) {
    finite = finite && std::isfinite(x[j]);
    const float ax = std::fabs(x[j]);
    if (ax > amax) {
      amax = ax;
      max = x[j];
    }
  }
  if (!finite) {
    std::memcpy(&b.d, &kF32NaN, 4);
  } else if (amax != 0) {
    const float iscale = -127.0f / max;
    if (std::isfinite(iscale)) {
      for (int j = 0; j < 256; ++j) {
        const float p = iscale * x[j];
        const int q = std::min(127, static_cast<int>(std::nearbyint(p)));
        b.qs[j] = static_cast<int8_t>(q);
        b.bsums[j / 16] = static_cast<int16_t>(b.bsums[j / 16] + q);
      }
      b.d = 1.0f / iscale;
    }
  }
  std::memcpy(out, &b, sizeof b);
}

void check(int64_t k, int block, const char* fn) {
  LUMINAL_ASSERT(k >= 0 && k % block == 0, std::string(fn) + ": " + std::to_string(k) +
                                               " values are not a whole number of blocks of " +
                                               std::to_string(block));
}

}  // namespace

void quantize_q8_0(const float* x, uint8_t* out, int64_t k) {
  check(k, 32, "quantize_q8_0");
  for (int64_t b = 0; b < k / 32; ++b)
    q8_32(x + 32 * b, out + 34 * b, false);
}

void quantize_q8_1(const float* x, uint8_t* out, int64_t k) {
  check(k, 32, "quantize_q8_1");
  for (int64_t b = 0; b < k / 32; ++b)
    q8_32(x + 32 * b, out + 36 * b, true);
}

void quantize_q8_k(const float* x, uint8_t* out, int64_t k) {
  check(k, 256, "quantize_q8_k");
  for (int64_t b = 0; b < k / 256; ++b)
    q8_k_block(x + 256 * b, out + 292 * b);
}

void quantize_reference(DType fmt, const float* x, uint8_t* out, int64_t k) {
  switch (fmt) {
    case DType::Q8_0: return quantize_q8_0(x, out, k);
    case DType::Q8_1: return quantize_q8_1(x, out, k);
    case DType::Q8_K: return quantize_q8_k(x, out, k);
    default:
      LUMINAL_ASSERT(false, "quantize_reference: " + std::string(name(fmt)) +
                                " is not an activation format (Q8_0, Q8_1, Q8_K)");
  }
}

}  // namespace luminal::blocks
