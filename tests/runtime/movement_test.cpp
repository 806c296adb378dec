// Movement ops (luminal/ir/movement.cpp) on the ReferenceRuntime against plain loop references.
//
// A reference is a map: for every output element, the flat index of the input element it copies
// (inputs numbered one after another) or -1 for a fill value. Inputs are random bits (with -0.0,
// NaN and +-inf for float types), and results are compared byte for byte: these ops move data,
// so every dtype must come out bit-exact.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <optional>
#include <sstream>

#include "support/check.hpp"

namespace luminal {
namespace {

using Ints = std::vector<int64_t>;

const DType kTypes[] = {DType::F32, DType::F64, DType::BF16, DType::F16,   DType::I32,
                        DType::I64, DType::I8,  DType::Bool, DType::F8E4M3};

// ---------------------------------------------------------------- host reference

int64_t prod(const Ints& s) {
  int64_t n = 1;
  for (int64_t d : s)
    n *= d;
  return n;
}

Ints unravel(int64_t f, const Ints& s) {
  Ints i(s.size(), 0);
  for (size_t k = s.size(); k-- > 0;) {
    if (s[k] == 0) return i;
    i[k] = f % s[k];
    f /= s[k];
  }
  return i;
}

int64_t ravel(const Ints& i, const Ints& s) {
  int64_t f = 0;
  for (size_t k = 0; k < s.size(); ++k)
    f = f * s[k] + i[k];
  return f;
}

std::string str(const Ints& v) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < v.size(); ++i)
    os << (i ? ", " : "") << v[i];
  os << "]";
  return os.str();
}

std::vector<Dim> dims(const Ints& s) { return std::vector<Dim>(s.begin(), s.end()); }

struct Ref {
  Ints shape;
  Ints src;  // per output element: flat index into the concatenated inputs, or -1 (fill)
};

Ref input(const Ints& shape, int64_t offset = 0) {
  Ref r{shape, {}};
  for (int64_t i = 0; i < prod(shape); ++i)
    r.src.push_back(offset + i);
  return r;
}

// out[o] = in[f(o)], or the fill value where f gives nothing.
Ref remap(const Ref& in, const Ints& out_shape, const std::function<std::optional<Ints>(Ints)>& f) {
  Ref r{out_shape, {}};
  for (int64_t o = 0; o < prod(out_shape); ++o) {
    std::optional<Ints> j = f(unravel(o, out_shape));
    r.src.push_back(j ? in.src[ravel(*j, in.shape)] : -1);
  }
  return r;
}

Ref r_reshape(Ref x, const Ints& s) {
  EXPECT_EQ(prod(s), prod(x.shape));
  x.shape = s;
  return x;
}

Ref r_permute(const Ref& x, const std::vector<int>& order) {
  Ints s;
  for (int a : order)
    s.push_back(x.shape[a]);
  return remap(x, s, [&](Ints o) -> std::optional<Ints> {
    Ints i(o.size());
    for (size_t k = 0; k < order.size(); ++k)
      i[order[k]] = o[k];
    return i;
  });
}

Ref r_transpose(const Ref& x, int a, int b) {
  std::vector<int> order;
  for (int i = 0; i < static_cast<int>(x.shape.size()); ++i)
    order.push_back(i);
  std::swap(order[a], order[b]);
  return r_permute(x, order);
}

// Python slicing x[start:end:step] on one axis, written as the plain loop.
Ref r_slice(const Ref& x, int axis, int64_t start, std::optional<int64_t> end, int64_t step) {
  const int64_t d = x.shape[axis];
  auto norm = [&](int64_t v) { return std::clamp<int64_t>(v < 0 ? v + d : v, 0, d); };
  const int64_t s = norm(start), e = end ? norm(*end) : d;
  Ints picks;
  for (int64_t i = s; i < e; i += step)
    picks.push_back(i);
  Ints shape = x.shape;
  shape[axis] = static_cast<int64_t>(picks.size());
  return remap(x, shape, [&](Ints o) -> std::optional<Ints> {
    o[axis] = picks[o[axis]];
    return o;
  });
}

Ref r_pad(const Ref& x, const std::vector<std::pair<int64_t, int64_t>>& pads) {
  Ints shape = x.shape;
  for (size_t k = 0; k < pads.size(); ++k)
    shape[k] += pads[k].first + pads[k].second;
  return remap(x, shape, [&](Ints o) -> std::optional<Ints> {
    for (size_t k = 0; k < pads.size(); ++k) {
      o[k] -= pads[k].first;
      if (o[k] < 0 || o[k] >= x.shape[k]) return std::nullopt;
    }
    return o;
  });
}

Ref r_unfold(const Ref& x, int axis, int64_t size, int64_t step) {
  Ints shape = x.shape;
  shape[axis] = (x.shape[axis] - size) / step + 1;
  shape.push_back(size);
  return remap(x, shape, [&](Ints o) -> std::optional<Ints> {
    Ints i(o.begin(), o.end() - 1);
    i[axis] = o[axis] * step + o.back();
    return i;
  });
}

Ref r_repeat(const Ref& x, const Ints& reps) {
  Ints in = x.shape;
  while (in.size() < reps.size())
    in.insert(in.begin(), 1);
  Ref y = r_reshape(x, in);
  Ints shape = in;
  for (size_t k = 0; k < reps.size(); ++k)
    shape[k] *= reps[k];
  return remap(y, shape, [&](Ints o) -> std::optional<Ints> {
    for (size_t k = 0; k < o.size(); ++k)
      o[k] %= in[k];
    return o;
  });
}

// numpy broadcasting of x to `shape`.
Ref r_expand(const Ref& x, const Ints& shape) {
  const size_t off = shape.size() - x.shape.size();
  return remap(x, shape, [&](Ints o) -> std::optional<Ints> {
    Ints i(x.shape.size());
    for (size_t k = 0; k < i.size(); ++k)
      i[k] = x.shape[k] == 1 ? 0 : o[k + off];
    return i;
  });
}

Ref r_triangle(const Ref& x, bool upper, int64_t k) {
  return remap(x, x.shape, [&](Ints o) -> std::optional<Ints> {
    const int64_t r = o[o.size() - 2], c = o.back();
    const bool keep = upper ? c - r >= k : c - r <= k;
    if (!keep) return std::nullopt;
    return o;
  });
}

Ref r_concat(const std::vector<Ref>& xs, int axis) {
  Ints shape = xs[0].shape;
  shape[axis] = 0;
  for (const Ref& x : xs)
    shape[axis] += x.shape[axis];
  Ref r{shape, {}};
  for (int64_t o = 0; o < prod(shape); ++o) {
    Ints i = unravel(o, shape);
    size_t k = 0;
    while (i[axis] >= xs[k].shape[axis])
      i[axis] -= xs[k++].shape[axis];
    r.src.push_back(xs[k].src[ravel(i, xs[k].shape)]);
  }
  return r;
}

// ---------------------------------------------------------------- running and comparing

std::vector<uint8_t> test_bits(DType t, int64_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<uint8_t> b(static_cast<size_t>(n * size_bytes(t)));
  for (uint8_t& c : b)
    c = static_cast<uint8_t>(rng());
  if (t == DType::Bool) {
    for (uint8_t& c : b)
      c &= 1;
  } else if (t == DType::TF32) {
    for (int64_t i = 0; i < n; ++i)
      store_from_double(t, b.data(), i, load_as_double(t, b.data(), i));
  }
  if (is_float(t)) {
    const double specials[] = {-0.0, NAN, INFINITY, -INFINITY, 0.0};
    for (int k = 0; k < 5 && k < n; ++k)
      store_from_double(t, b.data(), (k * 7 + 1) % n, specials[k]);
  }
  return b;
}

std::vector<uint8_t> fill_bytes(DType t, double v) {
  std::vector<uint8_t> b(size_bytes(t));
  if (is_float(t))
    store_from_double(t, b.data(), 0, v);
  else
    store_from_int64(t, b.data(), 0, t == DType::Bool ? (v != 0) : static_cast<int64_t>(v));
  return b;
}

std::string hex(const uint8_t* p, int n) {
  std::ostringstream os;
  os << "0x";
  for (int i = n; i-- > 0;)
    os << "0123456789abcdef"[p[i] >> 4] << "0123456789abcdef"[p[i] & 15];
  return os.str();
}

using Build = std::function<Tensor(const std::vector<Tensor>&)>;

struct Case {
  DynMap dyn;
  Ref want;
};

