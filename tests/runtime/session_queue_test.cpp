// Queues: each session orders all of its work on the queue it made at construction
// (Backend::make_queue), two sessions get different queues, and the search works on the default
// queue (null). A fake backend over the CPU hands out marker queues and records the queue of every
// upload, download, copy, sync and bind.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "luminal/cpu/cpu_backend.hpp"
#include "luminal/runtime/reference.hpp"
#include "luminal/runtime/session.hpp"
#include "support/delegating_backend.hpp"

namespace luminal {
namespace {

CompileOptions quiet() { return CompileOptions().search_graph_limit(6).verbose(false).seed(2); }

std::vector<float> ramp(size_t n, float scale) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = scale * std::sin(0.3f * static_cast<float>(i) + scale);
  return v;
}

struct Call {
  std::string what;  // "upload", "download", "copy", "sync", "bind"
  Queue* queue = nullptr;
};

/// What the backend knows about its queues: the live ones, and whether a plan outlived its queue.
struct Ledger {
  std::vector<Call> calls;
  std::vector<Queue*> made;
  std::set<Queue*> alive;
  int plans_outliving_their_queue = 0;
};

struct Marker : Queue {
  explicit Marker(Ledger& l) : ledger(l) { ledger.alive.insert(this); }
  ~Marker() override { ledger.alive.erase(this); }
  Ledger& ledger;
};

/// Forwards to a CPU plan, recording the queue of each bind.
class RecordingPlan : public Plan {
 public:
  RecordingPlan(std::unique_ptr<Plan> inner, Ledger& ledger)
      : inner_(std::move(inner)), ledger_(ledger) {
    io_ = inner_->io();
  }
  ~RecordingPlan() override {
    for (Queue* q : bound_)
      if (q && !ledger_.alive.count(q)) ++ledger_.plans_outliving_their_queue;
  }
  uint64_t arena_bytes() const override { return inner_->arena_bytes(); }
  uint64_t workspace_bytes() const override { return inner_->workspace_bytes(); }
  void bind(int parity, const Bindings& b) override {
    ledger_.calls.push_back({"bind", b.queue});
    bound_[parity] = b.queue;
    inner_->bind(parity, b);
  }
  void execute(int parity, const int64_t* dims) override { inner_->execute(parity, dims); }

 private:
  std::unique_ptr<Plan> inner_;
  Ledger& ledger_;
  Queue* bound_[2] = {nullptr, nullptr};
};

class RecordingBackend : public testing::CpuDelegate {
 public:
  std::string name() const override { return "recording"; }
  std::unique_ptr<Queue> make_queue() override {
    auto q = std::make_unique<Marker>(ledger);
    ledger.made.push_back(q.get());
    return q;
  }
  std::unique_ptr<Plan> load(const LlirGraph& g, const PlanSpec& spec) override {
    return std::make_unique<RecordingPlan>(cpu.load(g, spec), ledger);
  }
  void upload(Buffer d, uint64_t o, const void* s, uint64_t n, Queue* q = nullptr) override {
    ledger.calls.push_back({"upload", q});
    cpu.upload(d, o, s, n);
  }
  void download(void* d, Buffer s, uint64_t o, uint64_t n, Queue* q = nullptr) override {
    ledger.calls.push_back({"download", q});
    cpu.download(d, s, o, n);
  }
  void copy(Buffer d, Buffer s, uint64_t n, Queue* q = nullptr) override {
    ledger.calls.push_back({"copy", q});
    cpu.copy(d, s, n);
  }
  void sync(Queue* q = nullptr) override {
    ledger.calls.push_back({"sync", q});
    cpu.sync();
  }

  /// The calls recorded since the last take().
  std::vector<Call> take() { return std::exchange(ledger.calls, {}); }

