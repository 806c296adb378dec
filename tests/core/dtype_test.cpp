#include "luminal/core/dtype.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "luminal/core/error.hpp"

namespace {

using luminal::DType;

constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

float bits_f32(uint32_t b) { return std::bit_cast<float>(b); }
uint32_t f32_bits(float f) { return std::bit_cast<uint32_t>(f); }

// Collects mismatches of a large sweep and reports the count plus the first few.
class Mismatches {
 public:
  void add(const std::string& what) {
    if (count_++ < 8) log_ << what << "\n";
  }
  int count() const { return count_; }
  std::string log() const { return log_.str(); }

 private:
  int count_ = 0;
  std::ostringstream log_;
};

std::string hex(uint32_t v) {
  std::ostringstream os;
  os << "0x" << std::hex << v;
  return os.str();
}

std::string describe(float f) {
  std::ostringstream os;
  os.precision(9);
  os << f << " (" << hex(f32_bits(f)) << ")";
  return os.str();
}

// ---------------------------------------------------------------------------------------------
// Independent reference model of a small binary float format, written from the field layout
// with std::ldexp and brute-force nearest-value search (no bit tricks shared with the library).
// ---------------------------------------------------------------------------------------------

struct Spec {
  const char* name;
  int exp_bits;
  int man_bits;
  int bias;
  bool ieee_specials;      // all-ones exponent is Inf/NaN (else E4M3: only S.1111.111 is NaN)
  uint32_t max_finite;     // bit pattern of the largest finite value
  uint32_t overflow_bits;  // what values beyond max_finite encode to (Inf, or max when saturating)
  uint16_t (*encode)(float);
  float (*decode)(uint32_t);

