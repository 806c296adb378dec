// Comparisons, logical ops, where and masked_fill (luminal/ir/elementwise_logic.cpp) on the
// ReferenceRuntime, against plain loops. All results are exact: comparisons follow IEEE
// (eq(NaN, NaN) is false, ne true, le false), non-bool inputs of logic ops and conditions are
// truthy when != 0 (NaN is truthy), and where never lets the unselected branch leak.
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
using testing::random_values;

// ---- comparisons and logic ----

TEST(ElementwiseLogic, ComparisonsFloatIEEE) {
  const std::vector<std::tuple<std::string, BinaryOp, std::function<double(double, double)>>> ops =
      {
          {"lt", [](const Tensor& a, const Tensor& b) { return a.lt(b); },
           [](double a, double b) { return a < b; }},
          {"le", [](const Tensor& a, const Tensor& b) { return a.le(b); },
           [](double a, double b) { return a <= b; }},
          {"gt", [](const Tensor& a, const Tensor& b) { return a.gt(b); },
           [](double a, double b) { return a > b; }},
          {"ge", [](const Tensor& a, const Tensor& b) { return a.ge(b); },
           [](double a, double b) { return a >= b; }},
          {"eq", [](const Tensor& a, const Tensor& b) { return a.eq(b); },
           [](double a, double b) { return a == b; }},
          {"ne", [](const Tensor& a, const Tensor& b) { return a.ne(b); },
           [](double a, double b) { return a != b; }},
          {"<", [](const Tensor& a, const Tensor& b) { return a < b; },
           [](double a, double b) { return a < b; }},
          {"<=", [](const Tensor& a, const Tensor& b) { return a <= b; },
           [](double a, double b) { return a <= b; }},
          {">", [](const Tensor& a, const Tensor& b) { return a > b; },
           [](double a, double b) { return a > b; }},
          {">=", [](const Tensor& a, const Tensor& b) { return a >= b; },
           [](double a, double b) { return a >= b; }},
      };
  std::vector<double> v = {kNaN, kInf, -kInf, 0.0, -0.0, 1.0, -1.0, 2.5};
  const int64_t n = static_cast<int64_t>(v.size());
  for (DType t : kFloatTypes) {
    for (const auto& [name_, op, ref] : ops) {
      check_binary(t, name_, op, ref, {n, 1}, v, {1, n}, v, 0, DType::Bool, false);
      check_binary(t, name_ + " rank", op, ref, {2, 1, n}, random_values(2 * n, -2, 2, 5), {3, 1},
                   {-1, 0, 1}, 0, DType::Bool, false);
    }
  }
}

TEST(ElementwiseLogic, ComparisonsWithScalars) {
  std::vector<double> v = {kNaN, kInf, -kInf, 0.0, -0.0, 1.0, -1.0, 2.5};
  for (DType t : kFloatTypes) {
    for (double s : {0.0, 1.0, -1.0, kInf, kNaN}) {
      Graph g;
      auto x = g.tensor("x", {8}, t);
      std::vector<Tensor> outs = {x.lt(s).output("lt"), x.le(s).output("le"),  x.gt(s).output("gt"),
                                  x.ge(s).output("ge"), x.eq(s).output("eq"),  x.ne(s).output("ne"),
                                  (x < s).output("<"),  (x <= s).output("<="), (x > s).output(">"),
                                  (x >= s).output(">=")};
      ReferenceRuntime rt(g);
      rt.set(x, v);
      rt.execute();
      std::vector<std::function<bool(double)>> refs = {
          [s](double a) { return a < s; },  [s](double a) { return a <= s; },
          [s](double a) { return a > s; },  [s](double a) { return a >= s; },
          [s](double a) { return a == s; }, [s](double a) { return a != s; }};
      for (size_t k = 0; k < outs.size(); ++k) {
        std::vector<int> want;
        for (double a : v)
          want.push_back(refs[k % 6](a) ? 1 : 0);
        if (k >= 6) {  // operators <, <=, >, >= map to lt, le, gt, ge
          want.clear();
          for (double a : v)
            want.push_back(refs[k - 6](a) ? 1 : 0);
        }
        EXPECT_EQ(rt.get<int>(outs[k]), want) << name(t) << " op " << k << " scalar " << s;
        EXPECT_EQ(outs[k].dtype(), DType::Bool);
      }
    }
  }
}

