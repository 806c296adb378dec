#pragma once
// Random host buffers of any dtype, for the op tests of the backends (CPU and CUDA).
//
//   HostBuffer x = random_buffer(DType::BF16, 12, /*seed=*/1, -4, 4);
#include <cstdint>
#include <random>
#include <vector>

#include "luminal/core/blocks.hpp"
#include "luminal/core/dtype.hpp"
#include "luminal/runtime/host_buffer.hpp"

namespace luminal::testing {

/// n random elements of dtype t in [lo, hi] (integers: uniform integers in that range; Bool: 0/1;
/// block types: valid random blocks of values within about +-1, lo and hi ignored).
inline HostBuffer random_buffer(DType t, int64_t n, uint64_t seed, double lo = -4, double hi = 4) {
  if (is_block(t)) {
    HostBuffer q{t, std::vector<uint8_t>(static_cast<size_t>(storage_bytes(t, n)))};
    blocks::fill_valid_blocks(t, q.bytes, seed);
    return q;
  }
  HostBuffer b{t, std::vector<uint8_t>(static_cast<size_t>(n * size_bytes(t)))};
  std::mt19937_64 rng(seed);
  for (int64_t i = 0; i < n; ++i) {
    if (is_float(t)) {
      store_from_double(t, b.bytes.data(), i, std::uniform_real_distribution<double>(lo, hi)(rng));
    } else if (t == DType::Bool) {
      store_from_int64(t, b.bytes.data(), i, static_cast<int64_t>(rng() & 1));
    } else {
      std::uniform_int_distribution<int64_t> d(static_cast<int64_t>(lo), static_cast<int64_t>(hi));
      store_from_int64(t, b.bytes.data(), i, d(rng));
    }
  }
  return b;
}

}  // namespace luminal::testing
