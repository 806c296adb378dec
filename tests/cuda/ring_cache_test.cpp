// The sliding layers' ring cache (DecoderShape::rolling_cache, nn::AttentionOptions::ring) on the
// CUDA rules, on the host: the fewest-kernels programs of the tiny Gemma 3's decode and prefill
// steps with a ring of window + max_step - 1 positions build (each step's rows written twice, at
// (c - s + i) mod the ring and that plus the ring, the window read as one slice) and their kernels
// compile for sm_90. On a GPU,
// tests/cuda/models_test.cpp (CudaRing) checks the sliding families' logits with the ring.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cuda/cuda_test_util.hpp"
#include "luminal/io/hf_config.hpp"
#include "luminal/models/decoder.hpp"
#include "support/tiny_models.hpp"

namespace luminal {
namespace {

TEST(CudaRingCache, DecodeAndPrefillProgramsCompile) {
  LUMINAL_REQUIRE_NVRTC();
  std::ifstream in(testing::tiny_models_dir() / "gemma3" / "config.json");
  std::stringstream text;
  text << in.rdbuf();
  const io::ModelConfig cfg = io::parse_config_json(text.str(), "gemma3");
  ASSERT_EQ(cfg.sliding_window.value_or(0), 4);
  std::vector<std::string> sources, whats;
  for (int step : {1, 3}) {
    models::DecoderShape shape{.slots = 64, .max_step = step};
    shape.rolling_cache = true;
    const models::Decoder d = models::build_decoder(cfg, shape);
    ASSERT_EQ(d.ring_rows, 2 * (4 + step - 1));
    const LlirGraph l = testing::cuda_seed_program(d.graph);
    EXPECT_GT(testing::kernel_count(l), 0u);
    testing::add_kernels(l, testing::spec_of(d.graph.dim_facts()), sources, whats);
  }
  testing::expect_compiles(sources, whats);
}

}  // namespace
}  // namespace luminal
