// Load progress through models::open_weights and CausalLM::load: a GGUF file reports
// "dequantising", then "caching" when the cache is on (a later open maps the copy: no report),
// then "binding"; each stage from 0 to done == total, never decreasing.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "luminal/cpu/cpu_backend.hpp"
#include "luminal/io/progress.hpp"
#include "luminal/models/causal_lm.hpp"
#include "luminal/models/model_files.hpp"
#include "support/test_data.hpp"

namespace luminal::models {
namespace {

namespace fs = std::filesystem;

fs::path llama3_gguf() {
  return testing::gguf_data_dir("models/expected.json") / "models" / "llama3-f32.gguf";
}

struct Stage {
  std::string name;
  uint64_t total = 0;
};

// Records the calls and checks them as they come: stages in turn, each from 0 to its total.
struct Recorder {
  std::vector<Stage> stages;  // in order, each once complete
  uint64_t last = 0;
  bool open = false;
  io::LoadProgress callback() {
    return [this](std::string_view stage, uint64_t done, uint64_t total) {
      if (!open) {
        EXPECT_EQ(done, 0u) << stage << ": a stage starts at 0";
        stages.push_back({std::string(stage), total});
        open = true;
      } else {
        EXPECT_EQ(stage, stages.back().name) << "a stage ended before done == total";
        EXPECT_EQ(total, stages.back().total);
        EXPECT_GE(done, last) << stage;
      }
      last = done;
      if (done == total) open = false;
    };
  }
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const Stage& s : stages)
      out.push_back(s.name);
    return out;
  }
};

TEST(LoadProgress, CausalLmFromGguf) {
  ::setenv("LUMINAL_CACHE", "off", 1);  // as ctest runs it: no dequantised copy
  ::setenv("LUMINAL_QUANT", "off", 1);  // every weight widened: the dequantising stage
  models::DecoderShape shape;
  shape.slots = 32;
  shape.max_step = 8;
  cpu::CpuBackend cpu(1);
  Recorder r;
  auto lm = CausalLM::load(llama3_gguf(), cpu, shape,
                           CompileOptions().search_graph_limit(2).verbose(false), r.callback());
  EXPECT_FALSE(r.open) << "a stage did not reach its total";
  ASSERT_EQ(r.names(), (std::vector<std::string>{"dequantising", "binding"}));
  EXPECT_GT(r.stages[0].total, 0u);
  EXPECT_EQ(r.stages[1].total, r.stages[0].total);  // every f32 weight feeds the graph
  EXPECT_EQ(lm.forward({1, 2, 3}).size(), 3u * static_cast<size_t>(lm.vocab_size()));
  ::unsetenv("LUMINAL_QUANT");
  // By default the CPU maps an f32 file's weights as they are: nothing to dequantise.
  Recorder mapped;
  auto lm2 =
      CausalLM::load(llama3_gguf(), cpu, shape,
                     CompileOptions().search_graph_limit(2).verbose(false), mapped.callback());
  EXPECT_EQ(mapped.names(), (std::vector<std::string>{"binding"}));
}

TEST(LoadProgress, OpenWeightsWritesThenMapsTheCachedCopy) {
  const fs::path cache =
      fs::temp_directory_path() / ("luminal_load_progress_cache_" + std::to_string(::getpid()));
  fs::remove_all(cache);
  ::setenv("LUMINAL_CACHE", "on", 1);
  const CompileOptions opts = CompileOptions().cache_dir(cache);
  const ModelFiles m = open_model(llama3_gguf(), {.tokenizer = false});
  Recorder first;
  const auto w1 = open_weights(m, opts, first.callback());
  EXPECT_FALSE(first.open);
  ASSERT_EQ(first.names(), (std::vector<std::string>{"dequantising", "caching"}));
  EXPECT_EQ(first.stages[1].total, w1->files().at(0).buffer().size());
  ASSERT_TRUE(fs::exists(dequantized_path(m.path, opts)));
  Recorder second;
  const auto w2 = open_weights(m, opts, second.callback());
  EXPECT_TRUE(second.stages.empty()) << "the cached copy is mapped, not read";
  EXPECT_EQ(w2->names(), w1->names());
  ::setenv("LUMINAL_CACHE", "off", 1);
  fs::remove_all(cache);
}

}  // namespace
}  // namespace luminal::models
