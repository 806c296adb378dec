// Sessions: buffers allocated once and never moved, plans per bucket, dim slots, carried state in
// both buffer parities, hand_off, set_external and bind_external without copies, byte counters
// and errors.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <memory>
#include <vector>

#include "luminal/cpu/cpu_backend.hpp"
#include "luminal/cpu/plan.hpp"
#include "luminal/runtime/session.hpp"
#include "support/delegating_backend.hpp"
#include "support/expect_error.hpp"

namespace luminal {
namespace {

using testing::expect_error;

CompileOptions quiet() { return CompileOptions().search_graph_limit(6).verbose(false).seed(2); }

std::vector<float> ramp(size_t n, float scale) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = scale * std::sin(0.3f * static_cast<float>(i) + scale);
  return v;
}

// A backend that counts plan loads.
struct CountingBackend : testing::CpuDelegate {
  std::unique_ptr<Plan> load(const LlirGraph& g, const PlanSpec& spec) override {
    ++loads;
    return cpu.load(g, spec);
  }
  int loads = 0;
};

// softmax(x @ w) * 2 + x @ w over s rows, with an extra intermediate chain.
struct Mlp {
  Graph g;
  Tensor x, w, y;
  Mlp() {
    g.declare_dim("s", 1, 64);
    x = g.tensor("x", {"s", 8});
    w = g.tensor("w", {8, 8}).persist();
    Tensor h = x.matmul(w);
    y = (h.softmax(1) * 2.0 + h.exp().sqrt()).output("y");
  }
};

TEST(Session, PointersNeverMoveWhileDimsChange) {
  Mlp m;
  CountingBackend be;
  Session s(m.g, be, quiet().dim_buckets("s", {DimBucket(1, 1), DimBucket(2, 64)}));
  s.set(m.w, ramp(64, 0.5f));
  s.compile();
  const int loads = be.loads;
  const DimSlot S = s.dim("s");
  std::vector<int64_t> dims = s.dims();
  const void* out_addr = s.buffer_address("y");
  const void* w_addr = s.buffer_address("w");
  std::vector<uint8_t*> first;
  ReferenceRuntime ref(m.g);
  ref.set(m.w, ramp(64, 0.5f));
  for (int i = 0; i < 100; ++i) {
    const int rows = 2 + (i * 7) % 63;  // inside the [2, 64] bucket, changing every time
    dims[S] = rows;
    s.set(m.x, ramp(rows * 8, 1.0f));
    s.execute(dims);
    const auto& plan = dynamic_cast<const cpu::CpuPlan&>(s.plan({{"s", rows}}));
    if (i == 0) first = plan.addresses(0);
    EXPECT_EQ(plan.addresses(0), first) << "execute " << i;
    EXPECT_EQ(s.buffer_address("y"), out_addr);
    EXPECT_EQ(s.buffer_address("w"), w_addr);
    if (i % 25 == 0) {
      ref.set(m.x, ramp(rows * 8, 1.0f));
      ref.execute({{"s", rows}});
      auto a = s.get<float>(m.y), b = ref.get<float>(m.y);
      ASSERT_EQ(a.size(), static_cast<size_t>(rows * 8));
      for (size_t k = 0; k < a.size(); ++k)
        ASSERT_NEAR(a[k], b[k], 1e-4) << "rows " << rows;
    }
  }
  EXPECT_EQ(be.loads, loads) << "executing loaded a plan";
  EXPECT_EQ(s.stats().rebinds, 1u);  // bound once, never again
  // Weights were uploaded once, at set(); executes moved only x in.
  EXPECT_EQ(s.stats().executes, 100u);
}

TEST(Session, BytesMovedAreOnlyWhatTheUserSetAndGot) {
  Mlp m;
  cpu::CpuBackend cpu(1);
  Session s(m.g, cpu, quiet());
  s.set(m.w, ramp(64, 0.5f));
  s.set(m.x, ramp(3 * 8, 1.0f));
  s.compile();
  const uint64_t up = s.stats().bytes_uploaded;
  EXPECT_EQ(up, 64u * 4 + 24u * 4);
  // x was set for s = 3; the search may time at up to s = 64: the rest of its buffer got data.
  EXPECT_EQ(s.stats().bytes_generated, (64u - 3u) * 8 * 4);
  for (int i = 0; i < 5; ++i) {
    s.set(m.x, ramp(3 * 8, 1.0f + i));
    s.execute({{"s", 3}});
    (void)s.get<float>(m.y);
  }
  EXPECT_EQ(s.stats().bytes_uploaded - up, 5u * 24 * 4);
  EXPECT_EQ(s.stats().bytes_downloaded, 5u * 24 * 4);
}

// A carried state [6, 4] never written in place (an elementwise update of the state and x).
struct ElementwiseState {
  Graph g;
  Tensor state, x, next;
  ElementwiseState() {
    g.declare_dim("s", 1, 4);
    state = g.tensor("state", {6, 4});
    x = g.tensor("x", {"s", 4});
    next = (state * 0.5 + x.sum(0).reshape({1, 4}).expand({6, 4}).sin()).output("next");
    g.carry(next, state);
  }
};

// The input and output swap buffers after each step, and the plan runs from both parities.
TEST(Session, CarriedStateAlternatesBuffersAndMatchesReference) {
  ElementwiseState m;
  Graph& g = m.g;
  const Tensor &state = m.state, &x = m.x, &next = m.next;
  Tensor read = (next * 3.0).output("read");
  cpu::CpuBackend cpu(1);
  Session s(g, cpu, quiet());
  ReferenceRuntime ref(g);
  for (Runtime* rt : {static_cast<Runtime*>(&s), static_cast<Runtime*>(&ref)})
    rt->set(state, ramp(24, 0.25f));
  s.compile();
  std::vector<const void*> state_addr;
  for (int step = 0; step < 3; ++step) {
    for (Runtime* rt : {static_cast<Runtime*>(&s), static_cast<Runtime*>(&ref)}) {
      rt->set(x, ramp(8, 1.0f + step));
      rt->execute({{"s", 2}});
    }
    state_addr.push_back(s.buffer_address("state"));
    auto a = s.get<float>(read), b = ref.get<float>(read);
    auto na = s.get<float>(next), nb = ref.get<float>(next);
    for (size_t k = 0; k < a.size(); ++k) {
      EXPECT_EQ(a[k], b[k]) << "step " << step;
      EXPECT_EQ(na[k], nb[k]) << "step " << step;
    }
  }
  // The state's buffer alternates: A, B, A. Both parities were bound once.
  EXPECT_NE(state_addr[0], state_addr[1]);
  EXPECT_EQ(state_addr[0], state_addr[2]);
  EXPECT_EQ(s.stats().rebinds, 1u);
}

// Binds the carried input "state" of `s` to `mem` (n floats, set to ramp(n, 0.25) as the
// reference's state is), then runs three steps on both at `dims`, x = ramp(nx, 1 + step): after
// each, `mem` holds the reference's new state. `each(step)` adds checks.
void expect_state_in_memory(Session& s, ReferenceRuntime& ref, const Tensor& state, const Tensor& x,
                            const Tensor& next, float* mem, size_t n, size_t nx, const DynMap& dims,
                            const std::function<void(int)>& each = {}) {
  const std::vector<float> init = ramp(n, 0.25f);
  ref.set(state, init);
  std::copy(init.begin(), init.end(), mem);
  s.bind_external("state", mem, n * sizeof(float));
  for (int step = 0; step < 3; ++step) {
    for (Runtime* rt : {static_cast<Runtime*>(&s), static_cast<Runtime*>(&ref)}) {
      rt->set(x, ramp(nx, 1.0f + static_cast<float>(step)));
      rt->execute(dims);
    }
    s.sync();
    EXPECT_EQ(std::vector<float>(mem, mem + n), ref.get<float>(next)) << "step " << step;
    if (each) each(step);
  }
}

// The same state bound to the caller's memory (bind_external): each step's new value is copied
// into that memory, which stays the input's buffer; the plan runs from one parity only.
TEST(Session, CarriedStateBoundExternallyTakesEachStepsValue) {
  ElementwiseState m;
  cpu::CpuBackend cpu(1);
  Session s(m.g, cpu, quiet());
  ReferenceRuntime ref(m.g);
  alignas(64) float mem[24];
  expect_state_in_memory(s, ref, m.state, m.x, m.next, mem, 24, 8, {{"s", 2}}, [&](int step) {
    EXPECT_EQ(s.get<float>(m.next), ref.get<float>(m.next)) << "step " << step;
    EXPECT_EQ(s.buffer_address("state"), static_cast<const void*>(mem));
  });
  EXPECT_EQ(s.stats().rebinds, 1u);
}

// Carried state of a dynamic size bound to memory that holds it only at the dims it runs at
// (a torch StaticCache under dynamic=True: its length is a dim whose range reaches far past it):
// the search times on a scratch copy, each step leaves the value in that memory, and dims that
// would need more than it holds are refused by name.
TEST(Session, CarriedStateBoundExternallyNeedOnlyHoldItsDims) {
  Graph g;
  g.declare_dim("c", 1, 64);
  Tensor state = g.tensor("state", {"c", 4});
  Tensor x = g.tensor("x", {"c", 4});
  Tensor next = (state * 0.5 + x.sin()).output("next");
  g.carry(next, state);
  cpu::CpuBackend cpu(1);
  Session s(g, cpu, quiet());
  ReferenceRuntime ref(g);
  alignas(64) float mem[12];  // c = 3 only; the range reaches 64
  expect_state_in_memory(s, ref, state, x, next, mem, 12, 12, {{"c", 3}});
  s.set(x, ramp(16, 1.0f));
  expect_error([&] { s.execute({{"c", 4}}); }, {"input 'state'", "12 elements", "16"});
}

TEST(Session, HandOffSwapsHandlesWithoutCopying) {
  Graph g;
  Tensor a = g.tensor("a", {4});
  Tensor b = (a + 1.0).output("b");
  cpu::CpuBackend cpu(1);
  Session s = compile(g, cpu, quiet());
  s.set(a, std::vector<float>{1, 2, 3, 4});
  s.execute();
  const void* out = s.buffer_address("b");
  const uint64_t moved = s.stats().bytes_uploaded + s.stats().bytes_downloaded;
  s.hand_off(b, a);
  EXPECT_EQ(s.buffer_address("a"), out);  // the input took the output's buffer
  EXPECT_EQ(s.stats().bytes_uploaded + s.stats().bytes_downloaded, moved);
  EXPECT_EQ(s.get<float>(b), (std::vector<float>{2, 3, 4, 5}));  // still readable
  s.execute();
  EXPECT_EQ(s.get<float>(b), (std::vector<float>{3, 4, 5, 6}));
}

// An output whose value sits in an input's buffer (after hand_off) keeps it when the input is
// written, loses it when the input becomes external memory; a value handed to an input bound to
// external memory lands in a buffer of the session's own, and the external memory is untouched.
TEST(Session, ValuesInAnInputsBufferFollowItsWrites) {
  Graph g;
  Tensor a = g.tensor("a", {4});
  Tensor b = (a + 1.0).output("b");
  cpu::CpuBackend cpu(1);
  Session s = compile(g, cpu, quiet());
  s.set(a, std::vector<float>{1, 2, 3, 4});
  s.execute();
  s.hand_off(b, a);
  s.set(a, std::vector<float>{10, 20, 30, 40});
  EXPECT_EQ(s.get<float>(b), (std::vector<float>{2, 3, 4, 5}));  // kept
  s.execute();
  EXPECT_EQ(s.get<float>(b), (std::vector<float>{11, 21, 31, 41}));

  s.hand_off(b, a);
  alignas(64) float host[4] = {5, 6, 7, 8};
  s.set_external("a", host, sizeof host, nullptr);
  EXPECT_EQ(s.buffer_address("a"), host);
  expect_error([&] { (void)s.get<float>(b); }, "output 'b' has no value yet");
  s.execute();
  EXPECT_EQ(s.get<float>(b), (std::vector<float>{6, 7, 8, 9}));

  s.bind_external("a", host, sizeof host);
  s.execute();
  s.hand_off(b, a);
  EXPECT_NE(s.buffer_address("a"), host);
  EXPECT_EQ(host[0], 5.0f);
  s.execute();
  EXPECT_EQ(s.get<float>(b), (std::vector<float>{7, 8, 9, 10}));
}

TEST(Session, SetExternalUsesHostMemoryInPlace) {
  Mlp m;
  cpu::CpuBackend cpu(1);
  Session s(m.g, cpu, quiet());
  auto w = std::shared_ptr<float[]>(static_cast<float*>(std::aligned_alloc(64, 256)), std::free);
  std::vector<float> wv = ramp(64, 0.5f);
  std::copy(wv.begin(), wv.end(), w.get());
  const uint64_t before = s.memory_bytes();
  s.set_external("w", w.get(), 256, w);
  EXPECT_EQ(s.buffer_address("w"), w.get());
  EXPECT_EQ(s.stats().bytes_wrapped, 256u);
  EXPECT_EQ(s.stats().bytes_uploaded, 0u);
  EXPECT_EQ(s.memory_bytes(), before);  // the session's own buffer was given back
  s.set(m.x, ramp(16, 1.0f));
  s.execute({{"s", 2}});
  ReferenceRuntime ref(m.g);
  ref.set(m.w, wv);
  ref.set(m.x, ramp(16, 1.0f));
  ref.execute({{"s", 2}});
  auto a = s.get<float>(m.y), b = ref.get<float>(m.y);
  for (size_t k = 0; k < a.size(); ++k)
    EXPECT_NEAR(a[k], b[k], 1e-4);
  // Unaligned memory is uploaded instead.
  std::vector<float> big(65);
  s.set_external("w", big.data() + 1, 256, nullptr);
  EXPECT_EQ(s.stats().bytes_uploaded, 256u + 16u * 4);
}

// bind_external: the backend's own memory (host memory on the CPU) becomes an input's buffer
// without a copy; a new pointer re-binds the plans on the next execute and is read from then on;
// set() afterwards gives the input its own buffer back; bad buffers are refused with the reason.
TEST(Session, BindExternalUsesTheBackendsMemoryAndRebinds) {
  Mlp m;
  cpu::CpuBackend cpu(1);
  Session s(m.g, cpu, quiet());
  s.set(m.w, ramp(64, 0.5f));
  const uint64_t cap = 64 * 8 * 4;  // x at s = 64
  auto buf = [&](float scale) {
    auto p = std::shared_ptr<float[]>(static_cast<float*>(std::aligned_alloc(64, cap)), std::free);
    std::vector<float> v = ramp(64 * 8, scale);
    std::copy(v.begin(), v.end(), p.get());
    return p;
  };
  auto reference = [&](float scale, int64_t rows) {
    ReferenceRuntime ref(m.g);
    ref.set(m.w, ramp(64, 0.5f));
    std::vector<float> v = ramp(64 * 8, scale);
    v.resize(static_cast<size_t>(rows * 8));
    ref.set(m.x, v);
    ref.execute({{"s", rows}});
    return ref.get<float>(m.y);
  };
  auto expect_near = [](const std::vector<float>& a, const std::vector<float>& b) {
    ASSERT_EQ(a.size(), b.size());
    for (size_t k = 0; k < a.size(); ++k)
      EXPECT_NEAR(a[k], b[k], 1e-4) << k;
  };
  std::shared_ptr<float[]> a = buf(1.0f), b = buf(-0.7f);
  s.bind_external("x", a.get(), cap, a);
  EXPECT_EQ(s.buffer_address("x"), a.get());
  const uint64_t uploaded = s.stats().bytes_uploaded;
  s.execute({{"s", 3}});
  expect_near(s.get<float>(m.y), reference(1.0f, 3));
  const uint64_t rebinds = s.stats().rebinds;
  s.bind_external("x", b.get(), cap, b);
  s.execute({{"s", 3}});
  EXPECT_GT(s.stats().rebinds, rebinds);
  expect_near(s.get<float>(m.y), reference(-0.7f, 3));
  EXPECT_EQ(s.stats().bytes_uploaded, uploaded);  // no copies
  s.set(m.x, ramp(3 * 8, 1.0f));                  // its own buffer again
  EXPECT_NE(s.buffer_address("x"), b.get());
  s.execute({{"s", 3}});
  expect_near(s.get<float>(m.y), reference(1.0f, 3));
  expect_error([&] { s.bind_external("x", a.get(), cap - 4, a); },
               {"bind_external", "input 'x'", "less than the input takes", "2048 bytes"});
  expect_error([&] { s.bind_external("x", reinterpret_cast<char*>(a.get()) + 4, cap, a); },
               {"input 'x'", "16-byte aligned"});
  expect_error([&] { s.bind_external("x", nullptr, cap); }, {"input 'x'", "null"});
  expect_error([&] { s.bind_external("q", a.get(), cap); }, {"'q'"});
}

TEST(Session, DimSlotsAndExecuteErrors) {
  Mlp m;
  cpu::CpuBackend cpu(1);
  Session s = compile(m.g, cpu, quiet().dim_buckets("s", {DimBucket(1, 8), DimBucket(9, 64)}));
  EXPECT_EQ(s.dim_names(), (std::vector<std::string>{"s"}));
  EXPECT_EQ(s.dim("s"), 0);
  expect_error([&] { s.dim("t"); }, {"'t'", "not a dynamic dimension", "s"});
  s.set(m.w, ramp(64, 0.5f));
  expect_error([&] { s.execute({{"s", 2}}); }, {"input 'x'", "no data"});
  s.set(m.x, ramp(3 * 8, 1.0f));
  expect_error([&] { s.execute({{"s", 2}}); }, {"input 'x'", "24 elements", "needs 16"});
  expect_error([&] { s.set(m.x, std::vector<float>(65 * 8)); },
               {"input 'x'", "520 elements", "largest dims (512)"});
  expect_error([&] { s.execute(std::vector<int64_t>{}); }, {"0 dim values", "1 dynamic"});
  expect_error([&] { s.execute({{"s", 65}}); }, {"s = 65", "outside its declared range"});
  s.execute({{"s", 3}});
  EXPECT_EQ(s.shape(m.y), (std::vector<int64_t>{3, 8}));
}

// The hot path by handle: write() and read() give the same bytes as set() and get(), count the
// same traffic, and check what they are given.
TEST(Session, HandlesWriteAndReadWithoutLabels) {
  Mlp m;
  cpu::CpuBackend cpu(1);
  Session s = compile(m.g, cpu, quiet().dim_buckets("s", {DimBucket(1, 64)}));
  s.set(m.w, ramp(64, 0.5f));
  const Session::InputHandle x = s.input("x");
  EXPECT_EQ(s.input(m.x).index, x.index);
  const Session::OutputHandle y = s.output(m.y);
  EXPECT_EQ(s.output("y").index, y.index);
  expect_error([&] { s.input("y"); }, {"'y'", "is an output, not an input"});
  expect_error([&] { s.output("x"); }, {"'x'", "is an input, not an output"});
  expect_error([&] { s.input("nope"); }, {"nope"});
  std::vector<float> out(4 * 8);
  expect_error([&] { s.read(y, out.data(), out.size() * 4); }, {"output 'y'", "no value yet"});
  const std::vector<float> in = ramp(4 * 8, 1.0f);
  expect_error([&] { s.write(x, in.data(), 6); }, {"input 'x'", "6 bytes", "whole number"});
  const uint64_t up = s.stats().bytes_uploaded, down = s.stats().bytes_downloaded;
  s.write(x, in.data(), in.size() * 4);
  std::vector<int64_t> dims = s.dims();
  dims[s.dim("s")] = 4;
  s.execute(dims);
  EXPECT_EQ(s.output_bytes(y), 4u * 8 * 4);
  expect_error([&] { s.read(y, out.data(), 4); }, {"output 'y'", "128 bytes", "not 4"});
  s.read(y, out.data(), out.size() * 4);
  EXPECT_EQ(out, s.get<float>(m.y));
  EXPECT_EQ(s.stats().bytes_uploaded - up, 4u * 8 * 4);
  EXPECT_EQ(s.stats().bytes_downloaded - down, 2u * 4 * 8 * 4);
  ReferenceRuntime ref(m.g);
  ref.set(m.w, ramp(64, 0.5f));
  ref.set(m.x, in);
  ref.execute({{"s", 4}});
  const std::vector<float> want = ref.get<float>(m.y);
  for (size_t k = 0; k < out.size(); ++k)
    EXPECT_NEAR(out[k], want[k], 1e-4) << k;
}

TEST(Session, ExecuteByNameOverlaysTheGraphsDimsAndChecksEachOne) {
  Mlp m;
  cpu::CpuBackend cpu(1);
  {
    Session s = compile(m.g, cpu, quiet().dim_buckets("s", {DimBucket(1, 64)}));
    s.set(m.w, ramp(64, 0.5f));
    s.set(m.x, ramp(2 * 8, 1.0f));
    expect_error([&] { s.execute(); }, {"dynamic dimension 's' has no value", "set_dim"});
    expect_error([&] { s.execute({{"z", 1}, {"s", 2}}); }, {"'z' is the index variable"});
    expect_error([&] { s.execute({{"s", 0}}); }, {"s = 0", "outside its declared range [1, 64]"});
    s.execute({{"s", 2}, {"t", 99}});  // names that are not dims of the graph are ignored
    EXPECT_EQ(s.shape(m.y), (std::vector<int64_t>{2, 8}));
  }
  m.g.set_dim("s", 3);
  Session s = compile(m.g, cpu, quiet().dim_buckets("s", {DimBucket(1, 64)}));
  s.set(m.w, ramp(64, 0.5f));
  s.set(m.x, ramp(3 * 8, 1.0f));
  s.execute();  // the graph's set_dim value
  EXPECT_EQ(s.shape(m.y), (std::vector<int64_t>{3, 8}));
  s.set(m.x, ramp(5 * 8, 1.0f));
  s.execute({{"s", 5}});  // overrides it
  EXPECT_EQ(s.shape(m.y), (std::vector<int64_t>{5, 8}));
}

TEST(Session, BucketsShareOneArena) {
  Mlp m;
  cpu::CpuBackend cpu(1);
  Session s = compile(m.g, cpu, quiet().dim_buckets("s", {DimBucket(1, 1), DimBucket(2, 64)}));
  const uint64_t small = s.plan({{"s", 1}}).arena_bytes();
  const uint64_t large = s.plan({{"s", 2}}).arena_bytes();
  EXPECT_LT(small, large);
  uint64_t buffers = 0;
  for (int64_t b : {64 * 8 * 4, 64 * 4, 64 * 8 * 4})
    buffers += static_cast<uint64_t>(b);
  EXPECT_EQ(s.memory_bytes(), buffers + large);  // one arena, the largest
}

// Ids set for s = 1 before compiling, while the prefill bucket is timed at s = 8: the search
// must not read indices past what was set (they would be garbage and reject every candidate).
TEST(Session, InputsSetForSmallerDimsStillProfileSafely) {
  for (int round = 0; round < 3; ++round) {
    Graph g;
    g.declare_dim("s", 1, 16);
    Tensor table = g.tensor("table", {50, 8});
    Tensor ids = g.tensor("ids", {"s"}, DType::I32);
    (table.embedding(ids) * 2.0).output("y");
    cpu::CpuBackend cpu(1);
    Session s(g, cpu,
              quiet().dim_buckets("s", {DimBucket(1, 1), DimBucket(2, 16).representative(8)}));
    s.set(table, ramp(400, 1.0f));
    s.set(ids, std::vector<int32_t>{49});
    s.compile();
    for (const SearchReport& r : s.reports())
      EXPECT_EQ(r.rejected, 0) << r.first_rejection;
    s.execute({{"s", 1}});
    EXPECT_FLOAT_EQ(s.get<float>("y")[0], 2 * ramp(400, 1.0f)[49 * 8]);
  }
}

}  // namespace
}  // namespace luminal
