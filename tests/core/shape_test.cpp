#include <gtest/gtest.h>

#include "luminal/core/error.hpp"
#include "luminal/core/shape.hpp"

namespace luminal {
namespace {

Expr s() { return Expr::var("s"); }

// Offsets of every logical index of a view with constant dims, row-major.
std::vector<int64_t> offsets(const View& v, const DynMap& dyn = {}) {
  std::vector<int64_t> dims = eval_shape(v.dims, dyn);
  int64_t n = 1;
  for (int64_t d : dims)
    n *= d;
  std::vector<int64_t> out;
  std::vector<int64_t> idx(dims.size(), 0);
  for (int64_t f = 0; f < n; ++f) {
    int64_t off = 0;
    for (size_t k = 0; k < dims.size(); ++k)
      off += v.strides[k].eval(dyn, idx[k]);
    out.push_back(off);
    for (size_t k = dims.size(); k-- > 0;) {
      if (++idx[k] < dims[k]) break;
      idx[k] = 0;
    }
  }
  return out;
}

TEST(View, ContiguousStrides) {
  View v = View::contiguous({2, 3, 4});
  EXPECT_EQ(v.strides[0], 12 * Expr::z());
  EXPECT_EQ(v.strides[1], 4 * Expr::z());
  EXPECT_EQ(v.strides[2], Expr::z());
  EXPECT_TRUE(v.is_contiguous());
  EXPECT_EQ(v.numel(), Expr(24));
  View d = View::contiguous({s(), 4096});
  EXPECT_EQ(d.strides[0], 4096 * Expr::z());
  EXPECT_EQ(d.numel(), 4096 * s());
}

TEST(View, PermuteAndTranspose) {
  View v = View::contiguous({2, 3}).permute({1, 0});
  EXPECT_FALSE(v.is_contiguous());
  EXPECT_EQ(offsets(v), (std::vector<int64_t>{0, 3, 1, 4, 2, 5}));
  EXPECT_THROW(View::contiguous({2, 3}).permute({0, 0}), Error);
  EXPECT_THROW(View::contiguous({2, 3}).permute({0}), Error);
}

TEST(View, ExpandBroadcastRepeat) {
  View v = View::contiguous({3}).expand(0, 2);
  EXPECT_EQ(offsets(v), (std::vector<int64_t>{0, 1, 2, 0, 1, 2}));
  View b = View::contiguous({2, 1}).broadcast_axis(1, 3);
  EXPECT_EQ(offsets(b), (std::vector<int64_t>{0, 0, 0, 1, 1, 1}));
  EXPECT_THROW(View::contiguous({2, 2}).broadcast_axis(1, 3), Error);
  View r = View::contiguous({2}).repeat(0, 3);
  EXPECT_EQ(offsets(r), (std::vector<int64_t>{0, 1, 0, 1, 0, 1}));
}

TEST(View, SqueezeUnsqueeze) {
  View v = View::contiguous({2, 3}).unsqueeze(1);
  EXPECT_EQ(v.rank(), 3);
  EXPECT_EQ(v.dims[1], Expr(1));
  EXPECT_EQ(v.squeeze(1), View::contiguous({2, 3}));
  EXPECT_THROW(View::contiguous({2, 3}).squeeze(0), Error);
  EXPECT_THROW(View::contiguous({2, 3}).unsqueeze(4), Error);
}

TEST(View, MergeOfContiguousStaysLinear) {
  View v = View::contiguous({s(), 32, 128}).merge(1);
  EXPECT_EQ(v.dims[1], Expr(4096));
  EXPECT_EQ(v.strides[1], Expr::z());
  EXPECT_TRUE(v.is_contiguous());
}

TEST(View, MergeOfPermutedIsExact) {
  View p = View::contiguous({2, 3, 4}).permute({2, 0, 1});  // [4, 2, 3]
  View m = p.merge(1);                                      // [4, 6]
  std::vector<int64_t> want = offsets(p);
  EXPECT_EQ(offsets(m), want);
  View all = m.merge(0);
  EXPECT_EQ(offsets(all), want);
}

TEST(View, SplitLinearAndMerged) {
  View v = View::contiguous({12}).split(0, 4).value();
  EXPECT_EQ(v.dims, (Shape{3, 4}));
  EXPECT_TRUE(v.is_contiguous());
  View p = View::contiguous({2, 3}).permute({1, 0}).merge(0);  // [6], nonlinear
  auto back = p.split(0, 2);
  ASSERT_TRUE(back.has_value());
  EXPECT_EQ(offsets(*back), offsets(p));
  EXPECT_FALSE(p.split(0, 3).has_value());  // crosses the merge boundary: needs a copy
}

TEST(View, ReshapeContiguousAndPermuted) {
  View v = View::contiguous({s(), 32, 128});
  View r = v.reshape({s(), 4096}).value();
  EXPECT_EQ(r, View::contiguous({s(), 4096}));
  // Transposed then reshaped by splitting/merging within one axis is still a view.
  View t = View::contiguous({4, 6}).permute({1, 0});  // [6, 4]
  View u = t.reshape({2, 3, 4}).value();
  EXPECT_EQ(offsets(u), offsets(t));
  // Merging across transposed axes is a view too (via z/ and z%).
  View m = t.reshape({24}).value();
  EXPECT_EQ(offsets(m), offsets(t));
  // Size-1 axes come and go.
  View o = t.reshape({6, 1, 4}).value();
  EXPECT_EQ(offsets(o), offsets(t));
}

TEST(View, ReshapeNeedingCopyReportsNothing) {
  View t = View::contiguous({4, 6}).permute({1, 0});  // [6, 4]
  EXPECT_FALSE(t.reshape({4, 6}).has_value());
}

TEST(View, ShrinkAndStrideBy) {
  View v = View::contiguous({10}).stride_by(0, 3);
  EXPECT_EQ(v.dims[0], Expr(4));
  EXPECT_EQ(offsets(v), (std::vector<int64_t>{0, 3, 6, 9}));
  View w = View::contiguous({4, 5}).shrink(1, 2);
  EXPECT_EQ(offsets(w), (std::vector<int64_t>{0, 1, 5, 6, 10, 11, 15, 16}));
}

TEST(View, DynamicDimsEvaluate) {
  View v = View::contiguous({s(), 3}).permute({1, 0});
  EXPECT_EQ(offsets(v, {{"s", 2}}), (std::vector<int64_t>{0, 3, 1, 4, 2, 5}));
  EXPECT_EQ(v.offset({Expr(1), Expr(1)}).eval({{"s", 2}}), 4);
}

TEST(Shape, ErrorsNameTheProblem) {
  try {
    normalize_axis(3, 2, "sum");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("sum: axis 3"), std::string::npos) << e.what();
  }
  EXPECT_EQ(normalize_axis(-1, 3, "x"), 2);
  EXPECT_EQ(shape_to_string({s(), 4}), "[s, 4]");
  try {
    eval_shape({s()}, {});
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'s'"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace luminal