// Builds `build` over inputs of `shapes` (dtype t) once, then runs it for every case and compares
// the output with the case's reference, byte for byte.
void check(DType t, const std::vector<std::vector<Dim>>& shapes, const Build& build,
           const std::vector<Case>& cases, double fill = 0, const std::string& what = "") {
  Graph g;
  std::vector<Tensor> xs;
  for (size_t k = 0; k < shapes.size(); ++k)
    xs.push_back(g.tensor("x" + std::to_string(k), shapes[k], t));
  Tensor y = build(xs).output("y");
  ReferenceRuntime rt(g);
  const int sz = size_bytes(t);
  const std::vector<uint8_t> fb = fill_bytes(t, fill);
  uint64_t seed = 17;
  for (const Case& c : cases) {
    std::string ctx = what + " " + std::string(name(t));
    for (const auto& [k, v] : c.dyn)
      ctx += " " + k + "=" + std::to_string(v);
    std::vector<uint8_t> all;
    for (size_t k = 0; k < shapes.size(); ++k) {
      int64_t n = prod(eval_shape(to_shape(shapes[k]), c.dyn));
      std::vector<uint8_t> b = test_bits(t, n, seed++);
      rt.set_bytes(xs[k], b.data(), b.size());
      all.insert(all.end(), b.begin(), b.end());
    }
    rt.execute(c.dyn);
    ASSERT_EQ(rt.shape(y), c.want.shape) << ctx;
    std::vector<uint8_t> got = rt.get_bytes(y);
    ASSERT_EQ(got.size(), c.want.src.size() * sz) << ctx;
    int bad = 0;
    for (size_t i = 0; i < c.want.src.size(); ++i) {
      const int64_t s = c.want.src[i];
      const uint8_t* w = s < 0 ? fb.data() : all.data() + s * sz;
      if (std::memcmp(got.data() + i * sz, w, sz) != 0 && bad++ < 4) {
        ADD_FAILURE() << ctx << ": element " << str(unravel(static_cast<int64_t>(i), c.want.shape))
                      << " got " << hex(got.data() + i * sz, sz) << ", want " << hex(w, sz)
                      << " (input element " << s << ")";
      }
    }
    EXPECT_EQ(bad, 0) << ctx;
  }
}

// One input of constant shape, one case.
void check1(DType t, const Ints& shape, const Build& build, const Ref& want, double fill = 0,
            const std::string& what = "") {
  check(t, {dims(shape)}, build, {{{}, want}}, fill, what);
}

void check_all_types(const Ints& shape, const Build& build, const Ref& want, double fill = 0,
                     const std::string& what = "") {
  for (DType t : kTypes)
    check1(t, shape, build, want, fill, what);
}

template <class F>
void expect_error(F&& f, std::initializer_list<std::string_view> parts) {
  try {
    f();
    ADD_FAILURE() << "no luminal::Error thrown (expected one mentioning '" << *parts.begin()
                  << "')";
  } catch (const Error& e) {
    std::string m = e.what();
    for (std::string_view p : parts)
      EXPECT_NE(m.find(p), std::string::npos) << "message '" << m << "' lacks '" << p << "'";
  }
}

std::vector<std::vector<int>> permutations(int n) {
  std::vector<int> p(n);
  for (int i = 0; i < n; ++i)
    p[i] = i;
  std::vector<std::vector<int>> out;
  do
    out.push_back(p);
  while (std::next_permutation(p.begin(), p.end()));
  return out;
}

// ---------------------------------------------------------------- reshape

TEST(Reshape, ContiguousIsAViewAndExact) {
  const Ints in = {2, 3, 4};
  for (const Ints& to :
       {Ints{24}, Ints{6, 4}, Ints{4, 3, 2}, Ints{2, 1, 12, 1}, Ints{1, 24}, Ints{2, 3, 4}}) {
    Graph g;
    auto x = g.tensor("x", dims(in));
    EXPECT_EQ(x.reshape(dims(to)).id(), x.id()) << str(to);
    check_all_types(
        in, [&](auto& x) { return x[0].reshape(dims(to)); }, r_reshape(input(in), to), 0, str(to));
  }
}

TEST(Reshape, AfterPermuteEveryOrder) {
  const Ints in = {2, 3, 4};
  const std::vector<Ints> targets = {{24},   {6, 4},    {4, 6},    {2, 12},
                                     {3, 8}, {4, 3, 2}, {2, 2, 6}, {1, 24, 1}};
  for (const auto& order : permutations(3)) {
    Ref p = r_permute(input(in), order);
    for (const Ints& to : targets) {
      std::string what = "permute " + str(Ints(order.begin(), order.end())) + " reshape " + str(to);
      check1(
          DType::F32, in, [&](auto& x) { return x[0].permute(order).reshape(dims(to)); },
          r_reshape(p, to), 0, what);
      // and back through another permute and reshape
      if (to.size() == 3) {
        check1(
            DType::BF16, in,
            [&](auto& x) {
              return x[0].permute(order).reshape(dims(to)).permute({2, 0, 1}).reshape({24});
            },
            r_reshape(r_permute(r_reshape(p, to), {2, 0, 1}), {24}), 0, what);
      }
    }
  }
  for (DType t : kTypes) {
    check1(
        t, {2, 3, 4, 5},
        [](auto& x) {
          return x[0].permute({0, 2, 1, 3}).reshape({8, 15});
        },
        r_reshape(r_permute(input({2, 3, 4, 5}), {0, 2, 1, 3}), {8, 15}), 0, "rank 4");
  }
}

TEST(Reshape, OfBroadcastRepeatAndSlicedViews) {
  // [3] broadcast to [4, 3] then reshaped: [12], [2, 6], [6, 2], [3, 4] (the last cannot be a view)
  for (const Ints& to :
       {Ints{12}, Ints{2, 6}, Ints{6, 2}, Ints{3, 4}, Ints{4, 3, 1}, Ints{2, 2, 3}}) {
    check_all_types(
        {3},
        [&](auto& x) {
          return x[0].expand({4, 3}).reshape(dims(to));
        },
        r_reshape(r_expand(input({3}), {4, 3}), to), 0, "expand " + str(to));
  }
  // [2, 3] tiled to [4, 6] then reshaped
  for (const Ints& to :
       {Ints{24}, Ints{8, 3}, Ints{4, 2, 3}, Ints{2, 12}, Ints{3, 8}, Ints{6, 4}}) {
    check1(
        DType::F32, {2, 3},
        [&](auto& x) {
          return x[0].repeat({2, 2}).reshape(dims(to));
        },
        r_reshape(r_repeat(input({2, 3}), {2, 2}), to), 0, "repeat " + str(to));
  }
  // a view that keeps the first columns of each row
  for (const Ints& to : {Ints{12}, Ints{2, 6}, Ints{6, 2}, Ints{4, 3}}) {
    check1(
        DType::I32, {4, 5}, [&](auto& x) { return x[0].slice(1, 0, 3).reshape(dims(to)); },
        r_reshape(r_slice(input({4, 5}), 1, 0, 3, 1), to), 0, "slice " + str(to));
    check1(
        DType::F16, {5, 4},
        [&](auto& x) { return x[0].transpose(0, 1).slice(1, 0, 3).reshape(dims(to)); },
        r_reshape(r_slice(r_transpose(input({5, 4}), 0, 1), 1, 0, 3, 1), to), 0,
        "t slice " + str(to));
  }
  // merged then split again differently
  check1(
      DType::F32, {2, 3, 4},
      [](auto& x) {
        return x[0].permute({2, 1, 0}).reshape({12, 2}).reshape({2, 3, 4});
      },
      r_reshape(r_permute(input({2, 3, 4}), {2, 1, 0}), {2, 3, 4}), 0, "chain");
}

TEST(Reshape, DynamicDims) {
  for (DType t : {DType::F32, DType::BF16, DType::I64}) {
    std::vector<Case> flat, perm, split;
    for (int64_t s : {1, 2, 5}) {
      flat.push_back({{{"s", s}}, r_reshape(input({s, 32, 4}), {s, 128})});
      perm.push_back({{{"s", s}}, r_reshape(r_permute(input({32, s, 4}), {1, 0, 2}), {s, 128})});
      split.push_back({{{"s", s}}, r_reshape(input({s, 128}), {s, 4, 32})});
    }
    check(
        t, {{"s", 32, 4}},
        [](auto& x) {
          return x[0].reshape({"s", 128});
        },
        flat, 0, "s,32,4 -> s,128");
    check(
        t, {{32, "s", 4}},
        [](auto& x) {
          return x[0].permute({1, 0, 2}).reshape({"s", 128});
        },
        perm, 0, "permuted -> s,128");
    check(
        t, {{"s", 128}},
        [](auto& x) {
          return x[0].reshape({"s", 4, 32});
        },
        split, 0, "s,128 -> s,4,32");
  }
  // the whole tensor into one dynamic axis, after a permute
  std::vector<Case> cases;
  for (int64_t s : {1, 3, 4})
    cases.push_back({{{"s", s}}, r_reshape(r_permute(input({s, 3}), {1, 0}), {3 * s})});
  check(
      DType::F32, {{"s", 3}},
      [](auto& x) { return x[0].transpose(0, 1).reshape({Expr::var("s") * 3}); }, cases, 0,
      "flatten dyn");
  Graph g;
  auto x = g.tensor("x", {"s", 32, 4});
  EXPECT_EQ(x.reshape({"s", 128}).id(), x.id());
  expect_error([&] { x.reshape({"t", 128}); }, {"reshape", "[s, 32, 4]", "[t, 128]"});
}

