// Reductions (sum mean max min prod var) on the ReferenceRuntime against plain loops.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "support/check.hpp"
#include "support/expect_error.hpp"
#include "support/index_map.hpp"
#include "support/run_graph.hpp"

namespace luminal {
namespace {

using testing::expect_close;
using testing::expect_error;
using testing::kFloatTypes;
using testing::prod;
using testing::random_ints;
using testing::random_values;
using testing::rounded;
using testing::set_values;
using testing::Tol;
using testing::tol_for;

using Dims = std::vector<int64_t>;

Dims unflat(int64_t f, const Dims& d) {
  Dims idx(d.size());
  for (size_t i = d.size(); i-- > 0;) {
    idx[i] = f % d[i];
    f /= d[i];
  }
  return idx;
}

std::vector<bool> reduced_mask(size_t rank, const std::vector<int>& axes) {
  std::vector<bool> red(rank, axes.empty());
  for (int a : axes)
    red[a < 0 ? a + static_cast<int>(rank) : a] = true;
  return red;
}

// The shape after reducing `axes` (empty = all) of `dims`.
Dims reduced_dims(const Dims& dims, const std::vector<int>& axes, bool keepdim) {
  std::vector<bool> red = reduced_mask(dims.size(), axes);
  Dims out;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (!red[i])
      out.push_back(dims[i]);
    else if (keepdim)
      out.push_back(1);
  }
  return out;
}

// Folds the elements of every group with f (row-major order of the kept axes).
template <class F>
std::vector<double> ref_reduce(const std::vector<double>& x, const Dims& dims,
                               const std::vector<int>& axes, double init, F f) {
  std::vector<bool> red = reduced_mask(dims.size(), axes);
  std::vector<double> out(prod(reduced_dims(dims, axes, false)), init);
  for (int64_t flat = 0; flat < prod(dims); ++flat) {
    Dims idx = unflat(flat, dims);
    int64_t o = 0;
    for (size_t i = 0; i < dims.size(); ++i)
      if (!red[i]) o = o * dims[i] + idx[i];
    out[o] = f(out[o], x[flat]);
  }
  return out;
}

double nan_max(double a, double b) { return std::isnan(a) || std::isnan(b) ? NAN : std::max(a, b); }
double nan_min(double a, double b) { return std::isnan(a) || std::isnan(b) ? NAN : std::min(a, b); }

std::vector<double> ref_sum(const std::vector<double>& x, const Dims& d,
                            const std::vector<int>& axes) {
  return ref_reduce(x, d, axes, 0.0, [](double a, double b) { return a + b; });
}

std::vector<double> ref_mean(const std::vector<double>& x, const Dims& d,
                             const std::vector<int>& axes) {
  std::vector<double> s = ref_sum(x, d, axes);
  double n = static_cast<double>(prod(d) / prod(reduced_dims(d, axes, false)));
  for (double& v : s)
    v /= n;
  return s;
}

// Biased variance over one axis.
std::vector<double> ref_var(const std::vector<double>& x, const Dims& d, int axis) {
  std::vector<double> m = ref_mean(x, d, {axis});
  std::vector<bool> red = reduced_mask(d.size(), {axis});
  std::vector<double> out(m.size(), 0.0);
  for (int64_t flat = 0; flat < prod(d); ++flat) {
    Dims idx = unflat(flat, d);
    int64_t o = 0;
    for (size_t i = 0; i < d.size(); ++i)
      if (!red[i]) o = o * d[i] + idx[i];
    double dv = x[flat] - m[o];
    out[o] += dv * dv;
  }
  const double n = static_cast<double>(d[axis < 0 ? axis + d.size() : axis]);
  for (double& v : out)
    v /= n;
  return out;
}

// Test data for dtype t: positive floats (no cancellation), signed ints, or 0/1 for bool.
std::vector<double> data_for(DType t, size_t n, uint64_t seed) {
  if (is_float(t)) return rounded(random_values(n, 0.25, 2.0, seed), t);
  std::vector<int64_t> iv =
      random_ints(n, t == DType::Bool ? 0 : -50, t == DType::Bool ? 1 : 50, seed);
  return std::vector<double>(iv.begin(), iv.end());
}

std::string axes_str(const std::vector<int>& axes) {
  std::string s = "{";
  for (int a : axes)
    s += std::to_string(a) + ",";
  return s + "}";
}

const std::vector<std::vector<int>> kAxisSets = {{0},      {1},    {2}, {-1},     {0, 2},
                                                 {-3, -1}, {1, 0}, {},  {0, 1, 2}};

template <class Build, class Ref>
void check_reduction(DType t, Build build, Ref ref, DType want_dtype, Tol tol,
                     const std::string& op) {
  const Dims dims = {2, 3, 4};
  std::vector<double> in = data_for(t, 24, 11);
  Graph g;
  auto x = g.tensor("x", {2, 3, 4}, t);
  struct Case {
    std::vector<int> axes;
    bool keepdim;
    Tensor out;
  };
  std::vector<Case> cases;
  for (const auto& axes : kAxisSets)
    for (bool keepdim : {false, true}) {
      Tensor o = build(x, axes, keepdim);
      cases.push_back({axes, keepdim, o.output(op + axes_str(axes) + (keepdim ? "k" : ""))});
    }
  ReferenceRuntime rt(g);
  set_values(rt, x, in);
  rt.execute();
  for (const Case& c : cases) {
    std::string what = op + " " + std::string(name(t)) + " axes " + axes_str(c.axes) + " keepdim " +
                       std::to_string(c.keepdim);
    EXPECT_EQ(g.node(c.out.id()).dtype, want_dtype) << what;
    EXPECT_EQ(rt.shape(c.out), reduced_dims(dims, c.axes, c.keepdim)) << what;
    expect_close(rt.get<double>(c.out), ref(in, dims, c.axes), tol, what);
  }
}

// ---------------------------------------------------------------- sum

TEST(Reduce, SumOverAxisSetsAllDtypes) {
  for (DType t :
       {DType::F32, DType::F64, DType::F16, DType::BF16, DType::I32, DType::I64, DType::Bool}) {
    DType want = t == DType::Bool ? DType::I32 : t;
    check_reduction(
        t, [](const Tensor& x, const std::vector<int>& a, bool k) { return x.sum(a, k); }, ref_sum,
        want, tol_for(t, 2), "sum");
  }
}

TEST(Reduce, SumSingleAxisOverloadAndNegativeAxis) {
  Graph g;
  auto x = g.tensor("x", {2, 3});
  auto a = x.sum(-1).output("a");
  auto b = x.sum(-2, true).output("b");
  ReferenceRuntime rt(g);
  rt.set(x, std::vector<float>{1, 2, 3, 10, 20, 30});
  rt.execute();
  EXPECT_EQ(rt.get<float>(a), (std::vector<float>{6, 60}));
  EXPECT_EQ(rt.shape(a), (Dims{2}));
  EXPECT_EQ(rt.get<float>(b), (std::vector<float>{11, 22, 33}));
  EXPECT_EQ(rt.shape(b), (Dims{1, 3}));
}

TEST(Reduce, SumOfBoolCountsTrue) {
  Graph g;
  auto x = g.tensor("x", {2, 5}, DType::Bool);
  auto c = x.sum(1).output("c");
  auto all = x.sum(std::vector<int>{}).output("all");
  ReferenceRuntime rt(g);
  rt.set(x, std::vector<bool>{true, true, true, false, true, false, false, true, false, false});
  rt.execute();
  EXPECT_EQ(rt.get<int>(c), (std::vector<int>{4, 1}));
  EXPECT_EQ(rt.get<int>(all), (std::vector<int>{5}));
  EXPECT_EQ(rt.shape(all), (Dims{}));
}

TEST(Reduce, SumWithInfAndNaN) {
  Graph g;
  auto x = g.tensor("x", {4, 2});
  auto s = x.sum(1).output("s");
  ReferenceRuntime rt(g);
  rt.set(x, std::vector<float>{1, INFINITY, INFINITY, -INFINITY, NAN, 1, -INFINITY, -2});
  rt.execute();
  expect_close(rt.get<double>(s), {INFINITY, NAN, NAN, -INFINITY}, {0, 0});
}

TEST(Reduce, SumWithCancellation) {
  // Mixed signs: the error is relative to the sum of magnitudes, not to the result.
  for (DType t : kFloatTypes) {
    Graph g;
    auto x = g.tensor("x", {3, 5, 7}, t);
    auto s = x.sum({0, 2}).output("s");
    std::vector<double> in = rounded(random_values(105, -3, 3, 5), t);
    ReferenceRuntime rt(g);
    rt.set(x, in);
    rt.execute();
    std::vector<double> mag = in;
    for (double& v : mag)
      v = std::fabs(v);
    double scale = *std::max_element(mag.begin(), mag.end()) * 21;
    expect_close(rt.get<double>(s), ref_sum(in, {3, 5, 7}, {0, 2}), {0, 4 * epsilon(t) * scale},
                 "sum " + std::string(name(t)));
  }
}

TEST(Reduce, RankZeroAndAllAxes) {
  Graph g;
  auto x = g.tensor("x", {2, 2}, DType::I64);
  auto all = x.sum(std::vector<int>{}).output("all");
  auto allk = x.max(std::vector<int>{}, true).output("allk");
  auto again = x.sum(std::vector<int>{}).sum(std::vector<int>{}).output("again");  // rank 0: no-op
  ReferenceRuntime rt(g);
  rt.set(x, std::vector<int64_t>{1, -2, 30, 4});
  rt.execute();
  EXPECT_EQ(rt.get<int64_t>(all), (std::vector<int64_t>{33}));
  EXPECT_EQ(rt.shape(all), (Dims{}));
  EXPECT_EQ(rt.get<int64_t>(allk), (std::vector<int64_t>{30}));
  EXPECT_EQ(rt.shape(allk), (Dims{1, 1}));
  EXPECT_EQ(rt.get<int64_t>(again), (std::vector<int64_t>{33}));
}

// ---------------------------------------------------------------- mean

TEST(Reduce, MeanOverAxisSetsFloatDtypes) {
  for (DType t : kFloatTypes) {
    check_reduction(
        t, [](const Tensor& x, const std::vector<int>& a, bool k) { return x.mean(a, k); },
        ref_mean, t, tol_for(t, 2), "mean");
  }
}

TEST(Reduce, MeanOfManyLowPrecisionElements) {
  // 2049 / 257 elements: the counts are not representable in f16 / bf16.
  for (auto [t, n] :
       {std::pair{DType::F16, 2049}, std::pair{DType::BF16, 257}, std::pair{DType::BF16, 2049}}) {
    Graph g;
    auto x = g.tensor("x", {2, n}, t);
    auto m = x.mean(1).output("m");
    std::vector<double> in = rounded(random_values(2 * n, 0.5, 1.5, 3), t);
    ReferenceRuntime rt(g);
    rt.set(x, in);
    rt.execute();
    // One rounding of the exact mean: half an ulp.
    expect_close(rt.get<double>(m), ref_mean(in, {2, n}, {1}), {0.5 * epsilon(t) * 1.001, 0},
                 "mean " + std::string(name(t)) + " n=" + std::to_string(n));
  }
}

// ---------------------------------------------------------------- max / min

TEST(Reduce, MaxMinOverAxisSetsAllDtypes) {
  for (DType t :
       {DType::F32, DType::F64, DType::F16, DType::BF16, DType::I32, DType::I64, DType::Bool}) {
    check_reduction(
        t, [](const Tensor& x, const std::vector<int>& a, bool k) { return x.max(a, k); },
        [](const std::vector<double>& x, const Dims& d, const std::vector<int>& a) {
          return ref_reduce(x, d, a, -INFINITY, nan_max);
        },
        t, {0, 0}, "max");
    check_reduction(
        t, [](const Tensor& x, const std::vector<int>& a, bool k) { return x.min(a, k); },
        [](const std::vector<double>& x, const Dims& d, const std::vector<int>& a) {
          return ref_reduce(x, d, a, INFINITY, nan_min);
        },
        t, {0, 0}, "min");
  }
}

TEST(Reduce, MaxMinPropagateNaNAndHandleInf) {
  for (DType t : kFloatTypes) {
    Graph g;
    auto x = g.tensor("x", {4, 3}, t);
    auto mx = x.max(1).output("mx");
    auto mn = x.min(1).output("mn");
    auto mx0 = x.max(0).output("mx0");
    auto mn0 = x.min(0).output("mn0");
    std::vector<double> in = {1,         NAN,       3,         -INFINITY, 2,    INFINITY,
                              -INFINITY, -INFINITY, -INFINITY, -5,        -0.5, 7};
    ReferenceRuntime rt(g);
    rt.set(x, in);
    rt.execute();
    std::string n(name(t));
    expect_close(rt.get<double>(mx), {NAN, INFINITY, -INFINITY, 7}, {0, 0}, "max " + n);
    expect_close(rt.get<double>(mn), {NAN, -INFINITY, -INFINITY, -5}, {0, 0}, "min " + n);
    expect_close(rt.get<double>(mx0), {1, NAN, INFINITY}, {0, 0}, "max0 " + n);
    expect_close(rt.get<double>(mn0), {-INFINITY, NAN, -INFINITY}, {0, 0}, "min0 " + n);
  }
}

TEST(Reduce, MinMaxIntegerExtremesAndUnsigned) {
  for (DType t : {DType::I8, DType::U8, DType::I16, DType::U16, DType::I32, DType::I64}) {
    const int64_t lo =
        t == DType::I64 ? std::numeric_limits<int64_t>::min() : static_cast<int64_t>(min_value(t));
    const int64_t hi =
        t == DType::I64 ? std::numeric_limits<int64_t>::max() : static_cast<int64_t>(max_value(t));
    Graph g;
    auto x = g.tensor("x", {3, 3}, t);
    auto mn = x.min(1).output("mn");
    auto mx = x.max(1).output("mx");
    ReferenceRuntime rt(g);
    rt.set(x, std::vector<int64_t>{lo, hi, 0, hi, 1, hi, lo, lo, 1});
    rt.execute();
    EXPECT_EQ(rt.get<int64_t>(mn), (std::vector<int64_t>{lo, std::min<int64_t>(1, hi), lo}))
        << name(t);
    EXPECT_EQ(rt.get<int64_t>(mx), (std::vector<int64_t>{hi, hi, 1})) << name(t);
  }
}

TEST(Reduce, EmptyAxes) {
  Graph g;
  auto x = g.tensor("x", {2, 0, 3});
  auto s = x.sum(1).output("s");
  auto m = x.max(1).output("m");
  auto mn = x.min(1).output("mn");
  auto p = x.prod(1).output("p");
  auto pk = x.prod(1, true).output("pk");
  auto xi = g.tensor("xi", {2, 0}, DType::I32);
  auto pi = xi.prod(1).output("pi");
  auto xb = g.tensor("xb", {2, 0}, DType::Bool);
  auto pb = xb.prod(1).output("pb");
  ReferenceRuntime rt(g);
  rt.set(x, std::vector<float>{});
  rt.set(xi, std::vector<int>{});
  rt.set(xb, std::vector<int>{});
  rt.execute();
  expect_close(rt.get<double>(s), std::vector<double>(6, 0.0), {0, 0}, "sum");
  expect_close(rt.get<double>(m), std::vector<double>(6, -INFINITY), {0, 0}, "max");
  expect_close(rt.get<double>(mn), std::vector<double>(6, INFINITY), {0, 0}, "min");
  expect_close(rt.get<double>(p), std::vector<double>(6, 1.0), {0, 0}, "prod");
  EXPECT_EQ(rt.shape(pk), (Dims{2, 1, 3}));
  EXPECT_EQ(rt.get<int>(pi), (std::vector<int>{1, 1}));
  EXPECT_EQ(g.node(pb.id()).dtype, DType::I32);  // bool promotes as in sum
  EXPECT_EQ(rt.get<int>(pb), (std::vector<int>{1, 1}));
}

// ---------------------------------------------------------------- prod

TEST(Reduce, ProdOverAxisSetsAllDtypes) {
  for (DType t : {DType::F32, DType::F64, DType::F16, DType::BF16, DType::I32, DType::I64}) {
    const Dims dims = {2, 3, 5};
    std::vector<double> in;
    if (is_float(t)) {
      in = rounded(random_values(30, 0.6, 1.6, 17), t);
      for (size_t i = 0; i < in.size(); i += 7)
        in[i] = -in[i];
    } else {
      std::vector<int64_t> iv = random_ints(30, -3, 3, 17);
      in.assign(iv.begin(), iv.end());
    }
    Graph g;
    auto x = g.tensor("x", {2, 3, 5}, t);
    std::vector<std::pair<std::vector<int>, Tensor>> outs;
    for (const auto& axes : kAxisSets)
      outs.push_back({axes, x.prod(axes).output("p" + axes_str(axes))});
    auto pk = x.prod({-1, 0}, true).output("pk");
    ReferenceRuntime rt(g);
    set_values(rt, x, in);
    rt.execute();
    for (const auto& [axes, out] : outs) {
      std::string what = "prod " + std::string(name(t)) + " " + axes_str(axes);
      EXPECT_EQ(rt.shape(out), reduced_dims(dims, axes, false)) << what;
      // Each multiply rounds; up to ~5 levels of a tree per axis.
      expect_close(rt.get<double>(out),
                   ref_reduce(in, dims, axes, 1.0, [](double a, double b) { return a * b; }),
                   tol_for(t, 4), what);
    }
    EXPECT_EQ(rt.shape(pk), (Dims{1, 3, 1}));
    expect_close(rt.get<double>(pk),
                 ref_reduce(in, dims, {0, 2}, 1.0, [](double a, double b) { return a * b; }),
                 tol_for(t, 4), "prod keepdim");
  }
}

TEST(Reduce, ProdIntegersExactAndBool) {
  Graph g;
  auto x = g.tensor("x", {2, 7}, DType::I64);
  auto p = x.prod(1).output("p");
  auto b = g.tensor("b", {3, 3}, DType::Bool);
  auto pb = b.prod(1).output("pb");
  ReferenceRuntime rt(g);
  rt.set(x, std::vector<int64_t>{2, 3, 5, 7, 11, 13, -17, 1, 1, 1, 1, 0, 1, 9});
  rt.set(b, std::vector<int>{1, 1, 1, 1, 0, 1, 0, 0, 0});
  rt.execute();
  EXPECT_EQ(rt.get<int64_t>(p), (std::vector<int64_t>{-510510, 0}));
  EXPECT_EQ(rt.get<int>(pb), (std::vector<int>{1, 0, 0}));
  EXPECT_EQ(g.node(pb.id()).dtype, DType::I32);
}

TEST(Reduce, ProdKeepsDynamicNonReducedAxes) {
  Graph g;
  auto x = g.tensor("x", {"s", 3});
  auto p = x.prod(1).output("p");
  ReferenceRuntime rt(g);
  for (int64_t s : {1, 4}) {
    std::vector<float> v;
    std::vector<float> want;
    for (int64_t i = 0; i < s; ++i) {
      float a = static_cast<float>(i + 1);
      v.insert(v.end(), {a, 2.0f, 0.5f});
      want.push_back(a);
    }
    rt.set(x, v);
    rt.execute({{"s", s}});
    EXPECT_EQ(rt.get<float>(p), want) << "s=" << s;
  }
}

// ---------------------------------------------------------------- var

TEST(Reduce, VarOverEachAxisFloatDtypes) {
  for (DType t : kFloatTypes) {
    const Dims dims = {3, 4, 5};
    std::vector<double> in = rounded(random_values(60, -2, 2, 23), t);
    Graph g;
    auto x = g.tensor("x", {3, 4, 5}, t);
    std::vector<std::tuple<int, bool, Tensor>> outs;
    for (int a : {0, 1, 2, -1, -3})
      for (bool k : {false, true})
        outs.push_back({a, k, x.var(a, k).output("v" + std::to_string(a) + (k ? "k" : ""))});
    ReferenceRuntime rt(g);
    rt.set(x, in);
    rt.execute();
    for (const auto& [a, k, out] : outs) {
      std::string what = "var " + std::string(name(t)) + " axis " + std::to_string(a) +
                         " keepdim " + std::to_string(k);
      EXPECT_EQ(rt.shape(out), reduced_dims(dims, {a}, k)) << what;
      EXPECT_EQ(g.node(out.id()).dtype, t) << what;
      expect_close(rt.get<double>(out), ref_var(in, dims, a), tol_for(t, 4), what);
    }
  }
}

TEST(Reduce, VarWithLargeOffsetLowPrecision) {
  // Spread of one ulp around a large mean: a mean rounded to the dtype would be off by a quarter
  // of the spread and the variance by a third.
  for (auto [t, b, u] : {std::tuple{DType::F16, 1024.0, 1.0}, std::tuple{DType::BF16, 256.0, 2.0},
                         std::tuple{DType::F32, 16777216.0, 2.0}}) {
    Graph g;
    auto x = g.tensor("x", {2, 4}, t);
    auto v = x.var(1).output("v");
    std::vector<double> in = {b, b, b, b + u, -b, -b - u, -b, -b};
    ASSERT_EQ(rounded(in, t), in);
    ReferenceRuntime rt(g);
    rt.set(x, in);
    rt.execute();
    expect_close(rt.get<double>(v), ref_var(in, {2, 4}, 1), tol_for(t, 4),
                 "var " + std::string(name(t)));
  }
}

TEST(Reduce, VarOfConstantIsZeroAndNaNPropagates) {
  Graph g;
  auto x = g.tensor("x", {2, 4});
  auto v = x.var(-1).output("v");
  ReferenceRuntime rt(g);
  rt.set(x, std::vector<float>{3, 3, 3, 3, 1, NAN, 2, 3});
  rt.execute();
  expect_close(rt.get<double>(v), {0, NAN}, {0, 0});
}

// ---------------------------------------------------------------- dynamic dims

TEST(Reduce, DynamicDimsAtSeveralValues) {
  Graph g;
  auto x = g.tensor("x", {"s", 3, 2});
  auto s0 = x.sum(0).output("s0");
  auto m01 = x.mean({0, 1}, true).output("m01");
  auto mx = x.max(0).output("mx");
  auto mn = x.min({0, 2}).output("mn");
  auto v0 = x.var(0).output("v0");
  auto all = x.mean(std::vector<int>{}).output("all");
  auto sb = x.gt(0.5).sum(0).output("sb");
  ReferenceRuntime rt(g);
  for (int64_t s : {1, 2, 5, 9}) {
    const Dims dims = {s, 3, 2};
    std::vector<double> in = rounded(random_values(s * 6, -1, 1, 100 + s), DType::F32);
    rt.set(x, in);
    rt.execute({{"s", s}});
    std::string what = "s=" + std::to_string(s);
    Tol tol = tol_for(DType::F32, 4 * s);
    expect_close(rt.get<double>(s0), ref_sum(in, dims, {0}), tol, "sum " + what);
    expect_close(rt.get<double>(m01), ref_mean(in, dims, {0, 1}), tol, "mean " + what);
    EXPECT_EQ(rt.shape(m01), (Dims{1, 1, 2})) << what;
    expect_close(rt.get<double>(mx), ref_reduce(in, dims, {0}, -INFINITY, nan_max), {0, 0},
                 "max " + what);
    expect_close(rt.get<double>(mn), ref_reduce(in, dims, {0, 2}, INFINITY, nan_min), {0, 0},
                 "min " + what);
    expect_close(rt.get<double>(v0), ref_var(in, dims, 0), tol, "var " + what);
    expect_close(rt.get<double>(all), ref_mean(in, dims, {}), tol, "mean all " + what);
    std::vector<double> gt(in.size());
    for (size_t i = 0; i < in.size(); ++i)
      gt[i] = in[i] > 0.5;
    expect_close(rt.get<double>(sb), ref_sum(gt, dims, {0}), {0, 0}, "count " + what);
  }
}

// ---------------------------------------------------------------- errors

TEST(Reduce, ErrorsNameTheOp) {
  Graph g;
  auto x = g.tensor("x", {"s", 3});
  auto xi = g.tensor("xi", {2, 3}, DType::I32);
  expect_error([&] { x.prod(0); }, "prod");
  expect_error([&] { x.prod({1, 0}); }, "prod");
  expect_error([&] { xi.mean(0); }, "mean");
  expect_error([&] { xi.var(0); }, "var");
  expect_error([&] { x.sum({0, 0}); }, "sum");
  expect_error([&] { x.mean({1, -1}); }, "mean");
  expect_error([&] { x.max(2); }, "max");
  expect_error([&] { x.min(-3); }, "min");
  expect_error([&] { x.sum(5); }, "sum");
  expect_error([&] { x.prod(-3); }, "prod");
  expect_error([&] { x.var(2); }, "var");
}

}  // namespace
}  // namespace luminal
