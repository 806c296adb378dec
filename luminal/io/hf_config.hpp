#pragma once
// Hugging Face config.json -> a typed model configuration (ModelConfig: the family, sizes,
// head_dim (hidden_size / num_attention_heads when the file omits it), rope scaling, Gemma 3's
// sliding-window layers: is_sliding_layer).
// Example: examples/snippets/io/hf_config.cpp (a Llama config's fields).
//
// Families: Llama (incl. Llama 3.1's rope type `llama3`), Mistral, Qwen2, Qwen3, Qwen3-MoE and the
// Gemma 3 text model (`gemma3_text`, and `gemma3`, whose text fields sit under "text_config").
// Both serializations are read: the published models' (`rope_scaling`, `rope_theta`,
// `torch_dtype`, `sliding_window_pattern`) and transformers 5's (`rope_parameters` holding
// rope_type/rope_theta/factor..., for Gemma 3 one entry per layer type; `dtype`; `layer_types`;
// Qwen3-MoE's `num_local_experts` for `num_experts`; Gemma 3's `_sliding_window_pattern` for
// `sliding_window_pattern`). Both spellings of a field present with different values is an error.
//
// Errors are luminal::Error naming the file and the field:
//   "config.json: missing field 'num_attention_heads' (required for model_type 'llama')"
//   "config.json: unknown model_type 'foo'; supported: llama, mistral, qwen2, qwen3, qwen3_moe,
//    gemma3, gemma3_text"
// Gemma 3 configs written by transformers omit every field equal to Gemma3TextConfig's default
// (gemma-3-4b-it gives only a handful), so for Gemma 3 those defaults apply; hidden_size,
// intermediate_size and num_hidden_layers are still required. Other families: every structural
// field is required.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "luminal/core/dtype.hpp"

namespace luminal::io {

enum class ModelFamily { Llama, Mistral, Qwen2, Qwen3, Qwen3Moe, Gemma3, Mixtral };
/// "llama", "mistral", "qwen2", "qwen3", "qwen3_moe", "gemma3", "mixtral".
std::string_view family_name(ModelFamily f);

/// RoPE frequency scaling. None is transformers' "default" rope type (plain RoPE).
enum class RopeType { None, Linear, Dynamic, Yarn, Llama3, LongRope };
/// "none", "linear", "dynamic", "yarn", "llama3", "longrope".
std::string_view rope_type_name(RopeType t);

struct RopeScaling {
  RopeType type = RopeType::None;
  double factor = 1.0;
  // llama3
  double low_freq_factor = 1.0;
  double high_freq_factor = 4.0;
  /// llama3 / yarn / dynamic / longrope: the context the model was pretrained with (0 = absent).
  int64_t original_max_position_embeddings = 0;
  // yarn
  std::optional<double> attention_factor;
  std::optional<double> beta_fast;
  std::optional<double> beta_slow;
};

struct ModelConfig {
  ModelFamily family = ModelFamily::Llama;
  /// The file's model_type ("gemma3" for the multimodal wrapper, "gemma3_text" for the text one).
  std::string model_type;
  std::vector<std::string> architectures;  // e.g. {"LlamaForCausalLM"}

  int64_t hidden_size = 0;
  int64_t intermediate_size = 0;
  int64_t num_hidden_layers = 0;
  int64_t num_attention_heads = 0;
  int64_t num_key_value_heads = 0;  // default: num_attention_heads
  int64_t head_dim = 0;             // default: hidden_size / num_attention_heads
  int64_t vocab_size = 0;
  int64_t max_position_embeddings = 0;
  double rms_norm_eps = 0.0;
  double rope_theta = 10000.0;
  RopeScaling rope_scaling;  // for Gemma 3: the global (full attention) layers' scaling
  bool tie_word_embeddings = false;
  /// "silu" (Llama, Mistral, Qwen) or "gelu_pytorch_tanh" (Gemma 3: hidden_activation).
  std::string hidden_act;
  /// Bias on q/k/v/o projections (Qwen2: q/k/v always have one, so true).
  bool attention_bias = false;
  bool mlp_bias = false;
  /// The weights' dtype as the config states it (torch_dtype / dtype); absent in some old configs
  /// (the safetensors headers are authoritative).
  std::optional<DType> dtype;

  /// BOS / EOS ids (a config gives an int or a list; empty when absent or null).
  std::vector<int64_t> bos_token_ids;
  std::vector<int64_t> eos_token_ids;
  std::optional<int64_t> pad_token_id;

  /// Sliding-window attention in effect (window length); nullopt when every layer is global
  /// (Mistral v0.3's null, Qwen's use_sliding_window = false).
  std::optional<int64_t> sliding_window;
  /// Gemma 3: every Nth layer is global (`sliding_window_pattern`, or transformers 5's
  /// `_sliding_window_pattern`; nullopt when only layer_types is given).
  std::optional<int64_t> sliding_window_pattern;
  /// Per layer: "full_attention" or "sliding_attention"; always num_hidden_layers long (derived
  /// from sliding_window_pattern / max_window_layers when the file does not list them).
  std::vector<std::string> layer_types;
  /// Qwen2/3: layers below this use full attention when sliding is on.
  std::optional<int64_t> max_window_layers;

  // Gemma 3.
  std::optional<double> query_pre_attn_scalar;  // attention scale = query_pre_attn_scalar^-0.5
  std::optional<double> final_logit_softcapping;
  std::optional<double> attn_logit_softcapping;
  /// RoPE base of the local (sliding) layers; their RoPE is unscaled.
  std::optional<double> rope_local_base_freq;

  // Qwen3-MoE.
  /// Mixtures of experts (Qwen3-MoE, Mixtral): `num_experts`, or `num_local_experts` (Mixtral;
  /// transformers 5's Qwen3-MoE); Mixtral's experts are intermediate_size wide and its weights
  /// are the softmax over the chosen experts (norm_topk_prob true).
  int64_t num_experts = 0;
  int64_t num_experts_per_tok = 0;
  int64_t moe_intermediate_size = 0;
  bool norm_topk_prob = false;
  int64_t decoder_sparse_step = 1;
  std::vector<int64_t> mlp_only_layers;

  bool is_sliding_layer(int64_t layer) const;
  /// Qwen3-MoE: layer uses the sparse MoE block (not in mlp_only_layers, on the sparse step).
  bool is_moe_layer(int64_t layer) const;
};

/// Reads and parses `config_json` (errors name the path).
ModelConfig parse_config(const std::filesystem::path& config_json);
/// Parses JSON text; `source_name` prefixes every error ("config.json: ...").
ModelConfig parse_config_json(std::string_view text, std::string_view source_name = "config.json");

}  // namespace luminal::io
