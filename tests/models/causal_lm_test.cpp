// CausalLM's decode path on a tiny random model: the session's steps (inputs, outputs and dims
// resolved once) give the tokens of the same graph driven by name and of the reference, a decode
// step allocates nothing on the host, the context's ids are tracked, chat prefix reuse
// (continue_from) keeps what it may, the token head is chosen from a SamplingConfig, and decoding
// ahead (LUMINAL_DECODE_AHEAD=1) gives what the steps one after another give.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "luminal/cpu/cpu_backend.hpp"
#include "luminal/models/causal_lm.hpp"
#include "luminal/models/synthetic.hpp"
#include "luminal/program/backend.hpp"
#include "luminal/runtime/session.hpp"
#include "support/env_scope.hpp"
#include "support/expect_error.hpp"

namespace {
// Heap allocations while counting is on (operator new below).
std::atomic<bool> g_counting{false};
std::atomic<long> g_allocations{0};
}  // namespace

// Not inlined: GCC would see free() on memory from operator new (-Wmismatched-new-delete).
[[gnu::noinline]] void* operator new(std::size_t n) {
  if (g_counting.load(std::memory_order_relaxed)) g_allocations.fetch_add(1);
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
[[gnu::noinline]] void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  if (g_counting.load(std::memory_order_relaxed)) g_allocations.fetch_add(1);
  return std::malloc(n == 0 ? 1 : n);  // (std::stable_sort's buffer comes from here)
}
[[gnu::noinline]] void operator delete(void* p) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete(void* p, std::size_t) noexcept { std::free(p); }
[[gnu::noinline]] void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }

