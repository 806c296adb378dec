// distinct_over: every proof checked by evaluating the expression at every position; the
// scatter indexes that concat and pad write (transposed destinations too) are proven, and
// overlapping or wrapping layouts are not.
#include <gtest/gtest.h>

#include <cstdint>
#include <numeric>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "luminal/core/expr.hpp"
#include "luminal/core/expr_distinct.hpp"
#include "luminal/ir/prim.hpp"

namespace {

using luminal::distinct_over;
using luminal::DynMap;
using luminal::Expr;
using luminal::Shape;

const Expr z = Expr::z();

// Whether e takes len distinct values over z in [0, len), by evaluation.
bool distinct_by_eval(const Expr& e, int64_t len, const DynMap& dyn = {}) {
  std::set<int64_t> seen;
  for (int64_t i = 0; i < len; ++i)
    if (!seen.insert(e.eval(dyn, i)).second) return false;
  return true;
}

// The destination offset of source element z when a tensor of shape `src` is written into one
// of shape `dst`, source axis k going to destination axis perm[k] at offset off[k] (what
// prim::scatter_by_map builds for concat and pad, with a transpose).
Expr placement(const Shape& src, const Shape& dst, const std::vector<int>& perm,
               const std::vector<Expr>& off) {
  const std::vector<Expr> idx = luminal::prim::unflatten_index(z, src);
  const std::vector<Expr> stride = luminal::prim::row_major_products(dst);
  Expr flat = 0;
  for (size_t k = 0; k < src.size(); ++k)
    flat = flat + stride[perm[k]] * (idx[k] + off[k]);
  return flat;
}

TEST(ExprDistinct, Linear) {
  EXPECT_TRUE(distinct_over(z, "z", 100));
  EXPECT_TRUE(distinct_over(z * 3 + 5, "z", 100));
  EXPECT_TRUE(distinct_over(z * -2 + Expr::var("s"), "z", 100));
  EXPECT_FALSE(distinct_over(Expr(7), "z", 2));
  EXPECT_TRUE(distinct_over(Expr(7), "z", 1));  // one position
  const Expr s = Expr::var("s"), p = Expr::var("p");
  EXPECT_FALSE(distinct_over(z * p, "z", 4));            // p may be 0: every position gives 0
  EXPECT_TRUE(distinct_over(z * s, "z", s * 4));         // s = 0 leaves no positions
  EXPECT_FALSE(distinct_over(z * (s - 1), "z", s * 4));  // s - 1 may be 0
  EXPECT_FALSE(distinct_over(z % 4 + (p + 3) * (z / 4), "z", 8));  // p = 0: 3 at z = 3 and 4
  EXPECT_TRUE(distinct_over(z % 4 + (p + 4) * (z / 4), "z", 8));
}

TEST(ExprDistinct, ConcatOfAKvCacheRow) {
  // The torch frontend's decode: cat([cache (1, 4, 1024, 64), new row (1, 4, 1, 64)], 2).
  const Shape cache{1, 4, 1024, 64}, row{1, 4, 1, 64}, out{1, 4, 1025, 64};
  const Expr a = placement(cache, out, {0, 1, 2, 3}, {0, 0, 0, 0});
  const Expr b = placement(row, out, {0, 1, 2, 3}, {0, 0, 1024, 0});
  EXPECT_TRUE(distinct_over(a, "z", 4 * 1024 * 64)) << a;
  EXPECT_TRUE(distinct_over(b, "z", 4 * 64)) << b;
  EXPECT_TRUE(distinct_by_eval(a, 4 * 1024 * 64));
}

TEST(ExprDistinct, DynamicShapes) {
  const Expr s = Expr::var("s");
  // cat([cache (1, 4, s, 64), row (1, 4, 1, 64)], 2) and pad of (s, 3) to (s, 5) at column 2
  const Expr a = placement({1, 4, s, 64}, {1, 4, s + 1, 64}, {0, 1, 2, 3}, {0, 0, 0, 0});
  const Expr b = placement({1, 4, 1, 64}, {1, 4, s + 1, 64}, {0, 1, 2, 3}, {0, 0, s, 0});
  const Expr c = placement({s, 3}, {s, 5}, {0, 1}, {0, 2});
  EXPECT_TRUE(distinct_over(a, "z", s * 256)) << a;
  EXPECT_TRUE(distinct_over(b, "z", 256)) << b;
  EXPECT_TRUE(distinct_over(c, "z", s * 3)) << c;
  for (int64_t sv : {1, 2, 3, 7}) {
    const DynMap dyn{{"s", sv}};
    EXPECT_TRUE(distinct_by_eval(a, sv * 256, dyn));
    EXPECT_TRUE(distinct_by_eval(c, sv * 3, dyn));
  }
}

TEST(ExprDistinct, OverlapsAndWrapsAreNotProven) {
  EXPECT_FALSE(distinct_over(z % 64, "z", 128));  // wraps
  EXPECT_TRUE(distinct_over(z % 64, "z", 64));
  EXPECT_FALSE(distinct_over(z % 64 + (z / 64) * 32, "z", 256));   // rows overlap
  EXPECT_FALSE(distinct_over(z % 64 + (z / 128) * 64, "z", 256));  // a digit missing
  EXPECT_FALSE(distinct_over((z / 64) % 4 + z % 64, "z", 256));    // 2 digits, 1 coefficient
  EXPECT_FALSE(distinct_over(z % 64 - (z / 64) * 64, "z", 256));   // a negative coefficient
  EXPECT_FALSE(distinct_by_eval(z % 64 + (z / 64) * 32, 256));
}

// Random placements of random shapes (transposed, offset, into larger destinations): every one
// proven; then each with one destination stride shrunk or one modulo changed: whatever is
// proven is distinct by evaluation, and some are (the check can fail).
TEST(ExprDistinct, RandomPlacementsAgreeWithEvaluation) {
  std::mt19937 rng(7);
  auto pick = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  int proven_broken = 0, unproven_broken = 0;
  for (int trial = 0; trial < 400; ++trial) {
    const int rank = pick(1, 4);
    Shape src, dst(rank);
    std::vector<int> perm(rank);
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng);
    std::vector<Expr> off;
    for (int k = 0; k < rank; ++k) {
      const int n = pick(1, 5), o = pick(0, 3);
      src.push_back(n);
      off.push_back(o);
      dst[perm[k]] = n + o + pick(0, 2);
    }
    const int64_t len = luminal::numel(src).as_const();
    const Expr e = placement(src, dst, perm, off);
    ASSERT_TRUE(distinct_over(e, "z", len)) << e << " over " << len;
    ASSERT_TRUE(distinct_by_eval(e, len)) << e;
    // A broken one: a smaller destination stride (rows may overlap).
    std::vector<Expr> stride = luminal::prim::row_major_products(dst);
    const std::vector<Expr> idx = luminal::prim::unflatten_index(z, src);
    const int k = pick(0, rank - 1);
    Expr broken = 0;
    for (int j = 0; j < rank; ++j) {
      Expr st = stride[perm[j]];
      if (j == k) st = Expr(std::max<int64_t>(1, st.as_const() / 2));
      broken = broken + st * (idx[j] + off[j]);
    }
    const bool truth = distinct_by_eval(broken, len);
    if (distinct_over(broken, "z", len)) {
      ASSERT_TRUE(truth) << broken << " proven distinct but repeats over " << len;
      proven_broken += 1;
    } else {
      unproven_broken += !truth;
    }
  }
  EXPECT_GT(proven_broken, 0);    // halving a stride can keep it distinct
  EXPECT_GT(unproven_broken, 0);  // and often does not
}

}  // namespace
