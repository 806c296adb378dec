// matmul (torch.matmul semantics, 1-D to 5-D, batch broadcasting) against plain loops.
#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "support/check.hpp"
#include "support/expect_error.hpp"
#include "support/index_map.hpp"
#include "support/run_graph.hpp"

namespace luminal {
namespace {

using testing::dims;
using testing::expect_close;
using testing::expect_error;
using testing::kFloatTypes;
using testing::prod;
using testing::random_ints;
using testing::random_values;
using testing::rounded;
using testing::set_values;
using testing::Tol;

using Dims = std::vector<int64_t>;

std::string dims_str(const Dims& d) {
  std::string s = "[";
  for (size_t i = 0; i < d.size(); ++i)
    s += (i ? "," : "") + std::to_string(d[i]);
  return s + "]";
}

struct Result {
  Dims shape;
  std::vector<double> values;
};

// torch.matmul on row-major data. Each product is rounded to dtype t (the HLIR multiplies in the
// tensor's dtype before the sum), the sum is exact (f64) and rounded once.
Result ref_matmul(const std::vector<double>& a, Dims da, const std::vector<double>& b, Dims db,
                  DType t) {
  const bool a1 = da.size() == 1, b1 = db.size() == 1;
  if (a1) da.insert(da.begin(), 1);
  if (b1) db.push_back(1);
  const int64_t m = da[da.size() - 2], k = da.back(), n = db.back();
  Dims ba(da.begin(), da.end() - 2), bb(db.begin(), db.end() - 2);
  const size_t r = std::max(ba.size(), bb.size());
  ba.insert(ba.begin(), r - ba.size(), 1);
  bb.insert(bb.begin(), r - bb.size(), 1);
  Dims batch(r);
  for (size_t i = 0; i < r; ++i)
    batch[i] = std::max(ba[i], bb[i]);
  Result res;
  res.shape = batch;
  if (!a1) res.shape.push_back(m);
  if (!b1) res.shape.push_back(n);
  const int64_t nb = prod(batch);
  for (int64_t f = 0; f < nb; ++f) {
    // Batch multi-index, then each operand's batch offset (size-1 axes broadcast).
    Dims idx(r);
    int64_t rem = f;
    for (size_t i = r; i-- > 0;) {
      idx[i] = rem % batch[i];
      rem /= batch[i];
    }
    int64_t oa = 0, ob = 0;
    for (size_t i = 0; i < r; ++i) {
      oa = oa * ba[i] + (ba[i] == 1 ? 0 : idx[i]);
      ob = ob * bb[i] + (bb[i] == 1 ? 0 : idx[i]);
    }
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double s = 0;
        for (int64_t p = 0; p < k; ++p) {
          double prod = a[(oa * m + i) * k + p] * b[(ob * k + p) * n + j];
          s += is_float(t) ? rounded({prod}, t)[0] : prod;
        }
        res.values.push_back(s);
      }
  }
  return res;
}

// rtol = eps * sqrt(k) (the project tolerance for matmuls); values are in [-1, 1] so atol is the
// same.
Tol matmul_tol(DType t, int64_t k) {
  double e = epsilon(t) * std::sqrt(static_cast<double>(std::max<int64_t>(k, 1)));
  return {e, e};
}

std::vector<double> data_for(DType t, int64_t n, uint64_t seed) {
  if (is_float(t)) return rounded(random_values(n, -1, 1, seed), t);
  std::vector<int64_t> v = random_ints(n, -9, 9, seed);
  return std::vector<double>(v.begin(), v.end());
}

const std::vector<std::pair<Dims, Dims>> kShapes = {
    {{5}, {5}},                    // dot
    {{4}, {4, 3}},                 // vector @ matrix
    {{3, 4}, {4}},                 // matrix @ vector
    {{3, 4}, {4, 2}},              //
    {{1, 7}, {7, 1}},              //
    {{2, 3, 4}, {2, 4, 5}},        // batched
    {{2, 3, 4}, {4, 5}},           // batch @ matrix
    {{3, 4}, {2, 4, 5}},           // matrix @ batch
    {{4}, {2, 4, 3}},              // vector @ batch
    {{2, 3, 4}, {4}},              // batch @ vector
    {{2, 1, 3, 4}, {5, 4, 2}},     // batch broadcasting
    {{1, 3, 2, 4}, {2, 1, 4, 3}},  // both sides broadcast
};

TEST(Matmul, TorchSemanticsAllFloatDtypes) {
  std::vector<std::pair<Dims, Dims>> shapes = kShapes;
  shapes.push_back({{2, 1, 2, 3, 4}, {3, 1, 4, 2}});     // 5-D @ 4-D
  shapes.push_back({{1, 2, 1, 2, 3}, {2, 1, 2, 3, 2}});  // 5-D @ 5-D
  for (DType t : kFloatTypes) {
    Graph g;
    struct Case {
      Dims da, db;
      Tensor a, b, out;
    };
    std::vector<Case> cases;
    for (size_t i = 0; i < shapes.size(); ++i) {
      auto [da, db] = shapes[i];
      auto a = g.tensor("a" + std::to_string(i), dims(da), t);
      auto b = g.tensor("b" + std::to_string(i), dims(db), t);
      cases.push_back({da, db, a, b, a.matmul(b).output("o" + std::to_string(i))});
    }
    ReferenceRuntime rt(g);
    std::vector<std::pair<std::vector<double>, std::vector<double>>> data;
    for (size_t i = 0; i < cases.size(); ++i) {
      data.push_back(
          {data_for(t, prod(cases[i].da), 2 * i), data_for(t, prod(cases[i].db), 2 * i + 1)});
      rt.set(cases[i].a, data[i].first);
      rt.set(cases[i].b, data[i].second);
    }
    rt.execute();
    for (size_t i = 0; i < cases.size(); ++i) {
      const Case& c = cases[i];
      Result want = ref_matmul(data[i].first, c.da, data[i].second, c.db, t);
      std::string what = std::string(name(t)) + " " + dims_str(c.da) + " @ " + dims_str(c.db);
      EXPECT_EQ(rt.shape(c.out), want.shape) << what;
      EXPECT_EQ(g.node(c.out.id()).dtype, t) << what;
      expect_close(rt.get<double>(c.out), want.values, matmul_tol(t, c.da.back()), what);
    }
  }
}

TEST(Matmul, IntegersExact) {
  for (DType t : {DType::I32, DType::I64}) {
    Graph g;
    std::vector<std::tuple<Dims, Dims, Tensor, Tensor, Tensor>> cases;
    for (size_t i = 0; i < kShapes.size(); ++i) {
      auto [da, db] = kShapes[i];
      auto a = g.tensor("a" + std::to_string(i), dims(da), t);
      auto b = g.tensor("b" + std::to_string(i), dims(db), t);
      cases.push_back({da, db, a, b, a.matmul(b).output("o" + std::to_string(i))});
    }
    ReferenceRuntime rt(g);
    std::vector<std::pair<std::vector<double>, std::vector<double>>> data;
    for (size_t i = 0; i < cases.size(); ++i) {
      auto& [da, db, a, b, o] = cases[i];
      data.push_back({data_for(t, prod(da), 5 * i), data_for(t, prod(db), 5 * i + 1)});
      set_values(rt, a, data[i].first);
      set_values(rt, b, data[i].second);
    }
    rt.execute();
    for (size_t i = 0; i < cases.size(); ++i) {
      auto& [da, db, a, b, o] = cases[i];
      Result want = ref_matmul(data[i].first, da, data[i].second, db, t);
      std::string what = std::string(name(t)) + " " + dims_str(da) + " @ " + dims_str(db);
      EXPECT_EQ(rt.shape(o), want.shape) << what;
      EXPECT_EQ(g.node(o.id()).dtype, t) << what;
      std::vector<int64_t> w(want.values.begin(), want.values.end());
      EXPECT_EQ(rt.get<int64_t>(o), w) << what;
    }
  }
}

TEST(Matmul, TransposedOperands) {
  for (DType t : kFloatTypes) {
    Graph g;
    // a^T @ b^T with a stored [k, m] and b stored [n, k]; and a batched transposed view.
    auto a = g.tensor("a", {5, 3}, t);
    auto b = g.tensor("b", {4, 5}, t);
    auto y = a.transpose(0, 1).matmul(b.transpose(0, 1)).output("y");
    auto c = g.tensor("c", {2, 5, 3}, t);
    auto z = c.transpose(-1, -2).matmul(c).output("z");  // [2,3,5] @ [2,5,3]
    auto p = g.tensor("p", {3, 2, 5}, t);                // permuted to [2,3,5]
    auto w = p.permute({1, 0, 2}).matmul(b.transpose(0, 1)).output("w");
    std::vector<double> av = data_for(t, 15, 1), bv = data_for(t, 20, 2), cv = data_for(t, 30, 3),
                        pv = data_for(t, 30, 4);
    ReferenceRuntime rt(g);
    rt.set(a, av);
    rt.set(b, bv);
    rt.set(c, cv);
    rt.set(p, pv);
    rt.execute();
    auto transpose = [](const std::vector<double>& v, int64_t batch, int64_t r, int64_t c2) {
      std::vector<double> out(v.size());
      for (int64_t q = 0; q < batch; ++q)
        for (int64_t i = 0; i < r; ++i)
          for (int64_t j = 0; j < c2; ++j)
            out[q * r * c2 + j * r + i] = v[q * r * c2 + i * c2 + j];
      return out;
    };
    std::string n(name(t));
    Result ry = ref_matmul(transpose(av, 1, 5, 3), {3, 5}, transpose(bv, 1, 4, 5), {5, 4}, t);
    EXPECT_EQ(rt.shape(y), ry.shape);
    expect_close(rt.get<double>(y), ry.values, matmul_tol(t, 5), "a^T @ b^T " + n);
    Result rz = ref_matmul(transpose(cv, 2, 5, 3), {2, 3, 5}, cv, {2, 5, 3}, t);
    EXPECT_EQ(rt.shape(z), rz.shape);
    expect_close(rt.get<double>(z), rz.values, matmul_tol(t, 5), "c^T @ c " + n);
    std::vector<double> pp(30);  // [3,2,5] -> [2,3,5]
    for (int i = 0; i < 3; ++i)
      for (int j = 0; j < 2; ++j)
        for (int k = 0; k < 5; ++k)
          pp[(j * 3 + i) * 5 + k] = pv[(i * 2 + j) * 5 + k];
    Result rw = ref_matmul(pp, {2, 3, 5}, transpose(bv, 1, 4, 5), {5, 4}, t);
    EXPECT_EQ(rt.shape(w), rw.shape);
    expect_close(rt.get<double>(w), rw.values, matmul_tol(t, 5), "permuted @ b^T " + n);
  }
}

TEST(Matmul, DynamicDims) {
  Graph g;
  auto a = g.tensor("a", {"m", 6});
  auto w = g.tensor("w", {6, 3});
  auto y = a.matmul(w).output("y");
  auto bt = g.tensor("bt", {2, "m", 6});
  auto yb = bt.matmul(w).output("yb");
  auto v = g.tensor("v", {"m"});
  auto av = g.tensor("av", {"m", 2});
  auto yv = v.matmul(av).output("yv");                     // the dynamic dim is the inner one
  auto attn = a.matmul(a.transpose(0, 1)).output("attn");  // [m, m]
  ReferenceRuntime rt(g);
  std::vector<double> wv = data_for(DType::F32, 18, 9);
  rt.set(w, wv);
  for (int64_t m : {1, 2, 5, 8}) {
    std::vector<double> a_v = data_for(DType::F32, m * 6, 10 + m),
                        b_v = data_for(DType::F32, 2 * m * 6, 20 + m),
                        v_v = data_for(DType::F32, m, 30 + m),
                        av_v = data_for(DType::F32, m * 2, 40 + m);
    rt.set(a, a_v);
    rt.set(bt, b_v);
    rt.set(v, v_v);
    rt.set(av, av_v);
    rt.execute({{"m", m}});
    std::string what = "m=" + std::to_string(m);
    Result ry = ref_matmul(a_v, {m, 6}, wv, {6, 3}, DType::F32);
    EXPECT_EQ(rt.shape(y), ry.shape) << what;
    expect_close(rt.get<double>(y), ry.values, matmul_tol(DType::F32, 6), "[m,6]@[6,3] " + what);
    Result rb = ref_matmul(b_v, {2, m, 6}, wv, {6, 3}, DType::F32);
    EXPECT_EQ(rt.shape(yb), rb.shape) << what;
    expect_close(rt.get<double>(yb), rb.values, matmul_tol(DType::F32, 6), "[2,m,6]@[6,3] " + what);
    Result rv = ref_matmul(v_v, {m}, av_v, {m, 2}, DType::F32);
    EXPECT_EQ(rt.shape(yv), rv.shape) << what;
    expect_close(rt.get<double>(yv), rv.values, matmul_tol(DType::F32, m), "[m]@[m,2] " + what);
    std::vector<double> at(a_v.size());
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < 6; ++j)
        at[j * m + i] = a_v[i * 6 + j];
    Result ra = ref_matmul(a_v, {m, 6}, at, {6, m}, DType::F32);
    EXPECT_EQ(rt.shape(attn), ra.shape) << what;
    expect_close(rt.get<double>(attn), ra.values, matmul_tol(DType::F32, 6), "a @ a^T " + what);
  }
}

