// GPU suites (skip without a GPU): sessions on the CUDA backend. KV-cache round trips with the
// in-place scatter and carry, buckets switching back and forth, stable buffer addresses, the
// kernel and program caches across backends, sin accuracy for rotary angles, 64-bit indexing, and
// the error paths (memory cap, a dim outside every bucket, a Gather index outside its data), and
// two sessions on one backend, each on its own stream.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "cuda/cuda_test_util.hpp"
#include "luminal/luminal.hpp"
#include "support/expect_error.hpp"

namespace luminal {
namespace {

namespace fs = std::filesystem;

CompileOptions quick() { return CompileOptions().search_graph_limit(8).verbose(false); }

// ---------------------------------------------------------------- KV cache

constexpr int kSlots = 8, kDim = 4;

struct KvModel {
  Graph g;
  Tensor x, w, idx, cache, cache_out, read;
  KvModel() {
    g.declare_dim("s", 1, kSlots);
    g.declare_dim("c", 1, kSlots);
    x = g.tensor("x", {"s", kDim});
    w = g.tensor("w", {kDim, kDim});
    idx = g.tensor("idx", {"s", kDim}, DType::I32);
    cache = g.tensor("cache", {kSlots, kDim}).persist();
    cache_out = cache.scatter_flat(idx, x.matmul(w)).output("cache_out");
    read = (cache_out.slice(0, 0, "c") * 2.0).sum(0).output("read");
    g.carry(cache_out, cache);
  }
};

std::vector<std::vector<float>> kv_steps(Runtime& rt, KvModel& m) {
  std::vector<float> w(kDim * kDim);
  for (int i = 0; i < kDim * kDim; ++i)
    w[i] = static_cast<float>(i % 3 - 1);
  rt.set(m.w, w);
  rt.set(m.cache, std::vector<float>(kSlots * kDim, 0.f));
  std::vector<std::vector<float>> out;
  int pos = 0;
  for (int step = 0; step < 6; ++step) {
    const int s = step == 0 ? 3 : 1;
    std::vector<float> x(s * kDim);
    std::vector<int32_t> idx;
    for (int i = 0; i < s * kDim; ++i)
      x[i] = static_cast<float>((step * 7 + i * 3) % 5 - 2);
    for (int r = 0; r < s; ++r)
      for (int j = 0; j < kDim; ++j)
        idx.push_back((pos + r) * kDim + j);
    rt.set(m.x, x);
    rt.set(m.idx, idx);
    pos += s;
    rt.execute({{"s", s}, {"c", pos}});
    out.push_back(rt.get<float>(m.read));
    out.push_back(rt.get<float>(m.cache_out));
  }
  return out;
}

TEST(CudaSession, KvCacheCarriedMatchesReferenceExactly) {
  LUMINAL_REQUIRE_GPU();
  KvModel m;
  m.g.set_dim("c", 1);
  Session s = compile(m.g, testing::gpu(),
                      quick().dim_buckets("s", {DimBucket(1, 1), DimBucket(2, kSlots)}));
  const std::string decode = s.llir({{"s", 1}, {"c", 1}}).to_text();
  ReferenceRuntime ref(m.g);
  auto got = kv_steps(s, m);
  auto want = kv_steps(ref, m);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_EQ(got[i], want[i]) << "step value " << i << "\ndecode program:\n" << decode;
}

// ---------------------------------------------------------------- buckets and addresses

struct Mlp {
  Graph g;
  Tensor x, w1, w2, y;
  Mlp() {
    g.declare_dim("s", 1, 64);
    x = g.tensor("x", {"s", 32});
    w1 = g.tensor("w1", {32, 64}).persist();
    w2 = g.tensor("w2", {64, 16}).persist();
    y = (x.matmul(w1).relu().matmul(w2)).softmax(-1).output("y");
  }
};

std::vector<float> random_vec(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> d(-1, 1);
  std::vector<float> v(n);
  for (float& f : v)
    f = d(rng);
  return v;
}

TEST(CudaSession, BucketsBackAndForthAndStablePointers) {
  LUMINAL_REQUIRE_GPU();
  Mlp m;
  m.g.set_dim("s", 1);
  Session s =
      compile(m.g, testing::gpu(), quick().dim_buckets("s", {DimBucket(1, 1), DimBucket(2, 64)}));
  ReferenceRuntime ref(m.g);
  for (Runtime* rt : {static_cast<Runtime*>(&s), static_cast<Runtime*>(&ref)}) {
    rt->set(m.w1, random_vec(32 * 64, 1));
    rt->set(m.w2, random_vec(64 * 16, 2));
  }
  const void* x_addr = s.buffer_address("x");
  const void* y_addr = s.buffer_address("y");
  std::map<int, std::vector<float>> first;
  for (int round = 0; round < 3; ++round) {
    for (int len : {1, 37, 1, 64, 5}) {
      std::vector<float> x = random_vec(static_cast<size_t>(len) * 32, 100 + len);
      s.set(m.x, x);
      ref.set(m.x, x);
      s.execute({{"s", len}});
      ref.execute({{"s", len}});
      std::vector<float> got = s.get<float>(m.y), want = ref.get<float>(m.y);
      ASSERT_EQ(got.size(), want.size());
      for (size_t i = 0; i < got.size(); ++i)
        ASSERT_NEAR(got[i], want[i], 1e-5) << "s=" << len << " element " << i;
      if (!first.count(len)) first[len] = got;
      EXPECT_EQ(first[len], got) << "s=" << len << ": results changed between rounds";
    }
  }
  EXPECT_EQ(s.buffer_address("x"), x_addr);
  EXPECT_EQ(s.buffer_address("y"), y_addr);
}

// ---------------------------------------------------------------- caches

TEST(CudaSession, KernelAndProgramCachesMakeTheSecondStartCompileNothing) {
  LUMINAL_REQUIRE_GPU();
  ::unsetenv("LUMINAL_CACHE");  // ctest turns the program cache off; this test is about it
  const fs::path dir =
      fs::temp_directory_path() / ("luminal_cuda_cache_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  Mlp m;
  m.g.set_dim("s", 1);
  auto opts = quick().cache_dir(dir).dim_buckets("s", {DimBucket(1, 64)});
  std::vector<float> first;
  {
    cuda::CudaBackend be(cuda::CudaOptions{0, dir / "kernels"});
    Session s = compile(m.g, be, opts);
    EXPECT_GT(be.kernel_stats().compiled, 0u);
    EXPECT_FALSE(s.reports().at(0).cached);
    s.set(m.w1, random_vec(32 * 64, 1));
    s.set(m.w2, random_vec(64 * 16, 2));
    s.set(m.x, random_vec(3 * 32, 3));
    s.execute({{"s", 3}});
    first = s.get<float>(m.y);
  }
  {
    cuda::CudaBackend be(cuda::CudaOptions{0, dir / "kernels"});
    Session s = compile(m.g, be, opts);
    EXPECT_EQ(be.kernel_stats().compiled, 0u) << "the second start compiled kernels";
    EXPECT_GT(be.kernel_stats().disk_hits, 0u);
    EXPECT_TRUE(s.reports().at(0).cached) << "the program was searched again";
    s.set(m.w1, random_vec(32 * 64, 1));
    s.set(m.w2, random_vec(64 * 16, 2));
    s.set(m.x, random_vec(3 * 32, 3));
    s.execute({{"s", 3}});
    EXPECT_EQ(s.get<float>(m.y), first);
  }
  fs::remove_all(dir);
}

// ---------------------------------------------------------------- numerics

TEST(CudaSession, SinIsAccurateForLargeAngles) {
  LUMINAL_REQUIRE_GPU();
  Graph g;
  Tensor x = g.tensor("x", {4096});
  x.sin().output("y");
  Session s = compile(g, testing::gpu(), quick());
  std::vector<float> v(4096);
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<double> d(-1e5, 1e5);
  for (float& f : v)
    f = static_cast<float>(d(rng));
  v[0] = 1e5f;
  v[1] = -99999.5f;
  s.set("x", v);
  s.execute();
  std::vector<float> y = s.get<float>("y");
  double worst = 0;
  for (size_t i = 0; i < v.size(); ++i)
    worst = std::max(worst, std::fabs(y[i] - std::sin(static_cast<double>(v[i]))));
  EXPECT_LT(worst, 2e-7) << "sin of angles up to 1e5 must be accurate (no fast math)";
}

TEST(CudaSession, TensorsPast2To31ElementsUse64BitIndexing) {
  LUMINAL_REQUIRE_GPU();
  const int64_t n = (int64_t{1} << 31) + 4099;
  Graph g;
  Tensor a = g.tensor("a", {n}, DType::I8);
  Tensor b = g.tensor("b", {n}, DType::I8);
  (a + b).output("c");
  std::vector<int8_t> va(static_cast<size_t>(n)), vb(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    va[i] = static_cast<int8_t>(i % 7);
    vb[i] = static_cast<int8_t>((i >> 20) % 5);
  }
  // Inputs bound before compile: the search runs on them (no profile data generated).
  Session s(g, testing::gpu(), quick());
  s.set("a", va);
  s.set("b", vb);
  s.compile();
  s.execute();
  std::vector<int8_t> c = s.get<int8_t>("c");
  ASSERT_EQ(static_cast<int64_t>(c.size()), n);
  for (int64_t i :
       {int64_t{0}, int64_t{1} << 30, (int64_t{1} << 31) - 1, int64_t{1} << 31, n - 2, n - 1}) {
    EXPECT_EQ(c[i], static_cast<int8_t>(i % 7 + (i >> 20) % 5)) << "element " << i;
  }
}

// ---------------------------------------------------------------- errors

TEST(CudaSession, ErrorPaths) {
  LUMINAL_REQUIRE_GPU();
  {  // the memory cap
    Graph g;
    Tensor x = g.tensor("x", {1024, 1024});
    (x * 2.0).output("y");
    testing::expect_error([&] { compile(g, testing::gpu(), quick().max_memory(1 << 20)); },
                          "max_memory");
  }
  {  // a dim outside every bucket
    Graph g;
    g.declare_dim("s", 1, 8);
    Tensor x = g.tensor("x", {"s", 4});
    (x * 2.0).output("y");
    g.set_dim("s", 1);
    Session s = compile(g, testing::gpu(), quick());
    testing::expect_error([&] { s.execute({{"s", 9}}); }, "s");
  }
  {  // a Gather index outside its data
    Graph g;
    Tensor data = g.tensor("data", {4, 8});
    Tensor idx = g.tensor("idx", {2}, DType::I32);
    data.index_select(0, idx).output("rows");
    Session s = compile(g, testing::gpu(), quick());
    s.set("data", std::vector<float>(32, 1.f));
    s.set("idx", std::vector<int32_t>{1, 7});
    s.execute();
    testing::expect_error([&] { s.get<float>("rows"); }, "Gather");
  }
}

// ---------------------------------------------------------------- queues

// The KV-cache steps of kv_steps, split so two sessions can interleave them; `salt` changes the
// weights and inputs so that work landing in the other session's buffers would show. Every value
// is a small integer: exact whatever program the search picks.
struct KvStepper {
  KvModel& m;
  int salt = 0;
  int pos = 0;
  void start(Runtime& rt) {
    std::vector<float> w(kDim * kDim);
    for (int i = 0; i < kDim * kDim; ++i)
      w[i] = static_cast<float>((i + salt) % 3 - 1);
    rt.set(m.w, w);
    rt.set(m.cache, std::vector<float>(kSlots * kDim, 0.f));
    pos = 0;
  }
  void launch(Runtime& rt, int step) {  // set and execute, nothing waited for
    const int s = step == 0 ? 3 : 1;
    std::vector<float> x(s * kDim);
    std::vector<int32_t> idx;
    for (int i = 0; i < s * kDim; ++i)
      x[i] = static_cast<float>((step * 7 + i * 3 + salt) % 5 - 2);
    for (int r = 0; r < s; ++r)
      for (int j = 0; j < kDim; ++j)
        idx.push_back((pos + r) * kDim + j);
    rt.set(m.x, x);
    rt.set(m.idx, idx);
    pos += s;
    rt.execute({{"s", s}, {"c", pos}});
  }
  void read(Runtime& rt, std::vector<std::vector<float>>& out) {
    out.push_back(rt.get<float>(m.read));
    out.push_back(rt.get<float>(m.cache_out));
  }
};

TEST(CudaSession, TwoSessionsOnOneBackendInterleavedMatchEachAlone) {
  LUMINAL_REQUIRE_GPU();
  cuda::CudaBackend& be = testing::gpu();
  KvModel m;
  m.g.set_dim("c", 1);
  const CompileOptions opts = quick().dim_buckets("s", {DimBucket(1, 1), DimBucket(2, kSlots)});
  constexpr int kSteps = 6;
  std::vector<std::vector<float>> alone[2], together[2];
  for (int k = 0; k < 2; ++k) {
    Session s = compile(m.g, be, opts);
    KvStepper st{m, k + 1};
    st.start(s);
    for (int step = 0; step < kSteps; ++step) {
      st.launch(s, step);
      st.read(s, alone[k]);
    }
  }
  ASSERT_NE(alone[0], alone[1]) << "the salts should give the sessions different values";
  Session a = compile(m.g, be, opts);
  Session b = compile(m.g, be, opts);
  ASSERT_NE(a.queue(), nullptr);
  ASSERT_NE(b.queue(), nullptr);
  EXPECT_NE(be.stream(a.queue()), be.stream(b.queue()));
  EXPECT_NE(be.stream(a.queue()), be.stream());
  EXPECT_NE(be.stream(b.queue()), be.stream());
  KvStepper sa{m, 1}, sb{m, 2};
  sa.start(a);
  sb.start(b);
  for (int step = 0; step < kSteps; ++step) {
    // Both sessions have work in flight before either waits.
    sa.launch(a, step);
    sb.launch(b, step);
    if (step % 2 == 0) {
      sa.read(a, together[0]);
      sb.read(b, together[1]);
    } else {
      sb.read(b, together[1]);
      sa.read(a, together[0]);
    }
  }
  for (int k = 0; k < 2; ++k) {
    ASSERT_EQ(together[k].size(), alone[k].size());
    for (size_t i = 0; i < alone[k].size(); ++i)
      EXPECT_EQ(together[k][i], alone[k][i]) << "session " << k << ", value " << i;
  }
}

TEST(CudaSession, AGatherErrorIsReportedOnTheSessionThatHadIt) {
  LUMINAL_REQUIRE_GPU();
  Graph g;
  Tensor data = g.tensor("data", {4, 8});
  Tensor idx = g.tensor("idx", {2}, DType::I32);
  data.index_select(0, idx).output("rows");
  Session bad = compile(g, testing::gpu(), quick());
  Session good = compile(g, testing::gpu(), quick());
  for (Session* s : {&bad, &good})
    s->set("data", std::vector<float>(32, 1.f));
  bad.set("idx", std::vector<int32_t>{1, 7});
  good.set("idx", std::vector<int32_t>{1, 3});
  bad.execute();
  good.execute();
  EXPECT_EQ(good.get<float>("rows"), std::vector<float>(16, 1.f));
  testing::expect_error([&] { bad.get<float>("rows"); }, "Gather");
  // The word was cleared: the session works again with valid indexes.
  bad.set("idx", std::vector<int32_t>{0, 2});
  bad.execute();
  EXPECT_EQ(bad.get<float>("rows"), std::vector<float>(16, 1.f));
}

}  // namespace
}  // namespace luminal
