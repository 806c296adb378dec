#pragma once
// Decode steps of published model shapes for the CUDA rule tests (no device needed).
#include <string_view>

#include "cuda/cuda_test_util.hpp"
#include "luminal/models/decoder.hpp"
#include "luminal/models/synthetic.hpp"

namespace luminal::testing {

/// A `layers`-layer SmolLM2-shaped decode step (vocabulary 1000) stored as the published file
/// stores it: q4_1 matrices, the tied embedding in q8_0.
inline Graph smollm2_q4_1_graph(int layers) {
  const auto cfg = models::llama_config(
      {.layers = layers, .hidden = 576, .ffn = 1536, .heads = 9, .kv_heads = 3, .vocab = 1000});
  models::DecoderShape shape{.slots = 2048, .max_step = 1};
  shape.block_weights = models::matrix_block_types(cfg, shape, [](std::string_view label) {
    return label.find("embed") != std::string_view::npos ? DType::Q8_0 : DType::Q4_1;
  });
  return models::build_decoder(cfg, shape).graph;
}

/// The fewest-kernels program of smollm2_q4_1_graph(layers).
inline LlirGraph smollm2_q4_1_seed(int layers) {
  return cuda_seed_program(smollm2_q4_1_graph(layers));
}

/// The fewest-kernels program of a `layers`-layer Llama-3-8B-shaped decode step (vocabulary
/// 1000): every matrix of block type `t`, or (t a float type) the whole model in `t`.
inline LlirGraph llama8b_seed(int layers, DType t) {
  const auto cfg = models::llama_config(
      {.layers = layers, .hidden = 4096, .ffn = 14336, .heads = 32, .kv_heads = 8, .vocab = 1000});
  models::DecoderShape shape{.slots = 2048, .max_step = 1};
  if (is_block(t))
    shape.block_weights =
        models::matrix_block_types(cfg, shape, [t](std::string_view) { return t; });
  else
    shape.dtype = t;
  return cuda_seed_program(models::build_decoder(cfg, shape).graph);
}

}  // namespace luminal::testing