  int width() const { return 1 + exp_bits + man_bits; }
  uint32_t sign_bit() const { return 1u << (width() - 1); }
};

uint16_t enc_f16(float f) { return luminal::f32_to_f16_bits(f); }
uint16_t enc_bf16(float f) { return luminal::f32_to_bf16_bits(f); }
uint16_t enc_e4m3(float f) { return luminal::f32_to_f8e4m3_bits(f); }
uint16_t enc_e5m2(float f) { return luminal::f32_to_f8e5m2_bits(f); }
float dec_f16(uint32_t b) { return luminal::f16_bits_to_f32(static_cast<uint16_t>(b)); }
float dec_bf16(uint32_t b) { return luminal::bf16_bits_to_f32(static_cast<uint16_t>(b)); }
float dec_e4m3(uint32_t b) { return luminal::f8e4m3_bits_to_f32(static_cast<uint8_t>(b)); }
float dec_e5m2(uint32_t b) { return luminal::f8e5m2_bits_to_f32(static_cast<uint8_t>(b)); }

const Spec kF16{"f16", 5, 10, 15, true, 0x7BFF, 0x7C00, enc_f16, dec_f16};
const Spec kBF16{"bf16", 8, 7, 127, true, 0x7F7F, 0x7F80, enc_bf16, dec_bf16};
const Spec kE4M3{"e4m3", 4, 3, 7, false, 0x7E, 0x7E, enc_e4m3, dec_e4m3};
const Spec kE5M2{"e5m2", 5, 2, 15, true, 0x7B, 0x7B, enc_e5m2, dec_e5m2};

// Value of a pattern, treating an all-ones exponent as an ordinary binade (used for the one
// "virtual" value just past max_finite that rounding decisions need).
double ref_value_unbounded(uint32_t bits, const Spec& s) {
  const bool negative = (bits & s.sign_bit()) != 0;
  const int e = static_cast<int>((bits >> s.man_bits) & ((1u << s.exp_bits) - 1));
  const double m = static_cast<double>(bits & ((1u << s.man_bits) - 1));
  const double v = e == 0 ? std::ldexp(m, 1 - s.bias - s.man_bits)
                          : std::ldexp(1.0 + std::ldexp(m, -s.man_bits), e - s.bias);
  return negative ? -v : v;
}

double ref_decode(uint32_t bits, const Spec& s) {
  const bool negative = (bits & s.sign_bit()) != 0;
  const uint32_t e = (bits >> s.man_bits) & ((1u << s.exp_bits) - 1);
  const uint32_t m = bits & ((1u << s.man_bits) - 1);
  const uint32_t e_max = (1u << s.exp_bits) - 1;
  const uint32_t m_max = (1u << s.man_bits) - 1;
  if (s.ieee_specials && e == e_max) {
    const double special =
        m == 0 ? std::numeric_limits<double>::infinity() : std::numeric_limits<double>::quiet_NaN();
    return negative ? -special : special;
  }
  if (!s.ieee_specials && e == e_max && m == m_max) {
    return negative ? -std::nan("") : std::nan("");
  }
  return ref_value_unbounded(bits, s);
}

// Non-negative finite values of a format in increasing order, plus the virtual next value.
struct Ladder {
  std::vector<double> values;
  std::vector<uint32_t> patterns;
};

Ladder make_ladder(const Spec& s) {
  Ladder l;
  for (uint32_t b = 0; b <= s.max_finite + 1; ++b) {
    l.values.push_back(ref_value_unbounded(b, s));
    l.patterns.push_back(b);
  }
  return l;
}

// Brute-force RNE: the nearest ladder value by distance, ties to the even pattern.
uint32_t ref_encode(float f, const Spec& s, const Ladder& l) {
  const double x = std::fabs(static_cast<double>(f));
  const uint32_t sign = std::signbit(f) ? s.sign_bit() : 0u;
  if (std::isnan(f)) return 0xFFFFFFFFu;  // callers check NaN separately
  uint32_t pick;
  if (x > l.values.back()) {
    pick = l.patterns.back();
  } else {
    const auto it = std::lower_bound(l.values.begin(), l.values.end(), x);
    const size_t hi = static_cast<size_t>(it - l.values.begin());
    if (l.values[hi] == x) {
      pick = l.patterns[hi];
    } else {
      const size_t lo = hi - 1;
      const double d_lo = x - l.values[lo];
      const double d_hi = l.values[hi] - x;
      if (d_lo < d_hi) {
        pick = l.patterns[lo];
      } else if (d_hi < d_lo) {
        pick = l.patterns[hi];
      } else {
        pick = (l.patterns[lo] & 1u) == 0 ? l.patterns[lo] : l.patterns[hi];
      }
    }
  }
  if (pick > s.max_finite) pick = s.overflow_bits;
  return sign | pick;
}

void check_encode(float f, const Spec& s, const Ladder& l, Mismatches& bad) {
  const uint32_t want = ref_encode(f, s, l);
  const uint32_t got = s.encode(f);
  if (got != want) {
    bad.add(std::string(s.name) + " encode " + describe(f) + ": got " + hex(got) + " want " +
            hex(want));
  }
}

bool is_nan_pattern(uint32_t bits, const Spec& s) { return std::isnan(ref_decode(bits, s)); }

void exhaustive_decode(const Spec& s) {
  Mismatches bad;
  int checked = 0;
  for (uint32_t b = 0; b < (1u << s.width()); ++b, ++checked) {
    const double want = ref_decode(b, s);
    const float got = s.decode(b);
    const bool same_sign = std::signbit(got) == std::signbit(want);
    if (std::isnan(want)) {
      const bool quiet = (f32_bits(got) & 0x00400000u) != 0;
      if (!std::isnan(got) || !same_sign || !quiet) bad.add(std::string(s.name) + " " + hex(b));
    } else if (static_cast<double>(got) != want || !same_sign) {
      bad.add(std::string(s.name) + " decode " + hex(b) + ": got " + describe(got));
    }
  }
  EXPECT_EQ(checked, 1 << s.width());
  EXPECT_EQ(bad.count(), 0) << bad.log();
}

// Every finite value, every midpoint between neighbours and the f32 values one ulp either side of
// each midpoint, in both signs; also the points just past the largest finite value.
void exhaustive_encode(const Spec& s) {
  const Ladder l = make_ladder(s);
  Mismatches bad;
  int checked = 0;
  auto check_both_signs = [&](double v) {
    const float f = static_cast<float>(v);
    if (!std::isfinite(f) || static_cast<double>(f) != v) return;  // not an f32 value
    check_encode(f, s, l, bad);
    check_encode(-f, s, l, bad);
    checked += 2;
  };
  for (size_t k = 0; k + 1 < l.values.size(); ++k) {
    const double mid = (l.values[k] + l.values[k + 1]) / 2;
    check_both_signs(l.values[k]);
    check_both_signs(mid);
    check_both_signs(std::nextafter(static_cast<float>(mid), 0.0f));
    check_both_signs(std::nextafter(static_cast<float>(mid), kInf));
  }
  for (double big : {l.values.back(), l.values.back() * 1.5, 1e30, 3.0e38}) {
    check_both_signs(big);
  }
  check_both_signs(std::numeric_limits<float>::max());
  check_both_signs(std::numeric_limits<float>::denorm_min());
  EXPECT_GT(checked, 4 * static_cast<int>(l.values.size()));
  EXPECT_EQ(bad.count(), 0) << bad.log();
}

void every_finite_value_round_trips(const Spec& s) {
  Mismatches bad;
  for (uint32_t b = 0; b < (1u << s.width()); ++b) {
    if (is_nan_pattern(b, s) || std::isinf(ref_decode(b, s))) continue;
    if (s.encode(s.decode(b)) != b) bad.add(std::string(s.name) + " round trip " + hex(b));
  }
  EXPECT_EQ(bad.count(), 0) << bad.log();
}

// Random f32 bit patterns (all magnitudes, subnormals included) against the reference.
void random_encode(const Spec& s, int n) {
  const Ladder l = make_ladder(s);
  std::mt19937 rng(12345);
  Mismatches bad;
  for (int i = 0; i < n; ++i) {
    const float f = bits_f32(static_cast<uint32_t>(rng()));
    if (!std::isnan(f)) check_encode(f, s, l, bad);
  }
  // Values concentrated around the format's own range.
  std::uniform_int_distribution<int> exp_dist(-s.bias - s.man_bits - 2, s.bias + 3);
  std::uniform_real_distribution<float> frac(1.0f, 2.0f);
  for (int i = 0; i < n; ++i) {
    const float f = std::ldexp(frac(rng), exp_dist(rng)) * (i % 2 == 0 ? 1.0f : -1.0f);
    check_encode(f, s, l, bad);
  }
  EXPECT_EQ(bad.count(), 0) << bad.log();
}

void check_nan_and_inf_encoding(const Spec& s, uint32_t nan_bits, uint32_t inf_bits) {
  const float neg_nan = -kNaN;
  EXPECT_EQ(s.encode(kNaN), nan_bits) << s.name;
  EXPECT_EQ(s.encode(neg_nan), nan_bits | s.sign_bit()) << s.name;
  // A signalling NaN whose payload sits only in the low bits must stay a NaN.
  EXPECT_TRUE(is_nan_pattern(s.encode(bits_f32(0x7F800001u)), s)) << s.name;
  EXPECT_TRUE(is_nan_pattern(s.encode(bits_f32(0xFF800001u)), s)) << s.name;
  EXPECT_EQ(s.encode(bits_f32(0xFF800001u)) & s.sign_bit(), s.sign_bit()) << s.name;
  EXPECT_EQ(s.encode(kInf), inf_bits) << s.name;
  EXPECT_EQ(s.encode(-kInf), inf_bits | s.sign_bit()) << s.name;
  EXPECT_EQ(s.encode(0.0f), 0u) << s.name;
  EXPECT_EQ(s.encode(-0.0f), s.sign_bit()) << s.name;
}

// ---------------------------------------------------------------------------------------------
// f16
// ---------------------------------------------------------------------------------------------

TEST(DTypeF16, DecodeAllPatterns) { exhaustive_decode(kF16); }
TEST(DTypeF16, EncodeValuesAndMidpoints) { exhaustive_encode(kF16); }
TEST(DTypeF16, EveryFiniteValueRoundTrips) { every_finite_value_round_trips(kF16); }
TEST(DTypeF16, RandomFloatsMatchReference) { random_encode(kF16, 200000); }

TEST(DTypeF16, Specials) {
  check_nan_and_inf_encoding(kF16, 0x7E00, 0x7C00);
  EXPECT_EQ(luminal::f32_to_f16_bits(1.0f), 0x3C00);
  EXPECT_EQ(luminal::f32_to_f16_bits(-2.0f), 0xC000);
  EXPECT_EQ(luminal::f32_to_f16_bits(1.0f / 3.0f), 0x3555);
  EXPECT_EQ(luminal::f32_to_f16_bits(65504.0f), 0x7BFF);
  EXPECT_EQ(luminal::f32_to_f16_bits(65519.996f), 0x7BFF);
  EXPECT_EQ(luminal::f32_to_f16_bits(65520.0f), 0x7C00);  // tie with the next binade -> Inf
  EXPECT_EQ(luminal::f32_to_f16_bits(1e6f), 0x7C00);
  EXPECT_EQ(luminal::f32_to_f16_bits(-1e6f), 0xFC00);
  EXPECT_EQ(luminal::f32_to_f16_bits(std::numeric_limits<float>::max()), 0x7C00);
  // Subnormal boundaries.
  EXPECT_EQ(luminal::f32_to_f16_bits(std::ldexp(1.0f, -24)), 0x0001);
  EXPECT_EQ(luminal::f32_to_f16_bits(std::ldexp(1.0f, -25)), 0x0000);  // tie -> even (0)
  EXPECT_EQ(luminal::f32_to_f16_bits(std::nextafter(std::ldexp(1.0f, -25), 1.0f)), 0x0001);
  EXPECT_EQ(luminal::f32_to_f16_bits(std::ldexp(3.0f, -25)), 0x0002);  // tie -> even (2)
  EXPECT_EQ(luminal::f32_to_f16_bits(-std::ldexp(1.0f, -26)), 0x8000);
  EXPECT_EQ(luminal::f32_to_f16_bits(std::ldexp(1.0f, -14)), 0x0400);  // smallest normal
  EXPECT_EQ(luminal::f32_to_f16_bits(std::ldexp(1023.0f, -24)), 0x03FF);
  EXPECT_EQ(luminal::f32_to_f16_bits(std::ldexp(2047.0f, -25)), 0x0400);  // tie -> even
  EXPECT_EQ(luminal::f32_to_f16_bits(1e-40f), 0x0000);                    // f32 subnormal
  EXPECT_EQ(luminal::f32_to_f16_bits(-1e-40f), 0x8000);
  EXPECT_EQ(luminal::f16_bits_to_f32(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(luminal::f16_bits_to_f32(0x7BFF), 65504.0f);
  EXPECT_EQ(luminal::f16_bits_to_f32(0xFC00), -kInf);
  EXPECT_TRUE(std::signbit(luminal::f16_bits_to_f32(0x8000)));
  EXPECT_TRUE(std::isnan(luminal::f16_bits_to_f32(0x7C01)));
}

#ifdef __FLT16_MAX__
TEST(DTypeF16, MatchesCompilerFloat16) {
  std::mt19937 rng(777);
  Mismatches bad;
  int checked = 0;
  auto check = [&](float f) {
    const uint16_t want = std::bit_cast<uint16_t>(static_cast<_Float16>(f));
    const uint16_t got = luminal::f32_to_f16_bits(f);
    ++checked;
    if (std::isnan(f) ? !is_nan_pattern(got, kF16) : got != want) {
      bad.add("f16 vs _Float16 " + describe(f) + ": got " + hex(got) + " want " + hex(want));
    }
  };
  std::uniform_int_distribution<int> exp_dist(-27, 17);
  std::uniform_real_distribution<float> frac(1.0f, 2.0f);
  for (int i = 0; i < 1500000; ++i) {
    check(bits_f32(static_cast<uint32_t>(rng())));
    check(std::ldexp(frac(rng), exp_dist(rng)) * (i % 2 == 0 ? 1.0f : -1.0f));
  }
  for (uint32_t h = 0; h < 65536; ++h) {
    const float want = static_cast<float>(std::bit_cast<_Float16>(static_cast<uint16_t>(h)));
    const float got = luminal::f16_bits_to_f32(static_cast<uint16_t>(h));
    if (std::isnan(want) ? !std::isnan(got) : f32_bits(got) != f32_bits(want)) {
      bad.add("f16 decode vs _Float16 " + hex(h));
    }
  }
  EXPECT_EQ(checked, 3000000);
  EXPECT_EQ(bad.count(), 0) << bad.log();
}
#endif

// ---------------------------------------------------------------------------------------------
// bf16
// ---------------------------------------------------------------------------------------------

TEST(DTypeBF16, DecodeAllPatterns) { exhaustive_decode(kBF16); }
TEST(DTypeBF16, EncodeValuesAndMidpoints) { exhaustive_encode(kBF16); }
TEST(DTypeBF16, EveryFiniteValueRoundTrips) { every_finite_value_round_trips(kBF16); }
TEST(DTypeBF16, RandomFloatsMatchReference) { random_encode(kBF16, 200000); }

TEST(DTypeBF16, Specials) {
  check_nan_and_inf_encoding(kBF16, 0x7FC0, 0x7F80);
  EXPECT_EQ(luminal::f32_to_bf16_bits(1.0f), 0x3F80);
  EXPECT_EQ(luminal::f32_to_bf16_bits(bits_f32(0x3F808000u)), 0x3F80);  // tie -> even
  EXPECT_EQ(luminal::f32_to_bf16_bits(bits_f32(0x3F818000u)), 0x3F82);  // tie -> even
  EXPECT_EQ(luminal::f32_to_bf16_bits(bits_f32(0x3F808001u)), 0x3F81);
  EXPECT_EQ(luminal::f32_to_bf16_bits(std::numeric_limits<float>::max()), 0x7F80);  // -> Inf
  EXPECT_EQ(luminal::f32_to_bf16_bits(bits_f32(0x7F7F7FFFu)), 0x7F7F);
  EXPECT_EQ(luminal::f32_to_bf16_bits(bits_f32(0x7F7F8000u)), 0x7F80);  // tie -> even (Inf)
  // bf16 shares f32's exponent range, so f32 subnormals map onto bf16 subnormals.
  EXPECT_EQ(luminal::f32_to_bf16_bits(std::ldexp(1.0f, -133)), 0x0001);
  EXPECT_EQ(luminal::f32_to_bf16_bits(std::numeric_limits<float>::denorm_min()), 0x0000);
  EXPECT_EQ(luminal::f32_to_bf16_bits(bits_f32(0x007FFFFFu)), 0x0080);  // up to min normal
  EXPECT_EQ(luminal::bf16_bits_to_f32(0x0001), std::ldexp(1.0f, -133));
  EXPECT_EQ(luminal::bf16_bits_to_f32(0xFF80), -kInf);
}

// ---------------------------------------------------------------------------------------------
// TF32
// ---------------------------------------------------------------------------------------------

TEST(DTypeTF32, Rounding) {
  using luminal::round_to_tf32;
  EXPECT_EQ(round_to_tf32(1.0f), 1.0f);
  EXPECT_EQ(round_to_tf32(1.0f + std::ldexp(1.0f, -10)), 1.0f + std::ldexp(1.0f, -10));
  EXPECT_EQ(round_to_tf32(1.0f + std::ldexp(1.0f, -11)), 1.0f);  // tie -> even
  EXPECT_EQ(round_to_tf32(1.0f + std::ldexp(3.0f, -11)), 1.0f + std::ldexp(1.0f, -9));  // tie
  EXPECT_EQ(round_to_tf32(1.0f + std::ldexp(1.0f, -11) + std::ldexp(1.0f, -23)),
            1.0f + std::ldexp(1.0f, -10));
  EXPECT_EQ(round_to_tf32(-1.0f - std::ldexp(1.0f, -11) - std::ldexp(1.0f, -23)),
            -1.0f - std::ldexp(1.0f, -10));
  EXPECT_EQ(round_to_tf32(bits_f32(0x3FFFF000u)), 2.0f);  // carry into the exponent
  EXPECT_EQ(round_to_tf32(std::numeric_limits<float>::max()), kInf);
  EXPECT_EQ(f32_bits(round_to_tf32(bits_f32(0x7F7FEFFFu))), 0x7F7FE000u);
  EXPECT_EQ(round_to_tf32(kInf), kInf);
  EXPECT_EQ(round_to_tf32(-kInf), -kInf);
  EXPECT_EQ(f32_bits(round_to_tf32(-0.0f)), 0x80000000u);
  EXPECT_EQ(f32_bits(round_to_tf32(bits_f32(0x00001000u))), 0x00000000u);  // subnormal tie
  EXPECT_EQ(f32_bits(round_to_tf32(bits_f32(0x00003000u))), 0x00004000u);  // subnormal tie
  EXPECT_EQ(f32_bits(round_to_tf32(bits_f32(0x007FF000u))), 0x00800000u);  // to min normal
  const float nan = round_to_tf32(bits_f32(0xFF800001u));
  EXPECT_TRUE(std::isnan(nan));
  EXPECT_TRUE(std::signbit(nan));
  EXPECT_EQ(f32_bits(nan) & 0x1FFFu, 0u);
}

TEST(DTypeTF32, RandomValuesAreNearestWithZeroLowBits) {
  std::mt19937 rng(99);
  Mismatches bad;
  for (int i = 0; i < 200000; ++i) {
    const uint32_t bits = static_cast<uint32_t>(rng()) & 0x7F7FFFFFu;  // finite, positive
    const float f = bits_f32(bits);
    const uint32_t got = f32_bits(luminal::round_to_tf32(f));
    const uint32_t down = bits & ~0x1FFFu;
    const uint32_t up = down + 0x2000u;
    const double d_down = static_cast<double>(f) - static_cast<double>(bits_f32(down));
    // 0x7F800000 as an unbounded binade is 2^128; reaching it means overflow to Inf.
    const double up_value = up == 0x7F800000u ? std::ldexp(1.0, 128) : bits_f32(up);
    const double d_up = up_value - static_cast<double>(f);
    uint32_t want = d_down < d_up ? down : up;
    if (d_down == d_up) want = (down & 0x2000u) == 0 ? down : up;
    if (got != want) bad.add("tf32 " + describe(f) + " got " + hex(got) + " want " + hex(want));
  }
  EXPECT_EQ(bad.count(), 0) << bad.log();
}

// ---------------------------------------------------------------------------------------------
// FP8
// ---------------------------------------------------------------------------------------------

TEST(DTypeF8E4M3, DecodeAllPatterns) { exhaustive_decode(kE4M3); }
TEST(DTypeF8E4M3, EncodeValuesAndMidpoints) { exhaustive_encode(kE4M3); }
TEST(DTypeF8E4M3, EveryFiniteValueRoundTrips) { every_finite_value_round_trips(kE4M3); }
TEST(DTypeF8E4M3, RandomFloatsMatchReference) { random_encode(kE4M3, 100000); }

TEST(DTypeF8E4M3, SpecialsAndSaturation) {
  using luminal::f32_to_f8e4m3_bits;
  using luminal::f8e4m3_bits_to_f32;
  check_nan_and_inf_encoding(kE4M3, 0x7F, 0x7E);  // Inf saturates to 448
  EXPECT_EQ(f8e4m3_bits_to_f32(0x7E), 448.0f);
  EXPECT_EQ(f8e4m3_bits_to_f32(0xFE), -448.0f);
  EXPECT_EQ(f8e4m3_bits_to_f32(0x78), 256.0f);  // exponent 1111 is finite in E4M3
  EXPECT_EQ(f8e4m3_bits_to_f32(0x38), 1.0f);
  EXPECT_EQ(f8e4m3_bits_to_f32(0x08), std::ldexp(1.0f, -6));
  EXPECT_EQ(f8e4m3_bits_to_f32(0x01), std::ldexp(1.0f, -9));
  EXPECT_TRUE(std::isnan(f8e4m3_bits_to_f32(0x7F)));
  EXPECT_TRUE(std::isnan(f8e4m3_bits_to_f32(0xFF)));
  EXPECT_TRUE(std::signbit(f8e4m3_bits_to_f32(0xFF)));
  EXPECT_EQ(f32_to_f8e4m3_bits(448.0f), 0x7E);
  EXPECT_EQ(f32_to_f8e4m3_bits(449.0f), 0x7E);
  EXPECT_EQ(f32_to_f8e4m3_bits(464.0f), 0x7E);  // midpoint 448/480 ties to even 448
  EXPECT_EQ(f32_to_f8e4m3_bits(465.0f), 0x7E);  // would round to 480: saturates
  EXPECT_EQ(f32_to_f8e4m3_bits(480.0f), 0x7E);
  EXPECT_EQ(f32_to_f8e4m3_bits(1e9f), 0x7E);
  EXPECT_EQ(f32_to_f8e4m3_bits(-1e9f), 0xFE);
  EXPECT_EQ(f32_to_f8e4m3_bits(std::numeric_limits<float>::max()), 0x7E);
  EXPECT_EQ(f32_to_f8e4m3_bits(432.0f), 0x7E);  // tie between 416 (odd) and 448 (even)
  EXPECT_EQ(f32_to_f8e4m3_bits(400.0f), 0x7C);  // tie between 384 (even) and 416 (odd)
  EXPECT_EQ(f32_to_f8e4m3_bits(std::ldexp(1.0f, -10)), 0x00);   // tie -> 0
  EXPECT_EQ(f32_to_f8e4m3_bits(std::ldexp(3.0f, -10)), 0x02);   // tie -> even
  EXPECT_EQ(f32_to_f8e4m3_bits(std::ldexp(15.0f, -10)), 0x08);  // tie -> min normal
  EXPECT_EQ(f32_to_f8e4m3_bits(-std::ldexp(1.0f, -11)), 0x80);
}

TEST(DTypeF8E5M2, DecodeAllPatterns) { exhaustive_decode(kE5M2); }
TEST(DTypeF8E5M2, EncodeValuesAndMidpoints) { exhaustive_encode(kE5M2); }
TEST(DTypeF8E5M2, EveryFiniteValueRoundTrips) { every_finite_value_round_trips(kE5M2); }
TEST(DTypeF8E5M2, RandomFloatsMatchReference) { random_encode(kE5M2, 100000); }

TEST(DTypeF8E5M2, SpecialsAndSaturation) {
  using luminal::f32_to_f8e5m2_bits;
  using luminal::f8e5m2_bits_to_f32;
  check_nan_and_inf_encoding(kE5M2, 0x7E, 0x7B);  // Inf saturates to 57344 (SATFINITE)
  EXPECT_EQ(f8e5m2_bits_to_f32(0x7B), 57344.0f);
  EXPECT_EQ(f8e5m2_bits_to_f32(0x7C), kInf);
  EXPECT_EQ(f8e5m2_bits_to_f32(0xFC), -kInf);
  EXPECT_TRUE(std::isnan(f8e5m2_bits_to_f32(0x7D)));
  EXPECT_TRUE(std::isnan(f8e5m2_bits_to_f32(0x7E)));
  EXPECT_TRUE(std::isnan(f8e5m2_bits_to_f32(0xFF)));
  EXPECT_TRUE(std::signbit(f8e5m2_bits_to_f32(0xFF)));
  EXPECT_EQ(f8e5m2_bits_to_f32(0x3C), 1.0f);
  EXPECT_EQ(f8e5m2_bits_to_f32(0x04), std::ldexp(1.0f, -14));
  EXPECT_EQ(f8e5m2_bits_to_f32(0x01), std::ldexp(1.0f, -16));
  EXPECT_EQ(f32_to_f8e5m2_bits(57344.0f), 0x7B);
  EXPECT_EQ(f32_to_f8e5m2_bits(61439.0f), 0x7B);
  EXPECT_EQ(f32_to_f8e5m2_bits(61440.0f), 0x7B);  // midpoint to "65536": saturates
  EXPECT_EQ(f32_to_f8e5m2_bits(65536.0f), 0x7B);
  EXPECT_EQ(f32_to_f8e5m2_bits(-1e9f), 0xFB);
  EXPECT_EQ(f32_to_f8e5m2_bits(1.125f), 0x3C);  // tie -> even (1.0)
  EXPECT_EQ(f32_to_f8e5m2_bits(1.375f), 0x3E);  // tie -> even (1.5)
  EXPECT_EQ(f32_to_f8e5m2_bits(std::ldexp(1.0f, -17)), 0x00);
  EXPECT_EQ(f32_to_f8e5m2_bits(std::ldexp(3.0f, -17)), 0x02);
}

// ---------------------------------------------------------------------------------------------
// Properties, names, parsing
// ---------------------------------------------------------------------------------------------

struct Props {
  DType t;
  const char* name;
  int bits;
  int bytes;
  bool is_float;
  bool is_integer;
  bool is_signed;
  double max;
  double min;
  double eps;
};

const Props kProps[] = {
    {DType::F32, "f32", 32, 4, true, false, true, 3.4028234663852886e38, -3.4028234663852886e38,
     std::ldexp(1.0, -23)},
    {DType::F64, "f64", 64, 8, true, false, true, std::numeric_limits<double>::max(),
     -std::numeric_limits<double>::max(), std::ldexp(1.0, -52)},
    {DType::F16, "f16", 16, 2, true, false, true, 65504.0, -65504.0, std::ldexp(1.0, -10)},
    {DType::BF16, "bf16", 16, 2, true, false, true, 3.3895313892515355e38, -3.3895313892515355e38,
     std::ldexp(1.0, -7)},
    {DType::TF32, "tf32", 19, 4, true, false, true, 3.4011621342146535e38, -3.4011621342146535e38,
     std::ldexp(1.0, -10)},
    {DType::I8, "i8", 8, 1, false, true, true, 127.0, -128.0, 0.0},
    {DType::U8, "u8", 8, 1, false, true, false, 255.0, 0.0, 0.0},
    {DType::I16, "i16", 16, 2, false, true, true, 32767.0, -32768.0, 0.0},
    {DType::U16, "u16", 16, 2, false, true, false, 65535.0, 0.0, 0.0},
    {DType::I32, "i32", 32, 4, false, true, true, 2147483647.0, -2147483648.0, 0.0},
    {DType::I64, "i64", 64, 8, false, true, true, 9223372036854775808.0, -9223372036854775808.0,
     0.0},
    {DType::Bool, "bool", 1, 1, false, false, false, 1.0, 0.0, 0.0},
    {DType::F8E4M3, "f8e4m3", 8, 1, true, false, true, 448.0, -448.0, 0.125},
    {DType::F8E5M2, "f8e5m2", 8, 1, true, false, true, 57344.0, -57344.0, 0.25},
};

TEST(DTypeProps, EveryDTypeHasExpectedProperties) {
  ASSERT_EQ(std::size(kProps), std::size(luminal::kAllDTypes));
  for (size_t k = 0; k < std::size(kProps); ++k) {
    const Props& p = kProps[k];
    SCOPED_TRACE(p.name);
    EXPECT_EQ(p.t, luminal::kAllDTypes[k]);
    EXPECT_EQ(luminal::name(p.t), p.name);
    EXPECT_EQ(luminal::bit_width(p.t), p.bits);
    EXPECT_EQ(luminal::size_bytes(p.t), p.bytes);
    EXPECT_EQ(luminal::is_float(p.t), p.is_float);
    EXPECT_EQ(luminal::is_integer(p.t), p.is_integer);
    EXPECT_EQ(luminal::is_signed(p.t), p.is_signed);
    EXPECT_EQ(luminal::max_value(p.t), p.max);
    EXPECT_EQ(luminal::min_value(p.t), p.min);
    EXPECT_EQ(luminal::epsilon(p.t), p.eps);
  }
}

TEST(DTypeProps, LimitsAgreeWithTheConversions) {
  EXPECT_EQ(luminal::max_value(DType::F16), luminal::f16_bits_to_f32(0x7BFF));
  EXPECT_EQ(luminal::max_value(DType::BF16), luminal::bf16_bits_to_f32(0x7F7F));
  EXPECT_EQ(luminal::max_value(DType::TF32), bits_f32(0x7F7FE000u));
  EXPECT_EQ(luminal::max_value(DType::F8E4M3), luminal::f8e4m3_bits_to_f32(0x7E));
  EXPECT_EQ(luminal::max_value(DType::F8E5M2), luminal::f8e5m2_bits_to_f32(0x7B));
  EXPECT_EQ(luminal::epsilon(DType::F16), luminal::f16_bits_to_f32(0x3C01) - 1.0);
  EXPECT_EQ(luminal::epsilon(DType::BF16), luminal::bf16_bits_to_f32(0x3F81) - 1.0);
  EXPECT_EQ(luminal::epsilon(DType::F8E4M3), luminal::f8e4m3_bits_to_f32(0x39) - 1.0);
  EXPECT_EQ(luminal::epsilon(DType::F8E5M2), luminal::f8e5m2_bits_to_f32(0x3D) - 1.0);
  EXPECT_EQ(luminal::epsilon(DType::F32), std::numeric_limits<float>::epsilon());
  EXPECT_EQ(luminal::epsilon(DType::F64), std::numeric_limits<double>::epsilon());
  EXPECT_EQ(luminal::round_to_tf32(1.0f + static_cast<float>(luminal::epsilon(DType::TF32))),
            1.0f + static_cast<float>(luminal::epsilon(DType::TF32)));
}

TEST(DTypeNames, NameParseRoundTrip) {
  for (DType t : luminal::kAllDTypes) {
    EXPECT_EQ(luminal::parse_dtype(luminal::name(t)), t) << luminal::name(t);
  }
}

TEST(DTypeNames, Aliases) {
  const std::pair<const char*, DType> cases[] = {
      {"float32", DType::F32},
      {"float", DType::F32},
      {"float64", DType::F64},
      {"double", DType::F64},
      {"float16", DType::F16},
      {"half", DType::F16},
      {"bfloat16", DType::BF16},
      {"int8", DType::I8},
      {"uint8", DType::U8},
      {"int16", DType::I16},
      {"uint16", DType::U16},
      {"int32", DType::I32},
      {"int", DType::I32},
      {"int64", DType::I64},
      {"long", DType::I64},
      {"bool", DType::Bool},
      {"float8_e4m3fn", DType::F8E4M3},
      {"float8_e5m2", DType::F8E5M2},
      {"F32", DType::F32},
      {"F64", DType::F64},
      {"F16", DType::F16},
      {"BF16", DType::BF16},
      {"I8", DType::I8},
      {"U8", DType::U8},
      {"I16", DType::I16},
      {"U16", DType::U16},
      {"I32", DType::I32},
      {"I64", DType::I64},
      {"BOOL", DType::Bool},
      {"F8_E4M3", DType::F8E4M3},
      {"F8_E5M2", DType::F8E5M2},
      {"f8_e4m3", DType::F8E4M3},
      {"Float32", DType::F32},
      {"BFloat16", DType::BF16},
      {"F8E4M3", DType::F8E4M3},
  };
  for (const auto& [text, t] : cases)
    EXPECT_EQ(luminal::parse_dtype(text), t) << text;
}

TEST(DTypeNames, UnknownNameThrowsWithHelpfulMessage) {
  for (const char* bad : {"float8", "", "f33", "i128", "F8_E4M3FNUZ"}) {
    try {
      luminal::parse_dtype(bad);
      ADD_FAILURE() << "no throw for '" << bad << "'";
    } catch (const luminal::Error& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find(std::string("'") + bad + "'"), std::string::npos) << msg;
      for (DType t : luminal::kAllDTypes) {
        EXPECT_NE(msg.find(std::string(luminal::name(t))), std::string::npos) << msg;
      }
    }
  }
  EXPECT_THROW(luminal::parse_dtype("f32 "), luminal::Error);
}

// ---------------------------------------------------------------------------------------------
// load / store
// ---------------------------------------------------------------------------------------------

// An 8-element buffer big and aligned enough for any dtype.
struct Buffer {
  alignas(8) unsigned char bytes[64];
  Buffer() { std::memset(bytes, 0xAB, sizeof bytes); }
  void* data() { return bytes; }
};

int64_t int_round_trip(DType t, int64_t v) {
  Buffer b;
  luminal::store_from_int64(t, b.data(), 3, v);
  return luminal::load_as_int64(t, b.data(), 3);
}

int64_t double_to_int(DType t, double v) {
  Buffer b;
  luminal::store_from_double(t, b.data(), 2, v);
  return luminal::load_as_int64(t, b.data(), 2);
}

double double_round_trip(DType t, double v) {
  Buffer b;
  luminal::store_from_double(t, b.data(), 5, v);
  return luminal::load_as_double(t, b.data(), 5);
}

TEST(DTypeLoadStore, IntegersWrap) {
  EXPECT_EQ(int_round_trip(DType::I8, 300), 44);
  EXPECT_EQ(int_round_trip(DType::I8, -129), 127);
  EXPECT_EQ(int_round_trip(DType::U8, -1), 255);
  EXPECT_EQ(int_round_trip(DType::U8, 256), 0);
  EXPECT_EQ(int_round_trip(DType::I16, 70000), 4464);
  EXPECT_EQ(int_round_trip(DType::U16, -1), 65535);
  EXPECT_EQ(int_round_trip(DType::I32, int64_t{1} << 31), INT32_MIN);
  EXPECT_EQ(int_round_trip(DType::I32, (int64_t{1} << 32) + 5), 5);
  EXPECT_EQ(int_round_trip(DType::I64, INT64_MIN), INT64_MIN);
  EXPECT_EQ(int_round_trip(DType::I64, INT64_MAX), INT64_MAX);
  EXPECT_EQ(int_round_trip(DType::Bool, 256), 1);
  EXPECT_EQ(int_round_trip(DType::Bool, 0), 0);
  EXPECT_EQ(int_round_trip(DType::Bool, -7), 1);
}

TEST(DTypeLoadStore, DoublesToIntegersTruncateThenWrap) {
  EXPECT_EQ(double_to_int(DType::I8, -3.7), -3);
  EXPECT_EQ(double_to_int(DType::I8, 3.7), 3);
  EXPECT_EQ(double_to_int(DType::U8, 257.9), 1);
  EXPECT_EQ(double_to_int(DType::U8, -1.5), 255);
  EXPECT_EQ(double_to_int(DType::I32, 2147483648.0), INT32_MIN);
  EXPECT_EQ(double_to_int(DType::I32, std::nan("")), 0);
  EXPECT_EQ(double_to_int(DType::I64, std::nan("")), 0);
  EXPECT_EQ(double_to_int(DType::I64, 1e30), INT64_MAX);  // saturates into int64
  EXPECT_EQ(double_to_int(DType::I64, -1e30), INT64_MIN);
  EXPECT_EQ(double_to_int(DType::I64, -9223372036854775808.0), INT64_MIN);
  EXPECT_EQ(double_to_int(DType::I32, 1e30), -1);  // INT64_MAX wrapped to 32 bits
  EXPECT_EQ(double_to_int(DType::U8, std::numeric_limits<double>::infinity()), 255);
  EXPECT_EQ(double_to_int(DType::I16, -std::numeric_limits<double>::infinity()), 0);
  EXPECT_EQ(double_to_int(DType::Bool, 0.5), 1);
  EXPECT_EQ(double_to_int(DType::Bool, -0.0), 0);
  EXPECT_EQ(double_to_int(DType::Bool, 0.0), 0);
}

TEST(DTypeLoadStore, FloatsRound) {
  EXPECT_EQ(double_round_trip(DType::F64, 0.1), 0.1);
  EXPECT_EQ(double_round_trip(DType::F32, 0.1), static_cast<double>(0.1f));
  EXPECT_EQ(double_round_trip(DType::F16, 1.0 / 3.0), luminal::f16_bits_to_f32(0x3555));
  EXPECT_EQ(double_round_trip(DType::BF16, 1.0 / 3.0), luminal::bf16_bits_to_f32(0x3EAB));
  EXPECT_EQ(double_round_trip(DType::TF32, 1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -20)),
            1.0 + std::ldexp(1.0, -10));
  EXPECT_EQ(double_round_trip(DType::F8E4M3, 1e9), 448.0);
  EXPECT_EQ(double_round_trip(DType::F8E5M2, -1e300), -57344.0);
  EXPECT_EQ(double_round_trip(DType::F16, 1e300), std::numeric_limits<double>::infinity());
  EXPECT_TRUE(std::isnan(double_round_trip(DType::BF16, std::nan(""))));
  // Documented double rounding via f32: just above an f16 tie, but within half an f32 ulp of it,
  // rounds to the tie first and then to even.
  EXPECT_EQ(double_round_trip(DType::F16, 1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40)), 1.0);
  EXPECT_EQ(double_round_trip(DType::I64, 9007199254740993.0), 9007199254740992.0);
  // Float storage read back as int64 truncates toward zero; NaN gives 0.
  EXPECT_EQ(double_to_int(DType::F32, -2.9), -2);
  EXPECT_EQ(double_to_int(DType::F64, 2.9), 2);
  EXPECT_EQ(double_to_int(DType::F16, std::nan("")), 0);
  EXPECT_EQ(double_to_int(DType::F8E4M3, -300.0), -288);
}

