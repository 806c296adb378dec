// Exp2 on f32 (luminal/core/exp2.hpp) and its arrays on the CPU (luminal/cpu/vec_math.hpp): the
// error against the exact 2^x over every range of x, the special values, and the same bits from
// the AVX2 and the portable forms and from the array and the one-element forms (tails, in place).
#include "luminal/cpu/vec_math.hpp"

#include "luminal/core/exp2.hpp"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <random>
#include <vector>

#include "luminal/cpu/quant/isa.hpp"

namespace luminal::cpu {
namespace {

// |got - 2^x| in units of the float spacing at 2^x (2^-149 for a subnormal result).
double ulp_error(float x, float got) {
  const double exact = std::exp2(static_cast<double>(x));
  const float rounded = static_cast<float>(exact);
  const double ulp = std::fabs(static_cast<double>(std::nextafter(rounded, INFINITY)) -
                               static_cast<double>(rounded));
  return std::fabs(static_cast<double>(got) - exact) / ulp;
}

TEST(VecMath, Exp2IsWithinAnUlpAndAQuarterEverywhere) {
  // Every float bit pattern in steps of 97 over x in [-150, 128): about 23 million values, each
  // range of results (subnormal, around 1, near overflow) included.
  double worst = 0;
  float worst_x = 0;
  auto sweep = [&](uint32_t from, uint32_t to) {  // bit patterns, from < to
    for (uint64_t b = from; b < to; b += 97) {
      const float x = std::bit_cast<float>(static_cast<uint32_t>(b));
      if (!(x >= -150.0f && x < 128.0f)) continue;
      const double e = ulp_error(x, exp2_f32(x));
      if (e > worst) worst = e, worst_x = x;
    }
  };
  sweep(0x00000000u, std::bit_cast<uint32_t>(128.0f));   // +0 .. 128
  sweep(0x80000000u, std::bit_cast<uint32_t>(-150.0f));  // -0 .. -150
  std::printf("[vec_math] exp2: worst %.3f ulp at x = %.9g\n", worst, static_cast<double>(worst_x));
  EXPECT_LE(worst, 1.25) << "at x = " << worst_x;
  EXPECT_GT(worst, 0.5) << "a test that measures nothing";  // not correctly rounded everywhere
}

TEST(VecMath, Exp2SpecialValues) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_TRUE(std::isnan(exp2_f32(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_EQ(exp2_f32(inf), inf);
  EXPECT_EQ(exp2_f32(-inf), 0.0f);
  EXPECT_EQ(exp2_f32(128.0f), inf);
  EXPECT_EQ(exp2_f32(1000.0f), inf);
  EXPECT_TRUE(std::isfinite(exp2_f32(127.99f)));
  EXPECT_EQ(exp2_f32(-150.0f), 0.0f);  // 2^-150: half the least subnormal, ties to even
  EXPECT_EQ(exp2_f32(-1000.0f), 0.0f);
  EXPECT_EQ(exp2_f32(-149.9f), std::ldexp(1.0f, -149));
  EXPECT_EQ(exp2_f32(0.0f), 1.0f);
  EXPECT_EQ(exp2_f32(-0.0f), 1.0f);
  for (int k = -149; k <= 127; ++k)  // integers: exact powers of two, subnormals included
    EXPECT_EQ(exp2_f32(static_cast<float>(k)), std::ldexp(1.0f, k)) << "2^" << k;
}

TEST(VecMath, ArrayFormGivesTheSameBitsOnEveryIsa) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-160.0f, 140.0f);
  std::vector<float> x(1037);
  for (float& v : x)
    v = u(rng);
  x[3] = std::numeric_limits<float>::quiet_NaN();
  x[9] = -std::numeric_limits<float>::infinity();
  x[17] = std::numeric_limits<float>::infinity();
  x[20] = -149.5f;
  std::vector<uint32_t> want(x.size());
  for (size_t i = 0; i < x.size(); ++i)
    want[i] = std::bit_cast<uint32_t>(exp2_f32(x[i]));
  int isas = 0;
  for (quant::QuantIsa isa : quant::available_isas()) {
    quant::ScopedQuantIsa scope(isa);
    ++isas;
    for (int64_t n : {0, 1, 7, 8, 9, 15, 16, 31, 1037}) {  // the vector body and its tails
      std::vector<float> y(x.size() + 1, -7.0f);
      vec::exp2(x.data(), y.data(), n);
      for (int64_t i = 0; i < n; ++i)
        ASSERT_EQ(std::bit_cast<uint32_t>(y[i]), want[i])
            << quant::isa_name(isa) << " n " << n << " x " << x[i];
      EXPECT_EQ(y[n], -7.0f) << "wrote past n = " << n;  // the tail's masked store
    }
    std::vector<float> z(x);  // in place
    vec::exp2(z.data(), z.data(), static_cast<int64_t>(z.size()));
    for (size_t i = 0; i < z.size(); ++i)
      ASSERT_EQ(std::bit_cast<uint32_t>(z[i]), want[i]) << quant::isa_name(isa) << " in place";
  }
  EXPECT_GE(isas, 1);
}

}  // namespace
}  // namespace luminal::cpu
