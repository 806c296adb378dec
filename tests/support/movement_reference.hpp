#pragma once
// Shared by the movement op tests: plain host references and a byte-exact comparison harness.
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
#include "support/expect_error.hpp"
#include "support/index_map.hpp"

namespace luminal::movement_testing {

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

inline constexpr DType kTypes[] = {DType::F32, DType::F64, DType::BF16, DType::F16,   DType::I32,
                                   DType::I64, DType::I8,  DType::Bool, DType::F8E4M3};

// ---------------------------------------------------------------- host reference

// out[o] = in[f(o)], or the fill value where f gives nothing.
inline Ref remap(const Ref& in, const Ints& out_shape,
                 const std::function<std::optional<Ints>(Ints)>& f) {
  Ref r{out_shape, {}};
  for (int64_t o = 0; o < prod(out_shape); ++o) {
    std::optional<Ints> j = f(unravel(o, out_shape));
    r.src.push_back(j ? in.src[ravel(*j, in.shape)] : -1);
  }
  return r;
}

inline Ref r_reshape(Ref x, const Ints& s) {
  EXPECT_EQ(prod(s), prod(x.shape));
  x.shape = s;
  return x;
}

inline Ref r_permute(const Ref& x, const std::vector<int>& order) {
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

inline Ref r_transpose(const Ref& x, int a, int b) {
  std::vector<int> order;
  for (int i = 0; i < static_cast<int>(x.shape.size()); ++i)
    order.push_back(i);
  std::swap(order[a], order[b]);
  return r_permute(x, order);
}

// Python slicing x[start:end:step] on one axis, written as the plain loop.
inline Ref r_slice(const Ref& x, int axis, int64_t start, std::optional<int64_t> end,
                   int64_t step) {
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

inline Ref r_pad(const Ref& x, const std::vector<std::pair<int64_t, int64_t>>& pads) {
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

inline Ref r_unfold(const Ref& x, int axis, int64_t size, int64_t step) {
  Ints shape = x.shape;
  shape[axis] = (x.shape[axis] - size) / step + 1;
  shape.push_back(size);
  return remap(x, shape, [&](Ints o) -> std::optional<Ints> {
    Ints i(o.begin(), o.end() - 1);
    i[axis] = o[axis] * step + o.back();
    return i;
  });
}

inline Ref r_repeat(const Ref& x, const Ints& reps) {
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
inline Ref r_expand(const Ref& x, const Ints& shape) {
  const size_t off = shape.size() - x.shape.size();
  return remap(x, shape, [&](Ints o) -> std::optional<Ints> {
    Ints i(x.shape.size());
    for (size_t k = 0; k < i.size(); ++k)
      i[k] = x.shape[k] == 1 ? 0 : o[k + off];
    return i;
  });
}

inline Ref r_triangle(const Ref& x, bool upper, int64_t k) {
  return remap(x, x.shape, [&](Ints o) -> std::optional<Ints> {
    const int64_t r = o[o.size() - 2], c = o.back();
    const bool keep = upper ? c - r >= k : c - r <= k;
    if (!keep) return std::nullopt;
    return o;
  });
}

inline Ref r_concat(const std::vector<Ref>& xs, int axis) {
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

inline std::vector<uint8_t> test_bits(DType t, int64_t n, uint64_t seed) {
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

inline std::vector<uint8_t> fill_bytes(DType t, double v) {
  std::vector<uint8_t> b(size_bytes(t));
  if (is_float(t))
    store_from_double(t, b.data(), 0, v);
  else
    store_from_int64(t, b.data(), 0, t == DType::Bool ? (v != 0) : static_cast<int64_t>(v));
  return b;
}

using Build = std::function<Tensor(const std::vector<Tensor>&)>;

struct Case {
  DynMap dyn;
  Ref want;
};

// Builds `build` over inputs of `shapes` (dtype t) once, then runs it for every case and compares
// the output with the case's reference, byte for byte.
inline void check(DType t, const std::vector<std::vector<Dim>>& shapes, const Build& build,
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
    const std::string ctx = run_context(what, t, c.dyn);
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
    expect_bytes(got, all, c.want, sz, fb.data(), "input", ctx);
  }
}

// One input of constant shape, one case.
void check1(DType t, const Ints& shape, const Build& build, const Ref& want, double fill = 0,
            const std::string& what = "") {
  check(t, {dims(shape)}, build, {{{}, want}}, fill, what);
}

inline void check_all_types(const Ints& shape, const Build& build, const Ref& want, double fill = 0,
                            const std::string& what = "") {
  for (DType t : kTypes)
    check1(t, shape, build, want, fill, what);
}

inline std::vector<std::vector<int>> permutations(int n) {
  std::vector<int> p(n);
  for (int i = 0; i < n; ++i)
    p[i] = i;
  std::vector<std::vector<int>> out;
  do
    out.push_back(p);
  while (std::next_permutation(p.begin(), p.end()));
  return out;
}

}  // namespace luminal::movement_testing
