// Dynamic-dim buckets: dispatch, equality with unbucketed plans, stability across switches, errors.
#include <gtest/gtest.h>

#include <cmath>

#include "luminal/cpu/cpu_backend.hpp"
#include "luminal/runtime/session.hpp"
#include "support/expect_error.hpp"

namespace luminal {
namespace {

using testing::expect_error;

// softmax(x @ w + b) over a dynamic number of rows s.
struct Model {
  Graph g;
  Tensor x, w, b, y;
  Model() {
    g.declare_dim("s", 1, 64);
    x = g.tensor("x", {"s", 8});
    w = g.tensor("w", {8, 6});
    b = g.tensor("b", {6});
    y = (x.matmul(w) + b).softmax(1).output("y");
  }
};

std::vector<float> xs(int s) {
  std::vector<float> v(s * 8);
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = std::sin(0.37f * static_cast<float>(i));
  return v;
}

void set_weights(Runtime& rt, Model& m) {
  std::vector<float> w(48), b(6);
  for (size_t i = 0; i < w.size(); ++i)
    w[i] = std::cos(0.11f * static_cast<float>(i));
  for (size_t i = 0; i < b.size(); ++i)
    b[i] = 0.1f * static_cast<float>(i);
  rt.set(m.w, w);
  rt.set(m.b, b);
}

std::vector<float> run(Runtime& rt, Model& m, int s) {
  rt.set(m.x, xs(s));
  rt.execute({{"s", s}});
  return rt.get<float>(m.y);
}

CompileOptions quiet() { return CompileOptions().search_graph_limit(4).verbose(false).seed(3); }

TEST(Buckets, DispatchMatchesReferenceAtSeveralValues) {
  Model m;
  m.g.set_dim("s", 1);
  cpu::CpuBackend cpu(1);
  Session c = compile(
      m.g, cpu, quiet().dim_buckets("s", {DimBucket(1, 1), DimBucket(2, 64).representative(16)}));
  EXPECT_EQ(c.reports().size(), 2u);
  ReferenceRuntime ref(m.g);
  set_weights(c, m);
  set_weights(ref, m);
  for (int s : {1, 2, 3, 16, 17, 64}) {
    auto got = run(c, m, s);
    auto want = run(ref, m, s);
    ASSERT_EQ(got.size(), want.size()) << "s=" << s;
    for (size_t i = 0; i < got.size(); ++i)
      EXPECT_NEAR(got[i], want[i], 1e-5) << "s=" << s << " i=" << i;
    EXPECT_EQ(c.shape(m.y), (std::vector<int64_t>{s, 6}));
  }
}

TEST(Buckets, BucketedEqualsUnbucketed) {
  Model m;
  m.g.set_dim("s", 5);
  cpu::CpuBackend cpu(1);
  Session bucketed =
      compile(m.g, cpu, quiet().dim_buckets("s", {DimBucket(1, 1), DimBucket(2, 64)}));
  Session plain = compile(m.g, cpu, quiet());
  set_weights(bucketed, m);
  set_weights(plain, m);
  for (int s : {1, 5, 33}) {
    auto a = run(bucketed, m, s);
    auto b = run(plain, m, s);
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i)
      EXPECT_NEAR(a[i], b[i], 1e-6) << "s=" << s;
  }
}

TEST(Buckets, SwitchingBucketsKeepsResultsIdentical) {
  Model m;
  m.g.set_dim("s", 1);
  cpu::CpuBackend cpu(1);
  Session c = compile(m.g, cpu, quiet().dim_buckets("s", {DimBucket(1, 1), DimBucket(2, 8)}));
  set_weights(c, m);
  auto first = run(c, m, 1);
  auto three = run(c, m, 3);
  auto again = run(c, m, 1);
  EXPECT_EQ(three.size(), 18u);
  EXPECT_EQ(first, again);  // bit-identical
}

TEST(Buckets, ValueOutsideEveryBucketIsAnError) {
  Model m;
  m.g.set_dim("s", 1);
  cpu::CpuBackend cpu(1);
  Session c = compile(m.g, cpu, quiet().dim_buckets("s", {DimBucket(1, 1), DimBucket(4, 8)}));
  set_weights(c, m);
  c.set(m.x, xs(3));
  expect_error(
      [&] {
        c.execute({{"s", 3}});
      },
      {"no bucket matches", "s=3", "[1, 1] (rep 1)", "[4, 8] (rep 6)", "dim_buckets"});
}

TEST(Buckets, UnknownDimInBucketsIsAnError) {
  Model m;
  m.g.set_dim("s", 1);
  cpu::CpuBackend cpu(1);
  expect_error([&] { compile(m.g, cpu, quiet().dim_buckets("t", {DimBucket(1, 4)})); },
               {"dim_buckets(\"t\")", "no dynamic dimension 't'"});
}

TEST(Buckets, RepresentativeIsWhereTheSearchRuns) {
  Model m;
  cpu::CpuBackend cpu(1);
  // No set_dim: the search can only run at the representatives.
  Session c = compile(
      m.g, cpu, quiet().dim_buckets("s", {DimBucket(1, 1), DimBucket(2, 40).representative(7)}));
  ASSERT_EQ(c.reports().size(), 2u);
  EXPECT_NE(c.reports()[1].bucket.find("[2, 40] (rep 7)"), std::string::npos);
  set_weights(c, m);
  EXPECT_EQ(run(c, m, 40).size(), 240u);
}

TEST(Buckets, MaxMemoryMustHoldAtTheLargestValueOfABucket) {
  Model m;
  cpu::CpuBackend cpu(1);
  // The session's buffers are sized at s = 64: x (2048 bytes), w, b and y (1536). Room for them
  // but not for the arena at s = 64, though the arena at the representative (s = 2) would fit:
  // every candidate is rejected, naming both sizes.
  const uint64_t buffers = 64 * 8 * 4 + 48 * 4 + 6 * 4 + 64 * 6 * 4;
  expect_error(
      [&] {
        compile(m.g, cpu,
                quiet()
                    .max_memory(buffers + 1024)
                    .dim_buckets("s", {DimBucket(2, 64).representative(2)}));
      },
      {"rejected",
       "working memory) but max_memory is 0 MiB (" + std::to_string(buffers + 1024) + " bytes)"});
  // Buffers alone over the limit: an error when the session is made, with both sizes.
  expect_error([&] { Session s(m.g, cpu, quiet().max_memory(1024)); },
               {"buffers need", "(" + std::to_string(buffers) + " bytes)", "(1024 bytes)"});
}

TEST(Buckets, DimWithoutRangeOrBucketIsAnError) {
  Graph g;
  Tensor x = g.tensor("x", {"t", 4});
  (x * 2.0).output("y");
  g.set_dim("t", 3);
  cpu::CpuBackend cpu(1);
  expect_error([&] { compile(g, cpu, quiet()); },
               {"'t'", "no range", "declare_dim(\"t\"", "dim_buckets"});
}

}  // namespace
}  // namespace luminal