  Ledger ledger;
};

// y = x @ w + state (broadcast); a carried state updated elementwise (never in place, so both
// parities are bound and the buffers swap). A state set before compile() is profiled on a scratch
// copy (a copy on the session's queue).
struct Model {
  Graph g;
  Tensor x, w, state, next, y;
  Model() {
    g.declare_dim("s", 1, 8);
    x = g.tensor("x", {"s", 4});
    w = g.tensor("w", {4, 4}).persist();
    state = g.tensor("state", {4}).persist();
    next = (state * 0.5 + x.sum(0)).output("next");
    y = (x.matmul(w) + state.reshape({1, 4}).expand({"s", 4})).output("y");
    g.carry(next, state);
  }
};

std::string describe(const std::vector<Call>& calls) {
  std::string out;
  for (const Call& c : calls)
    out += c.what + (c.queue ? "(q) " : "(null) ");
  return out;
}

int count(const std::vector<Call>& calls, const std::string& what) {
  int n = 0;
  for (const Call& c : calls)
    n += c.what == what;
  return n;
}

void expect_close(const std::vector<std::vector<float>>& got,
                  const std::vector<std::vector<float>>& want) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i].size(), want[i].size()) << "value " << i;
    for (size_t k = 0; k < got[i].size(); ++k)
      EXPECT_NEAR(got[i][k], want[i][k], 1e-4) << "value " << i << "[" << k << "]";
  }
}

// Runs `steps` steps and returns every y and next read.
std::vector<std::vector<float>> run(Runtime& rt, const Model& m, int steps) {
  std::vector<std::vector<float>> out;
  for (int step = 0; step < steps; ++step) {
    rt.set(m.x, ramp(12, 1.0f + static_cast<float>(step)));
    rt.execute({{"s", 3}});
    out.push_back(rt.get<float>(m.y));
    out.push_back(rt.get<float>(m.next));
  }
  return out;
}

TEST(SessionQueue, EveryCallOfASessionCarriesItsQueueAndTheSearchUsesNull) {
  Model m;
  RecordingBackend be;
  Session s(m.g, be, quiet());
  ASSERT_EQ(be.ledger.made.size(), 1u);
  Queue* q = be.ledger.made[0];
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(s.queue(), q);

  // set(): uploads on the session's queue.
  s.set(m.w, ramp(16, 0.5f));
  s.set(m.state, ramp(4, 0.25f));
  s.set(m.x, ramp(6, 1.0f));  // s = 2: the search times s = 4, so the tail gets generated data
  std::vector<Call> calls = be.take();
  ASSERT_EQ(count(calls, "upload"), 3) << describe(calls);
  for (const Call& c : calls)
    EXPECT_EQ(c.queue, q) << describe(calls);

  // compile(): the session's generated data, scratch copies and its wait before the search are on
  // its queue; the search binds and times on the default queue.
  s.compile();
  calls = be.take();
  EXPECT_GE(count(calls, "upload"), 1) << describe(calls);
  EXPECT_GE(count(calls, "copy"), 1) << describe(calls);
  EXPECT_GE(count(calls, "bind"), 1) << describe(calls);
  bool searching = false;
  int search_syncs = 0;
  for (const Call& c : calls) {
    if (c.what == "bind") searching = true;
    if (c.what == "upload" || c.what == "copy" || c.what == "download") {
      EXPECT_FALSE(searching) << "the session's data is prepared before the search: "
                              << describe(calls);
      EXPECT_EQ(c.queue, q) << describe(calls);
    } else if (c.what == "bind") {
      EXPECT_EQ(c.queue, nullptr) << "the search binds with the default queue: " << describe(calls);
    } else if (c.what == "sync") {
      if (searching) {
        EXPECT_EQ(c.queue, nullptr) << "the search times on the default queue: " << describe(calls);
        ++search_syncs;
      } else {
        EXPECT_EQ(c.queue, q) << "the session waits for its own queue: " << describe(calls);
      }
    }
  }
  EXPECT_GE(search_syncs, 1) << describe(calls);
  // Before the search reads the session's buffers, the session waited for its queue.
  bool waited = false;
  for (const Call& c : calls) {
    if (c.what == "bind") break;
    waited = waited || (c.what == "sync" && c.queue == q);
  }
  EXPECT_TRUE(waited) << describe(calls);

  // execute / get / sync / hand_off: binds, downloads and syncs all on the session's queue.
  ReferenceRuntime ref(m.g);
  ref.set(m.w, ramp(16, 0.5f));
  ref.set(m.state, ramp(4, 0.25f));
  auto got = run(s, m, 3);
  s.sync();
  s.hand_off(m.next, m.state);
  s.execute({{"s", 3}});
  got.push_back(s.get<float>(m.y));
  calls = be.take();
  EXPECT_EQ(count(calls, "bind"), 2) << describe(calls);  // both parities, once
  EXPECT_GE(count(calls, "download"), 7) << describe(calls);
  EXPECT_GE(count(calls, "sync"), 1) << describe(calls);
  for (const Call& c : calls)
    EXPECT_EQ(c.queue, q) << describe(calls);

  auto want = run(ref, m, 3);
  ref.hand_off(m.next, m.state);
  ref.execute({{"s", 3}});
  want.push_back(ref.get<float>(m.y));
  expect_close(got, want);
}

