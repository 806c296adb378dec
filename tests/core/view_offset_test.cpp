// Views with an element offset (View::base): every method keeps the offsets of every logical index
// equal to a reference that moves an explicit array of offsets (random chains of permute, expand,
// broadcast, unsqueeze, squeeze, repeat, merge, split, shrink, stride_by, slice, reshape).
#include <gtest/gtest.h>

#include <random>

#include "luminal/core/shape.hpp"

namespace luminal {
namespace {

// A logical tensor of element offsets: dims and the offset of every index, row-major.
struct Offsets {
  std::vector<int64_t> dims;
  std::vector<int64_t> at;
};

int64_t count(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims)
    n *= d;
  return n;
}

std::vector<int64_t> unflatten(int64_t f, const std::vector<int64_t>& dims) {
  std::vector<int64_t> idx(dims.size());
  for (size_t k = dims.size(); k-- > 0;) {
    idx[k] = f % dims[k];
    f /= dims[k];
  }
  return idx;
}

int64_t flatten(const std::vector<int64_t>& idx, const std::vector<int64_t>& dims) {
  int64_t f = 0;
  for (size_t k = 0; k < dims.size(); ++k)
    f = f * dims[k] + idx[k];
  return f;
}

// The offsets View::offset gives (constant dims only).
Offsets of(const View& v) {
  Offsets o;
  o.dims = eval_shape(v.dims, {});
  for (int64_t f = 0; f < count(o.dims); ++f) {
    std::vector<Expr> idx;
    for (int64_t i : unflatten(f, o.dims))
      idx.push_back(Expr(i));
    o.at.push_back(v.offset(idx).eval({}));
  }
  return o;
}

// out[idx] = in[map(idx)] over new dims.
template <class F>
Offsets remap(const Offsets& in, std::vector<int64_t> dims, F map) {
  Offsets o;
  o.dims = std::move(dims);
  for (int64_t f = 0; f < count(o.dims); ++f)
    o.at.push_back(in.at[static_cast<size_t>(flatten(map(unflatten(f, o.dims)), in.dims))]);
  return o;
}

TEST(ViewOffset, BaseInOffsetStringAndEquality) {
  View v = View::contiguous({4, 6});
  std::optional<View> s = v.slice(1, Expr(2), Expr(3));
  ASSERT_TRUE(s);
  EXPECT_EQ(s->base, Expr(2));
  EXPECT_TRUE(s->has_base());
  EXPECT_FALSE(s->is_contiguous());
  EXPECT_NE(*s, v.shrink(1, Expr(3)));
  EXPECT_NE(s->to_string().find("base 2"), std::string::npos) << s->to_string();
  EXPECT_EQ(s->offset({Expr(1), Expr(2)}).eval({}), 6 + 2 + 2);
  // A slice of rows keeps a contiguous layout at an offset: still not contiguous (base 4).
  std::optional<View> rows = View::contiguous({3, 4}).slice(0, Expr(1), Expr(2));
  ASSERT_TRUE(rows);
  EXPECT_EQ(rows->base, Expr(4));
  EXPECT_FALSE(rows->is_contiguous());
  // Reshape of an offset view keeps the base.
  std::optional<View> flat = rows->reshape({Expr(8)});
  ASSERT_TRUE(flat);
  EXPECT_EQ(flat->base, Expr(4));
  EXPECT_EQ(of(*flat).at, (std::vector<int64_t>{4, 5, 6, 7, 8, 9, 10, 11}));
  // Symbolic start: base is an expression.
  std::optional<View> dyn = View::contiguous({Expr::var("s"), Expr(8)}).slice(0, Expr::var("p"), 1);
  ASSERT_TRUE(dyn);
  EXPECT_EQ(dyn->base.eval({{"p", 3}}), 24);
  EXPECT_EQ(dyn->squeeze(0).base.eval({{"p", 3}}), 24);
}

TEST(ViewOffset, SliceOfNonLinearStrideIsRefused) {
  // repeat gives s(z % d): a start inside it is no view.
  View r = View::contiguous({3}).repeat(0, Expr(2));
  EXPECT_FALSE(r.slice(0, Expr(1), Expr(4)));
  // a stride-0 axis: any start is the same elements, base unchanged.
  View e = View::contiguous({3}).expand(0, Expr(5));
  std::optional<View> s = e.slice(0, Expr(2), Expr(2));
  ASSERT_TRUE(s);
  EXPECT_FALSE(s->has_base());
}

TEST(ViewOffset, RandomChainsMatchTheReference) {
  std::mt19937_64 rng(7);
  auto pick = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  int slices = 0, steps = 0;
  for (int trial = 0; trial < 400; ++trial) {
    std::vector<int64_t> d0;
    const int rank = static_cast<int>(pick(1, 3));
    for (int i = 0; i < rank; ++i)
      d0.push_back(pick(1, 5));
    Shape shape;
    for (int64_t d : d0)
      shape.push_back(Expr(d));
    View v = View::contiguous(shape);
    Offsets ref = of(v);
    std::string log = v.to_string();
    for (int step = 0; step < 7; ++step) {
      const int r = v.rank();
      const int op = static_cast<int>(pick(0, 10));
      const int a = r > 0 ? static_cast<int>(pick(0, r - 1)) : 0;
      if (r == 0 && op != 1 && op != 3) continue;
      if (op == 0) {  // permute
        std::vector<int> order(static_cast<size_t>(r));
        for (int i = 0; i < r; ++i)
          order[static_cast<size_t>(i)] = i;
        std::shuffle(order.begin(), order.end(), rng);
        v = v.permute(order);
        std::vector<int64_t> nd;
        for (int i : order)
          nd.push_back(ref.dims[static_cast<size_t>(i)]);
        ref = remap(ref, nd, [&](const std::vector<int64_t>& idx) {
          std::vector<int64_t> src(idx.size());
          for (size_t i = 0; i < order.size(); ++i)
            src[static_cast<size_t>(order[i])] = idx[i];
          return src;
        });
      } else if (op == 1) {  // expand a new axis
        if (r >= 4) continue;
        const int at = static_cast<int>(pick(0, r));
        const int64_t n = pick(1, 3);
        v = v.expand(at, Expr(n));
        std::vector<int64_t> nd = ref.dims;
        nd.insert(nd.begin() + at, n);
        ref = remap(ref, nd, [&](std::vector<int64_t> idx) {
          idx.erase(idx.begin() + at);
          return idx;
        });
      } else if (op == 2) {  // squeeze a size-1 axis or broadcast it
        if (ref.dims[static_cast<size_t>(a)] != 1) continue;
        if (pick(0, 1) == 0) {
          v = v.squeeze(a);
          std::vector<int64_t> nd = ref.dims;
          nd.erase(nd.begin() + a);
          ref = remap(ref, nd, [&](std::vector<int64_t> idx) {
            idx.insert(idx.begin() + a, 0);
            return idx;
          });
        } else {
          const int64_t n = pick(2, 3);
          v = v.broadcast_axis(a, Expr(n));
          std::vector<int64_t> nd = ref.dims;
          nd[static_cast<size_t>(a)] = n;
          ref = remap(ref, nd, [&](std::vector<int64_t> idx) {
            idx[static_cast<size_t>(a)] = 0;
            return idx;
          });
        }
      } else if (op == 3) {  // unsqueeze
        if (r >= 4) continue;
        const int at = static_cast<int>(pick(0, r));
        v = v.unsqueeze(at);
        std::vector<int64_t> nd = ref.dims;
        nd.insert(nd.begin() + at, 1);
        ref = remap(ref, nd, [&](std::vector<int64_t> idx) {
          idx.erase(idx.begin() + at);
          return idx;
        });
      } else if (op == 4) {  // repeat
        const int64_t t = pick(1, 2), d = ref.dims[static_cast<size_t>(a)];
        v = v.repeat(a, Expr(t));
        std::vector<int64_t> nd = ref.dims;
        nd[static_cast<size_t>(a)] = d * t;
        ref = remap(ref, nd, [&](std::vector<int64_t> idx) {
          idx[static_cast<size_t>(a)] %= d;
          return idx;
        });
      } else if (op == 5) {  // merge
        if (a + 1 >= r) continue;
        v = v.merge(a);
        std::vector<int64_t> nd = ref.dims;
        nd[static_cast<size_t>(a)] *= nd[static_cast<size_t>(a) + 1];
        nd.erase(nd.begin() + a + 1);
        ref.dims = nd;       // row-major flat order is unchanged
      } else if (op == 6) {  // split
        const int64_t d = ref.dims[static_cast<size_t>(a)];
        std::vector<int64_t> divs;
        for (int64_t q = 1; q <= d; ++q)
          if (d % q == 0) divs.push_back(q);
        const int64_t inner =
            divs[static_cast<size_t>(pick(0, static_cast<int64_t>(divs.size()) - 1))];
        std::optional<View> s = v.split(a, Expr(inner));
        if (!s) continue;
        v = *s;
        std::vector<int64_t> nd = ref.dims;
        nd[static_cast<size_t>(a)] = d / inner;
        nd.insert(nd.begin() + a + 1, inner);
        ref.dims = nd;
      } else if (op == 7 || op == 8) {  // slice (start, len, step) or shrink / stride_by
        const int64_t d = ref.dims[static_cast<size_t>(a)];
        const int64_t start = pick(0, d - 1), stp = pick(1, 2);
        const int64_t len = pick(1, (d - start + stp - 1) / stp);
        if (op == 8 && pick(0, 1) == 0) {
          std::vector<int64_t> nd = ref.dims;
          if (pick(0, 1) == 0) {  // shrink: the first len elements
            v = v.shrink(a, Expr(len));
            nd[static_cast<size_t>(a)] = len;
            ref = remap(ref, nd, [](std::vector<int64_t> idx) { return idx; });
          } else {  // stride_by: every stp-th element from 0
            v = v.stride_by(a, Expr(stp));
            nd[static_cast<size_t>(a)] = (d + stp - 1) / stp;
            ref = remap(ref, nd, [&](std::vector<int64_t> idx) {
              idx[static_cast<size_t>(a)] *= stp;
              return idx;
            });
            ++steps;
          }
          log += " -> " + v.to_string();
          ASSERT_EQ(of(v).at, ref.at) << log;
          continue;
        }
        std::optional<View> s = v.slice(a, Expr(start), Expr(len), stp);
        if (!s) continue;
        v = *s;
        ++slices;
        std::vector<int64_t> nd = ref.dims;
        nd[static_cast<size_t>(a)] = len;
        ref = remap(ref, nd, [&](std::vector<int64_t> idx) {
          idx[static_cast<size_t>(a)] = start + idx[static_cast<size_t>(a)] * stp;
          return idx;
        });
      } else {  // reshape to a random factorisation of the same count
        const int64_t n = count(ref.dims);
        std::vector<int64_t> nd;
        int64_t rest = n;
        while (rest > 1 && nd.size() < 3) {
          std::vector<int64_t> divs;
          for (int64_t q = 2; q <= rest; ++q)
            if (rest % q == 0) divs.push_back(q);
          const int64_t q =
              divs[static_cast<size_t>(pick(0, static_cast<int64_t>(divs.size()) - 1))];
          nd.push_back(q);
          rest /= q;
        }
        if (rest != 1 || nd.empty()) nd.push_back(rest);
        Shape ns;
        for (int64_t x : nd)
          ns.push_back(Expr(x));
        std::optional<View> s = v.reshape(ns);
        if (!s) continue;
        v = *s;
        ref.dims = nd;
      }
      log += " -> " + v.to_string();
      const Offsets got = of(v);
      ASSERT_EQ(got.dims, ref.dims) << log;
      ASSERT_EQ(got.at, ref.at) << log;
      if (v.is_contiguous()) {
        for (size_t i = 0; i < got.at.size(); ++i)
          ASSERT_EQ(got.at[i], static_cast<int64_t>(i)) << log;
      }
    }
  }
  EXPECT_GT(slices, 200);  // the chains do slice at offsets
  EXPECT_GT(steps, 10);
}

}  // namespace
}  // namespace luminal
