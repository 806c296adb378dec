// split_for_linear_strides: a matmul domain's axes split where a merged broadcast axis made a
// stride non-linear (grouped-query attention's repeated k/v heads), and left alone otherwise.
#include "luminal/kernels/split_axes.hpp"

#include <gtest/gtest.h>

namespace luminal {
namespace {

const Expr z = Expr::z();

// q [12, 1, 64] against k [4, 1024, 64] repeated to 12 heads (k's head h / 3), over the domain
// [12 heads, 1 query, 1024 keys, 64] reduced along the last axis.
TEST(SplitAxes, RepeatedHeadsSplitIntoKvHeadsAndGroups) {
  View q{{12, 1, 1024, 64}, {64 * z, 64 * z, Expr(0), z}};
  View k{{12, 1, 1024, 64}, {65536 * (z / 3), Expr(0), 64 * z, z}};
  std::optional<SplitDomain> d = split_for_linear_strides(q, k, 3);
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->axis, 4);
  EXPECT_EQ(d->a.dims, (Shape{4, 3, 1, 1024, 64}));
  EXPECT_EQ(d->b.dims, (Shape{4, 3, 1, 1024, 64}));
  EXPECT_EQ(d->a.strides, (std::vector<Expr>{192 * z, 64 * z, 64 * z, Expr(0), z}));
  EXPECT_EQ(d->b.strides, (std::vector<Expr>{65536 * z, Expr(0), Expr(0), 64 * z, z}));
}

TEST(SplitAxes, NothingToSplitOrNoSplitThatHelps) {
  // Linear already.
  View a{{12, 64}, {64 * z, z}}, b{{12, 64}, {Expr(0), z}};
  EXPECT_FALSE(split_for_linear_strides(a, b, 1).has_value());
  // Only the reduced axis is not linear (o_proj reading heads [h, s, d] as [s, h*d]): left to
  // the packed copy.
  View heads{{5, 64}, {16 * z, 80 * (z / 16) + z % 16}}, w{{5, 64}, {Expr(0), z}};
  EXPECT_FALSE(split_for_linear_strides(heads, w, 1).has_value());
  // 10 is not a multiple of 3.
  View odd{{10, 8}, {8 * (z / 3), z}}, w2{{10, 8}, {Expr(0), z}};
  EXPECT_FALSE(split_for_linear_strides(odd, w2, 1).has_value());
  // A stride no split makes linear (z*z is not).
  View sq{{4, 8}, {z * z, z}}, w3{{4, 8}, {Expr(0), z}};
  EXPECT_FALSE(split_for_linear_strides(sq, w3, 1).has_value());
}

}  // namespace
}  // namespace luminal
