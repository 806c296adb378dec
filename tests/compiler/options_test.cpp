// CompileOptions and DimBucket: defaults, validation, overlap errors, representatives.
#include <gtest/gtest.h>

#include "luminal/compiler/options.hpp"
#include "support/expect_error.hpp"

namespace luminal {
namespace {

using testing::expect_error;

TEST(DimBucket, RepresentativeDefaultsToMidpoint) {
  EXPECT_EQ(DimBucket(1, 1).rep(), 1);
  EXPECT_EQ(DimBucket(2, 512).rep(), 257);
  EXPECT_EQ(DimBucket(2, 5).rep(), 3);  // (2+5)/2 rounded down
  EXPECT_EQ(DimBucket(2, 512).representative(16).rep(), 16);
  EXPECT_TRUE(DimBucket(2, 512).contains(2));
  EXPECT_TRUE(DimBucket(2, 512).contains(512));
  EXPECT_FALSE(DimBucket(2, 512).contains(513));
  EXPECT_EQ(DimBucket(2, 512).representative(16).to_string(), "[2, 512] (rep 16)");
}

TEST(DimBucket, RejectsBadRanges) {
  expect_error([] { DimBucket(5, 2); }, {"DimBucket(5, 2)", "min <= max"});
  expect_error([] { DimBucket(-1, 2); }, "0 <= min");
  expect_error([] { DimBucket(2, 8).representative(9); }, {"representative 9", "outside"});
}

TEST(CompileOptions, Defaults) {
  CompileOptions o;
  EXPECT_EQ(o.search_graph_limit(), 100);
  EXPECT_EQ(o.trials(), 3);
  EXPECT_EQ(o.keep_best(), 1);
  EXPECT_EQ(o.generation_size(), 10);
  EXPECT_EQ(o.mutations(), 10);
  EXPECT_FALSE(o.time_budget().has_value());
  EXPECT_DOUBLE_EQ(o.profile_timeout(), 1.0);
  EXPECT_FALSE(o.max_memory().has_value());
  EXPECT_TRUE(o.dim_buckets().empty());
}

TEST(CompileOptions, BuilderChains) {
  auto o =
      CompileOptions().search_graph_limit(5).trials(2).seed(9).time_budget(1.5).max_memory_mib(3);
  EXPECT_EQ(o.search_graph_limit(), 5);
  EXPECT_EQ(o.trials(), 2);
  EXPECT_EQ(o.seed(), 9u);
  EXPECT_DOUBLE_EQ(*o.time_budget(), 1.5);
  EXPECT_EQ(*o.max_memory(), 3u << 20);
  expect_error([] { CompileOptions().trials(0); }, "trials must be at least 1");
  expect_error([] { CompileOptions().time_budget(0); }, "time_budget must be positive");
}

TEST(CompileOptions, OverlappingBucketsRejected) {
  expect_error(
      [] {
        CompileOptions().dim_buckets("s", {DimBucket(1, 8), DimBucket(8, 16)});
      },
      {"overlapping", "[1, 8]", "[8, 16]"});
  expect_error(
      [] {
        CompileOptions().dim_buckets("s", {DimBucket(4, 16), DimBucket(1, 5)});
      },
      "overlapping");
  expect_error([] { CompileOptions().dim_buckets("s", {}); }, "at least one bucket");
  auto o =
      CompileOptions().dim_buckets("s", {DimBucket(1, 1), DimBucket(2, 512).representative(16)});
  ASSERT_EQ(o.dim_buckets().at("s").size(), 2u);
  EXPECT_EQ(o.dim_buckets().at("s")[1].rep(), 16);
}

}  // namespace
}  // namespace luminal
