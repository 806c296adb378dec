// pow(double) and pow(Tensor) (luminal/ir/elementwise_unary.cpp) on the ReferenceRuntime, against
// std::pow in double.
//
// Tolerances: |got - want| <= atol + rtol*|want|, want = std::pow of the inputs as rounded to the
// dtype, rounded to the dtype; rtol = atol = 4*eps(dtype), plus, in units of the compute epsilon ec
// (f64 for f64, f32 for the other float dtypes, which compute in f32):
//   rtol += (|p|+1)*ec for integral |p| <= 2^31 (repeated squaring: each squaring doubles the
//           relative error of the previous power), (|p*log2|x||+4)*ec otherwise (exp2(p*log2|x|):
//           the rounding of p*log2|x| is amplified by ln2*|p*log2|x||).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include "support/check.hpp"
#include "support/expect_error.hpp"
#include "support/run_graph.hpp"

namespace luminal {
namespace {

using testing::compute_eps;
using testing::expect_error_naming;
using testing::expect_within;
using testing::kFloatTypes;
using testing::kInf;
using testing::kNaN;
using testing::random_values;
using testing::round_to;
using testing::rounded;
using testing::run_unary;
using testing::Tol;
using testing::wrap_to;

// Integral exponents up to 2^31 are repeated squaring.
bool squaring_exponent(double p) { return p == std::trunc(p) && std::fabs(p) <= 0x1p31; }

double pow_tol_extra(double x, double p, double ec) {
  const bool integral = squaring_exponent(p);
  if (integral) return (std::fabs(p) + 1) * ec;
  double ylog = std::fabs(p * std::log2(std::fabs(x)));
  return ((std::isfinite(ylog) ? ylog : 0) + 4) * ec;
}

TEST(ElementwisePow, ScalarExponentFloat) {
  const double exps[] = {
      0,   1,   2,    3,       4,  5,    7,  16,  -1,           -2,   -3,   -16,   0.5, -0.5,
      1.5, 2.5, -2.5, 1.0 / 3, 17, 20.5, 33, -17, 4294967297.0, 1e10, kInf, -kInf, kNaN};
  uint64_t seed = 200;
  for (double p : exps) {
    const bool integral = squaring_exponent(p);
    for (DType t : kFloatTypes) {
      // Integral exponents take negative bases; the others NaN there.
      std::vector<double> in = random_values(48, integral ? -3 : 0, 3, seed++);
      in.insert(in.end(), {kNaN, kInf, -kInf, 0.0, -0.0, 1.0, -1.0, -2.0, 2.0, -0.5, 10.0, -10.0});
      in = rounded(in, t);
      std::vector<double> got = run_unary(t, in, [p](const Tensor& x) { return x.pow(p); });
      std::vector<double> want;
      for (double v : in) {
        // std::pow's rules (NaN for negative finite x with fractional p, pow(-inf, 2.5) = inf),
        // but +-0.5 are sqrt and rsqrt as in torch (not for f16): pow(-0, -0.5) = -inf.
        const bool root = (p == 0.5 || p == -0.5) && t != DType::F16;
        double w = root ? (p > 0 ? std::sqrt(v) : 1 / std::sqrt(v)) : std::pow(v, p);
        want.push_back(round_to(t, w));
      }
      const double e = epsilon(t), ec = compute_eps(t);
      expect_within(
          in, got, want,
          [&](size_t i) {
            return Tol{4 * e + pow_tol_extra(in[i], p, ec), 4 * e};
          },
          "pow(" + std::to_string(p) + ") " + std::string(name(t)));
    }
  }
}

TEST(ElementwisePow, IntegralExponentIsExactForSmallValues) {
  for (DType t : kFloatTypes) {
    std::vector<double> in = {-3, -2, -1, 0, 1, 2, 3};
    EXPECT_EQ(run_unary(t, in, [](const Tensor& x) { return x.pow(3.0); }),
              (std::vector<double>{-27, -8, -1, 0, 1, 8, 27}))
        << name(t);
    EXPECT_EQ(run_unary(t, in, [](const Tensor& x) { return x.pow(4.0); }),
              (std::vector<double>{81, 16, 1, 0, 1, 16, 81}))
        << name(t);
    std::vector<double> inv = run_unary(t, in, [](const Tensor& x) { return x.pow(-1.0); });
    EXPECT_EQ(inv[0], round_to(t, -1.0 / 3)) << name(t);
    EXPECT_EQ(inv[1], -0.5) << name(t);
    EXPECT_EQ(inv[3], kInf) << name(t);
    std::vector<double> z =
        run_unary(t, {kNaN, kInf, 0.0}, [](const Tensor& x) { return x.pow(0.0); });
    EXPECT_EQ(z, (std::vector<double>{1, 1, 1})) << name(t);
  }
}

TEST(ElementwisePow, LowPrecisionComputesInF32) {
  // 300^-2 = 1.1e-5 is representable in f16 although 300^2 is not.
  std::vector<double> in = rounded({300.0, 250.0, 0.01, 1e-3}, DType::F16);
  std::vector<double> got = run_unary(DType::F16, in, [](const Tensor& x) { return x.pow(-2.0); });
  std::vector<double> want;
  for (double v : in)
    want.push_back(round_to(DType::F16, std::pow(v, -2.0)));
  EXPECT_EQ(got, want);  // the last one overflows f16 to inf
  // bf16 x^16 for x = 3: exact 43046721 rounds once to bf16.
  std::vector<double> b =
      run_unary(DType::BF16, {3.0}, [](const Tensor& x) { return x.pow(16.0); });
  EXPECT_EQ(b[0], round_to(DType::BF16, 43046721.0));
}

TEST(ElementwisePow, Integer) {
  for (DType t : {DType::I8, DType::U8, DType::I32, DType::I64}) {
    std::vector<int64_t> in = {
        0, 1, 2, 3, 5, 7, 11, is_signed(t) ? -3 : 200, is_signed(t) ? -1 : 255};
    for (double p : {0.0, 1.0, 2.0, 3.0, 5.0, 16.0}) {
      Graph g;
      auto x = g.tensor("x", {static_cast<int64_t>(in.size())}, t);
      auto y = x.pow(p).output("y");
      ReferenceRuntime rt(g);
      rt.set(x, in);
      rt.execute();
      std::vector<int64_t> want;
      for (int64_t v : in) {
        uint64_t acc = 1;
        for (int k = 0; k < static_cast<int>(p); ++k)
          acc *= static_cast<uint64_t>(v);
        want.push_back(wrap_to(t, static_cast<int64_t>(acc)));
      }
      EXPECT_EQ(rt.get<int64_t>(y), want) << name(t) << " p=" << p;
      EXPECT_EQ(y.dtype(), t);
    }
    Graph g;
    auto x = g.tensor("x", {3}, t);
    expect_error_naming([&] { x.pow(-1.0); }, "pow");
    expect_error_naming([&] { x.pow(2.5); }, "pow");
    expect_error_naming([&] { x.pow(17.0); }, "pow");
  }
}

TEST(ElementwisePow, TensorExponent) {
  // std::pow semantics, including integral exponents of negative bases and the special cases of
  // C99 Annex F (pow(x, 0) = 1, pow(1, y) = 1, pow(-1, +-inf) = 1, signed zeros and infinities).
  std::vector<std::pair<double, double>> specials = {
      {0, 0},      {kNaN, 0},  {kInf, 0},    {1, kNaN},   {1, kInf},    {-1, kInf},   {-1, -kInf},
      {-2, 3},     {-2, 2},    {-2, -1},     {-2, -2},    {-2, 0.5},    {-0.5, 1.5},  {0, -1},
      {-0.0, -1},  {-0.0, -2}, {-0.0, 3},    {0, 2},      {0, 0.5},     {0, -0.5},    {kInf, -1},
      {kInf, 0.5}, {-kInf, 3}, {-kInf, 2},   {-kInf, -1}, {-kInf, -2},  {-kInf, 0.5}, {2, kInf},
      {0.5, kInf}, {2, -kInf}, {0.5, -kInf}, {-2, kInf},  {-0.5, kInf}, {kNaN, 1},    {2, kNaN},
      {-1, kNaN},  {-3, 16},   {-3, 15},     {-1.5, -7},  {10, -3},     {4, 0.5},     {8, 1.0 / 3}};
  uint64_t seed = 300;
  for (DType t : kFloatTypes) {
    std::vector<double> xs = random_values(40, -4, 4, seed++);
    std::vector<double> ps = random_values(40, -4, 4, seed++);
    for (size_t i = 0; i < 20; ++i)
      ps[i] = std::round(ps[i]);  // half integral exponents
    for (auto [x, p] : specials) {
      xs.push_back(x);
      ps.push_back(p);
    }
    xs = rounded(xs, t);
    ps = rounded(ps, t);
    Graph g;
    auto x = g.tensor("x", {static_cast<int64_t>(xs.size())}, t);
    auto p = g.tensor("p", {static_cast<int64_t>(ps.size())}, t);
    auto y = x.pow(p).output("y");
    EXPECT_EQ(y.dtype(), t);
    ReferenceRuntime rt(g);
    rt.set(x, xs);
    rt.set(p, ps);
    rt.execute();
    std::vector<double> got = rt.get<double>(y), want;
    for (size_t i = 0; i < xs.size(); ++i)
      want.push_back(round_to(t, std::pow(xs[i], ps[i])));
    const double e = epsilon(t), ec = compute_eps(t);
    expect_within(
        xs, got, want,
        [&](size_t i) {
          double ylog = std::fabs(ps[i] * std::log2(std::fabs(xs[i])));
          if (!std::isfinite(ylog)) ylog = 0;
          return Tol{4 * e + (ylog + 4) * ec, 4 * e};
        },
        "pow(tensor) " + std::string(name(t)));
    // Signs of zero results: pow(-0, 3) = -0, pow(-inf, -1) = -0.
    for (size_t i = 0; i < xs.size(); ++i) {
      double w = std::pow(xs[i], ps[i]);
      if (w == 0 && !std::isnan(got[i])) {
        EXPECT_EQ(std::signbit(got[i]), std::signbit(w)) << "pow(" << xs[i] << ", " << ps[i] << ")";
      }
    }
  }
}

TEST(ElementwisePow, TensorBroadcastsAndRejectsIntegers) {
  Graph g;
  auto x = g.tensor("x", {3, 1});
  auto p = g.tensor("p", {1, 4});
  auto y = x.pow(p).output("y");
  ReferenceRuntime rt(g);
  rt.set(x, std::vector<float>{2, -3, 0.5});
  rt.set(p, std::vector<float>{0, 1, 2, -1});
  rt.execute();
  EXPECT_EQ(rt.shape(y), (std::vector<int64_t>{3, 4}));
  EXPECT_EQ(rt.get<float>(y),
            (std::vector<float>{1, 2, 4, 0.5f, 1, -3, 9, -1.0f / 3, 1, 0.5f, 0.25f, 2}));
  auto xi = g.tensor("xi", {3}, DType::I32);
  auto bi = g.tensor("bi", {3}, DType::Bool);
  expect_error_naming([&] { xi.pow(xi); }, "pow");
  expect_error_naming([&] { bi.pow(bi); }, "pow");
}

}  // namespace
}  // namespace luminal
