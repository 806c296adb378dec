// argmax/argmin, argsort, topk and cumsum on the ReferenceRuntime against plain loops.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include "support/along_axis.hpp"
#include "support/check.hpp"
#include "support/expect_error.hpp"
#include "support/run_graph.hpp"

namespace luminal {
namespace {

using testing::along_axis;
using testing::expect_close;
using testing::expect_error;
using testing::normalize_axis;
using testing::random_ints;
using testing::random_values;
using testing::rounded;
using testing::Row;
using testing::set_values;
using testing::tol_for;

using Dims = std::vector<int64_t>;

const DType kAllTypes[] = {DType::F32, DType::F64, DType::F16, DType::BF16,
                           DType::I32, DType::I64, DType::Bool};

Dims with_axis(Dims d, int axis, int64_t size) {
  const int a = normalize_axis(axis, d.size());
  d[a] = size;
  return d;
}

Dims without_axis(Dims d, int axis) {
  d.erase(d.begin() + normalize_axis(axis, d.size()));
  return d;
}

// Index of the first maximum (is_max) or minimum; the first NaN wins.
Row ref_arg(const Row& r, bool is_max) {
  size_t best = 0;
  for (size_t i = 0; i < r.size(); ++i) {
    if (std::isnan(r[i])) return {static_cast<double>(i)};
    if (is_max ? r[i] > r[best] : r[i] < r[best]) best = i;
  }
  return {static_cast<double>(best)};
}

// torch.sort(stable=True): NaN last ascending, first descending.
std::vector<size_t> ref_order(const Row& r, bool descending) {
  std::vector<size_t> idx(r.size());
  std::iota(idx.begin(), idx.end(), 0);
  std::stable_sort(idx.begin(), idx.end(), [&](size_t i, size_t j) {
    double a = r[i], b = r[j];
    if (descending) return (std::isnan(a) && !std::isnan(b)) || a > b;
    return (std::isnan(b) && !std::isnan(a)) || a < b;
  });
  return idx;
}

Row ref_argsort(const Row& r, bool descending) {
  Row out;
  for (size_t i : ref_order(r, descending))
    out.push_back(static_cast<double>(i));
  return out;
}

Row ref_cumsum(const Row& r) {
  Row out(r.size());
  double s = 0;
  for (size_t i = 0; i < r.size(); ++i)
    out[i] = s += r[i];
  return out;
}

// Data with many ties: small integers (as floats for float dtypes), or 0/1 for bool.
std::vector<double> tie_data(DType t, size_t n, uint64_t seed) {
  std::vector<int64_t> v =
      random_ints(n, t == DType::Bool ? 0 : -3, t == DType::Bool ? 1 : 3, seed);
  std::vector<double> out(v.begin(), v.end());
  if (is_float(t))
    for (double& x : out)
      x *= 0.5;
  return out;
}

std::vector<double> as_doubles(const std::vector<int64_t>& v) {
  return std::vector<double>(v.begin(), v.end());
}

// ---------------------------------------------------------------- argmax / argmin

TEST(ArgMaxMin, EachAxisWithTiesAllDtypes) {
  const Dims dims = {3, 4, 5};
  for (DType t : kAllTypes) {
    std::vector<double> in = tie_data(t, 60, 3);
    Graph g;
    auto x = g.tensor("x", {3, 4, 5}, t);
    std::vector<std::tuple<int, bool, Tensor, Tensor>> outs;
    for (int a : {0, 1, 2, -1, -3})
      for (bool k : {false, true}) {
        std::string s = std::to_string(a) + (k ? "k" : "");
        outs.push_back(
            {a, k, x.argmax(a, k).output("amax" + s), x.argmin(a, k).output("amin" + s)});
      }
    ReferenceRuntime rt(g);
    set_values(rt, x, in);
    rt.execute();
    for (const auto& [a, k, amax, amin] : outs) {
      std::string what =
          std::string(name(t)) + " axis " + std::to_string(a) + " keepdim " + std::to_string(k);
      Dims want_shape = k ? with_axis(dims, a, 1) : without_axis(dims, a);
      EXPECT_EQ(rt.shape(amax), want_shape) << what;
      EXPECT_EQ(rt.shape(amin), want_shape) << what;
      EXPECT_EQ(g.node(amax.id()).dtype, DType::I32) << what;
      expect_close(as_doubles(rt.get<int64_t>(amax)),
                   along_axis(in, dims, a, [](const Row& r) { return ref_arg(r, true); }), {0, 0},
                   "argmax " + what);
      expect_close(as_doubles(rt.get<int64_t>(amin)),
                   along_axis(in, dims, a, [](const Row& r) { return ref_arg(r, false); }), {0, 0},
                   "argmin " + what);
    }
  }
}

TEST(ArgMaxMin, NaNIsTheExtremeAndInfinities) {
  for (DType t : {DType::F32, DType::F64, DType::F16, DType::BF16}) {
    const double inf = INFINITY;
    std::vector<double> in = {
        1,    NAN,  3,    NAN,   // first NaN for both
        -inf, -inf, 2,    inf,   // argmax 3, argmin 0
        inf,  inf,  -inf, -inf,  // argmax 0, argmin 2
        5,    5,    5,    5,     // all equal: 0
        -0.0, 0.0,  -1,   NAN,   // NaN last
        2,    -0.0, 0.0,  2,     // -0 == 0: the first of them
    };
    Graph g;
    auto x = g.tensor("x", {6, 4}, t);
    auto amax = x.argmax(1).output("amax");
    auto amin = x.argmin(-1).output("amin");
    ReferenceRuntime rt(g);
    rt.set(x, in);
    rt.execute();
    EXPECT_EQ(rt.get<int>(amax), (std::vector<int>{1, 3, 0, 0, 3, 0})) << name(t);
    EXPECT_EQ(rt.get<int>(amin), (std::vector<int>{1, 0, 2, 0, 3, 1})) << name(t);
  }
}

TEST(ArgMaxMin, IntegerExtremesAndDynamicAxis) {
  Graph g;
  auto x = g.tensor("x", {2, "s"}, DType::I64);
  auto amax = x.argmax(1).output("amax");
  auto amin = x.argmin(1, true).output("amin");
  ReferenceRuntime rt(g);
  const int64_t lo = std::numeric_limits<int64_t>::min(), hi = std::numeric_limits<int64_t>::max();
  for (int64_t s : {1, 3, 7}) {
    std::vector<int64_t> v(2 * s, 0);
    v[s - 1] = hi;
    v[0] = lo;
    v[s] = hi;
    v[2 * s - 1] = lo;
    rt.set(x, v);
    rt.execute({{"s", s}});
    std::vector<double> in(v.begin(), v.end());
    std::string what = "s=" + std::to_string(s);
    // Compare on the integers themselves (doubles cannot hold these extremes apart from their
    // neighbours, but lo/hi/0 are exact).
    expect_close(as_doubles(rt.get<int64_t>(amax)),
                 along_axis(in, {2, s}, 1, [](const Row& r) { return ref_arg(r, true); }), {0, 0},
                 "argmax " + what);
    expect_close(as_doubles(rt.get<int64_t>(amin)),
                 along_axis(in, {2, s}, 1, [](const Row& r) { return ref_arg(r, false); }), {0, 0},
                 "argmin " + what);
    EXPECT_EQ(rt.shape(amin), (Dims{2, 1}));
  }
}

// ---------------------------------------------------------------- argsort

TEST(Argsort, StableWithTiesEachAxisAllDtypes) {
  const Dims dims = {3, 4, 5};
  for (DType t : kAllTypes) {
    std::vector<double> in = tie_data(t, 60, 5);
    Graph g;
    auto x = g.tensor("x", {3, 4, 5}, t);
    std::vector<std::tuple<int, bool, Tensor>> outs;
    for (int a : {0, 1, 2, -1})
      for (bool desc : {false, true})
        outs.push_back(
            {a, desc, x.argsort(a, desc).output("s" + std::to_string(a) + (desc ? "d" : "a"))});
    ReferenceRuntime rt(g);
    set_values(rt, x, in);
    rt.execute();
    for (const auto& [a, desc, out] : outs) {
      std::string what = std::string(name(t)) + " axis " + std::to_string(a) +
                         (desc ? " descending" : " ascending");
      EXPECT_EQ(rt.shape(out), dims) << what;
      EXPECT_EQ(g.node(out.id()).dtype, DType::I32) << what;
      bool d = desc;
      expect_close(as_doubles(rt.get<int64_t>(out)),
                   along_axis(in, dims, a, [d](const Row& r) { return ref_argsort(r, d); }), {0, 0},
                   what);
    }
  }
}

TEST(Argsort, NaNAndInfPlacementLikeTorch) {
  for (DType t : {DType::F32, DType::F64, DType::F16, DType::BF16}) {
    const double inf = INFINITY;
    Row in = {NAN, 1, -inf, 2, NAN, inf, -0.0, 0.0, 1, -inf};
    Graph g;
    auto x = g.tensor("x", {10}, t);
    auto asc = x.argsort(0).output("asc");
    auto desc = x.argsort(0, true).output("desc");
    ReferenceRuntime rt(g);
    rt.set(x, in);
    rt.execute();
    // Ascending: -inf(2) -inf(9) -0(6) 0(7) 1(1) 1(8) 2(3) inf(5) NaN(0) NaN(4).
    EXPECT_EQ(rt.get<int>(asc), (std::vector<int>{2, 9, 6, 7, 1, 8, 3, 5, 0, 4})) << name(t);
    // Descending: NaN(0) NaN(4) inf(5) 2(3) 1(1) 1(8) -0(6) 0(7) -inf(2) -inf(9).
    EXPECT_EQ(rt.get<int>(desc), (std::vector<int>{0, 4, 5, 3, 1, 8, 6, 7, 2, 9})) << name(t);
  }
}

TEST(Argsort, RandomDistinctAndDynamicLength) {
  Graph g;
  auto x = g.tensor("x", {2, "s"});
  auto asc = x.argsort(-1).output("asc");
  auto desc = x.argsort(1, true).output("desc");
  auto col = x.argsort(0).output("col");
  auto tr = x.transpose(0, 1).argsort(1, true).output("tr");  // through a transposed view
  auto cs = x.transpose(0, 1).cumsum(0).output("cs");
  ReferenceRuntime rt(g);
  for (int64_t s : {1, 2, 6, 13}) {
    std::vector<double> in = rounded(random_values(2 * s, -10, 10, 50 + s), DType::F32);
    rt.set(x, in);
    rt.execute({{"s", s}});
    std::string what = "s=" + std::to_string(s);
    const Dims dims = {2, s};
    expect_close(as_doubles(rt.get<int64_t>(asc)),
                 along_axis(in, dims, 1, [](const Row& r) { return ref_argsort(r, false); }),
                 {0, 0}, "asc " + what);
    expect_close(as_doubles(rt.get<int64_t>(desc)),
                 along_axis(in, dims, 1, [](const Row& r) { return ref_argsort(r, true); }), {0, 0},
                 "desc " + what);
    expect_close(as_doubles(rt.get<int64_t>(col)),
                 along_axis(in, dims, 0, [](const Row& r) { return ref_argsort(r, false); }),
                 {0, 0}, "col " + what);
    std::vector<double> t(in.size());
    for (int64_t i = 0; i < 2; ++i)
      for (int64_t j = 0; j < s; ++j)
        t[j * 2 + i] = in[i * s + j];
    expect_close(as_doubles(rt.get<int64_t>(tr)),
                 along_axis(t, {s, 2}, 1, [](const Row& r) { return ref_argsort(r, true); }),
                 {0, 0}, "transposed " + what);
    expect_close(rt.get<double>(cs), along_axis(t, {s, 2}, 0, ref_cumsum),
                 {0, 4 * s * epsilon(DType::F32) * 10}, "cumsum transposed " + what);
  }
}

// ---------------------------------------------------------------- topk

TEST(Topk, LargestAndSmallestValuesAndIndices) {
  const Dims dims = {3, 6};
  for (DType t : kAllTypes) {
    std::vector<double> in =
        t == DType::Bool ? tie_data(t, 18, 9) : rounded(random_values(18, -5, 5, 9), t);
    if (is_integer(t))
      for (double& v : in)
        v = std::round(v);
    Graph g;
    auto x = g.tensor("x", {3, 6}, t);
    std::vector<std::tuple<int64_t, int, bool, Tensor, Tensor>> outs;
    for (int64_t k : {1, 3, 6})
      for (int a : {1, -1, 0})
        for (bool largest : {true, false}) {
          if (a == 0 && k > 3) continue;
          auto [v, i] = x.topk(k, a, largest);
          std::string s = std::to_string(k) + "_" + std::to_string(a) + (largest ? "L" : "S");
          outs.push_back({k, a, largest, v.output("v" + s), i.output("i" + s)});
        }
    ReferenceRuntime rt(g);
    set_values(rt, x, in);
    rt.execute();
    for (const auto& [k, a, largest, v, i] : outs) {
      std::string what = std::string(name(t)) + " k=" + std::to_string(k) + " axis " +
                         std::to_string(a) + (largest ? " largest" : " smallest");
      const int64_t kk = k;
      const bool lg = largest;
      std::vector<double> want_i = along_axis(in, dims, a, [&](const Row& r) {
        Row o = ref_argsort(r, lg);
        o.resize(kk);
        return o;
      });
      std::vector<double> want_v = along_axis(in, dims, a, [&](const Row& r) {
        Row o;
        for (size_t j : ref_order(r, lg))
          o.push_back(r[j]);
        o.resize(kk);
        return o;
      });
      EXPECT_EQ(rt.shape(v), with_axis(dims, a, k)) << what;
      EXPECT_EQ(rt.shape(i), with_axis(dims, a, k)) << what;
      EXPECT_EQ(g.node(v.id()).dtype, t) << what;
      EXPECT_EQ(g.node(i.id()).dtype, DType::I32) << what;
      expect_close(rt.get<double>(v), want_v, {0, 0}, "values " + what);
      expect_close(as_doubles(rt.get<int64_t>(i)), want_i, {0, 0}, "indices " + what);
    }
  }
}

TEST(Topk, NaNCountsAsLargestAndKZero) {
  Graph g;
  auto x = g.tensor("x", {6});
  auto [lv, li] = x.topk(2);
  auto [sv, si] = x.topk(2, 0, false);
  auto [zv, zi] = x.topk(0);
  lv = lv.output("lv");
  li = li.output("li");
  sv = sv.output("sv");
  si = si.output("si");
  zv = zv.output("zv");
  ReferenceRuntime rt(g);
  rt.set(x, std::vector<float>{3, NAN, -1, INFINITY, -INFINITY, 3});
  rt.execute();
  expect_close(rt.get<double>(lv), {NAN, INFINITY}, {0, 0}, "largest");
  EXPECT_EQ(rt.get<int>(li), (std::vector<int>{1, 3}));
  expect_close(rt.get<double>(sv), {-INFINITY, -1}, {0, 0}, "smallest");
  EXPECT_EQ(rt.get<int>(si), (std::vector<int>{4, 2}));
  EXPECT_EQ(rt.shape(zv), (Dims{0}));
}

TEST(Topk, DynamicAxis) {
  Graph g;
  auto x = g.tensor("x", {"s", 2}, DType::I32);
  auto [v, i] = x.topk(2, 0);
  v = v.output("v");
  i = i.output("i");
  ReferenceRuntime rt(g);
  for (int64_t s : {2, 3, 8}) {
    std::vector<int64_t> iv = random_ints(2 * s, -4, 4, 70 + s);
    std::vector<double> in(iv.begin(), iv.end());
    rt.set(x, iv);
    rt.execute({{"s", s}});
    std::string what = "s=" + std::to_string(s);
    expect_close(as_doubles(rt.get<int64_t>(i)),
                 along_axis(in, {s, 2}, 0,
                            [](const Row& r) {
                              Row o = ref_argsort(r, true);
                              o.resize(2);
                              return o;
                            }),
                 {0, 0}, what);
    EXPECT_EQ(rt.shape(v), (Dims{2, 2})) << what;
  }
}

// ---------------------------------------------------------------- cumsum

TEST(Cumsum, EachAxisAllDtypes) {
  const Dims dims = {2, 3, 4};
  for (DType t : kAllTypes) {
    std::vector<double> in;
    if (is_float(t)) {
      in = rounded(random_values(24, 0.25, 2, 13), t);
    } else {
      in = tie_data(t, 24, 13);
      if (t != DType::Bool)
        for (double& v : in)
          v *= 7;
    }
    Graph g;
    auto x = g.tensor("x", {2, 3, 4}, t);
    std::vector<std::pair<int, Tensor>> outs;
    for (int a : {0, 1, 2, -1, -2})
      outs.push_back({a, x.cumsum(a).output("c" + std::to_string(a))});
    ReferenceRuntime rt(g);
    set_values(rt, x, in);
    rt.execute();
    for (const auto& [a, out] : outs) {
      std::string what = std::string(name(t)) + " axis " + std::to_string(a);
      EXPECT_EQ(rt.shape(out), dims) << what;
      EXPECT_EQ(g.node(out.id()).dtype, t == DType::Bool ? DType::I32 : t) << what;
      expect_close(rt.get<double>(out), along_axis(in, dims, a, ref_cumsum), tol_for(t, 2), what);
    }
  }
}

TEST(Cumsum, DynamicDims) {
  Graph g;
  auto x = g.tensor("x", {"s", 3});
  auto c0 = x.cumsum(0).output("c0");
  auto c1 = x.cumsum(1).output("c1");
  auto xi = g.tensor("xi", {2, "s"}, DType::I64);
  auto ci = xi.cumsum(-1).output("ci");
  auto cb = xi.gt(0).cumsum(1).output("cb");
  ReferenceRuntime rt(g);
  for (int64_t s : {1, 2, 5, 11}) {
    std::vector<double> in = rounded(random_values(3 * s, -2, 2, 90 + s), DType::F32);
    std::vector<int64_t> iv = random_ints(2 * s, -100, 100, 91 + s);
    std::vector<double> ind(iv.begin(), iv.end()), pos(iv.size());
    for (size_t j = 0; j < iv.size(); ++j)
      pos[j] = iv[j] > 0;
    rt.set(x, in);
    rt.set(xi, iv);
    rt.execute({{"s", s}});
    std::string what = "s=" + std::to_string(s);
    // Mixed signs: error relative to the running sum of magnitudes (<= 2 * s).
    testing::Tol tol{4 * epsilon(DType::F32), 8 * epsilon(DType::F32) * static_cast<double>(s)};
    expect_close(rt.get<double>(c0), along_axis(in, {s, 3}, 0, ref_cumsum), tol, "c0 " + what);
    expect_close(rt.get<double>(c1), along_axis(in, {s, 3}, 1, ref_cumsum), tol, "c1 " + what);
    expect_close(as_doubles(rt.get<int64_t>(ci)), along_axis(ind, {2, s}, 1, ref_cumsum), {0, 0},
                 "ci " + what);
    expect_close(as_doubles(rt.get<int64_t>(cb)), along_axis(pos, {2, s}, 1, ref_cumsum), {0, 0},
                 "cb " + what);
    EXPECT_EQ(rt.shape(c0), (Dims{s, 3})) << what;
  }
}

TEST(Cumsum, InfNaNAndEmptyAxis) {
  Graph g;
  auto x = g.tensor("x", {2, 4});
  auto c = x.cumsum(1).output("c");
  auto e = g.tensor("e", {2, 0});
  auto ce = e.cumsum(1).output("ce");
  ReferenceRuntime rt(g);
  rt.set(x, std::vector<float>{1, INFINITY, 1, -INFINITY, 1, NAN, 2, 3});
  rt.set(e, std::vector<float>{});
  rt.execute();
  expect_close(rt.get<double>(c), {1, INFINITY, INFINITY, NAN, 1, NAN, NAN, NAN}, {0, 0});
  EXPECT_EQ(rt.shape(ce), (Dims{2, 0}));
}

// ---------------------------------------------------------------- tiny axes

TEST(SortOps, SizeOneAndEmptyAxes) {
  Graph g;
  auto x = g.tensor("x", {3, 1});
  auto am = x.argmax(1).output("am");
  auto an = x.argmin(1, true).output("an");
  auto as = x.argsort(1, true).output("as");
  auto [tv, ti] = x.topk(1);
  tv = tv.output("tv");
  auto cs = x.cumsum(1).output("cs");
  auto e = g.tensor("e", {0, 3});
  auto es = e.argsort(0).output("es");
  auto ec = e.cumsum(0).output("ec");
  auto eam = e.argmax(1).output("eam");  // reduces the non-empty axis: shape [0]
  ReferenceRuntime rt(g);
  rt.set(x, std::vector<float>{NAN, 2, -1});
  rt.set(e, std::vector<float>{});
  rt.execute();
  EXPECT_EQ(rt.get<int>(am), (std::vector<int>{0, 0, 0}));
  EXPECT_EQ(rt.get<int>(an), (std::vector<int>{0, 0, 0}));
  EXPECT_EQ(rt.shape(an), (Dims{3, 1}));
  EXPECT_EQ(rt.get<int>(as), (std::vector<int>{0, 0, 0}));
  expect_close(rt.get<double>(tv), {NAN, 2, -1}, {0, 0}, "topk 1 of 1");
  expect_close(rt.get<double>(cs), {NAN, 2, -1}, {0, 0}, "cumsum of 1");
  EXPECT_EQ(rt.shape(es), (Dims{0, 3}));
  EXPECT_EQ(rt.shape(ec), (Dims{0, 3}));
  EXPECT_EQ(rt.shape(eam), (Dims{0}));
}

// ---------------------------------------------------------------- errors

TEST(SortOps, ErrorsNameTheOp) {
  Graph g;
  auto x = g.tensor("x", {3, 4});
  auto d = g.tensor("d", {2, "s"});
  expect_error([&] { x.argmax(2); }, "argmax");
  expect_error([&] { x.argmin(-3); }, "argmin");
  expect_error([&] { x.argsort(5); }, "argsort");
  expect_error([&] { x.topk(5, 1); }, "topk");
  expect_error([&] { x.topk(4, 0); }, "topk");
  expect_error([&] { x.topk(-1); }, "topk");
  expect_error([&] { x.topk(1, 3); }, "topk");
  expect_error([&] { d.topk(3, 0); }, "topk");
  expect_error([&] { x.cumsum(2); }, "cumsum");
  expect_error([&] { g.constant(1.0).argmax(0); }, "argmax");
}

}  // namespace
}  // namespace luminal