TEST(Reshape, Errors) {
  Graph g;
  auto x = g.tensor("x", {2, 3});
  expect_error([&] { x.reshape({4}); }, {"reshape", "[2, 3]", "[4]"});
  expect_error([&] { x.reshape({7, 1}); }, {"reshape", "[2, 3]", "[7, 1]"});
}

// ---------------------------------------------------------------- permute, transpose, expand

TEST(Permute, EveryOrderOfRank3And4) {
  for (const auto& order : permutations(3)) {
    for (DType t : kTypes) {
      check1(
          t, {2, 3, 4}, [&](auto& x) { return x[0].permute(order); },
          r_permute(input({2, 3, 4}), order), 0,
          "permute " + str(Ints(order.begin(), order.end())));
    }
  }
  for (const auto& order : permutations(4)) {
    check1(
        DType::F32, {2, 3, 1, 4}, [&](auto& x) { return x[0].permute(order); },
        r_permute(input({2, 3, 1, 4}), order), 0,
        "permute4 " + str(Ints(order.begin(), order.end())));
  }
  // negative axes, permute of a permute, rank 0
  check1(
      DType::I64, {2, 3, 4},
      [](auto& x) {
        return x[0].permute({-1, 0, -2}).permute({2, 0, 1});
      },
      r_permute(r_permute(input({2, 3, 4}), {2, 0, 1}), {2, 0, 1}), 0, "negative");
  check1(
      DType::F32, {}, [](auto& x) { return x[0].permute({}); }, input({}), 0, "rank 0");
  Graph g;
  auto x = g.tensor("x", {2, 3, 4});
  EXPECT_EQ(x.permute({2, 0, 1}).id(), x.id());
  expect_error([&] { x.permute({0, 1}); }, {"permute", "[2, 3, 4]"});
  expect_error([&] { x.permute({0, 1, 1}); }, {"permute", "[2, 3, 4]"});
  expect_error([&] { x.permute({0, 1, 3}); }, {"permute", "[2, 3, 4]"});
}

TEST(Transpose, PairsOfAxes) {
  const std::pair<int, int> pairs[] = {{0, 1}, {1, 0}, {0, 2}, {-1, -2}, {1, 1}, {-3, 2}};
  for (auto [a, b] : pairs) {
    int na = a < 0 ? a + 3 : a, nb = b < 0 ? b + 3 : b;
    for (DType t : {DType::F32, DType::F16, DType::Bool}) {
      check1(
          t, {2, 3, 4}, [&](auto& x) { return x[0].transpose(a, b); },
          r_transpose(input({2, 3, 4}), na, nb), 0,
          "transpose " + std::to_string(a) + "," + std::to_string(b));
    }
  }
  Graph g;
  auto x = g.tensor("x", {2, 3});
  expect_error([&] { x.transpose(0, 2); }, {"transpose", "axis 2"});
}

TEST(Expand, NumpyBroadcasting) {
  struct C {
    Ints in, out;
  };
  const C cases[] = {
      {{3}, {2, 3}},          {{1, 3}, {4, 3}},   {{2, 1}, {2, 5}}, {{2, 1, 3}, {5, 2, 4, 3}},
      {{1}, {2, 3, 4}},       {{}, {2, 2}},       {{2, 3}, {2, 3}}, {{1, 1}, {3, 1, 2}},
      {{3, 1, 1}, {3, 2, 2}}, {{1, 4}, {1, 0, 4}}};
  for (const C& c : cases) {
    for (DType t : kTypes) {
      check1(
          t, c.in, [&](auto& x) { return x[0].expand(dims(c.out)); }, r_expand(input(c.in), c.out),
          0, "expand " + str(c.in) + " -> " + str(c.out));
    }
  }
  // of a transposed input, then made contiguous
  check1(
      DType::F32, {3, 1},
      [](auto& x) {
        return x[0].transpose(0, 1).expand({4, 3}).contiguous();
      },
      r_expand(r_transpose(input({3, 1}), 0, 1), {4, 3}), 0, "transposed");
  // dynamic target
  std::vector<Case> cases2;
  for (int64_t s : {1, 2, 6})
    cases2.push_back({{{"s", s}}, r_expand(input({1, 3}), {2, s, 3})});
  check(
      DType::F32, {{1, 3}},
      [](auto& x) {
        return x[0].expand({2, "s", 3});
      },
      cases2, 0, "dynamic");
  std::vector<Case> cases3;
  for (int64_t s : {1, 4})
    cases3.push_back({{{"s", s}}, r_expand(input({s, 1}), {s, 5})});
  check(
      DType::BF16, {{"s", 1}},
      [](auto& x) {
        return x[0].expand({"s", 5});
      },
      cases3, 0, "dynamic same");

  Graph g;
  auto x = g.tensor("x", {2, 3});
  EXPECT_EQ(x.expand({4, 2, 3}).id(), x.id());
  expect_error([&] { x.expand({2, 4}); }, {"expand", "[2, 3]", "[2, 4]"});
  expect_error([&] { x.expand({3}); }, {"expand", "[2, 3]", "[3]"});
  expect_error([&] { x.expand({3, 3}); }, {"expand", "[2, 3]", "[3, 3]"});
}

TEST(ExpandDim, InsertsABroadcastAxis) {
  for (int axis : {0, 1, 2, -1, -3}) {
    int a = axis < 0 ? axis + 3 : axis;
    Ints out = {2, 3};
    out.insert(out.begin() + a, 4);
    Ref want = remap(input({2, 3}), out, [&](Ints o) -> std::optional<Ints> {
      o.erase(o.begin() + a);
      return o;
    });
    for (DType t : {DType::F32, DType::I32, DType::BF16}) {
      check1(
          t, {2, 3}, [&](auto& x) { return x[0].expand_dim(axis, 4); }, want, 0,
          "axis " + std::to_string(axis));
    }
  }
  std::vector<Case> cases;
  for (int64_t s : {1, 3}) {
    cases.push_back({{{"s", s}}, remap(input({2}), {2, s}, [](Ints o) -> std::optional<Ints> {
                       return Ints{o[0]};
                     })});
  }
  check(
      DType::F32, {{2}}, [](auto& x) { return x[0].expand_dim(1, "s"); }, cases, 0, "dynamic");
  Graph g;
  auto x = g.tensor("x", {2, 3});
  expect_error([&] { x.expand_dim(4, 2); }, {"expand", "axis 4"});
}

TEST(SqueezeUnsqueeze, SizeOneAxes) {
  for (DType t : kTypes) {
    check1(
        t, {2, 1, 3}, [](auto& x) { return x[0].squeeze(1); }, r_reshape(input({2, 1, 3}), {2, 3}),
        0, "sq 1");
    check1(
        t, {2, 3, 1}, [](auto& x) { return x[0].squeeze(-1); }, r_reshape(input({2, 3, 1}), {2, 3}),
        0, "sq -1");
    check1(
        t, {2, 3}, [](auto& x) { return x[0].unsqueeze(0); }, r_reshape(input({2, 3}), {1, 2, 3}),
        0, "unsq 0");
    check1(
        t, {2, 3}, [](auto& x) { return x[0].unsqueeze(-1); }, r_reshape(input({2, 3}), {2, 3, 1}),
        0, "unsq -1");
    check1(
        t, {2, 3}, [](auto& x) { return x[0].unsqueeze(2); }, r_reshape(input({2, 3}), {2, 3, 1}),
        0, "unsq 2");
  }
  // on a transposed input
  check1(
      DType::F32, {3, 1, 2}, [](auto& x) { return x[0].transpose(0, 2).squeeze(1).unsqueeze(1); },
      r_reshape(r_transpose(input({3, 1, 2}), 0, 2), {2, 1, 3}), 0, "transposed");
  check1(
      DType::F32, {1}, [](auto& x) { return x[0].squeeze(0); }, input({}), 0, "to rank 0");
  check1(
      DType::F32, {}, [](auto& x) { return x[0].unsqueeze(0); }, input({1}), 0, "from rank 0");
  Graph g;
  auto x = g.tensor("x", {2, 3});
  expect_error([&] { x.squeeze(0); }, {"squeeze", "[2, 3]"});
  expect_error([&] { x.squeeze(2); }, {"squeeze", "axis 2"});
  expect_error([&] { x.unsqueeze(3); }, {"unsqueeze", "axis 3"});
}

