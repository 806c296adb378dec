// Binary elementwise high-level ops (luminal/ir/elementwise_binary.cpp, division.cpp) on the
// ReferenceRuntime, against plain loops: arithmetic, fmod/remainder, minimum/maximum/clamp and the
// operators with scalars on either side (comparisons, logic and where are in
// elementwise_logic_test.cpp).
//
// Float references are computed in double from the inputs as rounded to the dtype (scalars too:
// a scalar operand takes the tensor's dtype) and rounded to the output dtype; the bound is
// |got - want| <= 4*eps(dtype)*(1 + |want|) (add/sub/mul/div round once; division is checked
// bit for bit against IEEE in tests/runtime/op_semantics_test.cpp).
// fmod, minimum/maximum, clamp and all integer ops are exact.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>

#include "support/binary_check.hpp"
#include "support/check.hpp"
#include "support/expect_error.hpp"

namespace luminal {
namespace {

using testing::BinaryOp;
using testing::check_binary;
using testing::expect_error_naming;
using testing::kFloatTypes;
using testing::kInf;
using testing::kNaN;
using testing::random_ints;
using testing::random_values;
using testing::round_to;
using testing::rounded;
using testing::wrap_to;

const std::vector<double> kSpecialsA = {kNaN, kInf, -kInf, 0.0, -0.0, 1.5, -2.75, 1e3};
const std::vector<double> kSpecialsB = {1.0, -2.0, 0.0, kInf, kNaN, -0.0, -kInf, 0.375, 3.0};

// ---- arithmetic ----

TEST(ElementwiseBinary, FloatArithmeticWithSpecialsAndBroadcast) {
  const std::vector<
      std::tuple<std::string, BinaryOp, std::function<double(double, double)>, double>>
      ops = {
          {"add", [](const Tensor& a, const Tensor& b) { return a.add(b); },
           [](double a, double b) { return a + b; }, 4},
          {"+", [](const Tensor& a, const Tensor& b) { return a + b; },
           [](double a, double b) { return a + b; }, 4},
          {"sub", [](const Tensor& a, const Tensor& b) { return a.sub(b); },
           [](double a, double b) { return a - b; }, 4},
          {"-", [](const Tensor& a, const Tensor& b) { return a - b; },
           [](double a, double b) { return a - b; }, 4},
          {"mul", [](const Tensor& a, const Tensor& b) { return a.mul(b); },
           [](double a, double b) { return a * b; }, 4},
          {"*", [](const Tensor& a, const Tensor& b) { return a * b; },
           [](double a, double b) { return a * b; }, 4},
          {"div", [](const Tensor& a, const Tensor& b) { return a.div(b); },
           [](double a, double b) { return a / b; }, 4},
          {"/", [](const Tensor& a, const Tensor& b) { return a / b; },
           [](double a, double b) { return a / b; }, 4},
      };
  uint64_t seed = 1;
  for (DType t : kFloatTypes) {
    for (const auto& [n, op, ref, tol] : ops) {
      const int64_t na = static_cast<int64_t>(kSpecialsA.size()),
                    nb = static_cast<int64_t>(kSpecialsB.size());
      check_binary(t, n + " [a,1]x[1,b]", op, ref, {na, 1}, kSpecialsA, {1, nb}, kSpecialsB, tol);
      check_binary(t, n + " [2,3,4]x[4]", op, ref, {2, 3, 4}, random_values(24, -50, 50, seed), {4},
                   random_values(4, 0.5, 20, seed + 1), tol);
      check_binary(t, n + " [3]x[2,1,3]", op, ref, {3}, random_values(3, -50, 50, seed + 2),
                   {2, 1, 3}, random_values(6, -20, -0.5, seed + 3), tol);
      check_binary(t, n + " []x[5]", op, ref, {}, {2.5}, {5}, random_values(5, 1, 9, seed + 4),
                   tol);
      seed += 5;
    }
  }
}

TEST(ElementwiseBinary, LowPrecisionDivisionComputesInF32) {
  // 60000 / 30000 in f16: 1/30000 is subnormal in f16, but the division runs in f32.
  for (DType t : {DType::F16, DType::BF16}) {
    check_binary(
        t, "div", [](const Tensor& a, const Tensor& b) { return a / b; },
        [](double a, double b) { return a / b; }, {3}, {60000, 1e-3, 7}, {3}, {30000, 3e-4, 60000},
        2);
  }
}

TEST(ElementwiseBinary, IntegerArithmeticWraps) {
  for (DType t : {DType::I8, DType::U8, DType::I32, DType::I64}) {
    const double lo = min_value(t), hi = max_value(t);
    std::vector<double> a = {0, 1, 7, hi, lo, is_signed(t) ? -7.0 : 200.0};
    std::vector<double> b = {1, 3, is_signed(t) ? -3.0 : 250.0, 0, hi};
    auto w = [t](auto f) {
      return [t, f](double x, double y) {
        return static_cast<double>(
            wrap_to(t, static_cast<int64_t>(f(static_cast<uint64_t>(static_cast<int64_t>(x)),
                                              static_cast<uint64_t>(static_cast<int64_t>(y))))));
      };
    };
    const int64_t na = static_cast<int64_t>(a.size()), nb = static_cast<int64_t>(b.size());
    if (t == DType::I64) continue;  // extremes of i64 are not exact in double: checked below
    check_binary(
        t, "add", [](const Tensor& x, const Tensor& y) { return x + y; },
        w([](uint64_t x, uint64_t y) { return x + y; }), {na, 1}, a, {1, nb}, b, 0);
    check_binary(
        t, "sub", [](const Tensor& x, const Tensor& y) { return x - y; },
        w([](uint64_t x, uint64_t y) { return x - y; }), {na, 1}, a, {1, nb}, b, 0);
    check_binary(
        t, "mul", [](const Tensor& x, const Tensor& y) { return x * y; },
        w([](uint64_t x, uint64_t y) { return x * y; }), {na, 1}, a, {1, nb}, b, 0);
  }
  // i64 extremes, exactly.
  Graph g;
  auto x = g.tensor("x", {4}, DType::I64);
  auto y = g.tensor("y", {4}, DType::I64);
  auto s = (x + y).output("s");
  auto d = (x - y).output("d");
  auto m = (x * y).output("m");
  ReferenceRuntime rt(g);
  const int64_t mx = std::numeric_limits<int64_t>::max(), mn = std::numeric_limits<int64_t>::min();
  rt.set(x, std::vector<int64_t>{mx, mn, mn, 3});
  rt.set(y, std::vector<int64_t>{1, 1, -1, -4});
  rt.execute();
  EXPECT_EQ(rt.get<int64_t>(s), (std::vector<int64_t>{mn, mn + 1, mx, -1}));
  EXPECT_EQ(rt.get<int64_t>(d), (std::vector<int64_t>{mx - 1, mx, mn + 1, 7}));
  EXPECT_EQ(rt.get<int64_t>(m), (std::vector<int64_t>{mx, mn, mn, -12}));
}

TEST(ElementwiseBinary, IntegerDivisionIsAnError) {
  Graph g;
  auto x = g.tensor("x", {3}, DType::I32);
  auto b = g.tensor("b", {3}, DType::Bool);
  expect_error_naming([&] { x.div(x); }, "div");
  expect_error_naming([&] { x / x; }, "div");
  expect_error_naming([&] { x / 2.0; }, "div");
  expect_error_naming([&] { 2.0 / x; }, "div");
  expect_error_naming([&] { b / b; }, "div");
}

// ---- fmod and remainder ----

double py_remainder(double a, double b) {
  double r = std::fmod(a, b);
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

TEST(ElementwiseBinary, FmodAndRemainderFloat) {
  std::vector<double> a = {-7, 7, -7, 7, 6, -6, 5.5, -5.5, kInf, kNaN, 0, 1e-3, -1e-3, 100.25};
  std::vector<double> b = {3, -3, -3, 3, 3, 3, 2, 2, 3, 3, 3, 0, 0, 0.75};
  const int64_t n = static_cast<int64_t>(a.size());
  for (DType t : kFloatTypes) {
    check_binary(
        t, "fmod", [](const Tensor& x, const Tensor& y) { return x.fmod(y); },
        [](double x, double y) { return std::fmod(x, y); }, {n}, a, {n}, b, 0);
    check_binary(
        t, "%", [](const Tensor& x, const Tensor& y) { return x % y; },
        [](double x, double y) { return std::fmod(x, y); }, {n}, a, {n}, b, 0);
    check_binary(
        t, "remainder", [](const Tensor& x, const Tensor& y) { return x.remainder(y); },
        py_remainder, {n}, a, {n}, b, 4);
    // Infinite divisors: fmod keeps x; Python's remainder moves negative x to +inf (and -inf).
    check_binary(
        t, "remainder inf", [](const Tensor& x, const Tensor& y) { return x.remainder(y); },
        py_remainder, {4, 1}, {5, -5, 0, 2.5}, {1, 2}, {kInf, -kInf}, 4);
    check_binary(
        t, "fmod random", [](const Tensor& x, const Tensor& y) { return x.fmod(y); },
        [](double x, double y) { return std::fmod(x, y); }, {5, 4}, random_values(20, -100, 100, 3),
        {4}, {-7.5, 3, 0.25, -1}, 0);
    check_binary(
        t, "remainder random", [](const Tensor& x, const Tensor& y) { return x.remainder(y); },
        py_remainder, {5, 4}, random_values(20, -100, 100, 4), {4}, {-7.5, 3, 0.25, -1}, 4);
  }
}

TEST(ElementwiseBinary, FmodAndRemainderInteger) {
  for (DType t : {DType::I8, DType::I32, DType::I64, DType::U8}) {
    std::vector<double> a = {-7, 7, -8, 8, 0, 5, 100, -100, min_value(t), max_value(t)};
    std::vector<double> b = {3, -3, 2, -1, 0};
    if (!is_signed(t)) {
      a = {7, 8, 0, 5, 100, 255};
      b = {3, 2, 1, 0, 7};
    }
    if (t == DType::I64) a.resize(8);  // its extremes are not exact in double
    auto c_mod = [](double x, double y) {
      int64_t p = static_cast<int64_t>(x), q = static_cast<int64_t>(y);
      return q == 0 || q == -1 ? 0.0 : static_cast<double>(p % q);  // x % 0 == 0; no min % -1 trap
    };
    auto py_mod = [&](double x, double y) {
      int64_t q = static_cast<int64_t>(y);
      int64_t r = static_cast<int64_t>(c_mod(x, y));
      if (r != 0 && ((r < 0) != (q < 0))) r += q;
      return static_cast<double>(r);
    };
    const int64_t na = static_cast<int64_t>(a.size()), nb = static_cast<int64_t>(b.size());
    check_binary(
        t, "fmod", [](const Tensor& x, const Tensor& y) { return x.fmod(y); }, c_mod, {na, 1}, a,
        {nb}, b, 0);
    check_binary(
        t, "%", [](const Tensor& x, const Tensor& y) { return x % y; }, c_mod, {na, 1}, a, {nb}, b,
        0);
    check_binary(
        t, "remainder", [](const Tensor& x, const Tensor& y) { return x.remainder(y); }, py_mod,
        {na, 1}, a, {nb}, b, 0);
  }
  Graph g;
  auto x = g.tensor("x", {3}, DType::I32);
  auto r = (x % 4.0).output("r");
  ReferenceRuntime rt(g);
  rt.set(x, std::vector<int>{-9, 9, -8});
  rt.execute();
  EXPECT_EQ(rt.get<int>(r), (std::vector<int>{-1, 1, 0}));
  expect_error_naming([&] { x % 2.5; }, "fmod");
  auto b = g.tensor("b", {3}, DType::Bool);
  expect_error_naming([&] { b.fmod(b); }, "fmod");
  expect_error_naming([&] { b.remainder(b); }, "remainder");
}

// ---- minimum, maximum, clamp ----

double nan_min(double a, double b) {
  return std::isnan(a) || std::isnan(b) ? kNaN : std::min(a, b);
}
double nan_max(double a, double b) {
  return std::isnan(a) || std::isnan(b) ? kNaN : std::max(a, b);
}

TEST(ElementwiseBinary, MinimumMaximumPropagateNaN) {
  for (DType t : kFloatTypes) {
    const int64_t na = static_cast<int64_t>(kSpecialsA.size()),
                  nb = static_cast<int64_t>(kSpecialsB.size());
    check_binary(
        t, "minimum", [](const Tensor& a, const Tensor& b) { return a.minimum(b); }, nan_min,
        {na, 1}, kSpecialsA, {1, nb}, kSpecialsB, 0);
    check_binary(
        t, "maximum", [](const Tensor& a, const Tensor& b) { return a.maximum(b); }, nan_max,
        {na, 1}, kSpecialsA, {1, nb}, kSpecialsB, 0);
  }
  for (DType t : {DType::I8, DType::U8, DType::I32, DType::I64}) {
    std::vector<double> a = {0, 5, min_value(t), 100},
                        b = {3, max_value(t) > 1e15 ? 1e15 : max_value(t)};
    check_binary(
        t, "minimum", [](const Tensor& x, const Tensor& y) { return x.minimum(y); }, nan_min,
        {4, 1}, a, {2}, b, 0);
    check_binary(
        t, "maximum", [](const Tensor& x, const Tensor& y) { return x.maximum(y); }, nan_max,
        {4, 1}, a, {2}, b, 0);
  }
}

TEST(ElementwiseBinary, ClampScalarBounds) {
  for (DType t : kFloatTypes) {
    std::vector<double> in = rounded({kNaN, kInf, -kInf, -3, -1, 0, 0.5, 2, 7}, t);
    Graph g;
    auto x = g.tensor("x", {9}, t);
    auto c = x.clamp(-1.5, 2.25).output("c");
    ReferenceRuntime rt(g);
    rt.set(x, in);
    rt.execute();
    testing::expect_close(rt.get<double>(c), {kNaN, 2.25, -1.5, -1.5, -1, 0, 0.5, 2, 2.25}, {0, 0},
                          "clamp");
    expect_error_naming([&] { x.clamp(2, 1); }, "clamp");
  }
  for (DType t : {DType::I8, DType::U8, DType::I32, DType::I64}) {
    Graph g;
    auto x = g.tensor("x", {5}, t);
    auto c = x.clamp(2, 100).output("c");
    ReferenceRuntime rt(g);
    rt.set(x, std::vector<int64_t>{0, 2, 50, 100, 127});
    rt.execute();
    EXPECT_EQ(rt.get<int64_t>(c), (std::vector<int64_t>{2, 2, 50, 100, 100})) << name(t);
    expect_error_naming([&] { x.clamp(0.5, 3); }, "clamp");
  }
}

TEST(ElementwiseBinary, IntegerScalarsOutsideTheDtypeRange) {
  // Bounds and comparison scalars beyond the dtype's range act as their true values, not wrapped.
  for (DType t : {DType::I8, DType::U8, DType::I32, DType::I64}) {
    std::vector<int64_t> in = {0, 5, static_cast<int64_t>(min_value(t)), 100};
    Graph g;
    auto x = g.tensor("x", {4}, t);
    auto c = x.clamp(-1e30, 1e30).output("c");
    auto c2 = x.clamp(-1e30, 50).output("c2");
    auto c3 = x.clamp(3, 1e30).output("c3");
    auto lt = x.lt(-1e30).output("lt");
    auto le = x.le(1e30).output("le");
    auto gt = x.gt(-1e30).output("gt");
    auto ge = (x >= 1e30).output("ge");
    auto eq = x.eq(-1e30).output("eq");
    auto ne = x.ne(1e30).output("ne");
    auto ltm = x.lt(-1).output("ltm");  // in range for signed, below the range for unsigned
    ReferenceRuntime rt(g);
    rt.set(x, in);
    rt.execute();
    std::vector<int64_t> wc2, wc3, wltm;
    for (int64_t v : in) {
      wc2.push_back(std::min<int64_t>(v, 50));
      wc3.push_back(std::max<int64_t>(v, 3));
      wltm.push_back(v < -1);
    }
    std::string n(name(t));
    EXPECT_EQ(rt.get<int64_t>(c), in) << n;
    EXPECT_EQ(rt.get<int64_t>(c2), wc2) << n;
    EXPECT_EQ(rt.get<int64_t>(c3), wc3) << n;
    EXPECT_EQ(rt.get<int>(lt), (std::vector<int>{0, 0, 0, 0})) << n;
    EXPECT_EQ(rt.get<int>(le), (std::vector<int>{1, 1, 1, 1})) << n;
    EXPECT_EQ(rt.get<int>(gt), (std::vector<int>{1, 1, 1, 1})) << n;
    EXPECT_EQ(rt.get<int>(ge), (std::vector<int>{0, 0, 0, 0})) << n;
    EXPECT_EQ(rt.get<int>(eq), (std::vector<int>{0, 0, 0, 0})) << n;
    EXPECT_EQ(rt.get<int>(ne), (std::vector<int>{1, 1, 1, 1})) << n;
    EXPECT_EQ(rt.get<int64_t>(ltm), wltm) << n;
    EXPECT_EQ(rt.shape(lt), (std::vector<int64_t>{4}));
    EXPECT_EQ(lt.dtype(), DType::Bool);
    if (t == DType::I64) {  // 2^63 is the first value above the range (max_value rounds to it)
      Graph g2;
      auto y = g2.tensor("y", {2}, t);
      auto below = y.lt(9223372036854775808.0).output("below");
      ReferenceRuntime rt2(g2);
      rt2.set(y, std::vector<int64_t>{std::numeric_limits<int64_t>::max(), 0});
      rt2.execute();
      EXPECT_EQ(rt2.get<int>(below), (std::vector<int>{1, 1}));
    }
    // A clamp whose whole interval lies outside the dtype has no representable answer.
    expect_error_naming([&] { x.clamp(1e30, 1e31); }, "clamp");
  }
}

TEST(ElementwiseBinary, ClampTensorBoundsBroadcast) {
  Graph g;
  auto x = g.tensor("x", {2, 3});
  auto lo = g.tensor("lo", {3});
  auto hi = g.tensor("hi", {2, 1});
  auto c = x.clamp(lo, hi).output("c");
  ReferenceRuntime rt(g);
  rt.set(x, std::vector<float>{-5, 0, 5, NAN, 0.5f, 9});
  rt.set(lo, std::vector<float>{-1, 1, 2});
  rt.set(hi, std::vector<float>{3, 4});
  rt.execute();
  EXPECT_EQ(rt.shape(c), (std::vector<int64_t>{2, 3}));
  testing::expect_close(rt.get<double>(c), {-1, 1, 3, kNaN, 1, 4}, {0, 0}, "clamp(tensor)");
}

// ---- operators with scalars on either side ----

TEST(ElementwiseBinary, ScalarOperatorsFloat) {
  using ScalarOp = std::function<Tensor(const Tensor&, double)>;
  const std::vector<std::tuple<std::string, ScalarOp, std::function<double(double, double)>>> ops =
      {
          {"x+s", [](const Tensor& x, double s) { return x + s; },
           [](double x, double s) { return x + s; }},
          {"s+x", [](const Tensor& x, double s) { return s + x; },
           [](double x, double s) { return s + x; }},
          {"x-s", [](const Tensor& x, double s) { return x - s; },
           [](double x, double s) { return x - s; }},
          {"s-x", [](const Tensor& x, double s) { return s - x; },
           [](double x, double s) { return s - x; }},
          {"x*s", [](const Tensor& x, double s) { return x * s; },
           [](double x, double s) { return x * s; }},
          {"s*x", [](const Tensor& x, double s) { return s * x; },
           [](double x, double s) { return s * x; }},
          {"x/s", [](const Tensor& x, double s) { return x / s; },
           [](double x, double s) { return x / s; }},
          {"s/x", [](const Tensor& x, double s) { return s / x; },
           [](double x, double s) { return s / x; }},
          {"x%s", [](const Tensor& x, double s) { return x % s; },
           [](double x, double s) { return std::fmod(x, s); }},
      };
  std::vector<double> base = {kNaN, kInf, -kInf, 0.0, -0.0, 1.0, -2.5, 7.0, 100.0, 0.1};
  for (DType t : kFloatTypes) {
    std::vector<double> in = rounded(base, t);
    for (double s : {3.0, -0.75, 0.1, 0.0, kInf, 1e-5, 30000.0}) {
      const double sr = round_to(t, s);  // the scalar takes the tensor's dtype
      Graph g;
      auto x = g.tensor("x", {static_cast<int64_t>(in.size())}, t);
      std::vector<Tensor> outs;
      for (const auto& op : ops)
        outs.push_back(std::get<1>(op)(x, s).output(std::get<0>(op)));
      ReferenceRuntime rt(g);
      rt.set(x, in);
      rt.execute();
      const double e = 4 * epsilon(t);
      for (size_t k = 0; k < ops.size(); ++k) {
        std::vector<double> want;
        for (double v : in)
          want.push_back(round_to(t, std::get<2>(ops[k])(v, sr)));
        testing::expect_close(
            rt.get<double>(outs[k]), want, {e, e},
            std::get<0>(ops[k]) + " s=" + std::to_string(s) + " " + std::string(name(t)));
        EXPECT_EQ(outs[k].dtype(), t);
      }
    }
  }
}

TEST(ElementwiseBinary, ScalarOperatorsInteger) {
  for (DType t : {DType::I8, DType::U8, DType::I32, DType::I64}) {
    std::vector<int64_t> in = {0, 1, 7, 100,
                               static_cast<int64_t>(max_value(t) > 1e9 ? 1e9 : max_value(t))};
    if (is_signed(t)) in.push_back(-9);
    Graph g;
    auto x = g.tensor("x", {static_cast<int64_t>(in.size())}, t);
    auto a = (x + 3.0).output("a");
    auto b = (3.0 + x).output("b");
    auto c = (x - 5.0).output("c");
    auto d = (5.0 - x).output("d");
    auto m = (x * 3.0).output("m");
    // A scalar that does not fit the dtype is an error (as in torch), not a silent wrap.
    auto n = is_signed(t) ? (-2.0 * x).output("n") : (x * 2.0).output("n");
    if (!is_signed(t)) expect_error_naming([&] { -2.0 * x; }, "mul");
    auto r = (x % 4.0).output("r");
    auto lt = (x < 7.0).output("lt");
    auto ge = (x >= 7.0).output("ge");
    ReferenceRuntime rt(g);
    rt.set(x, in);
    rt.execute();
    std::vector<int64_t> wa, wc, wd, wm, wn, wr, wlt, wge;
    for (int64_t v : in) {
      uint64_t u = static_cast<uint64_t>(v);
      wa.push_back(wrap_to(t, static_cast<int64_t>(u + 3)));
      wc.push_back(wrap_to(t, static_cast<int64_t>(u - 5)));
      wd.push_back(wrap_to(t, static_cast<int64_t>(5 - u)));
      wm.push_back(wrap_to(t, static_cast<int64_t>(u * 3)));
      wn.push_back(
          wrap_to(t, static_cast<int64_t>(u * (is_signed(t) ? static_cast<uint64_t>(-2) : 2))));
      wr.push_back(v % 4);
      wlt.push_back(v < 7);
      wge.push_back(v >= 7);
    }
    std::string nm(name(t));
    EXPECT_EQ(rt.get<int64_t>(a), wa) << nm;
    EXPECT_EQ(rt.get<int64_t>(b), wa) << nm;
    EXPECT_EQ(rt.get<int64_t>(c), wc) << nm;
    EXPECT_EQ(rt.get<int64_t>(d), wd) << nm;
    EXPECT_EQ(rt.get<int64_t>(m), wm) << nm;
    EXPECT_EQ(rt.get<int64_t>(n), wn) << nm;
    EXPECT_EQ(rt.get<int64_t>(r), wr) << nm;
    EXPECT_EQ(rt.get<int64_t>(lt), wlt) << nm;
    EXPECT_EQ(rt.get<int64_t>(ge), wge) << nm;
    expect_error_naming([&] { x + 0.5; }, "add");
    expect_error_naming([&] { x - 0.5; }, "sub");
    expect_error_naming([&] { x * 0.5; }, "mul");
  }
}

// ---- errors, bool arithmetic, dynamic dims ----

TEST(ElementwiseBinary, DtypeAndShapeMismatchesNameTheOp) {
  Graph g;
  auto f32 = g.tensor("f32", {3});
  auto f16 = g.tensor("f16", {3}, DType::F16);
  auto bf16 = g.tensor("bf16", {3}, DType::BF16);
  auto i32 = g.tensor("i32", {3}, DType::I32);
  auto i64 = g.tensor("i64", {3}, DType::I64);
  auto f4 = g.tensor("f4", {4});
  const std::vector<std::pair<std::string, std::function<void()>>> cases = {
      {"add", [&] { f32.add(f16); }},
      {"sub", [&] { f32.sub(f16); }},
      {"mul", [&] { i32.mul(i64); }},
      {"div", [&] { f16.div(bf16); }},
      {"div", [&] { f32.div(f16); }},
      {"fmod", [&] { i32.fmod(i64); }},
      {"remainder", [&] { f32.remainder(f16); }},
      {"minimum", [&] { f32.minimum(f16); }},
      {"maximum", [&] { i32.maximum(i64); }},
      {"lt", [&] { f32.lt(f16); }},
      {"le", [&] { f32.le(f16); }},
      {"eq", [&] { i32.eq(i64); }},
      {"ne", [&] { i32.ne(i64); }},
      {"add", [&] { f32 + f4; }},
      {"mul", [&] { f32* f4; }},
      {"lt", [&] { f32 < f4; }},
      {"logical_and", [&] { f32.logical_and(f4); }},
  };
  for (const auto& [op, fn] : cases) {
    SCOPED_TRACE(op);
    expect_error_naming(fn, op);
  }
}

TEST(ElementwiseBinary, BoolArithmeticRules) {
  Graph g;
  auto b = g.tensor("b", {2}, DType::Bool);
  expect_error_naming([&] { b - b; }, "sub");
  expect_error_naming([&] { b - 1.0; }, "sub");
  expect_error_naming([&] { 1.0 - b; }, "sub");
  expect_error_naming([&] { b % b; }, "fmod");
}

TEST(ElementwiseBinary, DynamicDimAtSeveralValues) {
  Graph g;
  auto x = g.tensor("x", {"s", 3});
  auto y = g.tensor("y", {3});
  auto c = g.tensor("c", {"s", 1}, DType::Bool);
  auto sum = (x + y).output("sum");
  auto rem = x.remainder(y).output("rem");
  auto mx = x.maximum(y).output("mx");
  auto le = (x <= y).output("le");
  auto w = c.where(x, kInf).output("w");
  ReferenceRuntime rt(g);
  std::vector<float> yv = {1.5f, -2, NAN};
  rt.set(y, yv);
  for (int64_t s : {1, 2, 5}) {
    std::vector<double> xv = rounded(random_values(s * 3, -10, 10, 40 + s), DType::F32);
    std::vector<int64_t> cv = random_ints(s, 0, 1, 50 + s);
    rt.set(x, xv);
    rt.set(c, cv);
    rt.execute({{"s", s}});
    std::vector<double> wsum, wrem, wmx, ww;
    std::vector<int> wle;
    for (int64_t i = 0; i < s; ++i)
      for (int j = 0; j < 3; ++j) {
        double a = xv[i * 3 + j], b = yv[j];
        wsum.push_back(round_to(DType::F32, a + b));
        wrem.push_back(round_to(DType::F32, py_remainder(a, b)));
        wmx.push_back(nan_max(a, b));
        wle.push_back(a <= b);
        ww.push_back(cv[i] ? a : kInf);
      }
    const double e = 4 * epsilon(DType::F32);
    std::string at = " s=" + std::to_string(s);
    EXPECT_EQ(rt.shape(sum), (std::vector<int64_t>{s, 3})) << at;
    testing::expect_close(rt.get<double>(sum), wsum, {e, e}, "sum" + at);
    testing::expect_close(rt.get<double>(rem), wrem, {e, e}, "remainder" + at);
    testing::expect_close(rt.get<double>(mx), wmx, {0, 0}, "maximum" + at);
    EXPECT_EQ(rt.get<int>(le), wle) << at;
    testing::expect_close(rt.get<double>(w), ww, {0, 0}, "where" + at);
  }
}

TEST(ElementwiseBinary, EmptyTensors) {
  Graph g;
  auto x = g.tensor("x", {0, 3});
  auto y = g.tensor("y", {3});
  auto c = g.tensor("c", {0, 1}, DType::Bool);
  auto s = (x * y + 1.0).output("s");
  auto w = c.where(x, y).output("w");
  ReferenceRuntime rt(g);
  rt.set(x, std::vector<float>{});
  rt.set(y, std::vector<float>{1, 2, 3});
  rt.set(c, std::vector<bool>{});
  rt.execute();
  EXPECT_EQ(rt.shape(s), (std::vector<int64_t>{0, 3}));
  EXPECT_TRUE(rt.get<float>(s).empty());
  EXPECT_TRUE(rt.get<float>(w).empty());
}

}  // namespace
}  // namespace luminal