TEST(DTypeLoadStore, Int64IntoFloats) {
  EXPECT_EQ(int_round_trip(DType::F64, (int64_t{1} << 53) + 1), int64_t{1} << 53);
  EXPECT_EQ(int_round_trip(DType::F32, 16777217), 16777216);
  EXPECT_EQ(int_round_trip(DType::F16, 2049), 2048);  // tie -> even
  EXPECT_EQ(int_round_trip(DType::F16, 2051), 2052);  // tie -> even
  EXPECT_EQ(int_round_trip(DType::BF16, -257), -256);
  EXPECT_EQ(int_round_trip(DType::TF32, 2049), 2048);
  EXPECT_EQ(int_round_trip(DType::F8E4M3, 1000), 448);
  EXPECT_EQ(int_round_trip(DType::F8E5M2, -100000), -57344);
}

TEST(DTypeLoadStore, EveryDTypeRoundTripsSmallValuesAndTouchesOnlyItsElement) {
  for (DType t : luminal::kAllDTypes) {
    SCOPED_TRACE(std::string(luminal::name(t)));
    const int64_t v = t == DType::Bool ? 1 : (luminal::is_signed(t) ? -3 : 3);
    Buffer b;
    luminal::store_from_int64(t, b.data(), 2, v);
    EXPECT_EQ(luminal::load_as_int64(t, b.data(), 2), v);
    EXPECT_EQ(luminal::load_as_double(t, b.data(), 2), static_cast<double>(v));
    const int size = luminal::size_bytes(t);
    for (int k = 0; k < static_cast<int>(sizeof b.bytes); ++k) {
      if (k < 2 * size || k >= 3 * size) {
        EXPECT_EQ(b.bytes[k], 0xAB) << "byte " << k;
      }
    }
    luminal::store_from_double(t, b.data(), 0, 2.0);
    EXPECT_EQ(luminal::load_as_double(t, b.data(), 0), t == DType::Bool ? 1.0 : 2.0);
    EXPECT_EQ(luminal::load_as_int64(t, b.data(), 2), v);  // neighbour untouched
  }
}

