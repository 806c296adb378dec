// cpu::int_mod_array (cpu/int_mod_array.hpp): the remainders of arrays whose divisor is one value
// (a multiply by a magic number) equal C's truncated remainder (num::int_mod) for every sign, the
// edges of int64, powers of two and divisors near 2^63; arrays of mixed divisors take the plain
// loop.
#include "luminal/cpu/int_mod_array.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <random>
#include <vector>

namespace luminal::cpu {
namespace {

constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

std::vector<int64_t> dividends(std::mt19937_64& rng) {
  std::vector<int64_t> x = {0, 1, -1, 2, -2, kMin, kMin + 1, kMax, kMax - 1, 65535, 65536, -65536};
  for (int shift = 1; shift < 64; ++shift) {  // 2^k - 1, 2^k, 2^k + 1 and their negations
    const uint64_t p = uint64_t{1} << shift;  // (in unsigned arithmetic: 2^63 wraps)
    for (uint64_t v : {p - 1, p, p + 1})
      x.insert(x.end(), {static_cast<int64_t>(v), static_cast<int64_t>(uint64_t{0} - v)});
  }
  for (int i = 0; i < 3000; ++i) {
    const int64_t r = static_cast<int64_t>(rng());
    x.push_back(r);
    x.push_back(r >> (rng() % 63));  // small magnitudes too
  }
  return x;
}

void expect_equal_to_int_mod(const std::vector<int64_t>& x, const std::vector<int64_t>& y) {
  std::vector<int64_t> d(x.size(), 7);
  int_mod_array(x.data(), y.data(), d.data(), static_cast<int64_t>(x.size()));
  for (size_t i = 0; i < x.size(); ++i)
    ASSERT_EQ(d[i], num::int_mod(x[i], y[i])) << x[i] << " % " << y[i];
}

TEST(CpuIntModArray, OneDivisorEqualsTruncatedRemainder) {
  std::mt19937_64 rng(7);
  const std::vector<int64_t> x = dividends(rng);
  std::vector<int64_t> divisors = {
      2,     3,          5,          7,    10,       255,  256,      32749,
      65536, 2147483647, 2147483629, kMax, kMax - 1, kMin, kMin + 1, (int64_t{1} << 62) + 1,
      0,     1,          -1,         -3,   -65536};
  for (int i = 0; i < 200; ++i)
    divisors.push_back(static_cast<int64_t>(rng()) >> (rng() % 63));
  for (int64_t b : divisors) {
    const std::vector<int64_t> y(x.size(), b);
    expect_equal_to_int_mod(x, y);
  }
}

TEST(CpuIntModArray, MixedDivisorsAndInPlace) {
  std::mt19937_64 rng(11);
  std::vector<int64_t> x = dividends(rng);
  std::vector<int64_t> y(x.size());
  for (int64_t& b : y)
    b = static_cast<int64_t>(rng() % 1000) - 500;
  y.back() = 0;
  expect_equal_to_int_mod(x, y);
  // d aliasing x, one divisor.
  const std::vector<int64_t> y7(x.size(), 7);
  std::vector<int64_t> want(x.size());
  for (size_t i = 0; i < x.size(); ++i)
    want[i] = num::int_mod(x[i], 7);
  int_mod_array(x.data(), y7.data(), x.data(), static_cast<int64_t>(x.size()));
  EXPECT_EQ(x, want);
}

}  // namespace
}  // namespace luminal::cpu