TEST(ElementwiseLogic, ComparisonsIntegerAndBool) {
  for (DType t : {DType::I8, DType::U8, DType::I32, DType::I64}) {
    std::vector<double> a = {0, 1, 5, max_value(t) > 1e15 ? 1e15 : max_value(t)};
    if (is_signed(t)) a.push_back(-3);
    const int64_t n = static_cast<int64_t>(a.size());
    check_binary(
        t, "lt", [](const Tensor& x, const Tensor& y) { return x.lt(y); },
        [](double x, double y) { return x < y; }, {n, 1}, a, {1, n}, a, 0, DType::Bool, false);
    check_binary(
        t, "le", [](const Tensor& x, const Tensor& y) { return x.le(y); },
        [](double x, double y) { return x <= y; }, {n, 1}, a, {1, n}, a, 0, DType::Bool, false);
    check_binary(
        t, "eq", [](const Tensor& x, const Tensor& y) { return x.eq(y); },
        [](double x, double y) { return x == y; }, {n, 1}, a, {1, n}, a, 0, DType::Bool, false);
    check_binary(
        t, "ne", [](const Tensor& x, const Tensor& y) { return x.ne(y); },
        [](double x, double y) { return x != y; }, {n, 1}, a, {1, n}, a, 0, DType::Bool, false);
    check_binary(
        t, "ge", [](const Tensor& x, const Tensor& y) { return x >= y; },
        [](double x, double y) { return x >= y; }, {n, 1}, a, {1, n}, a, 0, DType::Bool, false);
    Graph g;
    auto x = g.tensor("x", {2}, t);
    expect_error_naming([&] { x.lt(0.5); }, "lt");
    expect_error_naming([&] { x.eq(1.5); }, "eq");
  }
  std::vector<double> bv = {0, 1};
  for (const auto& [n, op, ref] :
       std::vector<std::tuple<std::string, BinaryOp, std::function<double(double, double)>>>{
           {"lt", [](const Tensor&x, const Tensor&y) { return x.lt(y); },
            [](double x, double y) { return x < y; }},
           {"eq", [](const Tensor&x, const Tensor&y) { return x.eq(y); },
            [](double x, double y) { return x == y; }},
           {"ne", [](const Tensor&x, const Tensor&y) { return x.ne(y); },
            [](double x, double y) { return x != y; }},
           {"ge", [](const Tensor&x, const Tensor&y) { return x.ge(y); },
            [](double x, double y) { return x >= y; }},
           {"and", [](const Tensor&x, const Tensor&y) { return x.logical_and(y); },
            [](double x, double y) { return x && y; }},
           {"or", [](const Tensor&x, const Tensor&y) { return x.logical_or(y); },
            [](double x, double y) { return x || y; }},
           {"+ is or", [](const Tensor&x, const Tensor&y) { return x + y; },
            [](double x, double y) { return x || y; }},
           {"* is and", [](const Tensor&x, const Tensor&y) { return x * y; },
            [](double x, double y) { return x && y; }}}) {
    check_binary(DType::Bool, n, op, ref, {2, 1}, bv, {1, 2}, bv, 0, DType::Bool, false);
  }
}

TEST(ElementwiseLogic, LogicalAndOrTruthiness) {
  // Non-bool inputs are truthy when != 0 (NaN is truthy, -0 is not); inputs of different dtypes
  // mix.
  Graph g;
  auto f = g.tensor("f", {5, 1}, DType::F32);
  auto i = g.tensor("i", {1, 3}, DType::I64);
  auto a = f.logical_and(i).output("a");
  auto o = f.logical_or(i).output("o");
  auto n = f.logical_not().logical_or(f.isnan()).output("n");
  ReferenceRuntime rt(g);
  std::vector<double> fv = {kNaN, 0.0, -0.0, 2.0, -kInf};
  std::vector<int64_t> iv = {0, -3, 1};
  rt.set(f, fv);
  rt.set(i, iv);
  rt.execute();
  std::vector<int> wa, wo;
  for (double x : fv)
    for (int64_t y : iv) {
      bool bx = x != 0 || std::isnan(x);
      wa.push_back(bx && y != 0);
      wo.push_back(bx || y != 0);
    }
  EXPECT_EQ(rt.get<int>(a), wa);
  EXPECT_EQ(rt.get<int>(o), wo);
  EXPECT_EQ(rt.get<int>(n), (std::vector<int>{1, 1, 1, 0, 0}));
  EXPECT_EQ(rt.shape(a), (std::vector<int64_t>{5, 3}));
}

// ---- where and masked_fill ----