TEST(Flatten, RangesOfAxes) {
  const Ints in = {2, 3, 4, 5};
  struct C {
    int s, e;
    Ints out;
  };
  const C cases[] = {{0, -1, {120}},       {1, 2, {2, 12, 5}},   {0, 1, {6, 4, 5}},
                     {-2, -1, {2, 3, 20}}, {2, 2, {2, 3, 4, 5}}, {1, 3, {2, 60}}};
  for (const C& c : cases) {
    std::string what = "flatten " + std::to_string(c.s) + "," + std::to_string(c.e);
    check1(
        DType::F32, in, [&](auto& x) { return x[0].flatten(c.s, c.e); },
        r_reshape(input(in), c.out), 0, what);
    // after a permute the merged axes are not contiguous
    check1(
        DType::BF16, in,
        [&](auto& x) {
          return x[0].permute({3, 1, 0, 2}).flatten(c.s, c.e);
        },
        r_reshape(r_permute(input(in), {3, 1, 0, 2}),
                  [&] {
                    Ints p = {5, 3, 2, 4}, out;
                    int s = c.s < 0 ? c.s + 4 : c.s, e = c.e < 0 ? c.e + 4 : c.e;
                    for (int i = 0; i < 4; ++i) {
                      if (i > s && i <= e)
                        out.back() *= p[i];
                      else
                        out.push_back(p[i]);
                    }
                    return out;
                  }()),
        0, "permuted " + what);
  }
  check1(
      DType::I32, {}, [](auto& x) { return x[0].flatten(); }, input({1}), 0, "rank 0");
  check1(
      DType::I32, {7}, [](auto& x) { return x[0].flatten(); }, input({7}), 0, "rank 1");
  std::vector<Case> dyn;
  for (int64_t s : {1, 3})
    dyn.push_back({{{"s", s}}, r_reshape(r_transpose(input({s, 2, 3}), 0, 2), {3, 2 * s})});
  check(
      DType::F32, {{"s", 2, 3}}, [](auto& x) { return x[0].transpose(0, 2).flatten(1); }, dyn, 0,
      "dynamic");
  Graph g;
  auto x = g.tensor("x", {2, 3, 4});
  expect_error([&] { x.flatten(2, 1); }, {"flatten", "[2, 3, 4]"});
  expect_error([&] { x.flatten(0, 3); }, {"flatten", "axis 3"});
}

TEST(MergeSplit, MergeDimsAndSplitDims) {
  const Ints in = {2, 3, 4};
  for (DType t : {DType::F32, DType::I64, DType::F16}) {
    check1(
        t, in, [](auto& x) { return x[0].merge_dims(0); }, r_reshape(input(in), {6, 4}), 0,
        "merge 0");
    check1(
        t, in, [](auto& x) { return x[0].merge_dims(-2); }, r_reshape(input(in), {2, 12}), 0,
        "merge -2");
    check1(
        t, in,
        [](auto& x) {
          return x[0].permute({2, 0, 1}).merge_dims(1);
        },
        r_reshape(r_permute(input(in), {2, 0, 1}), {4, 6}), 0, "merge permuted");
    check1(
        t, in,
        [](auto& x) {
          return x[0].permute({2, 0, 1}).merge_dims(0);
        },
        r_reshape(r_permute(input(in), {2, 0, 1}), {8, 3}), 0, "merge permuted 0");
    check1(
        t, in, [](auto& x) { return x[0].split_dims(2, 2); }, r_reshape(input(in), {2, 3, 2, 2}), 0,
        "split");
    check1(
        t, in, [](auto& x) { return x[0].split_dims(-1, 4); }, r_reshape(input(in), {2, 3, 1, 4}),
        0, "split 4");
    check1(
        t, in, [](auto& x) { return x[0].split_dims(0, 1); }, r_reshape(input(in), {2, 1, 3, 4}), 0,
        "split 1");
    // split of a merged non-contiguous axis (may need a copy)
    check1(
        t, in,
        [](auto& x) {
          return x[0].permute({2, 0, 1}).merge_dims(1).split_dims(1, 3);
        },
        r_permute(input(in), {2, 0, 1}), 0, "merge split");
    check1(
        t, in,
        [](auto& x) {
          return x[0].permute({2, 0, 1}).merge_dims(1).split_dims(1, 2);
        },
        r_reshape(r_permute(input(in), {2, 0, 1}), {4, 3, 2}), 0, "merge split other");
    check1(
        t, {3, 4}, [](auto& x) { return x[0].transpose(0, 1).merge_dims(0).split_dims(0, 4); },
        r_reshape(r_transpose(input({3, 4}), 0, 1), {3, 4}), 0, "t merge split");
    check1(
        t, {4},
        [](auto& x) {
          return x[0].expand({3, 4}).merge_dims(0).split_dims(0, 3);
        },
        r_reshape(r_expand(input({4}), {3, 4}), {4, 3}), 0, "expand merge split");
  }
  std::vector<Case> dyn;
  for (int64_t s : {1, 2, 5})
    dyn.push_back({{{"s", s}}, r_reshape(input({4 * s, 3}), {s, 4, 3})});
  check(
      DType::F32, {{Expr::var("s") * 4, 3}}, [](auto& x) { return x[0].split_dims(0, 4); }, dyn, 0,
      "dyn split");
  std::vector<Case> dyn2;
  for (int64_t s : {1, 2, 5})
    dyn2.push_back({{{"s", s}}, r_reshape(r_transpose(input({s, 6}), 0, 1), {3, 2, s})});
  check(
      DType::F32, {{"s", 6}}, [](auto& x) { return x[0].transpose(0, 1).split_dims(0, 2); }, dyn2,
      0, "dyn t split");
  Graph g;
  auto x = g.tensor("x", {2, 6});
  expect_error([&] { x.split_dims(1, 4); }, {"split_dims", "[2, 6]", "4"});
  expect_error([&] { x.split_dims(1, 0); }, {"split_dims", "[2, 6]"});
  expect_error([&] { x.merge_dims(1); }, {"merge_dims", "[2, 6]"});
}

// ---------------------------------------------------------------- slice

struct SliceCase {
  int axis;
  int64_t start;
  std::optional<int64_t> end;
  int64_t step;
};

std::string slice_str(const SliceCase& c) {
  return "slice(" + std::to_string(c.axis) + ", " + std::to_string(c.start) + ", " +
         (c.end ? std::to_string(*c.end) : "none") + ", " + std::to_string(c.step) + ")";
}

Tensor apply_slice(const Tensor& x, const SliceCase& c) {
  return c.end ? x.slice(c.axis, c.start, Dim(*c.end), c.step)
               : x.slice(c.axis, c.start, std::nullopt, c.step);
}

const SliceCase kSlices[] = {{0, 0, 3, 1},
                             {1, 0, std::nullopt, 1},
                             {1, 2, 6, 1},
                             {1, 1, std::nullopt, 2},
                             {1, 0, 7, 3},
                             {0, 1, 5, 2},
                             {1, -3, std::nullopt, 1},
                             {1, -5, -1, 2},
                             {1, 2, -2, 1},
                             {1, -100, 100, 1},
                             {0, -100, 2, 1},
                             {1, 3, 100, 3},
                             {1, 5, 2, 1},
                             {1, 7, std::nullopt, 1},
                             {1, 100, std::nullopt, 1},
                             {1, 0, 0, 1},
                             {0, 4, 5, 1},
                             {1, 0, 7, 10},
                             {1, 6, 7, 5},
                             {-1, -2, std::nullopt, 1},
                             {-2, 1, -1, 3},
                             {1, -7, -6, 1},
                             {1, -8, -7, 1}};

TEST(Slice, PythonSemanticsOverDtypes) {
  const Ints in = {5, 7};
  for (const SliceCase& c : kSlices) {
    int a = c.axis < 0 ? c.axis + 2 : c.axis;
    Ref want = r_slice(input(in), a, c.start, c.end, c.step);
    for (DType t : kTypes)
      check1(
          t, in, [&](auto& x) { return apply_slice(x[0], c); }, want, 0, slice_str(c));
    // on a transposed input (slice the same logical axis)
    check1(
        DType::F32, {7, 5}, [&](auto& x) { return apply_slice(x[0].transpose(0, 1), c); },
        r_slice(r_transpose(input({7, 5}), 0, 1), a, c.start, c.end, c.step), 0,
        "transposed " + slice_str(c));
  }
}

TEST(Slice, StartZeroStepOneIsAView) {
  Graph g;
  auto x = g.tensor("x", {5, 7});
  EXPECT_EQ(x.slice(1, 0, 3).id(), x.id());
  EXPECT_EQ(x.slice(0, 0).id(), x.id());
  EXPECT_EQ(x.slice(0, -5, 2).id(), x.id());  // -5 resolves to 0
  EXPECT_NE(x.slice(1, 1, 3).id(), x.id());
  EXPECT_NE(x.slice(1, 0, 6, 2).id(), x.id());
  auto y = x.slice(1, 0, 3);
  EXPECT_EQ(shape_to_string(y.shape()), "[5, 3]");
}

