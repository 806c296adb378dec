#pragma once
// What gguf_model.cpp shares with the per-architecture mappings (internal to luminal/io):
// the tensors a model must hold, metadata readers, and gemma3's keys and tensors
// (gguf_gemma3.cpp).
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "luminal/io/gguf.hpp"
#include "luminal/io/hf_config.hpp"

namespace luminal::io::gguf_detail {

/// One expected tensor of a checkpoint, by GGUF name.
struct Expected {
  std::string hf;  // the Hugging Face name the decoder reads
  std::vector<int64_t> shape;
  bool required = true;
  int64_t permute_heads = 0;  // > 0: undo the llama converter's row permutation with this many
  /// Added to every value once dequantised (gemma3's norms: the converter stores 1 + w, the
  /// decoder reads w). Such a tensor is always widened to f32, never used as stored.
  float offset = 0;
};

/// "gguf '<file>': ", the prefix of every message.
std::string where(const GgufFile& f);
/// An f32 metadata value as the shortest decimal that rounds to it (1e-5f -> 1e-05); f64 as is.
double float_value(const GgufFile& f, const std::string& key);
std::optional<double> find_float_value(const GgufFile& f, const std::string& key);

/// <arch>.rope.scaling.* (none, linear, yarn, llama3) into c.rope_scaling (gguf_rope.cpp).
void read_rope_scaling(const GgufFile& f, const std::string& arch, ModelConfig& c);
/// Llama 3.1-style scaling fitted to llama.cpp's per-dimension divisors (rope_freqs.weight): the
/// largest is the factor, the smoothed dims give the rest; an error when no fit reproduces them.
void fit_llama3_rope(const GgufFile& f, ModelConfig& c, const std::vector<float>& factors);

/// gemma3.*: fills what is Gemma 3's on top of the keys every architecture shares (family,
/// activation, attention scale, sliding layers and window, local RoPE base, final soft-capping);
/// refuses what the decoder cannot run, naming the key and its value.
void read_gemma3_config(const GgufFile& f, ModelConfig& c);
/// gemma3's tensors: the sandwich norms and QK-norm (each with offset -1), no row permutation.
std::map<std::string, Expected> gemma3_tensors(const ModelConfig& c);

}  // namespace luminal::io::gguf_detail
