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

namespace luminal {
namespace {

namespace fs = std::filesystem;

fs::path models_dir() { return fs::path(LUMINAL_SOURCE_DIR) / "tests" / "data" / "models"; }

nlohmann::json goldens(const std::string& name) {
  std::ifstream in(models_dir() / name / "goldens.json");
  return nlohmann::json::parse(in);
}

// |a - b| <= atol + rtol * |b| for every element, reporting the worst one.
void expect_close(const std::vector<float>& got, const std::vector<float>& want, double atol,
                  double rtol, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  double worst = 0;
  size_t at = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double excess = std::fabs(got[i] - want[i]) - (atol + rtol * std::fabs(want[i]));
    if (excess > worst) worst = excess, at = i;
  }
  EXPECT_LE(worst, 0.0) << what << ": element " << at << " is " << got[at] << ", want " << want[at];
}

std::vector<float> row(const std::vector<float>& logits, int64_t r, int64_t vocab) {
  return {logits.begin() + r * vocab, logits.begin() + (r + 1) * vocab};
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
  for (const nlohmann::json& p : gold.at("prompts")) {
    const std::vector<int32_t> ids = p.at("input_ids").get<std::vector<int32_t>>();
    const auto first = p.at("logits_first").get<std::vector<float>>();
    const auto last = p.at("logits_last").get<std::vector<float>>();
    for (models::CausalLM* m : {&lm, &ref}) {
      const std::string who = (m == &lm ? "cpu " : "reference ") + name;
      m->reset();
      const std::vector<float> logits = m->forward(ids);
      expect_close(row(logits, 0, V), first, 1e-5, 1e-5, who + " first position");
      expect_close(row(logits, static_cast<int64_t>(ids.size()) - 1, V), last, 1e-5, 1e-5,
                   who + " last position");
    }
    // Greedy tokens equal up to the first near tie of the golden (top-2 margin below 1e-4).
    const auto want = p.at("greedy").at("generated_ids").get<std::vector<int32_t>>();
    const auto margins = p.at("greedy").at("margins").get<std::vector<double>>();
    lm.reset();
    const std::vector<int32_t> got = lm.generate_greedy(ids, static_cast<int>(want.size()));
    for (size_t t = 0; t < want.size(); ++t) {
      if (margins[t] < 1e-4) break;
      ASSERT_EQ(got[t], want[t]) << name << " greedy step " << t;
    }
  }
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
}

INSTANTIATE_TEST_SUITE_P(Families, Parity, ::testing::Values("llama3", "qwen2", "qwen3", "mistral"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace luminal