TEST(Slice, ChainedAndRank3) {
  const Ints in = {3, 6, 4};
  check1(
      DType::F32, in,
      [](auto& x) { return x[0].slice(1, 1, 5).slice(1, 1, std::nullopt, 2).slice(2, -3, -1); },
      r_slice(r_slice(r_slice(input(in), 1, 1, 5, 1), 1, 1, std::nullopt, 2), 2, -3, -1, 1), 0,
      "chain");
  check1(
      DType::I64, in,
      [](auto& x) {
        return x[0].permute({2, 0, 1}).slice(2, 0, 4).slice(0, 1, 3).reshape({24});
      },
      r_reshape(r_slice(r_slice(r_permute(input(in), {2, 0, 1}), 2, 0, 4, 1), 0, 1, 3, 1), {24}), 0,
      "permuted");
  check1(
      DType::F16, in,
      [](auto& x) {
        return x[0].expand({2, 3, 6, 4}).slice(2, 1, 6, 2).slice(0, 1);
      },
      r_slice(r_slice(r_expand(input(in), {2, 3, 6, 4}), 2, 1, 6, 2), 0, 1, std::nullopt, 1), 0,
      "expanded");
}

TEST(Slice, DynamicDim) {
  const SliceCase cases[] = {{0, 1, -1, 1},
                             {0, -2, std::nullopt, 1},
                             {0, 0, std::nullopt, 2},
                             {0, 1, 3, 1},
                             {0, 2, std::nullopt, 3},
                             {0, -10, 2, 1},
                             {0, 0, 2, 1},
                             {0, 3, 1, 1}};
  for (const SliceCase& c : cases) {
    std::vector<Case> runs;
    for (int64_t s : {1, 2, 3, 6})
      runs.push_back({{{"s", s}}, r_slice(input({s, 3}), 0, c.start, c.end, c.step)});
    check(
        DType::F32, {{"s", 3}}, [&](auto& x) { return apply_slice(x[0], c); }, runs, 0,
        "dyn " + slice_str(c));
  }
  // dynamic bounds: x[1 : s - 1] of an axis of 8
  std::vector<Case> runs;
  for (int64_t s : {1, 3, 8, 12})
    runs.push_back({{{"s", s}}, r_slice(input({8}), 0, 1, std::max<int64_t>(s - 1, 0), 1)});
  check(
      DType::I32, {{8}}, [](auto& x) { return x[0].slice(0, 1, Expr::var("s") - 1); }, runs, 0,
      "dyn bounds");
}

TEST(Slice, DynamicStart) {
  // x[p : p + 3] and x[p::2] of an axis of 8 (a KV-cache style window), clamped at the end
  std::vector<Case> win, tail;
  for (int64_t p : {0, 1, 5, 7, 8, 10}) {
    win.push_back({{{"p", p}}, r_slice(input({8, 2}), 0, std::min<int64_t>(p, 8), p + 3, 1)});
    tail.push_back(
        {{{"p", p}}, r_slice(input({2, 8}), 1, std::min<int64_t>(p, 8), std::nullopt, 2)});
  }
  Expr p = Expr::var("p");
  for (DType t : {DType::F32, DType::BF16, DType::I64}) {
    check(
        t, {{8, 2}}, [&](auto& x) { return x[0].slice(0, p, p + 3); }, win, 0, "window");
    check(
        t, {{2, 8}}, [&](auto& x) { return x[0].slice(1, p, std::nullopt, 2); }, tail, 0, "tail");
  }
}

TEST(Slice, DynamicEmptyResults) {
  // the sliced axis (or an axis after it) becomes empty at run time
  std::vector<Case> runs, runs2;
  for (int64_t s : {1, 2, 4}) {
    runs.push_back({{{"s", s}}, r_slice(input({3, s}), 1, 1, std::nullopt, 1)});
    runs2.push_back({{{"s", s}}, r_slice(input({s, 2}), 0, 1, std::nullopt, 2)});
  }
  check(
      DType::F32, {{3, "s"}}, [](auto& x) { return x[0].slice(1, 1); }, runs, 0, "dyn empty inner");
  check(
      DType::F32, {{"s", 2}}, [](auto& x) { return x[0].slice(0, 1, std::nullopt, 2); }, runs2, 0,
      "dyn empty outer");
}

TEST(Slice, Errors) {
  Graph g;
  auto x = g.tensor("x", {5, 7});
  expect_error([&] { x.slice(1, 0, 3, 0); }, {"slice", "step", "[5, 7]"});
  expect_error([&] { x.slice(1, 0, 3, -1); }, {"slice", "step"});
  expect_error([&] { x.slice(2, 0, 3); }, {"slice", "axis 2"});
}

// ---------------------------------------------------------------- pad

TEST(Pad, ConstantBeforeAfterAndCrops) {
  using Pads = std::vector<std::pair<int64_t, int64_t>>;
  const Pads cases[] = {
      {{1, 2}, {0, 3}},   {{0, 0}, {2, 0}},   {{1, 1}},          {},
      {{-1, 0}, {0, -2}}, {{2, -1}, {-1, 1}}, {{-4, 0}, {0, 0}}, {{0, -4}, {-3, -3}},
      {{0, 0}, {1, 1}},   {{-2, 3}, {3, -2}}};
  const Ints in = {4, 6};
  for (const Pads& p : cases) {
    std::vector<std::pair<Dim, Dim>> pd;
    std::string what = "pad";
    for (auto [b, a] : p) {
      pd.push_back({b, a});
      what += " (" + std::to_string(b) + "," + std::to_string(a) + ")";
    }
    for (DType t : kTypes) {
      const double value = t == DType::Bool ? 1 : is_float(t) ? 1.5 : -3;
      check1(
          t, in, [&](auto& x) { return x[0].pad(pd, value); }, r_pad(input(in), p), value, what);
      check1(
          t, in, [&](auto& x) { return x[0].pad(pd); }, r_pad(input(in), p), 0, what + " zero");
    }
    check1(
        DType::F32, {6, 4}, [&](auto& x) { return x[0].transpose(0, 1).pad(pd, -7); },
        r_pad(r_transpose(input({6, 4}), 0, 1), p), -7, "transposed " + what);
  }
  check1(
      DType::F32, {2, 3, 4},
      [](auto& x) {
        return x[0].pad({{1, 0}, {0, 2}, {3, 1}}, 9);
      },
      r_pad(input({2, 3, 4}), {{1, 0}, {0, 2}, {3, 1}}), 9, "rank 3");
}

TEST(Pad, ExactWithInfinitiesAndNaN) {
  Graph g;
  auto x = g.tensor("x", {2, 2});
  auto y = x.pad({{1, 1}, {0, 1}}).output("y");
  auto z = x.pad({{0, 0}, {1, 0}}, INFINITY).output("z");
  ReferenceRuntime rt(g);
  rt.set(x, std::vector<float>{INFINITY, -INFINITY, NAN, -0.0f});
  rt.execute();
  std::vector<float> got = rt.get<float>(y);
  const float want[] = {0, 0, 0, INFINITY, -INFINITY, 0, NAN, -0.0f, 0, 0, 0, 0};
  ASSERT_EQ(got.size(), 12u);
  for (int i = 0; i < 12; ++i) {
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << i;
    } else {
      EXPECT_EQ(got[i], want[i]) << i;
      EXPECT_EQ(std::signbit(got[i]), std::signbit(want[i])) << i;
    }
  }
  std::vector<float> gz = rt.get<float>(z);
  EXPECT_EQ(gz[0], INFINITY);
  EXPECT_EQ(gz[1], INFINITY);
  EXPECT_EQ(gz[2], -INFINITY);
  EXPECT_EQ(gz[3], INFINITY);
  EXPECT_TRUE(std::isnan(gz[4]));
  EXPECT_TRUE(std::signbit(gz[5]) && gz[5] == 0);
}

TEST(Pad, DynamicDims) {
  for (DType t : {DType::F32, DType::BF16, DType::I32}) {
    std::vector<Case> runs, crop, dynpad;
    for (int64_t s : {1, 2, 5}) {
      runs.push_back({{{"s", s}}, r_pad(input({s, 3}), {{1, 2}, {0, 1}})});
      crop.push_back({{{"s", s}}, r_pad(input({s, 3}), {{0, -1}, {-1, 2}})});
      dynpad.push_back({{{"s", s}}, r_pad(input({2, 3}), {{0, s}, {s, 1}})});
    }
    check(
        t, {{"s", 3}},
        [](auto& x) {
          return x[0].pad({{1, 2}, {0, 1}}, 4);
        },
        runs, 4, "dyn pad");
    check(
        t, {{"s", 3}},
        [](auto& x) {
          return x[0].pad({{0, -1}, {-1, 2}}, 4);
        },
        crop, 4, "dyn crop");
    check(
        t, {{2, 3}},
        [](auto& x) {
          return x[0].pad({{0, "s"}, {"s", 1}}, 4);
        },
        dynpad, 4, "dyn amounts");
  }
}

