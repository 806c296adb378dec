// DecoderShape::logits: a model built with Logits::Last computes the last position's logits only
// ([1, vocab]), equal to the last row of Logits::All's [s, vocab], over chunked prompts too; its
// session holds no [max_step, vocab] buffer; greedy generation is the same either way. And
// init_state marks a session's KV caches set without writing them.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <string>
#include <vector>

#include "luminal/cpu/cpu_backend.hpp"
#include "luminal/models/causal_lm.hpp"
#include "luminal/models/decoder.hpp"
#include "luminal/models/synthetic.hpp"
#include "luminal/runtime/session.hpp"

namespace luminal::models {
namespace {

CompileOptions quick() { return CompileOptions().search_graph_limit(4).verbose(false); }

io::ModelConfig tiny() {
  return llama_config(
      {.layers = 2, .hidden = 48, .ffn = 96, .heads = 4, .kv_heads = 2, .vocab = 131});
}

DecoderShape shape(Logits logits) { return {.slots = 48, .max_step = 8, .logits = logits}; }

const std::vector<int32_t> kPrompt = {5, 17, 2, 90, 33, 1, 64, 8, 12, 40};  // two chunks of 8

// The last `vocab` values of `all`.
std::vector<float> last_row(const std::vector<float>& all, int64_t vocab) {
  return std::vector<float>(all.end() - vocab, all.end());
}

TEST(LastLogits, GraphOutputIsOneRow) {
  const Decoder all = build_decoder(tiny(), shape(Logits::All));
  const Decoder last = build_decoder(tiny(), shape(Logits::Last));
  ASSERT_EQ(all.logits.shape().size(), 2u);
  EXPECT_EQ(all.logits.shape()[0], Expr::var("s"));
  ASSERT_EQ(last.logits.shape().size(), 2u);
  EXPECT_EQ(last.logits.shape()[0].as_const(), 1);
  EXPECT_EQ(last.logits.shape()[1].as_const(), 131);
}

// The reference evaluates both graphs row by row in the same order: bit-identical values.
TEST(LastLogits, ReferenceEqualsTheLastRowExactly) {
  CausalLM all = CausalLM::random_reference(tiny(), shape(Logits::All), 7);
  CausalLM last = CausalLM::random_reference(tiny(), shape(Logits::Last), 7);
  const std::vector<float> a = all.forward(kPrompt);
  const std::vector<float> l = last.forward(kPrompt);
  ASSERT_EQ(a.size(), kPrompt.size() * 131);
  ASSERT_EQ(l.size(), 131u);
  EXPECT_EQ(l, last_row(a, 131));
  // One more id (the decode bucket's shape): still the last row.
  EXPECT_EQ(last.forward({3}), all.forward({3}));
  all.reset();
  last.reset();
  EXPECT_EQ(last.generate_greedy(kPrompt, 6), all.generate_greedy(kPrompt, 6));
}

// On the CPU the two graphs may get different programs (a GEMM over every row, a GEMV over one):
// equal up to f32 rounding, the same greedy tokens.
TEST(LastLogits, CpuEqualsTheLastRow) {
  cpu::CpuBackend cpu(1);
  CausalLM all = CausalLM::random(tiny(), cpu, shape(Logits::All), quick(), 7);
  CausalLM last = CausalLM::random(tiny(), cpu, shape(Logits::Last), quick(), 7);
  const std::vector<float> want = last_row(all.forward(kPrompt), 131);
  const std::vector<float> got = last.forward(kPrompt);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i], 1e-4 * (1 + std::fabs(want[i]))) << "logit " << i;
  all.reset();
  last.reset();
  EXPECT_EQ(last.generate_greedy(kPrompt, 8), all.generate_greedy(kPrompt, 8));
}

// The bytes of the load-time folds a session's programs read (Session::fold_report's lines,
// "... N bytes from ...").
uint64_t fold_bytes(const Session& s) {
  const std::string r = s.fold_report();
  uint64_t total = 0;
  for (size_t at = r.find(" bytes"); at != std::string::npos; at = r.find(" bytes", at + 1)) {
    size_t b = at;
    while (b > 0 && std::isdigit(static_cast<unsigned char>(r[b - 1])))
      --b;
    total += std::stoull(r.substr(b, at - b));
  }
  return total;
}

// Session::memory_bytes without the arena, workspaces and folded values (which depend on the
// programs found: a program may compute an index vector once at load or in its kernels): the
// input and output buffers. Logits::All's logits output holds [max_step, vocab] F32,
// Logits::Last's one row; nothing else differs.
uint64_t buffer_bytes(Session& s, int64_t max_step) {
  uint64_t arena = 0, work = 0;
  for (int64_t step : {int64_t{1}, max_step}) {
    const Plan& p = s.plan({{"s", step}, {"c", step}});
    arena = std::max(arena, p.arena_bytes());
    work += p.workspace_bytes();
  }
  return s.memory_bytes() - arena - work - fold_bytes(s);
}

TEST(LastLogits, SessionHoldsOneRowOfLogits) {
  cpu::CpuBackend cpu(1);
  const DecoderShape big_all{.slots = 64, .max_step = 64, .logits = Logits::All};
  DecoderShape big_last = big_all;
  big_last.logits = Logits::Last;
  CausalLM all = CausalLM::random(tiny(), cpu, big_all, quick(), 7);
  CausalLM last = CausalLM::random(tiny(), cpu, big_last, quick(), 7);
  EXPECT_EQ(buffer_bytes(all.session(), 64) - buffer_bytes(last.session(), 64),
            63u * 131 * sizeof(float));
}

// A session's caches are marked set with no bytes written (a step writes its rows before they are
// read), so only the rope table is uploaded; the reference gets zeros.
TEST(InitState, SessionCachesAreNotWritten) {
  const Decoder d = build_decoder(tiny(), shape(Logits::Last));
  cpu::CpuBackend cpu(1);
  Session s(d.graph, cpu, quick());
  init_state(s, d);
  EXPECT_EQ(s.stats().bytes_uploaded, d.rope_inv_freq.size() * sizeof(float));
}

}  // namespace
}  // namespace luminal::models