TEST(ElementwiseLogic, WhereIsExactAndBroadcasts) {
  for (DType t : kFloatTypes) {
    // cond [3,1], a [1,4] full of inf/NaN, b [] (rank 0): the unselected branch never leaks.
    Graph g;
    auto c = g.tensor("c", {3, 1}, DType::Bool);
    auto a = g.tensor("a", {1, 4}, t);
    auto b = g.tensor("b", {}, t);
    auto w = c.where(a, b).output("w");
    auto w2 = c.where(b, a).output("w2");
    ReferenceRuntime rt(g);
    rt.set(c, std::vector<bool>{true, false, true});
    rt.set(a, std::vector<double>{kInf, kNaN, -kInf, 1.5});
    rt.set(b, std::vector<double>{-2});
    rt.execute();
    EXPECT_EQ(rt.shape(w), (std::vector<int64_t>{3, 4}));
    testing::expect_close(rt.get<double>(w),
                          {kInf, kNaN, -kInf, 1.5, -2, -2, -2, -2, kInf, kNaN, -kInf, 1.5}, {0, 0},
                          "where " + std::string(name(t)));
    testing::expect_close(rt.get<double>(w2),
                          {-2, -2, -2, -2, kInf, kNaN, -kInf, 1.5, -2, -2, -2, -2}, {0, 0},
                          "where swapped " + std::string(name(t)));
    EXPECT_EQ(w.dtype(), t);
  }
  // Rank-mismatched: cond [2,1,3], a [3], b [4,1].
  Graph g;
  auto c = g.tensor("c", {2, 1, 3}, DType::Bool);
  auto a = g.tensor("a", {3}, DType::I64);
  auto b = g.tensor("b", {4, 1}, DType::I64);
  auto w = c.where(a, b).output("w");
  ReferenceRuntime rt(g);
  std::vector<int64_t> cv = {1, 0, 1, 0, 0, 1}, av = {10, 20, 30},
                       bv = {-1, -2, -3, std::numeric_limits<int64_t>::min()};
  rt.set(c, cv);
  rt.set(a, av);
  rt.set(b, bv);
  rt.execute();
  std::vector<int64_t> want;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 4; ++j)
      for (int k = 0; k < 3; ++k)
        want.push_back(cv[i * 3 + k] ? av[k] : bv[j]);
  EXPECT_EQ(rt.get<int64_t>(w), want);
  EXPECT_EQ(rt.shape(w), (std::vector<int64_t>{2, 4, 3}));
}

TEST(ElementwiseLogic, WhereScalarsNonBoolConditionsAndErrors) {
  Graph g;
  auto c = g.tensor("c", {5}, DType::F32);  // NaN and -0 as conditions: truthy / falsy
  auto x = g.tensor("x", {5}, DType::F16);
  auto xi = g.tensor("xi", {5}, DType::I32);
  auto bo = g.tensor("bo", {5}, DType::Bool);
  auto w1 = c.where(x, -kInf).output("w1");
  auto w2 = c.where(7.0, x).output("w2");
  auto w3 = c.where(xi, 3).output("w3");
  auto w4 = c.where(bo, bo.logical_not()).output("w4");
  ReferenceRuntime rt(g);
  rt.set(c, std::vector<double>{kNaN, -0.0, 2, 0, -1});
  rt.set(x, std::vector<double>{kNaN, kNaN, 1, kInf, 4});
  rt.set(xi, std::vector<int>{1, 2, 3, 4, 5});
  rt.set(bo, std::vector<bool>{false, true, true, false, false});
  rt.execute();
  testing::expect_close(rt.get<double>(w1), {kNaN, -kInf, 1, -kInf, 4}, {0, 0}, "where(x, -inf)");
  testing::expect_close(rt.get<double>(w2), {7, kNaN, 7, kInf, 7}, {0, 0}, "where(7, x)");
  EXPECT_EQ(rt.get<int>(w3), (std::vector<int>{1, 3, 3, 3, 5}));
  EXPECT_EQ(rt.get<int>(w4), (std::vector<int>{0, 0, 1, 1, 0}));
  EXPECT_EQ(w1.dtype(), DType::F16);
  expect_error_naming([&] { c.where(x, xi); }, "where");
  expect_error_naming([&] { c.where(xi, 0.5); }, "where");
  auto c3 = g.tensor("c3", {3}, DType::Bool);
  expect_error_naming([&] { c3.where(x, x); }, "where");
}

TEST(ElementwiseLogic, MaskedFill) {
  for (DType t : {DType::F32, DType::BF16, DType::I32}) {
    Graph g;
    auto x = g.tensor("x", {2, 3}, t);
    auto m = g.tensor("m", {3}, DType::Bool);
    const double fill = is_float(t) ? -kInf : -7;
    auto y = x.masked_fill(m, fill).output("y");
    ReferenceRuntime rt(g);
    if (is_float(t))
      rt.set(x, std::vector<double>{1, kNaN, 3, kInf, 5, 6});
    else
      rt.set(x, std::vector<int>{1, 2, 3, 4, 5, 6});
    rt.set(m, std::vector<bool>{false, true, false});
    rt.execute();
    std::vector<double> want = is_float(t) ? std::vector<double>{1, fill, 3, kInf, fill, 6}
                                           : std::vector<double>{1, fill, 3, 4, fill, 6};
    testing::expect_close(rt.get<double>(y), want, {0, 0}, "masked_fill " + std::string(name(t)));
    EXPECT_EQ(y.dtype(), t);
    if (!is_float(t)) expect_error_naming([&] { x.masked_fill(m, 0.5); }, "masked_fill");
  }
  // A NaN fill value with a float mask (nonzero = masked).
  Graph g;
  auto x = g.tensor("x", {3});
  auto m = g.tensor("m", {3});
  auto y = x.masked_fill(m, kNaN).output("y");
  ReferenceRuntime rt(g);
  rt.set(x, std::vector<float>{1, 2, 3});
  rt.set(m, std::vector<float>{0, 0.5f, NAN});
  rt.execute();
  testing::expect_close(rt.get<double>(y), {1, kNaN, kNaN}, {0, 0}, "masked_fill NaN");
}

}  // namespace
}  // namespace luminal
