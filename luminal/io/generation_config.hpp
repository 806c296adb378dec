#pragma once
// A Hugging Face folder's generation_config.json, as written (models/model_files.hpp turns it
// into sampling defaults): the EOS ids (an int or a list in the file), do_sample (false when
// absent), and the sampling fields, read only when do_sample is true (the repetition penalty
// always).
// Example: examples/snippets/io/generation_config.cpp (a file's fields; a missing file).
//
// Errors are luminal::Error naming the file and the field (io/config_fields.hpp):
//   "generation_config.json: field 'top_p' must be a number, got a string \"high\""
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace luminal::io {

struct GenerationConfig {
  /// The file (or the source name given to parse_generation_config_json).
  std::string source;
  std::vector<int64_t> eos_token_ids;  // empty when absent or null
  /// False when absent, null or not a boolean.
  bool do_sample = false;
  /// The sampling fields, nullopt when absent; read (and checked to be numbers) only when
  /// do_sample is true, as transformers ignores them otherwise. top_k as written (a number).
  std::optional<double> temperature, top_k, top_p, min_p;
  /// Read whether or not do_sample is set (a repetition penalty applies to greedy decoding too).
  std::optional<double> repetition_penalty;
};

/// Reads `file`; a missing file gives an empty config (source set, nothing else).
GenerationConfig read_generation_config(const std::filesystem::path& file);
/// Parses JSON text; `source` prefixes every error.
GenerationConfig parse_generation_config_json(std::string_view text, std::string_view source);

}  // namespace luminal::io