TEST(DTypeLoadStore, LoadsExistingBuffers) {
  const int8_t i8[] = {-128, 127, 5};
  EXPECT_EQ(luminal::load_as_double(DType::I8, i8, 0), -128.0);
  EXPECT_EQ(luminal::load_as_int64(DType::I8, i8, 1), 127);
  const uint16_t u16[] = {1, 65535};
  EXPECT_EQ(luminal::load_as_int64(DType::U16, u16, 1), 65535);
  const int64_t i64[] = {0, (int64_t{1} << 53) + 1};
  EXPECT_EQ(luminal::load_as_int64(DType::I64, i64, 1), (int64_t{1} << 53) + 1);
  const uint16_t halves[] = {0x3C00, 0xC200, 0x7E00};
  EXPECT_EQ(luminal::load_as_double(DType::F16, halves, 1), -3.0);
  EXPECT_EQ(luminal::load_as_int64(DType::F16, halves, 1), -3);
  EXPECT_EQ(luminal::load_as_int64(DType::F16, halves, 2), 0);  // NaN
  const uint8_t bools[] = {0, 1, 2};
  EXPECT_EQ(luminal::load_as_double(DType::Bool, bools, 2), 1.0);
  const uint8_t f8[] = {0x38, 0xFE};
  EXPECT_EQ(luminal::load_as_double(DType::F8E4M3, f8, 1), -448.0);
  EXPECT_EQ(luminal::load_as_double(DType::F8E5M2, f8, 0), 0.5);
  const double f64[] = {1e300};
  EXPECT_EQ(luminal::load_as_int64(DType::F64, f64, 0), INT64_MAX);  // saturates
}

}  // namespace
