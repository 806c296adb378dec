#pragma once
// A model source, opened: a Hugging Face folder or a GGUF file, as the same record (config,
// tokenizer, chat template and its variables, EOS ids, sampling defaults), which
// CausalLM::load takes to read the weights.
// Example: examples/snippets/models/model_files.cpp (a source opened, its chat rendered, its
// model loaded).
//
// A folder gives config.json, tokenizer.json (+ tokenizer_config.json), the chat template
// (chat_template.jinja or tokenizer_config.json) and generation_config.json. A GGUF file gives
// the same from its metadata (luminal/io/gguf_model.hpp); its weights are dequantised to f32 once
// and the copy is kept under <cache root>/models/dequantized/ (named by the file's path, size and
// modification time), so later loads map it without dequantising again (LUMINAL_CACHE=off: kept
// in memory only).
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "luminal/compiler/options.hpp"
#include "luminal/io/chat_template.hpp"
#include "luminal/io/hf_config.hpp"
#include "luminal/io/progress.hpp"
#include "luminal/io/safetensors.hpp"
#include "luminal/io/tokenizer.hpp"
#include "luminal/nn/sampling.hpp"

namespace luminal::models {

/// Sampling defaults and EOS ids from a folder's generation_config.json.
struct GenerationDefaults {
  std::vector<int64_t> eos_ids;  // empty when the file does not list any
  bool do_sample = false;
  /// The file's sampling fields when do_sample is true (transformers' defaults where it is silent:
  /// temperature 1, top_k 50), else greedy with the file's repetition penalty.
  nn::SamplingConfig sampling;
};
/// Reads dir/generation_config.json (io/generation_config.hpp); a missing file gives the
/// defaults. Errors name the file.
GenerationDefaults read_generation_config(const std::filesystem::path& dir);

struct ModelFiles {
  std::filesystem::path path;
  bool gguf = false;
  io::ModelConfig config;
  /// Empty when the source has none (or OpenOptions::tokenizer is false).
  std::optional<io::Tokenizer> tokenizer;
  std::optional<io::ChatTemplate> chat_template;
  /// Variables templates read: bos_token, eos_token, unk_token, pad_token.
  std::map<std::string, std::string> template_variables;
  /// Ids that end a generation: config.json's and generation_config.json's, or the GGUF's
  /// eos/eot/eom ids.
  std::vector<int64_t> eos_ids;
  /// Sampling defaults (generation_config.json; greedy for GGUF files).
  GenerationDefaults generation;
};

struct OpenOptions {
  bool tokenizer = true;
};

/// Opens a folder or a .gguf file; errors name the path and what is missing.
ModelFiles open_model(const std::filesystem::path& path, const OpenOptions& options = {});

/// The weights under Hugging Face names: a folder's safetensors (mapped), or the GGUF's
/// dequantised to f32 (from the cache when present). A GGUF whose f32 weights exceed
/// options.max_memory() fails before anything is dequantised, naming both sizes. `progress` is
/// told of the dequantisation ("dequantising") and of writing the cached copy ("caching"); a
/// folder or a cached copy is only mapped (no call).
/// With `keep_blocks` (a GGUF source, LUMINAL_QUANT not "off"), the block-quantized tensors of a
/// type it accepts stay as stored, mapped from the file (io::gguf_block_weights), and nothing is
/// cached: the rest is widened in memory.
std::shared_ptr<const io::Weights> open_weights(const ModelFiles& m, const CompileOptions& options,
                                                const io::LoadProgress& progress = {},
                                                const std::function<bool(DType)>& keep_blocks = {});

/// The block-quantized tensors of `w` by name, with their types (DecoderShape::block_weights).
std::map<std::string, DType> block_weight_types(const io::Weights& w);

/// The bf16/f16 matrices (2-D tensors) of `w` by name, with their types: the weights an f32
/// model keeps as stored on a backend that reads them (Backend::reads_blocks).
std::map<std::string, DType> matrix16_types(const io::Weights& w);

/// Where the GGUF's dequantised copy lives (or would), or empty with LUMINAL_CACHE=off.
std::filesystem::path dequantized_path(const std::filesystem::path& gguf,
                                       const CompileOptions& options);

/// $XDG_CACHE_HOME/luminal/models/SmolLM2-135M-Instruct.Q4_1.gguf (or ~/.cache/...): the model
/// `make run` fetches (scripts/fetch_smollm2.sh) and `luminal run` uses when given none.
std::filesystem::path default_model_path();

}  // namespace luminal::models