TEST(Matmul, InfNaNAndEmptyInnerDim) {
  Graph g;
  auto a = g.tensor("a", {2, 2});
  auto b = g.tensor("b", {2, 2});
  auto y = a.matmul(b).output("y");
  auto e1 = g.tensor("e1", {3, 0});
  auto e2 = g.tensor("e2", {0, 2});
  auto ye = e1.matmul(e2).output("ye");
  ReferenceRuntime rt(g);
  rt.set(a, std::vector<float>{INFINITY, 1, NAN, 0});
  rt.set(b, std::vector<float>{1, 0, 2, 3});
  rt.set(e1, std::vector<float>{});
  rt.set(e2, std::vector<float>{});
  rt.execute();
  // [inf*1 + 1*2, inf*0 + 1*3] = [inf, NaN]; NaN row is NaN.
  expect_close(rt.get<double>(y), {INFINITY, NAN, NAN, NAN}, {0, 0});
  EXPECT_EQ(rt.shape(ye), (Dims{3, 2}));
  expect_close(rt.get<double>(ye), std::vector<double>(6, 0.0), {0, 0}, "k = 0");
}

TEST(Matmul, Errors) {
  Graph g;
  auto a = g.tensor("a", {3, 4});
  auto b = g.tensor("b", {5, 2});
  auto v3 = g.tensor("v3", {3});
  auto v4 = g.tensor("v4", {4});
  auto b3 = g.tensor("b3", {2, 4, 2});
  auto a3 = g.tensor("a3", {3, 3, 4});
  auto six = g.tensor("six", {1, 1, 1, 1, 3, 4});
  auto ai = g.tensor("ai", {4, 3}, DType::I32);
  auto s = g.constant(2.0);
  auto dyn = g.tensor("dyn", {3, "k"});
  expect_error([&] { a.matmul(b); }, "matmul");                   // inner 4 vs 5
  expect_error([&] { v3.matmul(v4); }, "matmul");                 // dot of different lengths
  expect_error([&] { v3.matmul(a.transpose(0, 1)); }, "matmul");  // [3] @ [4,3]
  expect_error([&] { a.matmul(v3); }, "matmul");                  // [3,4] @ [3]
  expect_error([&] { a3.matmul(b3); }, "matmul");                 // batch 3 vs 2
  expect_error([&] { six.matmul(v4); }, "matmul");                // rank 6
  expect_error([&] { a.matmul(ai); }, "matmul");                  // dtypes differ
  expect_error([&] { s.matmul(a); }, "matmul");                   // rank 0
  expect_error([&] { dyn.matmul(b); }, "matmul");                 // k vs 5
}

}  // namespace
}  // namespace luminal
