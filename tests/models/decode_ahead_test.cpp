// Decoding ahead (LUMINAL_DECODE_AHEAD=1, CausalLM::generate): each decode step is launched with
// the token it feeds copied on the backend before the host reads that token. On the CPU a step
// finishes before it returns, so nothing overlaps here, but the bookkeeping is the same as on a
// GPU: the tokens, the stop, the context and what a later call generates must equal the steps
// taken one after another, whether generation runs to its limit, stops at an end-of-sequence
// id, at a callback or at a full cache, and the step launched past a stop must not count.
// Session::copy_output_to_input and start_read / finish_read, which it runs on, name bad uses.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "luminal/cpu/cpu_backend.hpp"
#include "luminal/models/causal_lm.hpp"
#include "luminal/models/synthetic.hpp"
#include "luminal/runtime/session.hpp"
#include "support/env_scope.hpp"
#include "support/expect_error.hpp"

namespace luminal::models {
namespace {

CompileOptions quick() { return CompileOptions().search_graph_limit(4).verbose(false); }

io::ModelConfig tiny() {
  return llama_config(
      {.layers = 2, .hidden = 48, .ffn = 96, .heads = 4, .kv_heads = 1, .vocab = 131});
}

const DecoderShape kShape{.slots = 40, .max_step = 8};
const std::vector<int32_t> kPrompt = {5, 17, 2, 90, 33, 1, 64, 8, 12, 40};

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
  CausalLM lm = CausalLM::random(tiny(), cpu, kShape, quick(), 7);
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
  CausalLM lm = CausalLM::random(tiny(), cpu, kShape, quick(), 7);
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
