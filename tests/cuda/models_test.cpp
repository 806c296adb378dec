// GPU suite (skips without a GPU): the tiny transformers models of tests/data/models on the CUDA
// backend. Logits match the goldens recorded with transformers, greedy tokens are equal up to the
// first near tie, and a second turn on the filled cache equals one prefill of both turns.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cuda/cuda_test_util.hpp"
#include "luminal/models/causal_lm.hpp"
#include "support/logits_check.hpp"
#include "support/tiny_models.hpp"

namespace luminal {
namespace {

namespace fs = std::filesystem;

fs::path models_dir() { return testing::tiny_models_dir(); }

using testing::expect_close;
using testing::row;

class CudaParity : public ::testing::TestWithParam<std::string> {};

TEST_P(CudaParity, LogitsGreedyTokensAndTwoTurns) {
  LUMINAL_REQUIRE_GPU();
  const std::string name = GetParam();
  const fs::path dir = models_dir() / name;
  std::ifstream in(dir / "goldens.json");
  const nlohmann::json gold = nlohmann::json::parse(in);
  models::DecoderShape shape;
  shape.slots = 64;
  shape.max_step = 16;
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
}

INSTANTIATE_TEST_SUITE_P(Families, CudaParity,
                         ::testing::Values("llama3", "qwen2", "qwen3", "mistral"));

}  // namespace
}  // namespace luminal