namespace luminal::models {
namespace {

CompileOptions quick() { return CompileOptions().search_graph_limit(4).verbose(false); }

// Untied embeddings and one KV head (synthetic_test's model has tied ones and two).
io::ModelConfig tiny() {
  return llama_config(
      {.layers = 2, .hidden = 48, .ffn = 96, .heads = 4, .kv_heads = 1, .vocab = 131});
}

const DecoderShape kShape{.slots = 48, .max_step = 8};
const std::vector<int32_t> kPrompt = {5, 17, 2, 90, 33, 1, 64, 8, 12, 40};  // two chunks

// The tokens of generate(kPrompt, n) from the same session driven by name, as CausalLM did before
// it held handles: set("ids"), execute with a dims map, get("token").
std::vector<int32_t> by_name(Session& s, const std::vector<int32_t>& prompt, int n, int slots_used,
                             int max_step) {
  std::vector<int32_t> out;
  int context = slots_used;
  auto step = [&](const std::vector<int32_t>& ids) {
    for (size_t done = 0; done < ids.size();) {
      const size_t k = std::min(ids.size() - done, static_cast<size_t>(max_step));
      s.set("ids", std::vector<int32_t>(ids.begin() + static_cast<std::ptrdiff_t>(done),
                                        ids.begin() + static_cast<std::ptrdiff_t>(done + k)));
      context += static_cast<int>(k);
      s.execute({{"s", static_cast<int64_t>(k)}, {"c", context}});
      done += k;
    }
    return s.get<int32_t>("token")[0];
  };
  int32_t next = step(prompt);
  for (int t = 0; t < n; ++t) {
    out.push_back(next);
    if (t + 1 < n) next = step({next});
  }
  return out;
}

TEST(CausalLM, SessionStepsMatchByNameAndReference) {
  cpu::CpuBackend cpu(1);
  CausalLM lm = CausalLM::random(tiny(), cpu, kShape, quick(), 11);
  CausalLM ref = CausalLM::random_reference(tiny(), kShape, 11);
  const std::vector<int32_t> got = lm.generate_greedy(kPrompt, 12);
  ASSERT_EQ(got.size(), 12u);
  EXPECT_EQ(ref.generate_greedy(kPrompt, 12), got);
  lm.reset();
  EXPECT_EQ(by_name(lm.session(), kPrompt, 12, 0, kShape.max_step), got);
  // The context holds the prompt and every generated id but the last.
  lm.reset();
  lm.generate(kPrompt, 5);
  std::vector<int32_t> fed = kPrompt;
  fed.insert(fed.end(), got.begin(), got.begin() + 4);
  EXPECT_EQ(lm.context_ids(), fed);
  EXPECT_EQ(lm.context(), static_cast<int>(fed.size()));
  lm.rewind(3);
  EXPECT_EQ(lm.context_ids(), std::vector<int32_t>(kPrompt.begin(), kPrompt.begin() + 3));
  testing::expect_error([&] { ref.session(); }, {"ReferenceRuntime", "runtime()"});
}

// A backend whose plans run nothing: what is left of a decode step is CausalLM's and the
// session's own work.
class NullPlan : public Plan {
 public:
  explicit NullPlan(const LlirGraph& g) { io_ = PlanIo::of(g); }
  uint64_t arena_bytes() const override { return 0; }
  void bind(int, const Bindings&) override {}
  void execute(int, const int64_t*) override {}
};
class NullBackend : public Backend {
 public:
  std::string name() const override { return "null"; }
  std::vector<RuleSet> rulesets() const override { return {}; }
  bool executes(const OpDef*) const override { return true; }
  std::string device_key() const override { return "null"; }
  std::unique_ptr<Plan> load(const LlirGraph& g, const PlanSpec&) override {
    return std::make_unique<NullPlan>(g);
  }
  Buffer allocate(uint64_t bytes) override {
    return Buffer{std::calloc(std::max<uint64_t>(bytes, 1), 1), bytes};
  }
  void release(Buffer b) override { std::free(b.ptr); }
  void upload(Buffer, uint64_t, const void*, uint64_t, Queue*) override {}
  void download(void* dst, Buffer, uint64_t, uint64_t bytes, Queue*) override {
    std::memset(dst, 0, bytes);  // every token id is 0
  }
  void copy(Buffer, Buffer, uint64_t, Queue*) override {}
  void sync(Queue*) override {}
};

// The decode step of generate on the session path (the id and the sampler's step written by
// handle, execute with a dims array, the id read by handle) allocates nothing on the host; the
// backend's kernels are not run here (a CPU plan allocates on its own when a dim changes). A step
// that re-binds a plan (Session::Stats::rebinds: the sampler's carried set of seen tokens moved
// during the prefill) is the session's one-off and is not counted.
TEST(CausalLM, DecodeStepAllocatesNothing) {
  NullBackend null;
  for (const SamplerShape& head : {SamplerShape{}, SamplerShape{.sampler = true}}) {
    CausalLM lm = CausalLM::random(tiny(), null, kShape, quick(), 11, head);
    lm.generate_greedy(kPrompt, 4);  // binds the plans
    lm.reset();
    const Session::Stats& stats = lm.session().stats();
    std::vector<long> between;  // allocations from one token's callback to the next
    std::vector<uint64_t> rebinds;
    long last = 0;
    uint64_t last_rebinds = stats.rebinds;
    g_counting = true;
    lm.generate(kPrompt, 12, {}, [&](int32_t, std::string_view) {
      between.push_back(g_allocations.load() - last);
      rebinds.push_back(stats.rebinds - last_rebinds);
      last_rebinds = stats.rebinds;
      last = g_allocations.load();
      return true;
    });
    g_counting = false;
    ASSERT_EQ(between.size(), 12u);
    int counted = 0;
    for (size_t t = 1; t < between.size(); ++t) {
      if (rebinds[t] > 0) continue;
      ++counted;
      EXPECT_EQ(between[t], 0) << "heap allocations in decode step " << t
                               << (head.sampler ? " with the sampler" : "");
    }
    EXPECT_GE(counted, 9) << "at most two steps re-bind a plan";
  }
}

TEST(CausalLM, ContinueFromKeepsTheCommonPrefix) {
  cpu::CpuBackend cpu(1);
  CausalLM lm = CausalLM::random(tiny(), cpu, kShape, quick(), 11);
  const std::vector<int32_t> a = {5, 17, 2, 90, 33};
  const Generation first = lm.generate(a, 4);
  // A re-rendered chat: the first turn, its answer, a new turn.
  std::vector<int32_t> chat = a;
  chat.insert(chat.end(), first.tokens.begin(), first.tokens.end());
  chat.insert(chat.end(), {7, 61, 3});
  const size_t whole = a.size() + first.tokens.size() - 1;  // the last answer id was not fed
  EXPECT_EQ(lm.continue_from(chat, {}), whole);
  EXPECT_EQ(lm.context(), static_cast<int>(whole));
  const std::vector<int32_t> rest(chat.begin() + static_cast<std::ptrdiff_t>(whole), chat.end());
  const std::vector<int32_t> continued = lm.generate(rest, 6).tokens;
  lm.reset();
  EXPECT_EQ(lm.generate(chat, 6).tokens, continued) << "the same as feeding the whole chat";
  // A rendering that differs inside the context: rewound to the common part.
  std::vector<int32_t> other = chat;
  other[3] = 44;
  EXPECT_EQ(lm.continue_from(other, {}), 3u);
  EXPECT_EQ(lm.context_ids(), std::vector<int32_t>(a.begin(), a.begin() + 3));
  // With a repetition penalty only a whole context is kept (the seen tokens cannot be rewound).
  lm.reset();
  lm.forward(a);
  EXPECT_EQ(lm.continue_from(other, {.repetition_penalty = 1.1}), 0u);
  EXPECT_EQ(lm.context(), 0);
  lm.forward(a);
  EXPECT_EQ(lm.continue_from(chat, {.repetition_penalty = 1.1}), a.size());
  // At least one id is left to feed; nothing in common resets.
  EXPECT_EQ(lm.continue_from(a, {}), a.size() - 1);
  EXPECT_EQ(lm.continue_from(std::vector<int32_t>{9, 9}, {}), 0u);
  EXPECT_EQ(lm.context(), 0);
}

TEST(SamplerShape, NeededBy) {
  const SamplerShape greedy = SamplerShape::needed_by({});
  EXPECT_FALSE(greedy.sampler);
  const SamplerShape k = SamplerShape::needed_by({.temperature = 0.7, .top_k = 40});
  EXPECT_TRUE(k.sampler);
  EXPECT_TRUE(k.filters.top_k);
  EXPECT_FALSE(k.filters.top_p);
  const SamplerShape rp = SamplerShape::needed_by({.repetition_penalty = 1.2});
  EXPECT_TRUE(rp.sampler);
  EXPECT_FALSE(rp.filters.top_k || rp.filters.top_p);
  // top-k and top-p do not change a greedy token: no sampler for them alone.
  EXPECT_FALSE(SamplerShape::needed_by({.top_k = 3, .top_p = 0.5}).sampler);
}

// Decoding ahead (LUMINAL_DECODE_AHEAD=1, CausalLM::generate): each decode step is launched with
// the token it feeds copied on the backend before the host reads that token. On the CPU a step
// finishes before it returns, so nothing overlaps here, but the bookkeeping is the same as on a
// GPU: the tokens, the stop, the context and what a later call generates must equal the steps
// taken one after another, whether generation runs to its limit, stops at an end-of-sequence
// id, at a callback or at a full cache, and the step launched past a stop must not count.
// Session::copy_output_to_input and start_read / finish_read, which it runs on, name bad uses.
const DecoderShape kAheadShape{.slots = 40, .max_step = 8};

/// What one scenario leaves behind: the generation, the context, a later call's tokens, and the
/// executes the session ran for the first call.
struct Outcome {
  Generation gen;
  std::vector<int32_t> context, later;
  uint64_t executes = 0;
  std::string error, later_error;
};

/// generate(kPrompt, n) with `stop` and a callback stopping after `stop_at` tokens (-1: never),
/// then generate({7, 61}, 5) continuing the chat (each call's error kept).
Outcome run_with(const char* ahead, int n, const StopConditions& stop, int stop_at = -1) {
  const testing::EnvScope env("LUMINAL_DECODE_AHEAD", ahead);
  cpu::CpuBackend cpu(1);
  CausalLM lm = CausalLM::random(tiny(), cpu, kAheadShape, quick(), 7);
  Outcome o;
  const uint64_t before = lm.session().stats().executes;
  int seen = 0;
  try {
    o.gen = lm.generate(
        kPrompt, n, {}, [&](int32_t, std::string_view) { return stop_at < 0 || ++seen < stop_at; },
        stop);
  } catch (const Error& e) {
    o.error = e.what();
  }
  o.executes = lm.session().stats().executes - before;
  o.context = lm.context_ids();
  try {
    o.later = lm.generate({7, 61}, 5).tokens;
  } catch (const Error& e) {
    o.later_error = e.what();
  }
  return o;
}

void expect_same(const Outcome& a, const Outcome& b, const std::string& what) {
  EXPECT_EQ(a.gen.tokens, b.gen.tokens) << what;
  EXPECT_EQ(a.gen.stop, b.gen.stop) << what;
  EXPECT_EQ(a.context, b.context) << what;
  EXPECT_EQ(a.later, b.later) << what;
  EXPECT_EQ(a.error, b.error) << what;
  EXPECT_EQ(a.later_error, b.later_error) << what;
}

TEST(DecodeAhead, SameTokensStopsAndContextAsOneStepAtATime) {
  // To its limit: every step launched ahead was needed, so the executes are the same.
  const Outcome all_off = run_with(nullptr, 12, {});
  const Outcome all_on = run_with("1", 12, {});
  ASSERT_EQ(all_off.gen.tokens.size(), 12u);
  expect_same(all_off, all_on, "12 tokens");
  EXPECT_EQ(all_on.executes, all_off.executes);
  EXPECT_EQ(all_off.context.size(), kPrompt.size() + 11) << "the last token is not fed";

  // An end-of-sequence id: the step launched with it ran, but the context stops before it.
  StopConditions eos;
  eos.eos_ids = {all_off.gen.tokens[5]};
  const Outcome eos_off = run_with(nullptr, 12, eos);
  const Outcome eos_on = run_with("1", 12, eos);
  ASSERT_EQ(eos_off.gen.stop, Generation::Stop::Eos);
  expect_same(eos_off, eos_on, "end-of-sequence id");
  EXPECT_EQ(eos_on.executes, eos_off.executes + 1) << "one step launched past the stop";

  // A callback that stops after 4 tokens.
  const Outcome cb_off = run_with(nullptr, 12, {}, 4);
  const Outcome cb_on = run_with("1", 12, {}, 4);
  ASSERT_EQ(cb_off.gen.stop, Generation::Stop::Callback);
  ASSERT_EQ(cb_off.gen.tokens.size(), 4u);
  expect_same(cb_off, cb_on, "callback");
  EXPECT_EQ(cb_on.executes, cb_off.executes + 1);
}

TEST(DecodeAhead, AFullCacheFailsAsBefore) {
  // 10 prompt tokens in 40 slots: 31 tokens fit (the last one is not fed), the 32nd does not.
  const Outcome fits_off = run_with(nullptr, 31, {});
  const Outcome fits_on = run_with("1", 31, {});
  EXPECT_TRUE(fits_off.error.empty()) << fits_off.error;
  expect_same(fits_off, fits_on, "31 tokens in a cache of 40");
  EXPECT_NE(fits_off.later_error.find("exceed the cache of 40"), std::string::npos)
      << "the cache is full after 31";
  const Outcome over_off = run_with(nullptr, 32, {});
  const Outcome over_on = run_with("1", 32, {});
  EXPECT_NE(over_off.error.find("exceed the cache of 40"), std::string::npos) << over_off.error;
  expect_same(over_off, over_on, "32 tokens in a cache of 40");
}

TEST(DecodeAhead, CopyAndReadNameBadUses) {
  cpu::CpuBackend cpu(1);
  CausalLM lm = CausalLM::random(tiny(), cpu, kAheadShape, quick(), 7);
  Session& s = lm.session();
  const Session::InputHandle ids = s.input("ids");
  const Session::OutputHandle token = s.output("token"), logits = s.output("logits");
  int32_t id = -1;
  testing::expect_error([&] { s.copy_output_to_input(token, ids); },
                        {"copy_output_to_input", "'token'", "no value yet"});
  testing::expect_error([&] { s.start_read(token, &id, sizeof id); }, {"'token'", "no value yet"});
  lm.forward(kPrompt);
  testing::expect_error([&] { s.copy_output_to_input(logits, ids); },
                        {"copy_output_to_input", "'logits' is f32", "is i32"});
  s.start_read(token, &id, sizeof id);
  s.finish_read();
  s.finish_read();  // (nothing in flight: returns)
  int32_t again = -1;
  s.read(token, &again, sizeof again);
  EXPECT_EQ(id, again);
  EXPECT_GE(id, 0);
  EXPECT_LT(id, 131);
}

}  // namespace
}  // namespace luminal::models