TEST(Pad, Errors) {
  Graph g;
  auto x = g.tensor("x", {4, 6});
  expect_error([&] { x.pad({{1, 1}, {1, 1}, {1, 1}}); }, {"pad", "[4, 6]"});
  expect_error([&] { x.pad({{-3, -2}}); }, {"pad", "[4, 6]"});
  expect_error([&] { x.pad({{0, -5}}); }, {"pad", "[4, 6]"});
  expect_error([&] { x.pad({{0, 0}, {-7, 0}}); }, {"pad", "[4, 6]"});
  auto i = g.tensor("i", {4}, DType::I32);
  EXPECT_THROW(i.pad({{1, 1}}, 0.5), Error);
}

// ---------------------------------------------------------------- unfold, repeat, contiguous

TEST(Unfold, SlidingWindows) {
  struct C {
    int64_t size, step;
  };
  for (C c : {C{3, 1}, C{3, 2}, C{2, 3}, C{10, 1}, C{1, 1}, C{4, 4}, C{3, 20}, C{5, 2}}) {
    std::string what = "unfold size " + std::to_string(c.size) + " step " + std::to_string(c.step);
    for (DType t : {DType::F32, DType::BF16, DType::I64, DType::Bool}) {
      check1(
          t, {10}, [&](auto& x) { return x[0].unfold(0, c.size, c.step); },
          r_unfold(input({10}), 0, c.size, c.step), 0, what);
    }
    if (c.size <= 7) {
      check1(
          DType::F32, {7, 3}, [&](auto& x) { return x[0].unfold(0, c.size, c.step); },
          r_unfold(input({7, 3}), 0, c.size, c.step), 0, "axis 0 " + what);
      check1(
          DType::F32, {2, 7, 3}, [&](auto& x) { return x[0].unfold(-2, c.size, c.step); },
          r_unfold(input({2, 7, 3}), 1, c.size, c.step), 0, "axis -2 " + what);
      check1(
          DType::F16, {3, 7},
          [&](auto& x) { return x[0].transpose(0, 1).unfold(0, c.size, c.step); },
          r_unfold(r_transpose(input({3, 7}), 0, 1), 0, c.size, c.step), 0, "transposed " + what);
    }
  }
  // unfold of an unfold
  check1(
      DType::F32, {9}, [](auto& x) { return x[0].unfold(0, 4, 1).unfold(0, 2, 2); },
      r_unfold(r_unfold(input({9}), 0, 4, 1), 0, 2, 2), 0, "twice");
}

