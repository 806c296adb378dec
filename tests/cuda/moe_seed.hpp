#pragma once
// The CUDA fewest-kernels program (the search's seed; CUDA rules, no device) of a tiny 1-layer
// Qwen3-MoE bf16 decode step with the ranks router: its kernel count and how many nodes of one op
// it has (the expert glu and sum tests: a fused form the seed should take).
#include <string_view>
#include <utility>

#include "cuda/cuda_test_util.hpp"
#include "luminal/compiler/build_space.hpp"
#include "luminal/io/hf_config.hpp"
#include "luminal/luminal.hpp"
#include "luminal/models/decoder.hpp"
#include "luminal/nn/moe.hpp"
#include "support/llir_direct.hpp"

namespace luminal::testing {

inline std::pair<size_t, int> tiny_moe_seed(std::string_view op) {
  const char* json = R"({"architectures": ["Qwen3MoeForCausalLM"], "model_type": "qwen3_moe",
    "hidden_size": 256, "intermediate_size": 512, "moe_intermediate_size": 64,
    "num_hidden_layers": 1, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 64,
    "num_experts": 16, "num_experts_per_tok": 4, "norm_topk_prob": true, "vocab_size": 512,
    "decoder_sparse_step": 1, "mlp_only_layers": [], "max_position_embeddings": 1024,
    "rms_norm_eps": 1e-6, "rope_theta": 1000000.0, "hidden_act": "silu",
    "tie_word_embeddings": false, "torch_dtype": "bfloat16"})";
  const io::ModelConfig cfg = io::parse_config_json(json, "qwen3moe1");
  models::DecoderShape shape{.slots = 256, .max_step = 1};
  shape.dtype = DType::BF16;
  shape.logits = models::Logits::Last;
  shape.router = nn::TopKForm::Ranks;
  const LlirGraph l = cuda_seed_program(models::build_decoder(cfg, shape).graph);
  return {kernel_count(l), count_op(l, op)};
}

}  // namespace luminal::testing
