// Sampling defaults from generation_config.json (models::read_generation_config): transformers'
// defaults where a sampling file is silent, greedy with the file's penalty otherwise, invalid
// settings named with the file.
#include <gtest/gtest.h>

#include <unistd.h>
#include <filesystem>
#include <fstream>
#include <string>

#include "luminal/models/model_files.hpp"
#include "support/expect_error.hpp"

namespace luminal::models {
namespace {

namespace fs = std::filesystem;

// A folder holding generation_config.json with `text` (none when empty).
fs::path folder_with(const std::string& text) {
  static int n = 0;
  const fs::path dir =
      fs::temp_directory_path() /
      ("luminal_gen_config_" + std::to_string(getpid()) + "_" + std::to_string(n++));
  fs::remove_all(dir);
  fs::create_directories(dir);
  if (!text.empty()) std::ofstream(dir / "generation_config.json") << text;
  return dir;
}

TEST(GenerationDefaults, SamplingFileWithTransformersDefaults) {
  const GenerationDefaults d = read_generation_config(
      folder_with(R"({"do_sample": true, "top_p": 0.9, "eos_token_id": 2})"));
  EXPECT_TRUE(d.do_sample);
  EXPECT_EQ(d.eos_ids, std::vector<int64_t>{2});
  EXPECT_EQ(d.sampling.temperature, 1.0);
  EXPECT_EQ(d.sampling.top_k, 50);
  EXPECT_EQ(d.sampling.top_p, 0.9);
  EXPECT_EQ(d.sampling.repetition_penalty, 1.0);
}

TEST(GenerationDefaults, GreedyKeepsThePenalty) {
  GenerationDefaults d = read_generation_config(
      folder_with(R"({"temperature": 0.7, "top_k": 5, "repetition_penalty": 1.2})"));
  EXPECT_FALSE(d.do_sample);
  EXPECT_EQ(d.sampling.temperature, 0.0);
  EXPECT_EQ(d.sampling.top_k, 0);
  EXPECT_EQ(d.sampling.repetition_penalty, 1.2);
  d = read_generation_config(folder_with(R"({"repetition_penalty": -1})"));
  EXPECT_EQ(d.sampling.repetition_penalty, 1.0) << "a penalty <= 0 is ignored when greedy";
  d = read_generation_config(folder_with(""));
  EXPECT_FALSE(d.do_sample);
  EXPECT_TRUE(d.eos_ids.empty());
}

TEST(GenerationDefaults, InvalidSettingsNameTheFile) {
  const fs::path dir = folder_with(R"({"do_sample": true, "top_p": 1.5})");
  testing::expect_error([&] { read_generation_config(dir); },
                        {(dir / "generation_config.json").string(), "top_p"});
}

}  // namespace
}  // namespace luminal::models
