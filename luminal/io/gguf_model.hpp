#pragma once
// Models and tokenizers from GGUF files: what a Hugging Face folder gives (config, weights under
// Hugging Face names, tokenizer, chat template, BOS/EOS), read from one .gguf file. The weights
// bind into a session as Weights::open(folder)'s do (io::bind).
// Example: examples/snippets/io/gguf_model.cpp (a model's config, a weight and its tokenizer).
//
// Architectures: `llama` (Llama 1-3.x, Mistral, SmolLM: ModelFamily::Llama; with experts,
// Mixtral), `qwen2`, `qwen3`, `qwen3moe`, `gemma3` (text). Weights are dequantised to f32 at load
// (every type gguf_dequant.hpp handles), renamed to the Hugging Face names models/decoder.hpp
// reads, and, for `llama`, the rows of q_proj and k_proj (and their biases) are put back in
// Hugging Face's order: llama.cpp's converter permutes them for its adjacent-pair rotary layout
// (reshape to [heads, 2, head_dim/2, ...], swap axes 1 and 2); we apply the inverse. Qwen's and
// Gemma's projections are stored unpermuted; Gemma's norm weights are stored as 1 + w and read
// back as w (the decoder scales by 1 + w).
//
// Tokenizers (tokenizer.ggml.model): `gpt2` (byte-level BPE: tokens, merges, token_type, pre)
// and `llama` (SentencePiece-style BPE from tokens + scores, byte fallback). The equivalent
// Hugging Face tokenizer.json is built in memory (gguf_tokenizer_json) and loaded by
// io::Tokenizer. Pre-tokenizers (tokenizer.ggml.pre): see gguf_supported_pre_tokenizers().
// Control tokens (token_type 3) become special added tokens, user-defined ones (4) non-special
// added tokens.
//
// Errors are luminal::Error naming the file and the problem: an unsupported architecture or
// tokenizer, a missing metadata key or tensor, a tensor of the wrong shape, an unexpected tensor,
// a checkpoint over GgufModelOptions::max_bytes (checked before anything is dequantised).
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "luminal/io/gguf.hpp"
#include "luminal/io/hf_config.hpp"
#include "luminal/io/progress.hpp"
#include "luminal/io/safetensors.hpp"
#include "luminal/io/tokenizer.hpp"

namespace luminal::io {

struct GgufModelOptions {
  /// Refuse a checkpoint whose weights take more than this many bytes as f32 (0: no limit).
  /// Checked before anything is dequantised; the message gives the f32 size, the file's tensor
  /// bytes and the limit.
  uint64_t max_bytes = 0;
  /// Build the tokenizer (false: `tokenizer` stays empty, e.g. for weights-only use).
  bool tokenizer = true;
  /// Dequantise the weights (false: `weights` stays null; gguf_weights() reads them later, e.g.
  /// only when no cached copy exists).
  bool weights = true;
  /// Told the progress of the dequantisation (stage "dequantising", bytes of f32 written; see
  /// io/progress.hpp). Default: none.
  LoadProgress progress = {};
};

/// Everything a Hugging Face folder gives, read from one GGUF file.
struct GgufModel {
  std::filesystem::path path;
  /// general.architecture ("llama", "qwen2", "qwen3") and general.name ("" when absent).
  std::string architecture;
  std::string name;
  ModelConfig config;
  /// The weights under Hugging Face names, f32, in one in-memory safetensors file (bind with
  /// io::bind(session, weights) as a folder's).
  std::shared_ptr<const Weights> weights;
  /// llama.cpp's per-dimension RoPE divisors (`rope_freqs.weight`, written for Llama 3.1-style
  /// scaling: inv_freq[i] = base^(-2i/d) / factors[i]); empty when the file has none. When present,
  /// config.rope_scaling holds llama3 parameters that reproduce them (see docs/gguf.md).
  std::vector<float> rope_freq_factors;
  /// Empty when GgufModelOptions::tokenizer is false or the file has no tokenizer.ggml.model.
  std::optional<Tokenizer> tokenizer;
  /// tokenizer.chat_template.
  std::optional<std::string> chat_template;
  /// The strings chat templates read (bos_token, eos_token, unk_token, pad_token), as
  /// ChatTemplate::special_tokens() gives for a folder.
  std::map<std::string, std::string> special_tokens;
  /// tokenizer.ggml.{bos,eos}_token_id and whether encode(add_special_tokens) adds them.
  std::optional<int32_t> bos_id, eos_id;
  bool add_bos = false, add_eos = false;
  /// Ids that end generation: eos, eot and eom (tokenizer.ggml.{eos,eot,eom}_token_id), unique.
  std::vector<int64_t> stop_ids;
};

/// Reads `file` (errors name it). See the header comment for what is supported.
GgufModel read_gguf_model(const std::filesystem::path& file, const GgufModelOptions& options = {});

/// The ModelConfig of an opened file (metadata only; the tensors decide vocab_size, biases and
/// tied embeddings, so they must be present).
ModelConfig gguf_model_config(const GgufFile& file);

/// The weights under Hugging Face names as f32 (see read_gguf_model). `config` is
/// gguf_model_config(file); `max_bytes` and `progress` as GgufModelOptions's.
/// The weights under Hugging Face names with the block-quantized tensors whose type `keep`
/// accepts left as stored: views into the file's mapping (zero copy; q/k rows un-permuted into a
/// copy), dtype q4_0 .. q6_k. F32 tensors are views too; every other tensor is widened to f32.
/// `file` stays alive as long as the Weights. `max_bytes` bounds the resident bytes.
Weights gguf_block_weights(std::shared_ptr<const GgufFile> file, const ModelConfig& config,
                           const std::function<bool(DType)>& keep, uint64_t max_bytes = 0,
                           const LoadProgress& progress = {});
Weights gguf_weights(const GgufFile& file, const ModelConfig& config, uint64_t max_bytes = 0,
                     const LoadProgress& progress = {});

/// The Hugging Face name of a GGUF tensor name ("blk.3.attn_q.weight" ->
/// "model.layers.3.self_attn.q_proj.weight", "token_embd.weight" -> "model.embed_tokens.weight");
/// "" for a name without one (e.g. "rope_freqs.weight"). The llama/qwen names: gemma3's ffn_norm
/// is pre_feedforward_layernorm (docs/gguf.md).
std::string gguf_to_hf_name(std::string_view gguf_name);

/// The tokenizer described by the file's tokenizer.ggml.* metadata.
Tokenizer gguf_tokenizer(const GgufFile& file);
/// The Hugging Face tokenizer.json equivalent to the file's tokenizer (what gguf_tokenizer loads).
std::string gguf_tokenizer_json(const GgufFile& file);
/// Whether encode(text, add_special_tokens = true) adds BOS / EOS: tokenizer.ggml.add_bos_token /
/// add_eos_token, else llama.cpp's defaults (BOS for `llama` tokenizers and the llama3
/// pre-tokenizers, EOS never).
bool gguf_add_bos(const GgufFile& file);
bool gguf_add_eos(const GgufFile& file);
/// The tokenizer.ggml.pre values gguf_tokenizer accepts for `gpt2` tokenizers.
std::vector<std::string> gguf_supported_pre_tokenizers();

}  // namespace luminal::io
