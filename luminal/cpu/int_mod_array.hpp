#pragma once
// Integer remainders over arrays (internal): d[i] = num::int_mod(x[i], y[i]), the same values,
// with a fast path where every divisor of the array is one value, as a Mod by a constant is (the
// sampler's counter hash: a dozen remainders by constants an element, about 70% of its time on
// the CPU as a hardware division each). A constant divisor d > 1 becomes a multiply by a magic
// number and a shift (Granlund and Montgomery's round-up method for unsigned 64-bit division,
// exact for every dividend below 2^64; powers of two a mask), applied to |x| with the sign of x
// put back: C's truncated remainder, as int_mod.
#include <cstdint>

#include "luminal/cpu/elem_types.hpp"

namespace luminal::cpu {

__extension__ typedef unsigned __int128 u128_t;

/// n / d for every n < 2^64, by a multiply-high and shifts, d fixed (> 1).
class UnsignedDivider {
 public:
  explicit UnsignedDivider(uint64_t d) : d_(d) {
    pow2_ = (d & (d - 1)) == 0;
    // l = ceil(log2 d) (1..64); m = floor(2^64 (2^l - d) / d) + 1 fits 64 bits.
    l_ = 64 - __builtin_clzll(d - 1);
    if (!pow2_) {
      const u128_t num = static_cast<u128_t>((uint64_t{1} << l_) - d) << 64;
      m_ = static_cast<uint64_t>(num / d) + 1;
    }
  }
  uint64_t quotient(uint64_t n) const {
    if (pow2_) return n >> l_;
    const uint64_t t = static_cast<uint64_t>((static_cast<u128_t>(m_) * n) >> 64);
    return (t + ((n - t) >> 1)) >> (l_ - 1);
  }
  uint64_t remainder(uint64_t n) const { return pow2_ ? n & (d_ - 1) : n - quotient(n) * d_; }

 private:
  uint64_t d_, m_ = 0;
  int l_ = 0;
  bool pow2_ = false;
};

/// d[i] = num::int_mod(x[i], y[i]) for i < n (d may alias x or y).
inline void int_mod_array(const int64_t* x, const int64_t* y, int64_t* d, int64_t n) {
  if (n <= 0) return;
  const int64_t b = y[0];
  bool uniform = true;
  for (int64_t i = 1; i < n; ++i)
    uniform &= y[i] == b;
  // |b| > 1 (b = 0, 1 and -1 give 0 and take the plain loop; |INT64_MIN| is a power of two).
  if (!uniform || b == 0 || b == 1 || b == -1) {
    for (int64_t i = 0; i < n; ++i)
      d[i] = num::int_mod(x[i], y[i]);
    return;
  }
  const uint64_t ub = b < 0 ? uint64_t{0} - static_cast<uint64_t>(b) : static_cast<uint64_t>(b);
  const UnsignedDivider div(ub);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t a = x[i];
    const uint64_t ua = a < 0 ? uint64_t{0} - static_cast<uint64_t>(a) : static_cast<uint64_t>(a);
    const uint64_t r = div.remainder(ua);
    d[i] = a < 0 ? static_cast<int64_t>(uint64_t{0} - r) : static_cast<int64_t>(r);
  }
}

}  // namespace luminal::cpu
