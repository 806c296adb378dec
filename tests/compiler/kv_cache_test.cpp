// KV-cache round trip: a cache written by scatter and read back, carried across runs (in place or
// handed off), matches the reference exactly over several steps.
#include <gtest/gtest.h>

#include "luminal/cpu/cpu_backend.hpp"
#include "luminal/runtime/session.hpp"
#include "support/delegating_backend.hpp"
#include "support/expect_error.hpp"

namespace luminal {
namespace {

constexpr int kSlots = 8, kDim = 4;

struct Model {
  Graph g;
  Tensor x, w, idx, cache, cache_out, read;
  explicit Model(bool carry) {
    g.declare_dim("s", 1, kSlots);
    g.declare_dim("c", 1, kSlots);
    x = g.tensor("x", {"s", kDim});
    w = g.tensor("w", {kDim, kDim});
    idx = g.tensor("idx", {"s", kDim}, DType::I32);
    cache = g.tensor("cache", {kSlots, kDim}).persist();
    cache_out = cache.scatter_flat(idx, x.matmul(w)).output("cache_out");
    read = (cache_out.slice(0, 0, "c") * 2.0).sum(0).output("read");
    if (carry) g.carry(cache_out, cache);
  }
};

// Small integers: every product and sum is exact in f32.
std::vector<float> tokens(int step, int s) {
  std::vector<float> v(s * kDim);
  for (int i = 0; i < s * kDim; ++i)
    v[i] = static_cast<float>((step * 7 + i * 3) % 5 - 2);
  return v;
}
std::vector<int32_t> slots(int start, int s) {
  std::vector<int32_t> v;
  for (int r = 0; r < s; ++r)
    for (int j = 0; j < kDim; ++j)
      v.push_back((start + r) * kDim + j);
  return v;
}

// Prefill 3 tokens, then decode 4 one at a time; returns "read" and the cache after each step.
std::vector<std::vector<float>> run_steps(Runtime& rt, Model& m, bool manual_hand_off) {
  std::vector<float> w(kDim * kDim);
  for (int i = 0; i < kDim * kDim; ++i)
    w[i] = static_cast<float>(i % 3 - 1);
  rt.set(m.w, w);
  rt.set(m.cache, std::vector<float>(kSlots * kDim, 0.f));
  std::vector<std::vector<float>> out;
  int pos = 0;
  for (int step = 0; step < 5; ++step) {
    int s = step == 0 ? 3 : 1;
    rt.set(m.x, tokens(step, s));
    rt.set(m.idx, slots(pos, s));
    pos += s;
    rt.execute({{"s", s}, {"c", pos}});
    out.push_back(rt.get<float>(m.read));
    out.push_back(rt.get<float>(m.cache_out));
    if (manual_hand_off) rt.hand_off(m.cache_out, m.cache);
  }
  return out;
}

// Prefers programs that update the cache in place (fake timing), so the test covers that path.
class PreferInPlace : public testing::CpuDelegate {
 public:
  std::string name() const override { return "prefer-in-place"; }
  std::unique_ptr<Plan> load(const LlirGraph& g, const PlanSpec& spec) override {
    auto p = cpu.load(g, spec);
    seconds[p.get()] = g.to_text().find("cpu.ScatterInPlace") != std::string::npos ? 1e-3 : 2e-3;
    return p;
  }
  double time(Plan& plan, int parity, const int64_t* dims, int, double) override {
    plan.execute(parity, dims);
    return seconds.at(&plan);
  }
  std::map<const Plan*, double> seconds;
};

CompileOptions opts() {
  return CompileOptions().search_graph_limit(40).verbose(false).dim_buckets(
      "s", {DimBucket(1, 1), DimBucket(2, kSlots)});
}

TEST(KvCache, CarriedInPlaceMatchesReferenceExactly) {
  Model m(true);
  m.g.set_dim("c", 1);
  PreferInPlace backend;
  Session c = compile(m.g, backend, opts());
  // The decode bucket updates the cache in place.
  EXPECT_NE(c.llir({{"s", 1}, {"c", 1}}).to_text().find("cpu.ScatterInPlace"), std::string::npos)
      << c.llir({{"s", 1}, {"c", 1}}).to_text();
  ReferenceRuntime ref(m.g);
  auto got = run_steps(c, m, false);
  auto want = run_steps(ref, m, false);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_EQ(got[i], want[i]) << "step value " << i;
}

TEST(KvCache, ManualHandOffMatchesReferenceExactly) {
  Model m(false);
  m.g.set_dim("c", 1);
  PreferInPlace backend;
  Session c = compile(m.g, backend, opts());
  // Without carry(), the input may not be overwritten: no in-place update of the cache input.
  EXPECT_EQ(c.llir({{"s", 1}, {"c", 1}}).to_text().find("cpu.ScatterInPlace"), std::string::npos);
  ReferenceRuntime ref(m.g);
  auto got = run_steps(c, m, true);
  auto want = run_steps(ref, m, true);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_EQ(got[i], want[i]) << "step value " << i;
}

// A carried cache bound to the caller's memory (bind_external: a torch tensor the
// torch.compile backend updates) is the state itself: the program writes it in place there, and
// after every step that memory holds the reference's cache; the binding never moves and the cache
// is never uploaded. (Session.CarriedStateBoundExternally covers a state not written in place.)
TEST(KvCache, CarriedCacheBoundExternallyIsUpdatedInTheCallersMemory) {
  {
    Model m(true);
    m.g.set_dim("c", 1);
    PreferInPlace backend;
    Session c = compile(m.g, backend, opts());
    const std::string decode = c.llir({{"s", 1}, {"c", 1}}).to_text();
    EXPECT_NE(decode.find("cpu.ScatterInPlace"), std::string::npos) << decode;
    ReferenceRuntime ref(m.g);
    std::vector<float> w(kDim * kDim);
    for (int i = 0; i < kDim * kDim; ++i)
      w[i] = static_cast<float>(i % 3 - 1);
    c.set(m.w, w);
    ref.set(m.w, w);
    ref.set(m.cache, std::vector<float>(kSlots * kDim, 0.f));
    alignas(64) float mem[kSlots * kDim] = {};
    c.bind_external("cache", mem, sizeof mem);
    const uint64_t uploaded = c.stats().bytes_uploaded;
    int pos = 0;
    for (int step = 0; step < 5; ++step) {
      const int s = step == 0 ? 3 : 1;
      for (Runtime* rt : {static_cast<Runtime*>(&c), static_cast<Runtime*>(&ref)}) {
        rt->set(m.x, tokens(step, s));
        rt->set(m.idx, slots(pos, s));
        rt->execute({{"s", s}, {"c", pos + s}});
      }
      pos += s;
      c.sync();
      EXPECT_EQ(std::vector<float>(mem, mem + kSlots * kDim), ref.get<float>(m.cache_out))
          << "step " << step;
      EXPECT_EQ(c.get<float>(m.read), ref.get<float>(m.read)) << "step " << step;
      EXPECT_EQ(c.buffer_address("cache"), static_cast<const void*>(mem));
    }
    // Only x and idx were uploaded.
    EXPECT_EQ(c.stats().bytes_uploaded - uploaded,
              static_cast<uint64_t>((3 + 4) * kDim * (sizeof(float) + sizeof(int32_t))));
  }
}

TEST(KvCache, HandOffChecksShapes) {
  Model m(false);
  m.g.set_dim("c", 1);
  m.g.set_dim("s", 1);
  ReferenceRuntime ref(m.g);
  testing::expect_error([&] { ref.hand_off(m.read, m.cache); },
                        {"hand_off", "read", "cache", "same dtype and shape"});
  testing::expect_error([&] { m.g.carry(m.read, m.cache); }, "same dtype and shape");
  testing::expect_error([&] { m.g.carry(m.cache, m.cache); }, "must be an output");
}

}  // namespace
}  // namespace luminal