TEST(Unfold, TorchExampleAndDynamic) {
  // torch.arange(1., 8).unfold(0, 2, 2) == [[1, 2], [3, 4], [5, 6]]
  Graph g;
  auto x = g.tensor("x", {7});
  auto a = x.unfold(0, 2, 1).output("a");
  auto b = x.unfold(0, 2, 2).output("b");
  ReferenceRuntime rt(g);
  rt.set(x, std::vector<float>{1, 2, 3, 4, 5, 6, 7});
  rt.execute();
  EXPECT_EQ(rt.get<float>(a), (std::vector<float>{1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7}));
  EXPECT_EQ(rt.shape(a), (Ints{6, 2}));
  EXPECT_EQ(rt.get<float>(b), (std::vector<float>{1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(rt.shape(b), (Ints{3, 2}));

  std::vector<Case> runs;
  for (int64_t s : {3, 4, 8, 9})
    runs.push_back({{{"s", s}}, r_unfold(input({s, 2}), 0, 3, 2)});
  check(
      DType::F32, {{"s", 2}}, [](auto& x) { return x[0].unfold(0, 3, 2); }, runs, 0, "dynamic");

  expect_error([&] { x.unfold(0, 8, 1); }, {"unfold", "[7]"});
  expect_error([&] { x.unfold(0, 2, 0); }, {"unfold", "step", "[7]"});
  expect_error([&] { x.unfold(1, 2, 1); }, {"unfold", "axis 1"});
}

TEST(Repeat, TorchTiling) {
  struct C {
    Ints in, reps;
  };
  const C cases[] = {
      {{2, 3}, {2, 2}}, {{2, 3}, {1, 3}}, {{2, 3}, {3, 1, 2}}, {{2, 3}, {2, 1, 1, 1}},
      {{1, 3}, {4, 2}}, {{3}, {4, 2}},    {{2, 1}, {1, 3}},    {{2, 3}, {1, 1}},
      {{2, 3}, {0, 2}}, {{}, {3}},        {{2, 3}, {2, 3, 2}}};
  for (const C& c : cases) {
    std::string what = "repeat " + str(c.in) + " " + str(c.reps);
    for (DType t : kTypes) {
      check1(
          t, c.in, [&](auto& x) { return x[0].repeat(dims(c.reps)); },
          r_repeat(input(c.in), c.reps), 0, what);
    }
    if (c.in.size() == 2) {
      Ints tin = {c.in[1], c.in[0]};
      check1(
          DType::F32, tin, [&](auto& x) { return x[0].transpose(0, 1).repeat(dims(c.reps)); },
          r_repeat(r_transpose(input(tin), 0, 1), c.reps), 0, "transposed " + what);
    }
  }
  // torch: torch.tensor([1, 2, 3]).repeat(4, 2) has shape [4, 6]
  Graph g;
  auto x = g.tensor("x", {3}, DType::I32);
  auto y = x.repeat({4, 2}).output("y");
  ReferenceRuntime rt(g);
  rt.set(x, std::vector<int>{1, 2, 3});
  rt.execute();
  EXPECT_EQ(rt.shape(y), (Ints{4, 6}));
  std::vector<int> want;
  for (int r = 0; r < 4; ++r)
    for (int v : {1, 2, 3, 1, 2, 3})
      want.push_back(v);
  EXPECT_EQ(rt.get<int>(y), want);
  EXPECT_EQ(x.repeat({4, 2}).id(), x.id());  // a view
  expect_error([&] { g.tensor("z", {2, 3}).repeat({2}); }, {"repeat", "[2, 3]"});

  std::vector<Case> runs;
  for (int64_t s : {1, 2, 4})
    runs.push_back({{{"s", s}}, r_repeat(input({s, 2}), {2, 3})});
  check(
      DType::F32, {{"s", 2}},
      [](auto& x) {
        return x[0].repeat({2, 3});
      },
      runs, 0, "dynamic input");
  std::vector<Case> runs2;
  for (int64_t s : {1, 3})
    runs2.push_back({{{"s", s}}, r_repeat(input({2, 2}), {s, 1, 2})});
  check(
      DType::F32, {{2, 2}},
      [](auto& x) {
        return x[0].repeat({"s", 1, 2});
      },
      runs2, 0, "dynamic counts");
  // repeat then reshape (a view of a view) then slice
  check1(
      DType::BF16, {2, 3},
      [](auto& x) {
        return x[0].repeat({2, 2}).reshape({24}).slice(0, 5, 20, 3);
      },
      r_slice(r_reshape(r_repeat(input({2, 3}), {2, 2}), {24}), 0, 5, 20, 3), 0,
      "repeat reshape slice");
}

TEST(Contiguous, CopiesAnyViewExactly) {
  for (DType t : kTypes) {
    check1(
        t, {2, 3, 4},
        [](auto& x) {
          return x[0].permute({2, 0, 1}).contiguous();
        },
        r_permute(input({2, 3, 4}), {2, 0, 1}), 0, "permuted");
    check1(
        t, {3},
        [](auto& x) {
          return x[0].expand({2, 3}).contiguous();
        },
        r_expand(input({3}), {2, 3}), 0, "expanded");
    check1(
        t, {2, 3}, [](auto& x) { return x[0].contiguous(); }, input({2, 3}), 0, "contiguous");
  }
  Graph g;
  auto x = g.tensor("x", {2, 3});
  auto c = x.transpose(0, 1).contiguous();
  EXPECT_TRUE(c.view().is_contiguous());
  EXPECT_EQ(shape_to_string(c.shape()), "[3, 2]");
}

TEST(Contiguous, KeepsNegativeZeroAndNaNPayloads) {
  Graph g;
  auto x = g.tensor("x", {4});
  auto y = x.unsqueeze(0).expand({2, 4}).contiguous().slice(1, 1, 4, 2).output("y");
  ReferenceRuntime rt(g);
  const uint32_t bits[] = {0x7fc01234u, 0x80000000u, 0xffa00001u, 0x7f800001u};
  rt.set_bytes(x, bits, sizeof(bits));
  rt.execute();
  std::vector<uint8_t> got = rt.get_bytes(y);
  ASSERT_EQ(got.size(), 16u);
  uint32_t out[4];
  std::memcpy(out, got.data(), 16);
  EXPECT_EQ(out[0], 0x80000000u);
  EXPECT_EQ(out[1], 0x7f800001u);  // a signalling NaN stays signalling
  EXPECT_EQ(out[2], 0x80000000u);
  EXPECT_EQ(out[3], 0x7f800001u);
}

// ---------------------------------------------------------------- triu / tril

TEST(Triangle, TriuTrilOverShapesAndK) {
  const Ints shapes[] = {{4, 4}, {3, 5}, {5, 3}, {2, 3, 4}, {2, 1, 3, 3}, {1, 1}, {1, 4}};
  for (const Ints& s : shapes) {
    for (int64_t k : {-1, 0, 1, -5, 5}) {
      std::string what = str(s) + " k=" + std::to_string(k);
      for (DType t : {DType::F32, DType::BF16, DType::F16, DType::I32, DType::Bool, DType::F64}) {
        check1(
            t, s, [&](auto& x) { return x[0].triu(k); }, r_triangle(input(s), true, k), 0,
            "triu " + what);
        check1(
            t, s, [&](auto& x) { return x[0].tril(k); }, r_triangle(input(s), false, k), 0,
            "tril " + what);
      }
    }
  }
  // of a transposed input and of a broadcast one
  for (int64_t k : {-1, 0, 1}) {
    check1(
        DType::F32, {5, 3}, [&](auto& x) { return x[0].transpose(0, 1).triu(k); },
        r_triangle(r_transpose(input({5, 3}), 0, 1), true, k), 0, "transposed triu");
    check1(
        DType::F32, {4},
        [&](auto& x) {
          return x[0].expand({2, 3, 4}).tril(k);
        },
        r_triangle(r_expand(input({4}), {2, 3, 4}), false, k), 0, "expanded tril");
  }
}

TEST(Triangle, ExactWithInfAndNaN) {
  Graph g;
  auto x = g.tensor("x", {2, 2});
  auto u = x.triu().output("u");
  auto l = x.tril(-1).output("l");
  ReferenceRuntime rt(g);
  rt.set(x, std::vector<float>{INFINITY, NAN, -INFINITY, NAN});
  rt.execute();
  std::vector<float> gu = rt.get<float>(u), gl = rt.get<float>(l);
  EXPECT_EQ(gu[0], INFINITY);
  EXPECT_TRUE(std::isnan(gu[1]));
  EXPECT_EQ(gu[2], 0.0f);
  EXPECT_TRUE(std::isnan(gu[3]));
  EXPECT_EQ(gl, (std::vector<float>{0, 0, -INFINITY, 0}));
}

TEST(Triangle, DynamicAndErrors) {
  for (int64_t k : {-1, 0, 1}) {
    std::vector<Case> runs;
    for (int64_t s : {1, 2, 5})
      runs.push_back({{{"s", s}}, r_triangle(input({2, s, s}), k >= 0, k)});
    check(
        DType::F32, {{2, "s", "s"}}, [&](auto& x) { return k >= 0 ? x[0].triu(k) : x[0].tril(k); },
        runs, 0, "dyn k=" + std::to_string(k));
  }
  std::vector<Case> runs;
  for (int64_t s : {1, 3, 6})
    runs.push_back({{{"s", s}}, r_triangle(input({3, s}), false, 0)});
  check(
      DType::BF16, {{3, "s"}}, [](auto& x) { return x[0].tril(); }, runs, 0, "dyn cols");
  Graph g;
  expect_error([&] { g.tensor("x", {4}).triu(); }, {"triu", "[4]"});
  expect_error([&] { g.tensor("y", {}).tril(); }, {"tril", "[]"});
}

// ---------------------------------------------------------------- concat / stack

TEST(Concat, TwoAndThreeInputsOnEveryAxis) {
  for (int axis : {0, 1, 2, -1, -3}) {
    const int a = axis < 0 ? axis + 3 : axis;
    Ints s0 = {2, 3, 4}, s1 = s0, s2 = s0;
    s1[a] = 1;
    s2[a] = 3;
    for (DType t : kTypes) {
      Ref r0 = input(s0), r1 = input(s1, prod(s0)), r2 = input(s2, prod(s0) + prod(s1));
      check(
          t, {dims(s0), dims(s1)},
          [&](auto& x) {
            return concat({x[0], x[1]}, axis);
          },
          {{{}, r_concat({r0, r1}, a)}}, 0, "concat2 axis " + std::to_string(axis));
      check(
          t, {dims(s0), dims(s1), dims(s2)},
          [&](auto& x) {
            return concat({x[0], x[1], x[2]}, axis);
          },
          {{{}, r_concat({r0, r1, r2}, a)}}, 0, "concat3 axis " + std::to_string(axis));
    }
  }
  // views as inputs, the same tensor twice, an empty piece
  Ref r0 = input({3, 2}), r1 = input({2, 3}, 6);
  check(
      DType::F32, {{3, 2}, {2, 3}},
      [](auto& x) {
        return concat({x[0], x[1].transpose(0, 1), x[0]}, 1);
      },
      {{{}, r_concat({r0, r_transpose(r1, 0, 1), r0}, 1)}}, 0, "views");
  Ref e0 = input({2, 0}, 0), e1 = input({2, 3}, 0);
  check(
      DType::F32, {{2, 0}, {2, 3}},
      [](auto& x) {
        return concat({x[0], x[1]}, 1);
      },
      {{{}, r_concat({e0, e1}, 1)}}, 0, "empty piece");
  check(
      DType::F32, {{2, 3}}, [](auto& x) { return concat({x[0]}, 0); }, {{{}, input({2, 3})}}, 0,
      "one");
}

TEST(Concat, ExactWithInfAndNaN) {
  Graph g;
  auto a = g.tensor("a", {2});
  auto b = g.tensor("b", {1});
  auto y = concat({a, b}, 0).output("y");
  ReferenceRuntime rt(g);
  rt.set(a, std::vector<float>{INFINITY, -0.0f});
  rt.set(b, std::vector<float>{NAN});
  rt.execute();
  std::vector<float> got = rt.get<float>(y);
  EXPECT_EQ(got[0], INFINITY);
  EXPECT_TRUE(got[1] == 0 && std::signbit(got[1]));
  EXPECT_TRUE(std::isnan(got[2]));
}

TEST(Concat, DynamicDims) {
  std::vector<Case> runs;
  for (int64_t s : {1, 2, 4})
    runs.push_back({{{"s", s}}, r_concat({input({s, 2}), input({3, 2}, 2 * s)}, 0)});
  check(
      DType::F32, {{"s", 2}, {3, 2}},
      [](auto& x) {
        return concat({x[0], x[1]}, 0);
      },
      runs, 0, "dyn axis");
  std::vector<Case> runs2;
  for (int64_t s : {1, 3}) {
    runs2.push_back(
        {{{"s", s}}, r_concat({input({s, 2}), input({s, 1}, 2 * s), input({s, 2}, 3 * s)}, 1)});
  }
  check(
      DType::I64, {{"s", 2}, {"s", 1}, {"s", 2}},
      [](auto& x) {
        return concat({x[0], x[1], x[2]}, -1);
      },
      runs2, 0, "dyn other axis");
  std::vector<Case> runs3;
  for (int64_t s : {1, 3})
    runs3.push_back({{{"s", s}}, r_concat({input({s, 2}), input({s, 2}, 2 * s)}, 0)});
  check(
      DType::F32, {{"s", 2}, {"s", 2}},
      [](auto& x) {
        return concat({x[0], x[1]}, 0);
      },
      runs3, 0, "dyn both");
}

TEST(Concat, Errors) {
  Graph g;
  auto a = g.tensor("a", {2, 3});
  auto b = g.tensor("b", {2, 4});
  auto c = g.tensor("c", {2, 3, 1});
  auto d = g.tensor("d", {2, 3}, DType::I32);
  auto s = g.tensor("s", {"s", 3});
  expect_error([&] { concat({a, b}, 0); }, {"concat", "[2, 3]", "[2, 4]"});
  expect_error([&] { concat({a, c}, 0); }, {"concat", "[2, 3]", "[2, 3, 1]"});
  expect_error([&] { concat({a, d}, 0); }, {"concat", "f32", "i32"});
  expect_error([&] { concat({a, s}, 1); }, {"concat", "[2, 3]", "[s, 3]"});
  expect_error([&] { concat({a, a}, 2); }, {"concat", "axis 2"});
  expect_error([&] { concat({}, 0); }, {"concat"});
  EXPECT_NO_THROW(concat({a, b}, 1));
}

TEST(Stack, NewAxis) {
  for (int axis : {0, 1, 2, -1, -2}) {
    const int a = axis < 0 ? axis + 3 : axis;
    Ints s = {2, 3};
    Ints u = s;
    u.insert(u.begin() + a, 1);
    for (DType t : {DType::F32, DType::BF16, DType::I32, DType::Bool}) {
      Ref r0 = r_reshape(input(s), u), r1 = r_reshape(input(s, 6), u),
          r2 = r_reshape(input(s, 12), u);
      check(
          t, {dims(s), dims(s)},
          [&](auto& x) {
            return stack({x[0], x[1]}, axis);
          },
          {{{}, r_concat({r0, r1}, a)}}, 0, "stack2 " + std::to_string(axis));
      check(
          t, {dims(s), dims(s), dims(s)},
          [&](auto& x) {
            return stack({x[0], x[1], x[2]}, axis);
          },
          {{{}, r_concat({r0, r1, r2}, a)}}, 0, "stack3 " + std::to_string(axis));
    }
  }
  std::vector<Case> runs;
  for (int64_t s : {1, 3}) {
    runs.push_back(
        {{{"s", s}},
         r_concat({r_reshape(input({s}), {s, 1}), r_reshape(input({s}, s), {s, 1})}, 1)});
  }
  check(
      DType::F32, {{"s"}, {"s"}},
      [](auto& x) {
        return stack({x[0], x[1]}, 1);
      },
      runs, 0, "dyn");
  Graph g;
  auto a = g.tensor("a", {2, 3});
  auto b = g.tensor("b", {3, 2});
  expect_error([&] { stack({a, b}, 0); }, {"stack", "[2, 3]", "[3, 2]"});
  expect_error([&] { stack({a, a}, 3); }, {"stack", "axis 3"});
  expect_error([&] { stack({}, 0); }, {"stack"});
}

// ---------------------------------------------------------------- combinations

TEST(Movement, PipelineAtSeveralDynamicValues) {
  // [s, 4] -> pad -> transpose -> slice with a step -> unfold -> reshape -> repeat
  std::vector<Case> runs;
  for (int64_t s : {1, 2, 3, 7}) {
    Ref r = r_pad(input({s, 4}), {{1, 1}, {0, 2}});
    r = r_transpose(r, 0, 1);
    r = r_slice(r, 0, 0, std::nullopt, 2);
    r = r_unfold(r, 1, 2, 1);
    r = r_reshape(r, {3, (s + 1) * 2});
    r = r_repeat(r, {2, 1});
    runs.push_back({{{"s", s}}, r});
  }
  Build b = [](const std::vector<Tensor>& x) {
    Expr s = Expr::var("s");
    return x[0]
        .pad({{1, 1}, {0, 2}}, 2)
        .transpose(0, 1)
        .slice(0, 0, std::nullopt, 2)
        .unfold(1, 2, 1)
        .reshape({3, (s + 1) * 2})
        .repeat({2, 1});
  };
  for (DType t : {DType::F32, DType::BF16, DType::I64})
    check(t, {{"s", 4}}, b, runs, 2, "pipeline");
}

// Random chains of movement ops against the composed loop references: views of views (merged,
// split, repeated, broadcast, sliced) exercise the view algebra and its simplifications.
TEST(Movement, RandomChains) {
  std::mt19937_64 rng(20240611);
  auto pick = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  using Op = std::function<Tensor(const Tensor&)>;
  for (int trial = 0; trial < 1000; ++trial) {
    Ints shape;
    for (int64_t r = pick(1, 4); r-- > 0;)
      shape.push_back(pick(1, 4));
    Ref ref = input(shape);
    std::vector<Op> ops;
    std::string desc = "start " + str(shape);
    for (int64_t n = pick(2, 6); n-- > 0;) {
      const Ints s = ref.shape;
      const int r = static_cast<int>(s.size());
      if (prod(s) > 400) break;
      const int ax = r ? static_cast<int>(pick(0, r - 1)) : 0;
      switch (r == 0 ? 3 : pick(0, 10)) {
        case 0: {  // permute
          std::vector<int> order(r);
          for (int i = 0; i < r; ++i)
            order[i] = i;
          std::shuffle(order.begin(), order.end(), rng);
          ops.push_back([order](const Tensor& t) { return t.permute(order); });
          ref = r_permute(ref, order);
          desc += " permute " + str(Ints(order.begin(), order.end()));
          break;
        }
        case 1:
        case 2:
        case 3: {  // reshape to a random factorisation (with some size-1 axes)
          Ints primes;
          int64_t m = prod(s);
          for (int64_t p = 2; p <= m; ++p)
            while (m % p == 0) {
              primes.push_back(p);
              m /= p;
            }
          std::shuffle(primes.begin(), primes.end(), rng);
          Ints to;
          for (int64_t p : primes) {
            if (to.empty() || pick(0, 1))
              to.push_back(p);
            else
              to.back() *= p;
          }
          if (pick(0, 3) == 0) to.insert(to.begin() + pick(0, static_cast<int64_t>(to.size())), 1);
          if (prod(s) == 0) to = {0, pick(1, 3)};
          ops.push_back([to](const Tensor& t) { return t.reshape(dims(to)); });
          ref = r_reshape(ref, to);
          desc += " reshape " + str(to);
          break;
        }
        case 4: {  // slice
          const int64_t d = s[ax];
          const int64_t st = pick(-d - 1, d), en = pick(-d - 1, d + 1), step = pick(1, 3);
          const bool open = pick(0, 2) == 0;
          ops.push_back([=](const Tensor& t) {
            return open ? t.slice(ax, st, std::nullopt, step) : t.slice(ax, st, Dim(en), step);
          });
          ref = r_slice(ref, ax, st, open ? std::nullopt : std::optional<int64_t>(en), step);
          desc += " slice(" + std::to_string(ax) + ", " + std::to_string(st) + ", " +
                  (open ? std::string("none") : std::to_string(en)) + ", " + std::to_string(step) +
                  ")";
          break;
        }
        case 5: {  // broadcast: a new leading axis, or a size-1 axis widened
          Ints to = s;
          if (pick(0, 1)) to.insert(to.begin(), pick(1, 3));
          for (size_t i = to.size() - s.size(); i < to.size(); ++i)
            if (to[i] == 1 && pick(0, 1)) to[i] = pick(2, 3);
          ops.push_back([to](const Tensor& t) { return t.expand(dims(to)); });
          ref = r_expand(ref, to);
          desc += " expand " + str(to);
          break;
        }
        case 6: {  // repeat
          Ints reps(s.size() + pick(0, 1));
          for (int64_t& x : reps)
            x = pick(1, 2);
          ops.push_back([reps](const Tensor& t) { return t.repeat(dims(reps)); });
          ref = r_repeat(ref, reps);
          desc += " repeat " + str(reps);
          break;
        }
        case 7: {  // pad (possibly cropping)
          std::vector<std::pair<int64_t, int64_t>> p;
          std::vector<std::pair<Dim, Dim>> pd;
          for (int i = 0; i <= ax; ++i) {
            int64_t b = pick(-1, 2), e = pick(-1, 2);
            if (-std::min<int64_t>(b, 0) - std::min<int64_t>(e, 0) > s[i]) b = e = 1;
            p.push_back({b, e});
            pd.push_back({b, e});
          }
          ops.push_back([pd](const Tensor& t) { return t.pad(pd); });
          ref = r_pad(ref, p);
          desc += " pad";
          for (auto [b, e] : p)
            desc += " (" + std::to_string(b) + "," + std::to_string(e) + ")";
          break;
        }
        case 8: {  // unfold
          const int64_t d = s[ax];
          const int64_t size = pick(std::min<int64_t>(d, 1), d), step = pick(1, 3);
          ops.push_back([=](const Tensor& t) { return t.unfold(ax, size, step); });
          ref = r_unfold(ref, ax, size, step);
          desc += " unfold(" + std::to_string(ax) + ", " + std::to_string(size) + ", " +
                  std::to_string(step) + ")";
          break;
        }
        case 9: {  // merge or split
          if (ax + 1 < r && pick(0, 1)) {
            ops.push_back([ax](const Tensor& t) { return t.merge_dims(ax); });
            Ints to = s;
            to[ax] *= to[ax + 1];
            to.erase(to.begin() + ax + 1);
            ref = r_reshape(ref, to);
            desc += " merge_dims(" + std::to_string(ax) + ")";
          } else {
            Ints divs = {1};
            for (int64_t q = 2; q <= s[ax]; ++q)
              if (s[ax] % q == 0) divs.push_back(q);
            const int64_t inner = divs[pick(0, static_cast<int64_t>(divs.size()) - 1)];
            ops.push_back([=](const Tensor& t) { return t.split_dims(ax, inner); });
            Ints to = s;
            to[ax] /= inner;
            to.insert(to.begin() + ax + 1, inner);
            ref = r_reshape(ref, to);
            desc += " split_dims(" + std::to_string(ax) + ", " + std::to_string(inner) + ")";
          }
          break;
        }
        default: {  // contiguous or triu
          if (r >= 2 && pick(0, 1)) {
            const int64_t k = pick(-1, 1);
            ops.push_back([k](const Tensor& t) { return t.triu(k); });
            ref = r_triangle(ref, true, k);
            desc += " triu(" + std::to_string(k) + ")";
          } else {
            ops.push_back([](const Tensor& t) { return t.contiguous(); });
            desc += " contiguous";
          }
        }
      }
    }
    try {
      check1(
          DType::F32, shape,
          [&](auto& x) {
            Tensor t = x[0];
            for (const Op& f : ops)
              t = f(t);
            return t;
          },
          ref, 0, desc);
    } catch (const Error& e) {
      ADD_FAILURE() << desc << ": " << e.what();
    }
  }
}

}  // namespace
}  // namespace luminal
