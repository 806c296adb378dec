#pragma once
// The tiny transformers models of scripts/models/make_tiny_models.py (tests/data/models): their
// folder and goldens, the 16-bit checkpoints the dtype parity suites run, and the prompt and
// settings the in-graph sampling tests draw with, for the parity suites of the CPU and CUDA
// backends (the including test defines LUMINAL_SOURCE_DIR).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "luminal/core/dtype.hpp"
#include "luminal/models/causal_lm.hpp"

namespace luminal::testing {

inline std::filesystem::path tiny_models_dir() {
  return std::filesystem::path(LUMINAL_SOURCE_DIR) / "tests" / "data" / "models";
}

inline nlohmann::json tiny_model_goldens(const std::string& name) {
  std::ifstream in(tiny_models_dir() / name / "goldens.json");
  return nlohmann::json::parse(in);
}

/// The float32 checkpoints every parity suite runs (CPU and CUDA), with family_case_name:
///   INSTANTIATE_TEST_SUITE_P(Families, Suite, ::testing::ValuesIn(testing::float32_families()),
///                            testing::family_case_name);
inline std::vector<std::string> float32_families() {
  return {"llama3",    "qwen2",  "qwen3",     "mistral", "mistral-swa",
          "qwen2-swa", "gemma3", "qwen3-moe", "mixtral"};
}

/// A gtest name for a folder name ("qwen3-moe" -> "qwen3_moe").
inline std::string family_case_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string n = info.param;
  std::replace(n.begin(), n.end(), '-', '_');
  return n;
}

/// A checkpoint saved in a 16-bit dtype, run in that dtype (DecoderShape::dtype).
struct DtypeCase {
  std::string name;  // folder under tests/data/models
  DType dtype;
};

inline void PrintTo(const DtypeCase& c, std::ostream* os) { *os << c.name; }

/// The 16-bit checkpoints: llama3 and qwen3 in bf16 and in f16. With dtype_case_name:
///   INSTANTIATE_TEST_SUITE_P(Families, Suite, ::testing::ValuesIn(testing::dtype_cases()),
///                            testing::dtype_case_name);
inline std::vector<DtypeCase> dtype_cases() {
  return {{"llama3-bf16", DType::BF16},
          {"llama3-f16", DType::F16},
          {"qwen3-bf16", DType::BF16},
          {"qwen3-f16", DType::F16}};
}

/// A case's test name: its folder with '-' as '_' ("llama3_bf16").
inline std::string dtype_case_name(const ::testing::TestParamInfo<DtypeCase>& info) {
  return family_case_name(::testing::TestParamInfo<std::string>(info.param.name, info.index));
}

/// The prompt the in-graph sampling tests draw from (llama3 with the sampler): one of llama3's
/// golden prompts, so its greedy tokens are known too.
inline std::vector<int32_t> sampling_test_prompt() { return {1, 17, 42, 99, 5, 200, 3, 64}; }

/// The seeded settings they draw with: every filter on, and a repetition penalty.
inline models::SamplingConfig sampling_test_config() {
  return {.temperature = 0.8,
          .top_k = 20,
          .top_p = 0.9,
          .min_p = 0.02,
          .repetition_penalty = 1.2,
          .seed = 11};
}

/// reset(), then the `n` tokens that generate(prompt, n, config) gives.
inline std::vector<int32_t> generate_from_reset(models::CausalLM& lm,
                                                const std::vector<int32_t>& prompt,
                                                const models::SamplingConfig& config, int n) {
  lm.reset();
  return lm.generate(prompt, n, config).tokens;
}

}  // namespace luminal::testing
