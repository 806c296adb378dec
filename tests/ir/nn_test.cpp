// softmax, log_softmax, layer_norm and rms_norm on the ReferenceRuntime against plain loops.
#include <gtest/gtest.h>

#include <cmath>
#include <optional>
#include <string>

#include "support/along_axis.hpp"
#include "support/check.hpp"
#include "support/expect_error.hpp"

namespace luminal {
namespace {

using testing::along_axis;
using testing::expect_close;
using testing::expect_error;
using testing::kFloatTypes;
using testing::random_values;
using testing::rounded;
using testing::Row;
using testing::Tol;
using testing::tol_for;

using Dims = std::vector<int64_t>;

// Applies f to consecutive blocks of `block` elements (normalising over the last axes).
template <class F>
std::vector<double> by_block(const std::vector<double>& x, int64_t block, F f) {
  std::vector<double> out;
  for (size_t s = 0; s < x.size(); s += block) {
    Row r = f(Row(x.begin() + s, x.begin() + s + block));
    out.insert(out.end(), r.begin(), r.end());
  }
  return out;
}

Row ref_softmax(const Row& x) {
  double m = -INFINITY;
  for (double v : x)
    m = std::isnan(v) || std::isnan(m) ? NAN : std::max(m, v);
  Row e(x.size());
  double s = 0;
  for (size_t i = 0; i < x.size(); ++i)
    s += e[i] = std::exp(x[i] - m);
  for (double& v : e)
    v /= s;
  return e;
}

Row ref_log_softmax(const Row& x) {
  double m = -INFINITY;
  for (double v : x)
    m = std::isnan(v) || std::isnan(m) ? NAN : std::max(m, v);
  double s = 0;
  for (double v : x)
    s += std::exp(v - m);
  Row out(x.size());
  for (size_t i = 0; i < x.size(); ++i)
    out[i] = (x[i] - m) - std::log(s);
  return out;
}

Row ref_layer_norm(const Row& x, const Row* w, const Row* b, double eps) {
  double mu = 0, var = 0;
  for (double v : x)
    mu += v;
  mu /= static_cast<double>(x.size());
  for (double v : x)
    var += (v - mu) * (v - mu);
  var /= static_cast<double>(x.size());
  Row out(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    out[i] = (x[i] - mu) / std::sqrt(var + eps);
    if (w) out[i] *= (*w)[i];
    if (b) out[i] += (*b)[i];
  }
  return out;
}

// Hugging Face LlamaRMSNorm: normalise in f32, round to the dtype, then scale in the dtype.
Row ref_rms_norm(const Row& x, const Row* w, double eps, DType t) {
  double ms = 0;
  for (double v : x)
    ms += v * v;
  ms /= static_cast<double>(x.size());
  Row out(x.size());
  for (size_t i = 0; i < x.size(); ++i)
    out[i] = x[i] / std::sqrt(ms + eps);
  out = rounded(out, t);
  if (w)
    for (size_t i = 0; i < x.size(); ++i)
      out[i] *= (*w)[i];
  return out;
}

// ---------------------------------------------------------------- softmax / log_softmax

TEST(Softmax, EachAxisAllFloatDtypes) {
  for (DType t : kFloatTypes) {
    const Dims dims = {3, 4, 5};
    std::vector<double> in = rounded(random_values(60, -4, 4, 31), t);
    Graph g;
    auto x = g.tensor("x", {3, 4, 5}, t);
    std::vector<std::tuple<int, Tensor, Tensor>> outs;
    for (int a : {0, 1, 2, -1, -2})
      outs.push_back({a, x.softmax(a).output("sm" + std::to_string(a)),
                      x.log_softmax(a).output("lsm" + std::to_string(a))});
    ReferenceRuntime rt(g);
    rt.set(x, in);
    rt.execute();
    for (const auto& [a, sm, lsm] : outs) {
      std::string what = std::string(name(t)) + " axis " + std::to_string(a);
      EXPECT_EQ(g.node(sm.id()).dtype, t) << what;
      EXPECT_EQ(g.node(lsm.id()).dtype, t) << what;
      EXPECT_EQ(rt.shape(sm), dims) << what;
      expect_close(rt.get<double>(sm), along_axis(in, dims, a, ref_softmax), tol_for(t, 4),
                   "softmax " + what);
      expect_close(rt.get<double>(lsm), along_axis(in, dims, a, ref_log_softmax), tol_for(t, 4),
                   "log_softmax " + what);
    }
  }
}

TEST(Softmax, InfNaNAndLargeValues) {
  const double inf = INFINITY;
  for (DType t : kFloatTypes) {
    std::vector<double> in = {
        -inf, 0,    1,    -inf,   // masked entries get 0
        -inf, -inf, -inf, -inf,   // fully masked row: NaN, like torch
        1,    NAN,  2,    3,      // NaN poisons the row
        inf,  1,    2,    3,      // +inf: inf - inf is NaN, like torch
        1000, 1001, 999,  -1000,  // no overflow: the max is subtracted first
        -5e3, -5e3, -5e3, -5e3 + 1,
    };
    in = rounded(in, t);
    Graph g;
    auto x = g.tensor("x", {6, 4}, t);
    auto sm = x.softmax(-1).output("sm");
    auto lsm = x.log_softmax(1).output("lsm");
    ReferenceRuntime rt(g);
    rt.set(x, in);
    rt.execute();
    std::string n(name(t));
    std::vector<double> want_sm = along_axis(in, {6, 4}, 1, ref_softmax);
    std::vector<double> want_lsm = along_axis(in, {6, 4}, 1, ref_log_softmax);
    EXPECT_EQ(want_sm[0], 0.0);
    EXPECT_TRUE(std::isnan(want_sm[4]));
    EXPECT_EQ(want_lsm[0], -inf);
    expect_close(rt.get<double>(sm), want_sm, tol_for(t, 4), "softmax " + n);
    expect_close(rt.get<double>(lsm), want_lsm, tol_for(t, 4), "log_softmax " + n);
  }
}

TEST(Softmax, SingleElementAxisAndDynamicDims) {
  Graph g;
  auto x = g.tensor("x", {"b", "s"});
  auto over_s = x.softmax(1).output("over_s");
  auto over_b = x.log_softmax(0).output("over_b");
  auto one = x.unsqueeze(-1).softmax(-1).output("one");
  ReferenceRuntime rt(g);
  for (auto [b, s] : {std::pair<int64_t, int64_t>{1, 1}, {2, 3}, {3, 7}, {1, 16}}) {
    const Dims dims = {b, s};
    std::vector<double> in = rounded(random_values(b * s, -3, 3, 7 + s), DType::F32);
    rt.set(x, in);
    rt.execute({{"b", b}, {"s", s}});
    std::string what = "b=" + std::to_string(b) + " s=" + std::to_string(s);
    expect_close(rt.get<double>(over_s), along_axis(in, dims, 1, ref_softmax),
                 tol_for(DType::F32, 4), "softmax " + what);
    expect_close(rt.get<double>(over_b), along_axis(in, dims, 0, ref_log_softmax),
                 tol_for(DType::F32, 4), "log_softmax " + what);
    expect_close(rt.get<double>(one), std::vector<double>(b * s, 1.0), {0, 0},
                 "size-1 axis " + what);
    EXPECT_EQ(rt.shape(one), (Dims{b, s, 1}));
  }
}

TEST(Softmax, Errors) {
  Graph g;
  auto xi = g.tensor("xi", {2, 3}, DType::I32);
  auto x = g.tensor("x", {2, 3});
  expect_error([&] { xi.softmax(0); }, "softmax");
  expect_error([&] { xi.log_softmax(0); }, "log_softmax");
  expect_error([&] { x.softmax(2); }, "softmax");
  expect_error([&] { x.log_softmax(-3); }, "log_softmax");
}

// ---------------------------------------------------------------- layer_norm

TEST(LayerNorm, WithAndWithoutWeightAndBias) {
  for (DType t : kFloatTypes) {
    const Dims dims = {2, 3, 8};
    std::vector<double> in = rounded(random_values(48, -3, 5, 41), t);
    Row w = rounded(random_values(8, 0.5, 2, 42), t);
    Row b = rounded(random_values(8, -1, 1, 43), t);
    Graph g;
    auto x = g.tensor("x", {2, 3, 8}, t);
    auto wt = g.tensor("w", {8}, t);
    auto bt = g.tensor("b", {8}, t);
    auto plain = x.layer_norm().output("plain");
    auto with_w = x.layer_norm(wt).output("w");
    auto with_wb = x.layer_norm(wt, bt).output("wb");
    auto with_b = x.layer_norm(std::nullopt, bt).output("b");
    auto big_eps = x.layer_norm(wt, bt, 0.5).output("eps");
    ReferenceRuntime rt(g);
    rt.set(x, in);
    rt.set(wt, w);
    rt.set(bt, b);
    rt.execute();
    std::string n(name(t));
    Tol tol = tol_for(t, 8);
    auto ref = [&](const Row* wp, const Row* bp, double eps) {
      return by_block(in, 8, [&](const Row& r) { return ref_layer_norm(r, wp, bp, eps); });
    };
    EXPECT_EQ(g.node(with_wb.id()).dtype, t);
    EXPECT_EQ(rt.shape(with_wb), dims);
    expect_close(rt.get<double>(plain), ref(nullptr, nullptr, 1e-5), tol, "plain " + n);
    expect_close(rt.get<double>(with_w), ref(&w, nullptr, 1e-5), tol, "weight " + n);
    expect_close(rt.get<double>(with_wb), ref(&w, &b, 1e-5), tol, "weight+bias " + n);
    expect_close(rt.get<double>(with_b), ref(nullptr, &b, 1e-5), tol, "bias " + n);
    expect_close(rt.get<double>(big_eps), ref(&w, &b, 0.5), tol, "eps 0.5 " + n);
  }
}

TEST(LayerNorm, MultiDimWeightNormalisesTrailingAxes) {
  for (DType t : kFloatTypes) {
    std::vector<double> in = rounded(random_values(2 * 3 * 4, -2, 2, 51), t);
    Row w = rounded(random_values(12, 0.5, 2, 52), t);
    Row b = rounded(random_values(12, -1, 1, 53), t);
    Graph g;
    auto x = g.tensor("x", {2, 3, 4}, t);
    auto wt = g.tensor("w", {3, 4}, t);
    auto bt = g.tensor("b", {3, 4}, t);
    auto y = x.layer_norm(wt, bt).output("y");
    auto w1 = g.tensor("w1", {2, 3, 4}, t);  // weight over every axis
    auto y_all = x.layer_norm(w1).output("y_all");
    ReferenceRuntime rt(g);
    rt.set(x, in);
    rt.set(wt, w);
    rt.set(bt, b);
    Row ones(24, 1.0);
    rt.set(w1, ones);
    rt.execute();
    std::string n(name(t));
    expect_close(rt.get<double>(y),
                 by_block(in, 12, [&](const Row& r) { return ref_layer_norm(r, &w, &b, 1e-5); }),
                 tol_for(t, 8), "weight [3,4] " + n);
    expect_close(rt.get<double>(y_all), ref_layer_norm(in, nullptr, nullptr, 1e-5), tol_for(t, 8),
                 "weight [2,3,4] " + n);
  }
}

TEST(LayerNorm, ConstantRowsGiveBiasAndWeightDtypeMayDiffer) {
  Graph g;
  auto x = g.tensor("x", {2, 4}, DType::BF16);
  auto w = g.tensor("w", {4}, DType::F32);
  auto b = g.tensor("b", {4}, DType::F32);
  auto y = x.layer_norm(w, b).output("y");
  ReferenceRuntime rt(g);
  rt.set(x, std::vector<float>{3, 3, 3, 3, 1, 2, 3, 4});
  rt.set(w, std::vector<float>{1, 2, 3, 4});
  rt.set(b, std::vector<float>{0.5, -0.5, 0.25, 0});
  rt.execute();
  EXPECT_EQ(g.node(y.id()).dtype, DType::BF16);
  Row r1 = ref_layer_norm({1, 2, 3, 4}, nullptr, nullptr, 1e-5);
  Row want = {0.5, -0.5, 0.25, 0, r1[0] * 1 + 0.5, r1[1] * 2 - 0.5, r1[2] * 3 + 0.25, r1[3] * 4};
  expect_close(rt.get<double>(y), want, tol_for(DType::BF16), "layer_norm bf16");
}

TEST(LayerNorm, DynamicBatch) {
  Graph g;
  auto x = g.tensor("x", {"s", 6});
  auto w = g.tensor("w", {6});
  auto y = x.layer_norm(w).output("y");
  ReferenceRuntime rt(g);
  Row wv = rounded(random_values(6, 0.5, 1.5, 9), DType::F32);
  rt.set(w, wv);
  for (int64_t s : {1, 2, 5}) {
    std::vector<double> in = rounded(random_values(s * 6, -2, 2, 60 + s), DType::F32);
    rt.set(x, in);
    rt.execute({{"s", s}});
    expect_close(
        rt.get<double>(y),
        by_block(in, 6, [&](const Row& r) { return ref_layer_norm(r, &wv, nullptr, 1e-5); }),
        tol_for(DType::F32, 8), "s=" + std::to_string(s));
  }
}

TEST(LayerNorm, Errors) {
  Graph g;
  auto x = g.tensor("x", {2, 8});
  auto xi = g.tensor("xi", {2, 8}, DType::I32);
  auto w4 = g.tensor("w4", {4});
  auto w8 = g.tensor("w8", {8});
  auto w28 = g.tensor("w28", {3, 8});
  auto w3d = g.tensor("w3d", {1, 2, 8});
  auto b4 = g.tensor("b4", {4});
  auto scalar = g.constant(1.0);
  auto x0 = g.constant(1.0);
  expect_error([&] { x.layer_norm(w4); }, "layer_norm");
  expect_error([&] { x.layer_norm(w28); }, "layer_norm");
  expect_error([&] { x.layer_norm(w3d); }, "layer_norm");
  expect_error([&] { x.layer_norm(scalar); }, "layer_norm");
  expect_error([&] { x.layer_norm(w8, b4); }, "layer_norm");
  expect_error([&] { x.layer_norm(std::nullopt, b4); }, "layer_norm");
  expect_error([&] { xi.layer_norm(); }, "layer_norm");
  expect_error([&] { x0.layer_norm(); }, "layer_norm");
}

// ---------------------------------------------------------------- rms_norm

TEST(RmsNorm, WithAndWithoutWeight) {
  for (DType t : kFloatTypes) {
    const Dims dims = {3, 2, 16};
    std::vector<double> in = rounded(random_values(96, -3, 3, 71), t);
    Row w = rounded(random_values(16, 0.5, 2, 72), t);
    Graph g;
    auto x = g.tensor("x", {3, 2, 16}, t);
    auto wt = g.tensor("w", {16}, t);
    auto plain = x.rms_norm().output("plain");
    auto with_w = x.rms_norm(wt).output("w");
    auto big_eps = x.rms_norm(wt, 2.0).output("eps");
    ReferenceRuntime rt(g);
    rt.set(x, in);
    rt.set(wt, w);
    rt.execute();
    std::string n(name(t));
    EXPECT_EQ(g.node(with_w.id()).dtype, t);
    EXPECT_EQ(rt.shape(with_w), dims);
    auto ref = [&](const Row* wp, double eps) {
      return by_block(in, 16, [&](const Row& r) { return ref_rms_norm(r, wp, eps, t); });
    };
    expect_close(rt.get<double>(plain), ref(nullptr, 1e-6), tol_for(t, 4), "plain " + n);
    expect_close(rt.get<double>(with_w), ref(&w, 1e-6), tol_for(t, 4), "weight " + n);
    expect_close(rt.get<double>(big_eps), ref(&w, 2.0), tol_for(t, 4), "eps 2 " + n);
  }
}

TEST(RmsNorm, ZeroRowsAndDynamicBatch) {
  Graph g;
  auto x = g.tensor("x", {"s", 4});
  auto y = x.rms_norm().output("y");
  ReferenceRuntime rt(g);
  for (int64_t s : {1, 3}) {
    std::vector<double> in = rounded(random_values(s * 4, -2, 2, 80 + s), DType::F32);
    for (int k = 0; k < 4; ++k)
      in[k] = 0;  // all-zero row stays zero (eps keeps it finite)
    rt.set(x, in);
    rt.execute({{"s", s}});
    expect_close(
        rt.get<double>(y),
        by_block(in, 4, [&](const Row& r) { return ref_rms_norm(r, nullptr, 1e-6, DType::F32); }),
        tol_for(DType::F32, 4), "s=" + std::to_string(s));
  }
}

TEST(RmsNorm, Errors) {
  Graph g;
  auto x = g.tensor("x", {2, 8});
  auto xi = g.tensor("xi", {2, 8}, DType::I32);
  auto w4 = g.tensor("w4", {4});
  auto w28 = g.tensor("w28", {2, 8});
  expect_error([&] { x.rms_norm(w4); }, "rms_norm");
  expect_error([&] { x.rms_norm(w28); }, "rms_norm");
  expect_error([&] { xi.rms_norm(); }, "rms_norm");
  expect_error([&] { g.constant(1.0).rms_norm(); }, "rms_norm");
}

}  // namespace
}  // namespace luminal
