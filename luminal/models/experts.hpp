#pragma once
// The stacked expert weights of a mixture-of-experts layer (Qwen3-MoE, Mixtral), as the decoder
// reads them: "<block>experts.gate_up_proj" [E, 2F, hidden] (expert e's gate rows, then its up
// rows) and "<block>experts.down_proj" [E, hidden, F]: transformers 5's packed layout. A
// checkpoint holding per-expert tensors ("<block>experts.N.gate_proj.weight", Mixtral's
// w1/w3/w2) or stacked gate and up ("<block>experts.gate_proj" [E, F, hidden], as GGUF stores
// them) gets the stacked tensors added at open (a copy of the expert weights; block-quantized
// rows are copied as stored). Mixtral checkpoints in the packed layout name their router and
// experts "mlp." (transformers 5): they are read under "block_sparse_moe." too (same bytes).
// Example: tests/models/experts_test.cpp (per-expert tensors stacked and read back).
#include <string>

#include "luminal/io/hf_config.hpp"
#include "luminal/io/safetensors.hpp"

namespace luminal::models {

/// "block_sparse_moe." (Mixtral) or "mlp." (Qwen3-MoE): where a layer's router and experts sit.
std::string moe_block_prefix(const io::ModelConfig& cfg);

/// Adds the stacked tensors of every MoE layer that lacks them. A layer with neither layout is
/// an error naming the tensors looked for; shapes or dtypes that disagree are errors naming the
/// tensor.
void add_expert_stacks(io::Weights& w, const io::ModelConfig& cfg);

}  // namespace luminal::models
