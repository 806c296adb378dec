// GPU suite (skips without a GPU): the tiny transformers models of tests/data/models on the CUDA
// backend. Logits match the goldens recorded with transformers, greedy tokens are equal up to the
// first near tie, and a second turn on the filled cache equals one prefill of both turns; the
// sliding families also with their ring cache (DecoderShape::rolling_cache).
// The bf16 and f16 checkpoints run in their dtype (DecoderShape::dtype) within the bound of
// tests/models/parity_dtype_test.cpp (atol = twice the noise transformers itself shows in that
// dtype, no relative term; a golden moved by 2 atol fails), with weights and KV cache in the dtype
// and logits that are not the f32 run's. Sampling in the graph (llama3 with the sampler): a seeded
// run repeats and equals the CPU backend's draws, another seed draws otherwise, temperature 0 and
// top-k 1 are the greedy sequence.
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cuda/cuda_test_util.hpp"
#include "luminal/cpu/cpu_backend.hpp"
#include "luminal/models/causal_lm.hpp"
#include "support/logits_check.hpp"
#include "support/tiny_models.hpp"

namespace luminal {
namespace {

namespace fs = std::filesystem;

fs::path models_dir() { return testing::tiny_models_dir(); }

using testing::DtypeCase;
using testing::expect_close;
using testing::max_abs_diff;
using testing::row;

// ring: the sliding layers' ring cache (DecoderShape::rolling_cache) with 3-token steps, a ring
// of window + 2 positions (12 rows) that the prompts, fed in chunks, wrap several times.
void expect_cuda_parity(const std::string& name, bool ring) {
  const fs::path dir = models_dir() / name;
  std::ifstream in(dir / "goldens.json");
  const nlohmann::json gold = nlohmann::json::parse(in);
  models::DecoderShape shape;
  shape.slots = 64;
  shape.max_step = ring ? 3 : 16;
  shape.rolling_cache = ring;
  auto lm = models::CausalLM::load(dir, testing::gpu(), shape,
                                   CompileOptions().search_graph_limit(10).verbose(false));
  const int64_t V = lm.vocab_size();
  for (const nlohmann::json& p : gold.at("prompts")) {
    const auto ids = p.at("input_ids").get<std::vector<int32_t>>();
    lm.reset();
    const std::vector<float> logits = lm.forward(ids);
    expect_close(row(logits, 0, V), p.at("logits_first").get<std::vector<float>>(), 1e-4, 1e-4,
                 name + " first position");
    expect_close(row(logits, static_cast<int64_t>(ids.size()) - 1, V),
                 p.at("logits_last").get<std::vector<float>>(), 1e-4, 1e-4,
                 name + " last position");
    const auto want = p.at("greedy").at("generated_ids").get<std::vector<int32_t>>();
    const auto margins = p.at("greedy").at("margins").get<std::vector<double>>();
    lm.reset();
    const std::vector<int32_t> got = lm.generate_greedy(ids, static_cast<int>(want.size()));
    for (size_t t = 0; t < want.size(); ++t) {
      if (margins[t] < 1e-3) break;
      ASSERT_EQ(got[t], want[t]) << name << " greedy step " << t;
    }
  }
  const nlohmann::json& two = gold.at("two_turn");
  lm.reset();
  lm.forward(two.at("a").get<std::vector<int32_t>>());
  const auto b = two.at("b").get<std::vector<int32_t>>();
  const std::vector<float> lb = lm.forward(b);
  expect_close(row(lb, static_cast<int64_t>(b.size()) - 1, V),
               two.at("logits_last").get<std::vector<float>>(), 1e-4, 1e-4, name + " two turns");
  EXPECT_EQ(lm.decoder().ring_rows, ring ? 12 : 0) << name;
}

class CudaParity : public ::testing::TestWithParam<std::string> {};

TEST_P(CudaParity, LogitsGreedyTokensAndTwoTurns) {
  LUMINAL_REQUIRE_GPU();
  expect_cuda_parity(GetParam(), false);
}

INSTANTIATE_TEST_SUITE_P(Families, CudaParity, ::testing::ValuesIn(testing::float32_families()),
                         testing::family_case_name);

class CudaRing : public ::testing::TestWithParam<std::string> {};

TEST_P(CudaRing, LogitsGreedyTokensAndTwoTurnsWithARingCache) {
  LUMINAL_REQUIRE_GPU();
  expect_cuda_parity(GetParam(), true);
}

INSTANTIATE_TEST_SUITE_P(Families, CudaRing,
                         ::testing::Values("gemma3", "mistral-swa", "qwen2-swa"),
                         testing::family_case_name);

// The window read in bf16 (off by default on CUDA): cuda.Attention reads the bf16 cache at the
// window's run-time row (tests/cuda/ring_cache_test.cpp shows no copy is made). The tiny Gemma 3
// (window 4) run in bf16 with the window read and with the masked form gives logits within bf16's
// noise of each other, through a prefill past the window and decode steps after it.
TEST(CudaWindowRead, Bf16GemmaMatchesTheMaskedForm) {
  LUMINAL_REQUIRE_GPU();
  const fs::path dir = models_dir() / "gemma3";
  std::ifstream in(dir / "goldens.json");
  const nlohmann::json gold = nlohmann::json::parse(in);
  auto load = [&](bool window_read) {
    models::DecoderShape shape;
    shape.slots = 64;
    shape.max_step = 16;
    shape.dtype = DType::BF16;
    shape.window_read = window_read;
    return models::CausalLM::load(dir, testing::gpu(), shape,
                                  CompileOptions().search_graph_limit(10).verbose(false));
  };
  auto masked = load(false), windowed = load(true);
  const int64_t V = masked.vocab_size();
  for (const nlohmann::json& p : gold.at("prompts")) {
    const auto ids = p.at("input_ids").get<std::vector<int32_t>>();
    masked.reset();
    windowed.reset();
    const std::vector<float> a = masked.forward(ids), b = windowed.forward(ids);
    for (int64_t r = 0; r < static_cast<int64_t>(ids.size()); ++r)
      expect_close(row(b, r, V), row(a, r, V), 3e-2, 3e-2,
                   "gemma3 bf16, window read against masked, position " + std::to_string(r));
    // (then decode steps past the window, each token fed to both)
    for (int t = 0; t < 8; ++t) {
      const std::vector<float> la = masked.forward({7 + t}), lb = windowed.forward({7 + t});
      expect_close(lb, la, 3e-2, 3e-2, "gemma3 bf16 decode step " + std::to_string(t));
    }
  }
}

// The 16-bit checkpoints in their dtype, as parity_dtype_test.cpp runs them on the CPU.
class CudaParityDtype : public ::testing::TestWithParam<DtypeCase> {};

TEST_P(CudaParityDtype, LogitsWithinTheDtypesNoise) {
  LUMINAL_REQUIRE_GPU();
  const DtypeCase c = GetParam();
  const nlohmann::json gold = testing::tiny_model_goldens(c.name);
  const double atol = gold.at("atol").get<double>();
  ASSERT_LT(atol, c.dtype == DType::BF16 ? 0.1 : 0.015) << c.name;
  models::DecoderShape shape;
  shape.slots = 16;
  shape.max_step = 8;
  shape.dtype = c.dtype;
  auto lm = models::CausalLM::load(models_dir() / c.name, testing::gpu(), shape,
                                   CompileOptions().search_graph_limit(10).verbose(false));
  const Graph& g = lm.decoder().graph;
  EXPECT_EQ(g.node(g.find("model.embed_tokens.weight")).dtype, c.dtype);
  EXPECT_EQ(g.node(g.find("model.layers.0.self_attn.k_cache")).dtype, c.dtype);
  const int64_t V = lm.vocab_size();
  const nlohmann::json& prompts = gold.at("prompts");
  for (size_t pi = 0; pi < prompts.size(); ++pi) {
    const nlohmann::json& p = prompts[pi];
    const auto ids = p.at("input_ids").get<std::vector<int32_t>>();
    const auto last_row = static_cast<int64_t>(ids.size()) - 1;
    lm.reset();
    const std::vector<float> logits = lm.forward(ids);
    for (const auto& [key, r] : {std::pair{"first", int64_t{0}}, std::pair{"last", last_row}}) {
      const std::vector<float> got = row(logits, r, V);
      const auto want = p.at(std::string("logits_") + key).get<std::vector<float>>();
      const std::string what = c.name + " prompt " + std::to_string(pi) + " " + key;
      expect_close(got, want, atol, 0, what + " position");
      std::vector<float> moved = want;
      const auto top = std::max_element(want.begin(), want.end()) - want.begin();
      moved[static_cast<size_t>(top)] += static_cast<float>(2 * atol);
      EXPECT_NONFATAL_FAILURE(expect_close(got, moved, atol, 0, "moved golden"), "moved golden");
      // 16-bit arithmetic happened: the logits are not the f32 run's.
      EXPECT_GT(max_abs_diff(got, p.at(std::string("logits_f32_") + key).get<std::vector<float>>()),
                1e-4)
          << what;
      RecordProperty(what, "max_abs_diff " + std::to_string(max_abs_diff(got, want)));
    }
    // The last token decoded alone on the 16-bit cache the prefill wrote.
    lm.reset();
    lm.forward(std::vector<int32_t>(ids.begin(), ids.end() - 1));
    expect_close(lm.forward({ids.back()}), p.at("logits_last").get<std::vector<float>>(), atol, 0,
                 c.name + " last position decoded on the cache");
  }
}

INSTANTIATE_TEST_SUITE_P(Families, CudaParityDtype, ::testing::ValuesIn(testing::dtype_cases()),
                         testing::dtype_case_name);

// Sampling in the graph on the GPU, through the C++ API (llama3 with the sampler).
TEST(CudaGenerate, SampledInGraph) {
  LUMINAL_REQUIRE_GPU();
  const fs::path dir = models_dir() / "llama3";
  models::DecoderShape shape;
  shape.slots = 64;
  shape.max_step = 16;
  const models::SamplerShape sampler{.sampler = true};
  auto lm =
      models::CausalLM::load(dir, testing::gpu(), shape,
                             CompileOptions().search_graph_limit(4).verbose(false), {}, sampler);
  ASSERT_TRUE(lm.has_sampler());
  const std::vector<int32_t> ids = testing::sampling_test_prompt();
  const models::SamplingConfig cfg = testing::sampling_test_config();
  auto gen = [&](models::CausalLM& m, const models::SamplingConfig& sc, int n) {
    return testing::generate_from_reset(m, ids, sc, n);
  };
  const std::vector<int32_t> a = gen(lm, cfg, 12);
  ASSERT_EQ(a.size(), 12u);
  EXPECT_EQ(gen(lm, cfg, 12), a) << "the same seed again";
  models::SamplingConfig other = cfg;
  other.seed = 12;
  EXPECT_NE(gen(lm, other, 12), a) << "another seed";
  // The CPU backend draws the same tokens (the hash and its uniforms are bit-exact; the logits
  // agree to ~1e-6, far from any near tie of this prompt).
  cpu::CpuBackend cpu(2);
  auto on_cpu = models::CausalLM::load(
      dir, cpu, shape, CompileOptions().search_graph_limit(4).verbose(false), {}, sampler);
  EXPECT_EQ(gen(on_cpu, cfg, 12), a) << "the CPU backend's draws";
  // Greedy: transformers' ids (the goldens), also as temperature 0 and as top-k 1.
  const nlohmann::json gold = testing::tiny_model_goldens("llama3");
  const nlohmann::json* greedy_gold = nullptr;
  for (const nlohmann::json& p : gold.at("prompts"))
    if (p.at("input_ids").get<std::vector<int32_t>>() == ids) greedy_gold = &p.at("greedy");
  lm.reset();
  const std::vector<int32_t> greedy = lm.generate_greedy(ids, 12);
  ASSERT_NE(greedy_gold, nullptr) << "no golden prompt equals the sampling prompt";
  {
    const auto want = greedy_gold->at("generated_ids").get<std::vector<int32_t>>();
    const auto margins = greedy_gold->at("margins").get<std::vector<double>>();
    for (size_t t = 0; t < greedy.size() && t < want.size() && margins[t] >= 1e-3; ++t)
      EXPECT_EQ(greedy[t], want[t]) << "greedy step " << t;
  }
  EXPECT_EQ(gen(lm, {}, 12), greedy);
  EXPECT_EQ(gen(lm, {.temperature = 1.0, .top_k = 1, .seed = 3}, 12), greedy);
  EXPECT_NE(gen(lm, {.temperature = 1.0, .seed = 3}, 12), greedy);
}

}  // namespace
}  // namespace luminal