TEST(SessionQueue, TwoSessionsGetDifferentQueuesAndPlansGoBeforeTheirQueue) {
  Model m;
  RecordingBackend be;
  std::vector<std::vector<float>> a_alone;
  {
    Session a(m.g, be, quiet());
    a.set(m.w, ramp(16, 0.5f));
    a.set(m.state, ramp(4, 0.25f));
    a_alone = run(a, m, 2);
  }
  EXPECT_TRUE(be.ledger.alive.empty());  // the session's queue went with it
  be.take();
  be.ledger.made.clear();
  {
    Session a = compile(m.g, be, quiet());
    Session b = compile(m.g, be, quiet());
    ASSERT_EQ(be.ledger.made.size(), 2u);
    Queue* qa = be.ledger.made[0];
    Queue* qb = be.ledger.made[1];
    EXPECT_NE(qa, qb);
    EXPECT_EQ(a.queue(), qa);
    EXPECT_EQ(b.queue(), qb);
    for (Session* s : {&a, &b}) {
      s->set(m.w, ramp(16, 0.5f));
      s->set(m.state, ramp(4, 0.25f));
    }
    be.take();
    // Interleaved: each call carries the queue of the session that made it.
    std::vector<std::vector<float>> got_a, got_b;
    for (int step = 0; step < 2; ++step) {
      for (Session* s : {&a, &b}) {
        s->set(m.x, ramp(12, 1.0f + static_cast<float>(step)));
        std::vector<Call> calls = be.take();
        s->execute({{"s", 3}});
        auto& out = s == &a ? got_a : got_b;
        out.push_back(s->get<float>(m.y));
        out.push_back(s->get<float>(m.next));
        std::vector<Call> more = be.take();
        calls.insert(calls.end(), more.begin(), more.end());
        ASSERT_FALSE(calls.empty());
        for (const Call& c : calls)
          EXPECT_EQ(c.queue, s->queue()) << (s == &a ? "a: " : "b: ") << describe(calls);
      }
    }
    expect_close(got_a, a_alone);
    expect_close(got_b, a_alone);
  }
  EXPECT_TRUE(be.ledger.alive.empty());
  EXPECT_EQ(be.ledger.plans_outliving_their_queue, 0);
}

TEST(SessionQueue, TheCpuMakesNoQueues) {
  Model m;
  cpu::CpuBackend cpu(1);
  EXPECT_EQ(cpu.make_queue(), nullptr);
  Session s(m.g, cpu, quiet());
  EXPECT_EQ(s.queue(), nullptr);
  s.set(m.w, ramp(16, 0.5f));
  s.set(m.state, ramp(4, 0.25f));
  ReferenceRuntime ref(m.g);
  ref.set(m.w, ramp(16, 0.5f));
  ref.set(m.state, ramp(4, 0.25f));
  expect_close(run(s, m, 2), run(ref, m, 2));
}

}  // namespace
}  // namespace luminal
