// The sliding layers' windowed cache reads on the CUDA rules, on the host. A Gemma-3-1B-shaped
// bf16 decode (two layers) with the window read or the ring: cuda.Attention reads the bf16 cache
// at the window's run-time row (the offset kept in its view, matmul_operands.hpp's compose), so
// no Cast kernel copies the window to f32 (two a sliding layer before), and its kernels compile
// for sm_90. The ring cache (DecoderShape::rolling_cache, nn::AttentionOptions::ring): the
// fewest-kernels programs of the tiny Gemma 3's decode and prefill steps with a ring of window +
// max_step - 1 positions build (each step's rows written twice, at (c - s + i) mod the ring and
// that plus the ring, the window read as one slice) and their kernels compile for sm_90. On a GPU,
// tests/cuda/models_test.cpp (CudaRing) checks the sliding families' logits with the ring.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "cuda/cuda_test_util.hpp"
#include "luminal/io/hf_config.hpp"
#include "luminal/models/decoder.hpp"
#include "support/llir_direct.hpp"
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

const char* kGemma1b = R"({"architectures": ["Gemma3ForCausalLM"], "model_type": "gemma3_text",
  "hidden_size": 1152, "intermediate_size": 6912, "num_hidden_layers": 2, "num_attention_heads": 4,
  "num_key_value_heads": 1, "head_dim": 256, "vocab_size": 1000, "sliding_window": 512,
  "layer_types": ["sliding_attention", "full_attention"], "rms_norm_eps": 1e-6,
  "rope_theta": 1000000.0, "rope_local_base_freq": 10000.0, "query_pre_attn_scalar": 256,
  "hidden_activation": "gelu_pytorch_tanh", "max_position_embeddings": 32768,
  "tie_word_embeddings": true, "torch_dtype": "bfloat16"})";

TEST(CudaRingCache, TheWindowIsReadInPlaceByTheAttentionKernel) {
  const io::ModelConfig cfg = io::parse_config_json(kGemma1b, "gemma3-1b");
  auto seed = [&](bool window_read, bool ring) {
    models::DecoderShape shape{.slots = 4096, .max_step = 1};
    shape.dtype = DType::BF16;
    shape.logits = models::Logits::Last;
    shape.window_read = window_read;
    shape.rolling_cache = ring;
    const models::Decoder d = models::build_decoder(cfg, shape);
    return std::pair{testing::cuda_seed_program(d.graph), d.graph.dim_facts()};
  };
  const LlirGraph masked = seed(false, false).first;
  std::vector<std::string> sources, whats;
  for (bool ring : {false, true}) {
    const auto [l, facts] = seed(true, ring);
    const std::string what = ring ? "ring" : "window read";
    EXPECT_EQ(testing::count_op(l, "Cast"), 0) << what << ": " << l.op_mix_string();
    EXPECT_EQ(testing::count_op(l, "cuda.Attention"), 2) << what << ": " << l.op_mix_string();
    // (the key positions' iota is the one kernel more; the ring writes each row twice, by a
    // cuda.ScatterUnique for each cache, where the projections' kernels store one row: 3 more)
    EXPECT_LE(testing::kernel_count(l), testing::kernel_count(masked) + (ring ? 4 : 1))
        << what << ": " << l.op_mix_string() << " against " << masked.op_mix_string();
    testing::add_kernels(l, testing::spec_of(facts), sources, whats);
  }
  LUMINAL_REQUIRE_NVRTC();
  testing::expect_compiles(sources, whats);
}

}  // namespace
}  // namespace luminal
