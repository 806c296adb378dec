// Indexing ops (luminal/ir/indexing.cpp) on the ReferenceRuntime against plain loop references.
//
// Data inputs are random bits (with -0.0, NaN and +-inf for float types) and results are compared
// byte for byte with the data element each output element should hold: a reference is, for every
// output element, a flat index into the data inputs laid one after another.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>

#include "support/check.hpp"
#include "support/expect_error.hpp"
#include "support/index_map.hpp"

namespace luminal {
namespace {

using testing::dims;
using testing::expect_bytes;
using testing::expect_error;
using testing::input;
using testing::Ints;
using testing::prod;
using testing::ravel;
using testing::Ref;
using testing::run_context;
using testing::str;
using testing::unravel;

const DType kTypes[] = {DType::F32, DType::F64, DType::BF16, DType::F16,
                        DType::I32, DType::I64, DType::U8,   DType::Bool};
const DType kIndexTypes[] = {DType::I32, DType::I64, DType::I16, DType::U8};

// ---------------------------------------------------------------- host reference

Ref r_transpose(const Ref& x) {  // of a 2-D ref
  Ref r{{x.shape[1], x.shape[0]}, {}};
  for (int64_t i = 0; i < x.shape[1]; ++i)
    for (int64_t j = 0; j < x.shape[0]; ++j)
      r.src.push_back(x.src[j * x.shape[1] + i]);
  return r;
}

// An index tensor's values (row-major) and shape.
struct Idx {
  Ints shape;
  Ints v;
  int64_t at(const Ints& i) const { return v[ravel(i, shape)]; }
};

Ref r_gather_flat(const Ref& x, const Idx& idx) {
  Ref r{idx.shape, {}};
  for (int64_t j : idx.v)
    r.src.push_back(x.src[j]);
  return r;
}

// torch.gather: out[i] = x[i with i[axis] = index[i]].
Ref r_gather_elements(const Ref& x, int axis, const Idx& index) {
  Ref r{index.shape, {}};
  for (int64_t o = 0; o < prod(index.shape); ++o) {
    Ints i = unravel(o, index.shape);
    const int64_t j = index.v[o];
    i[axis] = j;
    r.src.push_back(x.src[ravel(i, x.shape)]);
  }
  return r;
}

// torch.scatter: out = dest; out[i with i[axis] = index[i]] = src[i] (out-of-range skipped).
Ref r_scatter_elements(const Ref& dest, int axis, const Idx& index, const Ref& src) {
  Ref r = dest;
  for (int64_t o = 0; o < prod(index.shape); ++o) {
    Ints i = unravel(o, index.shape);
    const int64_t from = src.src[ravel(i, src.shape)];
    const int64_t j = index.v[o];
    if (j < 0 || j >= dest.shape[axis]) continue;
    i[axis] = j;
    r.src[ravel(i, dest.shape)] = from;
  }
  return r;
}

Ref r_index_select(const Ref& x, int axis, const Idx& index) {
  Ints shape = x.shape;
  shape[axis] = static_cast<int64_t>(index.v.size());
  Ref r{shape, {}};
  for (int64_t o = 0; o < prod(shape); ++o) {
    Ints i = unravel(o, shape);
    i[axis] = index.v[i[axis]];
    r.src.push_back(x.src[ravel(i, x.shape)]);
  }
  return r;
}

Ref r_embedding(const Ref& table, const Idx& ids) {
  Ints shape = ids.shape;
  shape.push_back(table.shape[1]);
  Ref r{shape, {}};
  for (int64_t id : ids.v)
    for (int64_t j = 0; j < table.shape[1]; ++j)
      r.src.push_back(table.src[id * table.shape[1] + j]);
  return r;
}

Idx random_index(const Ints& shape, int64_t lo, int64_t hi, uint64_t seed) {
  return {shape, testing::random_ints(static_cast<size_t>(prod(shape)), lo, hi, seed)};
}

// Index values along `axis` that are distinct within each line (a random permutation of the
// axis of size d, cut to the index's length), so scatters have no duplicate targets.
Idx unique_index(const Ints& shape, int axis, int64_t d, uint64_t seed) {
  std::mt19937_64 rng(seed);
  Idx idx{shape, Ints(prod(shape))};
  Ints line_shape = shape;
  line_shape[axis] = 1;
  for (int64_t l = 0; l < prod(line_shape); ++l) {
    Ints perm(d);
    for (int64_t k = 0; k < d; ++k)
      perm[k] = k;
    std::shuffle(perm.begin(), perm.end(), rng);
    Ints i = unravel(l, line_shape);
    for (int64_t k = 0; k < shape[axis]; ++k) {
      i[axis] = k;
      idx.v[ravel(i, shape)] = perm[k];
    }
  }
  return idx;
}

// ---------------------------------------------------------------- running and comparing

std::vector<uint8_t> test_bits(DType t, int64_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<uint8_t> b(static_cast<size_t>(n * size_bytes(t)));
  for (uint8_t& c : b)
    c = static_cast<uint8_t>(rng());
  if (t == DType::Bool)
    for (uint8_t& c : b)
      c &= 1;
  if (is_float(t)) {
    const double specials[] = {-0.0, NAN, INFINITY, -INFINITY};
    for (int k = 0; k < 4 && k < n; ++k)
      store_from_double(t, b.data(), (k * 5 + 2) % n, specials[k]);
  }
  return b;
}

using Build =
    std::function<Tensor(const std::vector<Tensor>& data, const std::vector<Tensor>& idx)>;

struct IndexSpec {
  std::vector<Dim> shape;
  DType dtype;
};

struct Trial {
  DynMap dyn;
  std::vector<Ints> index_values;  // one per index input
  Ref want;
};

// Builds `build` over data inputs of `data_shapes` (dtype t) and index inputs once, then runs it
// for every run and compares the output with the run's reference byte for byte.
void check(DType t, const std::vector<std::vector<Dim>>& data_shapes,
           const std::vector<IndexSpec>& index_specs, const Build& build,
           const std::vector<Trial>& runs, const std::string& what) {
  Graph g;
  std::vector<Tensor> data, idx;
  for (size_t k = 0; k < data_shapes.size(); ++k)
    data.push_back(g.tensor("d" + std::to_string(k), data_shapes[k], t));
  for (size_t k = 0; k < index_specs.size(); ++k)
    idx.push_back(g.tensor("i" + std::to_string(k), index_specs[k].shape, index_specs[k].dtype));
  Tensor y = build(data, idx).output("y");
  EXPECT_EQ(y.dtype(), t) << what;
  ReferenceRuntime rt(g);
  const int sz = size_bytes(t);
  uint64_t seed = 5;
  for (const Trial& r : runs) {
    const std::string ctx = run_context(what, t, r.dyn);
    std::vector<uint8_t> all;
    for (size_t k = 0; k < data.size(); ++k) {
      int64_t n = prod(eval_shape(to_shape(data_shapes[k]), r.dyn));
      std::vector<uint8_t> b = test_bits(t, n, seed++);
      rt.set_bytes(data[k], b.data(), b.size());
      all.insert(all.end(), b.begin(), b.end());
    }
    for (size_t k = 0; k < idx.size(); ++k)
      rt.set(idx[k], r.index_values[k]);
    rt.execute(r.dyn);
    ASSERT_EQ(rt.shape(y), r.want.shape) << ctx;
    std::vector<uint8_t> got = rt.get_bytes(y);
    ASSERT_EQ(got.size(), r.want.src.size() * sz) << ctx;
    expect_bytes(got, all, r.want, sz, nullptr, "data", ctx);
  }
}

// Runs a graph with one f32 data input and one index input and expects execute() to throw.
void expect_execute_throws(const Ints& data_shape, const Ints& index_shape, const Ints& index,
                           const std::function<Tensor(const Tensor&, const Tensor&)>& build,
                           const std::string& what) {
  Graph g;
  auto x = g.tensor("x", dims(data_shape));
  auto i = g.tensor("i", dims(index_shape), DType::I64);
  auto y = build(x, i).output("y");
  ReferenceRuntime rt(g);
  rt.set(x, std::vector<float>(prod(data_shape), 1.0f));
  rt.set(i, index);
  EXPECT_THROW(rt.execute(), Error) << what;
}

// ---------------------------------------------------------------- gather_flat / scatter_flat

TEST(GatherFlat, OverDtypesIndexTypesAndViews) {
  const Idx idx = random_index({2, 5}, 0, 11, 3);
  for (DType t : kTypes) {
    for (DType it : kIndexTypes) {
      check(
          t, {{3, 4}}, {{dims(idx.shape), it}},
          [](auto& d, auto& i) { return d[0].gather_flat(i[0]); },
          {{{}, {idx.v}, r_gather_flat(input({3, 4}), idx)}}, "gather_flat");
    }
    // data read through a transposed view: flat order is the view's logical order
    check(
        t, {{4, 3}}, {{dims(idx.shape), DType::I32}},
        [](auto& d, auto& i) { return d[0].transpose(0, 1).gather_flat(i[0]); },
        {{{}, {idx.v}, r_gather_flat(r_transpose(input({4, 3})), idx)}}, "gather_flat transposed");
  }
  // index read through a view, rank-0 index, empty index
  check(
      DType::F32, {{3, 4}}, {{{5, 2}, DType::I64}},
      [](auto& d, auto& i) { return d[0].gather_flat(i[0].transpose(0, 1)); },
      {{{},
        {idx.v},
        r_gather_flat(input({3, 4}), {{2, 5},
                                      [&] {
                                        Ints v;
                                        for (int a = 0; a < 2; ++a)
                                          for (int b = 0; b < 5; ++b)
                                            v.push_back(idx.v[b * 2 + a]);
                                        return v;
                                      }()})}},
      "index view");
  check(
      DType::F32, {{3, 4}}, {{{}, DType::I32}},
      [](auto& d, auto& i) { return d[0].gather_flat(i[0]); },
      {{{}, {{7}}, r_gather_flat(input({3, 4}), {{}, {7}})}}, "rank 0 index");
  check(
      DType::F32, {{3, 4}}, {{{0}, DType::I32}},
      [](auto& d, auto& i) { return d[0].gather_flat(i[0]); },
      {{{}, {{}}, r_gather_flat(input({3, 4}), {{0}, {}})}}, "empty index");
  for (int64_t bad : {12, -1}) {
    expect_execute_throws(
        {3, 4}, {2}, {0, bad}, [](const Tensor& x, const Tensor& i) { return x.gather_flat(i); },
        "gather_flat " + std::to_string(bad));
  }
  Graph g;
  EXPECT_THROW(g.tensor("x", {3}).gather_flat(g.tensor("f", {2})), Error);
}

TEST(ScatterFlat, OverDtypesSkipsOutOfRange) {
  const Ints pos = {7, 0, 11, 3, -1, 12, 5};
  for (DType t : kTypes) {
    for (DType it : {DType::I32, DType::I64, DType::I16}) {
      Ref want = input({3, 4});
      for (size_t k = 0; k < pos.size(); ++k)
        if (pos[k] >= 0 && pos[k] < 12) want.src[pos[k]] = 12 + static_cast<int64_t>(k);
      check(
          t, {{3, 4}, {7}}, {{{7}, it}},
          [](auto& d, auto& i) { return d[0].scatter_flat(i[0], d[1]); }, {{{}, {pos}, want}},
          "scatter_flat");
    }
    // dest through a transposed view; src through a broadcast view
    Ref dest = r_transpose(input({4, 3}));
    for (int64_t p : {1, 10})
      dest.src[p] = 12;
    check(
        t, {{4, 3}, {1}}, {{{2}, DType::I32}},
        [](auto& d, auto& i) { return d[0].transpose(0, 1).scatter_flat(i[0], d[1].expand({2})); },
        {{{}, {{1, 10}}, dest}}, "scatter_flat views");
  }
  Graph g;
  auto x = g.tensor("x", {4});
  expect_error([&] { x.scatter_flat(g.tensor("i", {2}, DType::I32), g.tensor("s", {3})); },
               {"scatter", "[2]", "[3]"});
  expect_error(
      [&] { x.scatter_flat(g.tensor("j", {2}, DType::I32), g.tensor("t", {2}, DType::I32)); },
      {"scatter", "f32", "i32"});
}

// ---------------------------------------------------------------- gather_elements

TEST(GatherElements, TorchSemanticsOnEveryAxis) {
  const Ints in = {3, 4, 5};
  uint64_t seed = 100;
  for (int axis : {0, 1, 2, -1, -2}) {
    const int a = axis < 0 ? axis + 3 : axis;
    // the index: same shape, smaller in the other axes, larger along the axis
    std::vector<Ints> shapes = {in, {2, 3, 2}, {1, 1, 1}};
    Ints big = {2, 2, 2};
    big[a] = 7;
    shapes.push_back(big);
    for (const Ints& is : shapes) {
      const Idx idx = random_index(is, 0, in[a] - 1, seed++);
      std::string what = "gather_elements axis " + std::to_string(axis) + " index " + str(is);
      for (DType t : kTypes) {
        check(
            t, {dims(in)}, {{dims(is), DType::I64}},
            [&](auto& d, auto& i) { return d[0].gather_elements(axis, i[0]); },
            {{{}, {idx.v}, r_gather_elements(input(in), a, idx)}}, what);
      }
      for (DType it : kIndexTypes) {
        check(
            DType::F32, {dims(in)}, {{dims(is), it}},
            [&](auto& d, auto& i) { return d[0].gather_elements(axis, i[0]); },
            {{{}, {idx.v}, r_gather_elements(input(in), a, idx)}},
            what + " " + std::string(name(it)));
      }
    }
  }
}

TEST(GatherElements, TorchExampleAndViews) {
  // torch.gather(torch.tensor([[1, 2], [3, 4]]), 1, torch.tensor([[0, 0], [1, 0]]))
  Graph g;
  auto t = g.tensor("t", {2, 2}, DType::I32);
  auto i = g.tensor("i", {2, 2}, DType::I64);
  auto y = t.gather_elements(1, i).output("y");
  auto z = t.gather_elements(0, i).output("z");
  ReferenceRuntime rt(g);
  rt.set(t, std::vector<int>{1, 2, 3, 4});
  rt.set(i, std::vector<int64_t>{0, 0, 1, 0});
  rt.execute();
  EXPECT_EQ(rt.get<int>(y), (std::vector<int>{1, 1, 4, 3}));
  EXPECT_EQ(rt.get<int>(z), (std::vector<int>{1, 2, 3, 2}));

  // data through a transposed view and a broadcast index
  const Idx row = random_index({1, 6}, 0, 3, 9);
  Idx full{{5, 6}, {}};
  for (int r = 0; r < 5; ++r)
    full.v.insert(full.v.end(), row.v.begin(), row.v.end());
  check(
      DType::BF16, {{4, 6}}, {{{1, 6}, DType::I32}},
      [](auto& d, auto& i) {
        return d[0].transpose(0, 1).gather_elements(1, i[0].expand({5, 6}));
      },
      {{{}, {row.v}, r_gather_elements(r_transpose(input({4, 6})), 1, full)}},
      "transposed data, broadcast index");
}

TEST(GatherElements, DynamicDims) {
  std::vector<Trial> runs0, runs1;
  for (int64_t s : {1, 2, 5}) {
    const Idx i1 = random_index({s, 3}, 0, 3, 40 + s);
    runs1.push_back({{{"s", s}}, {i1.v}, r_gather_elements(input({s, 4}), 1, i1)});
    const Idx i0 = random_index({2, 4}, 0, s - 1, 50 + s);
    runs0.push_back({{{"s", s}}, {i0.v}, r_gather_elements(input({s, 4}), 0, i0)});
  }
  for (DType t : {DType::F32, DType::BF16, DType::I64}) {
    check(
        t, {{"s", 4}}, {{{"s", 3}, DType::I32}},
        [](auto& d, auto& i) { return d[0].gather_elements(1, i[0]); }, runs1, "dyn axis 1");
    check(
        t, {{"s", 4}}, {{{2, 4}, DType::I64}},
        [](auto& d, auto& i) { return d[0].gather_elements(0, i[0]); }, runs0, "dyn axis 0");
  }
}

TEST(GatherElements, OutOfRangeIndexThrows) {
  auto along = [](int axis) {
    return [axis](const Tensor& x, const Tensor& i) { return x.gather_elements(axis, i); };
  };
  expect_execute_throws({3, 4}, {1, 2}, {0, 4}, along(1), "axis 1, index 4");
  expect_execute_throws({3, 4}, {1, 2}, {-1, 0}, along(1), "axis 1, index -1");
  expect_execute_throws({3, 4}, {2, 1}, {3, 0}, along(0), "axis 0, index 3");
  expect_execute_throws({3, 4}, {2, 1}, {0, -1}, along(0), "axis 0, index -1");
  expect_execute_throws({2, 3, 4}, {1, 1, 1}, {3}, along(1), "axis 1 of 3");
}

TEST(GatherElements, Errors) {
  Graph g;
  auto x = g.tensor("x", {3, 4});
  expect_error([&] { x.gather_elements(1, g.tensor("a", {3}, DType::I32)); },
               {"gather_elements", "[3]", "[3, 4]"});
  expect_error([&] { x.gather_elements(1, g.tensor("b", {3, 2})); }, {"gather_elements", "f32"});
  expect_error(
      [&] {
        x.gather_elements(1, g.tensor("c", {4, 2}, DType::I32));
      },
      {"gather_elements", "[4, 2]", "[3, 4]"});
  expect_error(
      [&] {
        x.gather_elements(2, g.tensor("d", {3, 2}, DType::I32));
      },
      {"gather_elements", "axis 2"});
  EXPECT_NO_THROW(x.gather_elements(1, g.tensor("e", {3, 9}, DType::I32)));
}

// ---------------------------------------------------------------- scatter_elements

TEST(ScatterElements, TorchSemanticsOnEveryAxis) {
  const Ints in = {3, 4, 5};
  uint64_t seed = 300;
  for (int axis : {0, 1, 2, -1}) {
    const int a = axis < 0 ? axis + 3 : axis;
    std::vector<Ints> shapes = {in, {2, 3, 2}, {1, 1, 1}};
    Ints along = in;
    along[a] = 2;
    shapes.push_back(along);
    for (const Ints& is : shapes) {
      const Idx idx = unique_index(is, a, in[a], seed++);
      for (const Ints& ss : {is, in}) {  // src the index's size, or larger (only its corner used)
        std::string what = "scatter_elements axis " + std::to_string(axis) + " index " + str(is) +
                           " src " + str(ss);
        Ref want = r_scatter_elements(input(in), a, idx, input(ss, prod(in)));
        for (DType t : kTypes) {
          check(
              t, {dims(in), dims(ss)}, {{dims(is), DType::I64}},
              [&](auto& d, auto& i) { return d[0].scatter_elements(axis, i[0], d[1]); },
              {{{}, {idx.v}, want}}, what);
        }
        check(
            DType::F32, {dims(in), dims(ss)}, {{dims(is), DType::U8}},
            [&](auto& d, auto& i) { return d[0].scatter_elements(axis, i[0], d[1]); },
            {{{}, {idx.v}, want}}, what + " u8");
      }
    }
  }
}

TEST(ScatterElements, TorchExampleAndOutOfRange) {
  // torch.zeros(3, 5).scatter_(0, torch.tensor([[0, 1, 2, 0]]), torch.arange(1, 11.).reshape(2, 5))
  Graph g;
  auto src = g.tensor("src", {2, 5});
  auto idx = g.tensor("idx", {1, 4}, DType::I64);
  auto y = g.zeros({3, 5}).scatter_elements(0, idx, src).output("y");
  auto idx2 = g.tensor("idx2", {2, 2}, DType::I32);
  auto z = g.full({2, 4}, -1).scatter_elements(1, idx2, src).output("z");
  ReferenceRuntime rt(g);
  rt.set(src, std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10});
  rt.set(idx, std::vector<int64_t>{0, 1, 2, 0});
  rt.set(idx2, std::vector<int>{3, 0, 1, 2});
  rt.execute();
  EXPECT_EQ(rt.get<float>(y), (std::vector<float>{1, 0, 0, 4, 0, 0, 2, 0, 0, 0, 0, 0, 3, 0, 0}));
  EXPECT_EQ(rt.get<float>(z), (std::vector<float>{2, -1, -1, 1, -1, 6, 7, -1}));
  // out-of-range indices write nothing (on the scatter axis 1 they must not spill into the next
  // row; on axis 0 they fall outside the tensor)
  rt.set(idx2, std::vector<int>{4, -1, 1, 7});
  rt.set(idx, std::vector<int64_t>{3, -1, 2, 0});
  rt.execute();
  EXPECT_EQ(rt.get<float>(z), (std::vector<float>{-1, -1, -1, -1, -1, 6, -1, -1}));
  EXPECT_EQ(rt.get<float>(y), (std::vector<float>{0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0}));
}

TEST(ScatterElements, DynamicDimsAndViews) {
  std::vector<Trial> runs;
  for (int64_t s : {1, 2, 4}) {
    const Idx i1 = unique_index({s, 2}, 1, 3, 70 + s);
    runs.push_back(
        {{{"s", s}}, {i1.v}, r_scatter_elements(input({s, 3}), 1, i1, input({s, 2}, 3 * s))});
  }
  for (DType t : {DType::F32, DType::F16, DType::I32, DType::Bool}) {
    check(
        t, {{"s", 3}, {"s", 2}}, {{{"s", 2}, DType::I32}},
        [](auto& d, auto& i) { return d[0].scatter_elements(1, i[0], d[1]); }, runs, "dyn");
  }
  // dest through a transposed view
  const Idx idx = unique_index({2, 4}, 0, 3, 81);
  check(
      DType::F32, {{4, 3}, {2, 4}}, {{{2, 4}, DType::I64}},
      [](auto& d, auto& i) { return d[0].transpose(0, 1).scatter_elements(0, i[0], d[1]); },
      {{{}, {idx.v}, r_scatter_elements(r_transpose(input({4, 3})), 0, idx, input({2, 4}, 12))}},
      "transposed dest");
}

TEST(ScatterElements, Errors) {
  Graph g;
  auto x = g.tensor("x", {3, 4});
  auto src = g.tensor("src", {3, 4});
  expect_error([&] { x.scatter_elements(1, g.tensor("a", {3}, DType::I32), src); },
               {"scatter_elements", "[3]", "[3, 4]"});
  expect_error(
      [&] {
        x.scatter_elements(1, g.tensor("b", {3, 2}), src);
      },
      {"scatter_elements", "f32"});
  expect_error(
      [&] {
        x.scatter_elements(1, g.tensor("c", {4, 2}, DType::I32), src);
      },
      {"scatter_elements", "[4, 2]", "[3, 4]"});
  expect_error(
      [&] {
        x.scatter_elements(1, g.tensor("d", {3, 2}, DType::I32), g.tensor("s2", {3, 1}));
      },
      {"scatter_elements", "[3, 2]", "[3, 1]"});
  expect_error(
      [&] {
        x.scatter_elements(1, g.tensor("e", {3, 2}, DType::I32), g.tensor("s3", {3}));
      },
      {"scatter_elements", "[3]"});
}

// ---------------------------------------------------------------- index_select / embedding

TEST(IndexSelect, EveryAxisDtypesAndIndexTypes) {
  const Ints in = {3, 4, 5};
  uint64_t seed = 500;
  for (int axis : {0, 1, 2, -1, -3}) {
    const int a = axis < 0 ? axis + 3 : axis;
    for (int64_t n : {1, 3, 7, 0}) {
      const Idx idx = random_index({n}, 0, in[a] - 1, seed++);
      std::string what = "index_select axis " + std::to_string(axis) + " n " + std::to_string(n);
      for (DType t : kTypes) {
        check(
            t, {dims(in)}, {{{n}, DType::I32}},
            [&](auto& d, auto& i) { return d[0].index_select(axis, i[0]); },
            {{{}, {idx.v}, r_index_select(input(in), a, idx)}}, what);
      }
      for (DType it : kIndexTypes) {
        check(
            DType::F32, {dims(in)}, {{{n}, it}},
            [&](auto& d, auto& i) { return d[0].index_select(axis, i[0]); },
            {{{}, {idx.v}, r_index_select(input(in), a, idx)}}, what + " " + std::string(name(it)));
      }
    }
  }
  // data through a transposed view
  const Idx idx = random_index({5}, 0, 3, 9);
  for (int axis : {0, 1}) {
    check(
        DType::BF16, {{4, 6}}, {{{5}, DType::I64}},
        [&](auto& d, auto& i) { return d[0].transpose(0, 1).index_select(1 - axis, i[0]); },
        {{{}, {idx.v}, r_index_select(r_transpose(input({4, 6})), 1 - axis, idx)}},
        "transposed " + std::to_string(axis));
  }
}

TEST(IndexSelect, DynamicAndOutOfRange) {
  std::vector<Trial> runs;
  for (int64_t s : {1, 3}) {
    for (int64_t n : {1, 4}) {
      const Idx idx = random_index({n}, 0, s - 1, 60 + s * n);
      runs.push_back({{{"s", s}, {"n", n}}, {idx.v}, r_index_select(input({2, s, 3}), 1, idx)});
    }
  }
  for (DType t : {DType::F32, DType::I64})
    check(
        t, {{2, "s", 3}}, {{{"n"}, DType::I32}},
        [](auto& d, auto& i) { return d[0].index_select(1, i[0]); }, runs, "dyn");
  auto along = [](int axis) {
    return [axis](const Tensor& x, const Tensor& i) { return x.index_select(axis, i); };
  };
  expect_execute_throws({3, 4}, {2}, {0, 4}, along(1), "axis 1, index 4");
  expect_execute_throws({3, 4}, {2}, {-1, 0}, along(1), "axis 1, index -1");
  expect_execute_throws({3, 4}, {2}, {3, 0}, along(0), "axis 0, index 3");
  expect_execute_throws({3, 4}, {1}, {-1}, along(0), "axis 0, index -1");
  Graph g;
  auto x = g.tensor("x", {3, 4});
  expect_error(
      [&] {
        x.index_select(0, g.tensor("a", {2, 1}, DType::I32));
      },
      {"index_select", "[2, 1]"});
  expect_error([&] { x.index_select(0, g.tensor("b", {2})); }, {"index_select", "f32"});
  expect_error([&] { x.index_select(2, g.tensor("c", {2}, DType::I32)); },
               {"index_select", "axis 2"});
}

TEST(Embedding, IdsOfRank0To2OverTables) {
  const Ints table = {10, 4};
  const Idx ids1 = random_index({5}, 0, 9, 1), ids2 = random_index({2, 3}, 0, 9, 2);
  const Idx ids0{{}, {7}};
  for (DType t : {DType::F32, DType::BF16, DType::F16, DType::I32, DType::I64}) {
    for (DType it : {DType::I32, DType::I64, DType::U8}) {
      for (const Idx* ids : {&ids1, &ids2, &ids0}) {
        check(
            t, {dims(table)}, {{dims(ids->shape), it}},
            [](auto& d, auto& i) { return d[0].embedding(i[0]); },
            {{{}, {ids->v}, r_embedding(input(table), *ids)}},
            "embedding ids " + str(ids->shape) + " " + std::string(name(it)));
      }
    }
  }
  // ids read through a transposed view
  Idx t_ids{{3, 2}, {}};
  for (int a = 0; a < 3; ++a)
    for (int b = 0; b < 2; ++b)
      t_ids.v.push_back(ids2.v[b * 3 + a]);
  check(
      DType::BF16, {dims(table)}, {{{2, 3}, DType::I64}},
      [](auto& d, auto& i) { return d[0].embedding(i[0].transpose(0, 1)); },
      {{{}, {ids2.v}, r_embedding(input(table), t_ids)}}, "transposed ids");
}

TEST(Embedding, DynamicIdsAndErrors) {
  std::vector<Trial> runs;
  for (int64_t b : {1, 2})
    for (int64_t s : {1, 3, 5}) {
      const Idx ids = random_index({b, s}, 0, 7, 10 * b + s);
      runs.push_back({{{"b", b}, {"s", s}}, {ids.v}, r_embedding(input({8, 3}), ids)});
    }
  for (DType t : {DType::F32, DType::BF16, DType::I32})
    check(
        t, {{8, 3}}, {{{"b", "s"}, DType::I32}},
        [](auto& d, auto& i) { return d[0].embedding(i[0]); }, runs, "dyn");
  // a dynamic vocabulary
  std::vector<Trial> runs2;
  for (int64_t v : {1, 4}) {
    const Idx ids = random_index({3}, 0, v - 1, 30 + v);
    runs2.push_back({{{"v", v}}, {ids.v}, r_embedding(input({v, 2}), ids)});
  }
  check(
      DType::F32, {{"v", 2}}, {{{3}, DType::I64}},
      [](auto& d, auto& i) { return d[0].embedding(i[0]); }, runs2, "dyn vocab");

  auto emb = [](const Tensor& x, const Tensor& i) { return x.embedding(i); };
  expect_execute_throws({4, 3}, {2}, {0, 4}, emb, "id 4 of 4");
  expect_execute_throws({4, 3}, {2}, {-1, 0}, emb, "id -1");
  Graph g;
  expect_error(
      [&] {
        g.tensor("t3", {2, 3, 4}).embedding(g.tensor("a", {2}, DType::I32));
      },
      {"embedding", "[2, 3, 4]"});
  expect_error([&] { g.tensor("t", {2, 3}).embedding(g.tensor("b", {2})); }, {"embedding", "f32"});
}

}  // namespace
}  // namespace luminal
