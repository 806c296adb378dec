// Model parity with transformers: tiny random-weight models of each family
// (scripts/models/make_tiny_models.py wrote them and their goldens with transformers) give the
// same logits on the reference and the CPU backend, the same greedy tokens up to a near tie, and
// a prefill split in two turns equals one prefill of the concatenation.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "luminal/cpu/cpu_backend.hpp"
#include "luminal/models/causal_lm.hpp"
#include "luminal/models/experts.hpp"
#include "luminal/nn/moe.hpp"
#include "luminal/runtime/session.hpp"
#include "support/expect_error.hpp"
#include "support/logits_check.hpp"
#include "support/tiny_models.hpp"

namespace luminal {
namespace {

namespace fs = std::filesystem;

fs::path models_dir() { return testing::tiny_models_dir(); }
nlohmann::json goldens(const std::string& name) { return testing::tiny_model_goldens(name); }

using testing::expect_close;
using testing::row;

int count_op(const LlirGraph& p, const std::string& op) {
  const auto mix = p.op_mix();
  const auto it = mix.find(op);
  return it == mix.end() ? 0 : it->second;
}

// Each golden prompt on the CPU session `lm` and the reference `ref`: the first and last
// positions' logits, then `lm`'s greedy tokens up to the golden's first near tie (top-2 margin
// below 1e-4). `what` names the model in the messages.
void expect_prompts_match_goldens(models::CausalLM& lm, models::CausalLM& ref,
                                  const nlohmann::json& gold, const std::string& what) {
  const int64_t V = lm.vocab_size();
  for (const nlohmann::json& p : gold.at("prompts")) {
    const std::vector<int32_t> ids = p.at("input_ids").get<std::vector<int32_t>>();
    const auto first = p.at("logits_first").get<std::vector<float>>();
    const auto last = p.at("logits_last").get<std::vector<float>>();
    for (models::CausalLM* m : {&lm, &ref}) {
      const std::string who = (m == &lm ? "cpu " : "reference ") + what;
      m->reset();
      const std::vector<float> logits = m->forward(ids);
      expect_close(row(logits, 0, V), first, 1e-5, 1e-5, who + " first position");
      expect_close(row(logits, static_cast<int64_t>(ids.size()) - 1, V), last, 1e-5, 1e-5,
                   who + " last position");
    }
    const auto want = p.at("greedy").at("generated_ids").get<std::vector<int32_t>>();
    const auto margins = p.at("greedy").at("margins").get<std::vector<double>>();
    lm.reset();
    const std::vector<int32_t> got = lm.generate_greedy(ids, static_cast<int>(want.size()));
    for (size_t t = 0; t < want.size(); ++t) {
      if (margins[t] < 1e-4) break;
      ASSERT_EQ(got[t], want[t]) << what << " greedy step " << t;
    }
  }
}

class Parity : public ::testing::TestWithParam<std::string> {};

TEST_P(Parity, LogitsGreedyTokensAndTwoTurns) {
  const std::string name = GetParam();
  const fs::path dir = models_dir() / name;
  ASSERT_TRUE(fs::exists(dir / "goldens.json")) << dir;
  const nlohmann::json gold = goldens(name);
  models::DecoderShape shape;
  shape.slots = 64;
  shape.max_step = 16;
  cpu::CpuBackend cpu(2);
  auto lm = models::CausalLM::load(dir, cpu, shape,
                                   CompileOptions().search_graph_limit(10).verbose(false));
  auto ref = models::CausalLM::load_reference(dir, shape);
  const int64_t V = lm.vocab_size();
  expect_prompts_match_goldens(lm, ref, gold, name);
  if (HasFatalFailure()) return;
  // Two turns: A then B on the filled cache equals one prefill of A + B.
  const nlohmann::json& two = gold.at("two_turn");
  const auto a = two.at("a").get<std::vector<int32_t>>();
  const auto b = two.at("b").get<std::vector<int32_t>>();
  const auto want_last = two.at("logits_last").get<std::vector<float>>();
  lm.reset();
  lm.forward(a);
  const std::vector<float> lb = lm.forward(b);
  expect_close(row(lb, static_cast<int64_t>(b.size()) - 1, V), want_last, 1e-5, 1e-5,
               name + " two turns");
  // rewind(a) after A + B: B again on top of A gives the same logits.
  lm.rewind(static_cast<int>(a.size()));
  EXPECT_EQ(lm.context(), static_cast<int>(a.size()));
  const std::vector<float> again = lm.forward(b);
  expect_close(row(again, static_cast<int64_t>(b.size()) - 1, V), want_last, 1e-5, 1e-5,
               name + " two turns after rewind");
  testing::expect_error([&] { lm.rewind(lm.context() + 1); }, {"cannot rewind"});
}

// Sampling in the graph through the whole model (llama3): seeded draws repeat and agree between
// the CPU backend and the reference, top-k = 1 is greedy, the repetition penalty sees the prompt
// and the generated tokens (carried set, cleared by reset), EOS ids and the callback stop. A
// model loaded without the sampler (the default) decodes the same greedy tokens and refuses to
// sample.
TEST(Generate, SampledInGraphOnBothRuntimes) {
  const fs::path dir = models_dir() / "llama3";
  models::DecoderShape shape;
  shape.slots = 64;
  shape.max_step = 16;
  const models::SamplerShape sampler{.sampler = true};
  cpu::CpuBackend cpu(2);
  auto lm = models::CausalLM::load(
      dir, cpu, shape, CompileOptions().search_graph_limit(4).verbose(false), {}, sampler);
  auto ref = models::CausalLM::load_reference(dir, shape, sampler);
  const std::vector<int32_t> ids = testing::sampling_test_prompt();
  const models::SamplingConfig cfg = testing::sampling_test_config();
  auto gen = [&](models::CausalLM& m, const models::SamplingConfig& c, int n) {
    return testing::generate_from_reset(m, ids, c, n);
  };
  const std::vector<int32_t> a = gen(lm, cfg, 12);
  ASSERT_EQ(a.size(), 12u);
  EXPECT_EQ(gen(lm, cfg, 12), a);
  EXPECT_EQ(gen(ref, cfg, 12), a);
  models::SamplingConfig other = cfg;
  other.seed = 12;
  EXPECT_NE(gen(lm, other, 12), a);
  lm.reset();
  const std::vector<int32_t> greedy = lm.generate_greedy(ids, 12);
  EXPECT_EQ(gen(lm, {.temperature = 1.0, .top_k = 1, .seed = 3}, 12), greedy);
  EXPECT_NE(gen(lm, {.temperature = 1.0, .seed = 3}, 12), greedy);
  // A huge penalty: no token of the prompt or of the generation repeats.
  const std::vector<int32_t> p = gen(lm, {.repetition_penalty = 1e6}, 16);
  std::vector<int32_t> all = ids;
  for (int32_t t : p) {
    EXPECT_EQ(std::find(all.begin(), all.end(), t), all.end()) << t;
    all.push_back(t);
  }
  EXPECT_EQ(gen(lm, {}, 12), greedy);  // reset() forgot the seen tokens
  // EOS: stop after the first occurrence of greedy[2] (returned, with stop = Eos).
  lm.reset();
  const size_t first =
      static_cast<size_t>(std::find(greedy.begin(), greedy.end(), greedy[2]) - greedy.begin());
  models::Generation g = lm.generate(ids, 12, {}, {}, {.eos_ids = {7, greedy[2]}});
  EXPECT_EQ(g.tokens, std::vector<int32_t>(greedy.begin(), greedy.begin() + first + 1));
  EXPECT_EQ(g.stop, models::Generation::Stop::Eos);
  lm.reset();
  int calls = 0;
  g = lm.generate(ids, 12, {}, [&](int32_t, std::string_view) { return ++calls < 2; });
  EXPECT_EQ(g.tokens.size(), 2u);
  EXPECT_EQ(g.stop, models::Generation::Stop::Callback);
  testing::expect_error([&] { lm.generate(ids, 4, {.top_p = 1.5}); }, {"top_p", "(0, 1]"});
  // Without the sampler: the argmax head only.
  auto plain = models::CausalLM::load_reference(dir, shape);
  EXPECT_TRUE(lm.has_sampler());
  EXPECT_FALSE(plain.has_sampler());
  const std::vector<int32_t> greedy6(greedy.begin(), greedy.begin() + 6);
  EXPECT_EQ(plain.generate_greedy(ids, 6), greedy6);
  plain.reset();
  EXPECT_EQ(plain.generate(ids, 6, {.top_k = 3, .top_p = 0.5, .seed = 4}).tokens, greedy6);
  plain.reset();
  testing::expect_error([&] { plain.generate(ids, 4, {.temperature = 0.5}); },
                        {"without the sampler", "SamplerShape::sampler = true"});
  testing::expect_error([&] { plain.generate(ids, 4, {.repetition_penalty = 1.1}); },
                        {"without the sampler"});
  // A sampler without top-p: the same draws for configs without it; configs with it rejected.
  auto no_p = models::CausalLM::load_reference(
      dir, shape, {.sampler = true, .filters = {.top_k = true, .top_p = false}});
  models::SamplingConfig k_only = cfg;
  k_only.top_p = 1;
  EXPECT_EQ(gen(no_p, k_only, 4), gen(ref, k_only, 4));
  testing::expect_error([&] { no_p.generate(ids, 4, cfg); },
                        {"without the top-p filter", "filters.top_p = true"});
}

INSTANTIATE_TEST_SUITE_P(Families, Parity, ::testing::ValuesIn(testing::float32_families()),
                         testing::family_case_name);

// The sliding layers' ring cache (DecoderShape::rolling_cache; window 4 in the three fixtures):
// with 2-token steps a ring of 5 positions (10 rows), wrapped over and over by the 8-token prompts
// fed in chunks,
// still gives the goldens' logits, greedy tokens and two turns on the CPU and the reference. A
// rewind the ring no longer holds (to 8 of 14 positions, where a ring of 5 keeps rewinds to 12 and
// later) is refused, and continue_from resets instead; with 6-token steps (9 rows) the same rewind
// is kept.
class SlidingRing : public ::testing::TestWithParam<std::string> {};

TEST_P(SlidingRing, GivesTheGoldensWithRowsForTheWindowAndOneStep) {
  const std::string name = GetParam();
  const fs::path dir = models_dir() / name;
  const nlohmann::json gold = goldens(name);
  for (int step : {2, 6}) {
    models::DecoderShape shape;
    shape.slots = 64;
    shape.max_step = step;
    shape.rolling_cache = true;
    const std::string what = name + " steps of " + std::to_string(step);
    cpu::CpuBackend cpu(2);
    auto lm = models::CausalLM::load(dir, cpu, shape,
                                     CompileOptions().search_graph_limit(6).verbose(false));
    auto ref = models::CausalLM::load_reference(dir, shape);
    ASSERT_EQ(lm.decoder().ring_rows, 2 * (4 + step - 1)) << what;
    int rings = 0;
    for (NodeId id : lm.decoder().graph.inputs()) {
      const Node& n = lm.decoder().graph.node(id);
      if (n.label.ends_with("k_cache")) rings += n.shape[0] == Expr(int64_t{2 * (4 + step - 1)});
    }
    EXPECT_GT(rings, 0) << what << ": no layer has a ring";
    const int64_t V = lm.vocab_size();
    expect_prompts_match_goldens(lm, ref, gold, what);
    if (HasFatalFailure()) return;
    const nlohmann::json& two = gold.at("two_turn");
    const auto a = two.at("a").get<std::vector<int32_t>>();
    const auto b = two.at("b").get<std::vector<int32_t>>();
    const auto want_last = two.at("logits_last").get<std::vector<float>>();
    lm.reset();
    lm.forward(a);
    const int64_t nb = static_cast<int64_t>(b.size());
    expect_close(row(lm.forward(b), nb - 1, V), want_last, 1e-5, 1e-5, what + " two turns");
    ASSERT_EQ(a.size(), 8u);
    ASSERT_EQ(b.size(), 6u);
    std::vector<int32_t> ab = a, a_other = a;  // (a_other: A, then another turn)
    ab.insert(ab.end(), b.begin(), b.end());
    a_other.insert(a_other.end(), {b[0] == 1 ? 2 : 1, 3, 4});
    if (step == 2) {
      EXPECT_FALSE(lm.can_rewind(8)) << what;
      EXPECT_FALSE(lm.can_rewind(11)) << what;
      EXPECT_TRUE(lm.can_rewind(12)) << what << " (positions 9 .. 11 still in the ring)";
      testing::expect_error([&] { lm.rewind(8); },
                            {"cannot rewind to 8 tokens", "ring cache (5 positions", "reset()"});
      // (A with another turn after it: the prefix A is not kept, all of it is fed again)
      EXPECT_EQ(lm.continue_from(a_other, {}), 0u) << what;
      EXPECT_EQ(lm.context(), 0);
      expect_close(row(lm.forward(ab), static_cast<int64_t>(ab.size()) - 1, V), want_last, 1e-5,
                   1e-5, what + " after continue_from reset");
    } else {
      EXPECT_TRUE(lm.can_rewind(8)) << what;
      EXPECT_EQ(lm.continue_from(a_other, {}), 8u) << what;
      expect_close(row(lm.forward(b), nb - 1, V), want_last, 1e-5, 1e-5,
                   what + " two turns after rewind");
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Families, SlidingRing,
                         ::testing::Values("gemma3", "mistral-swa", "qwen2-swa"),
                         testing::family_case_name);

// Mixtures of experts: the gathered form (the default) runs decode on cpu.ExpertMatmul, two per
// MoE layer (gate/up, down), reading only the chosen experts; the dense masked form (every expert
// on every token) gives the goldens' logits too and uses none.
class MoeForms : public ::testing::TestWithParam<std::string> {};

TEST_P(MoeForms, GatheredDecodeReadsChosenExpertsAndDenseAgrees) {
  const std::string name = GetParam();
  const fs::path dir = models_dir() / name;
  const nlohmann::json gold = goldens(name);
  const auto opts = CompileOptions().search_graph_limit(10).verbose(false);
  cpu::CpuBackend cpu(2);
  for (models::MoeForm form : {models::MoeForm::Gathered, models::MoeForm::Dense}) {
    const bool gathered = form == models::MoeForm::Gathered;
    models::DecoderShape shape;
    shape.slots = 64;
    shape.max_step = 16;
    shape.moe = form;
    auto lm = models::CausalLM::load(dir, cpu, shape, opts);
    const int64_t layers = lm.decoder().config.num_hidden_layers;
    const LlirGraph& decode = lm.session().llir({{"s", 1}, {"c", 1}});
    EXPECT_EQ(count_op(decode, "cpu.ExpertMatmul"), gathered ? 2 * layers : 0)
        << name << (gathered ? " gathered" : " dense") << "\n"
        << decode.to_text();
    const int64_t V = lm.vocab_size();
    for (const nlohmann::json& p : gold.at("prompts")) {
      const std::vector<int32_t> ids = p.at("input_ids").get<std::vector<int32_t>>();
      lm.reset();
      const std::vector<float> logits = lm.forward(ids);
      expect_close(row(logits, static_cast<int64_t>(ids.size()) - 1, V),
                   p.at("logits_last").get<std::vector<float>>(), 1e-5, 1e-5,
                   name + (gathered ? " gathered" : " dense"));
      const auto want = p.at("greedy").at("generated_ids").get<std::vector<int32_t>>();
      const auto margins = p.at("greedy").at("margins").get<std::vector<double>>();
      lm.reset();
      const std::vector<int32_t> got = lm.generate_greedy(ids, static_cast<int>(want.size()));
      for (size_t t = 0; t < want.size() && margins[t] >= 1e-4; ++t)
        ASSERT_EQ(got[t], want[t]) << name << " greedy step " << t;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Families, MoeForms, ::testing::Values("qwen3-moe", "mixtral"),
                         testing::family_case_name);

// The router's top-k forced to each form (nn::TopKForm: repeated argmax, pairwise ranks; the
// default offers both to the search): the same logits and greedy tokens as transformers.
TEST_P(MoeForms, EachRouterFormGivesTheGoldens) {
  const std::string name = GetParam();
  const nlohmann::json gold = goldens(name);
  const auto opts = CompileOptions().search_graph_limit(6).verbose(false);
  cpu::CpuBackend cpu(2);
  for (nn::TopKForm router : {nn::TopKForm::Argmax, nn::TopKForm::Ranks}) {
    const std::string what = name + (router == nn::TopKForm::Argmax ? " argmax" : " ranks");
    models::DecoderShape shape;
    shape.slots = 64;
    shape.max_step = 16;
    shape.router = router;
    auto lm = models::CausalLM::load(models_dir() / name, cpu, shape, opts);
    EXPECT_TRUE(lm.decoder().graph.alternatives().empty()) << what;
    const int64_t V = lm.vocab_size();
    for (const nlohmann::json& p : gold.at("prompts")) {
      const std::vector<int32_t> ids = p.at("input_ids").get<std::vector<int32_t>>();
      lm.reset();
      const std::vector<float> logits = lm.forward(ids);
      expect_close(row(logits, static_cast<int64_t>(ids.size()) - 1, V),
                   p.at("logits_last").get<std::vector<float>>(), 1e-5, 1e-5, what);
      const auto want = p.at("greedy").at("generated_ids").get<std::vector<int32_t>>();
      const auto margins = p.at("greedy").at("margins").get<std::vector<double>>();
      lm.reset();
      const std::vector<int32_t> got = lm.generate_greedy(ids, static_cast<int>(want.size()));
      for (size_t t = 0; t < want.size() && margins[t] >= 1e-4; ++t)
        ASSERT_EQ(got[t], want[t]) << what << " greedy step " << t;
    }
  }
}

// The same model from a GGUF file (tests/data/gguf/models, written by
// scripts/gguf/make_model_fixtures.py with llama.cpp's Q/K row permutation): the weights come back
// exactly, so the logits and greedy tokens equal the folder's.
TEST(Gguf, Llama3FromGgufEqualsTheFolder) {
  const fs::path gguf =
      fs::path(LUMINAL_SOURCE_DIR) / "tests" / "data" / "gguf" / "models" / "llama3-f32.gguf";
  models::DecoderShape shape;
  shape.slots = 64;
  shape.max_step = 16;
  cpu::CpuBackend cpu(2);
  const auto opts = CompileOptions().search_graph_limit(4).verbose(false);
  auto folder = models::CausalLM::load(models_dir() / "llama3", cpu, shape, opts);
  auto file = models::CausalLM::load(gguf, cpu, shape, opts);
  const std::vector<int32_t> ids = {1, 17, 42, 99, 5, 200, 3, 64};
  const std::vector<float> a = folder.forward(ids), b = file.forward(ids);
  expect_close(b, a, 1e-6, 1e-6, "gguf vs folder logits");
  folder.reset();
  file.reset();
  EXPECT_EQ(file.generate_greedy(ids, 16), folder.generate_greedy(ids, 16));
}

// Qwen3-MoE and Mixtral from GGUF files that llama.cpp's convert_hf_to_gguf.py wrote from the
// tiny folders (scripts/models/make_moe_ggufs.py): qwen3moe, and llama with ffn_*_exps. In f32 the
// weights come back exactly (the stacked experts, Mixtral's Q/K rows un-permuted), so the logits
// and greedy tokens equal the folder's. In Q8_0 the experts stay as stored blocks and decode reads
// them through cpu.ExpertMatmul's quantized path; the logits stay within the 8-bit rounding.
class GgufMoe : public ::testing::TestWithParam<std::string> {};

TEST_P(GgufMoe, EqualsTheFolder) {
  const std::string name = GetParam();
  const fs::path dir = fs::path(LUMINAL_SOURCE_DIR) / "tests" / "data" / "gguf" / "models";
  models::DecoderShape shape;
  shape.slots = 64;
  shape.max_step = 16;
  cpu::CpuBackend cpu(2);
  const auto opts = CompileOptions().search_graph_limit(4).verbose(false);
  auto folder = models::CausalLM::load(models_dir() / name, cpu, shape, opts);
  auto f32 = models::CausalLM::load(dir / (name + "-f32.gguf"), cpu, shape, opts);
  auto q8 = models::CausalLM::load(dir / (name + "-q8_0.gguf"), cpu, shape, opts);
  EXPECT_EQ(f32.decoder().config.family, folder.decoder().config.family);
  EXPECT_EQ(f32.decoder().config.num_experts, folder.decoder().config.num_experts);
  const std::vector<int32_t> ids = {1, 17, 42, 99, 5, 200, 3, 64};
  const std::vector<float> a = folder.forward(ids), b = f32.forward(ids), c = q8.forward(ids);
  expect_close(b, a, 1e-6, 1e-6, name + " f32 gguf vs folder logits");
  // Q8_0: the weights' rounding moves the largest logit by up to 2.5% here (mixtral: the same
  // with LUMINAL_QUANT=off, weights dequantised to f32); the 8-bit activations add little.
  double worst = 0, largest = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    worst = std::max(worst, static_cast<double>(std::fabs(c[i] - a[i])));
    largest = std::max(largest, static_cast<double>(std::fabs(a[i])));
  }
  EXPECT_LT(worst, 0.04 * largest)
      << name << " q8_0 gguf vs folder: largest logit difference " << worst << " of " << largest;
  EXPECT_GT(worst, 0.0) << name << " q8_0: the blocks were not read as stored";
  folder.reset();
  f32.reset();
  EXPECT_EQ(f32.generate_greedy(ids, 16), folder.generate_greedy(ids, 16));
  const int64_t layers = folder.decoder().config.num_hidden_layers;
  const LlirGraph& decode = q8.session().llir({{"s", 1}, {"c", 1}});
  EXPECT_EQ(count_op(decode, "cpu.ExpertMatmul"), 2 * layers) << decode.to_text();
  EXPECT_EQ(q8.decoder().shape.block_weights.count("model.layers.0." +
                                                   models::moe_block_prefix(q8.decoder().config) +
                                                   "experts.gate_up_proj"),
            1u);
}

INSTANTIATE_TEST_SUITE_P(Families, GgufMoe, ::testing::Values("qwen3-moe", "mixtral"),
                         testing::family_case_name);

}  // namespace
}  // namespace luminal
