#pragma once
// The pipeline stages of a tokenizer.json (internal): normalizer, pre-tokenizer steps, decoder
// steps. Each make_* reads one JSON object and throws luminal::Error naming the JSON path of a
// missing member, a wrong type or an unsupported type.
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace luminal::io::tok {

class JsonAt;

struct Normalizer {
  virtual ~Normalizer() = default;
  /// Rewrites s in place (HF NormalizedString semantics without offsets).
  virtual void apply(std::string& s) const = 0;
};
std::unique_ptr<Normalizer> make_normalizer(const JsonAt& j);

struct PreTokenizer {
  virtual ~PreTokenizer() = default;
  /// Splits every piece of `in` into `out`. `first`: in[0] starts the input text (offset 0).
  /// Pieces are views into the caller's text or into `arena` (for rewritten text).
  virtual void apply(const std::vector<std::string_view>& in, bool first,
                     std::vector<std::string_view>& out, std::deque<std::string>& arena) const = 0;
};
/// Appends the steps of j (a Sequence is flattened) to `steps`.
void make_pre_tokenizers(const JsonAt& j, std::vector<std::unique_ptr<PreTokenizer>>& steps);
/// When the last step is ByteLevel, switches its byte mapping off and returns true: the model
/// then maps raw bytes itself, after its cache (which is keyed by raw bytes).
bool defer_byte_level_mapping(std::vector<std::unique_ptr<PreTokenizer>>& steps);

struct Decoder {
  virtual ~Decoder() = default;
  /// HF decode_chain: rewrites the list of token strings.
  virtual void decode_chain(std::vector<std::string>& tokens) const = 0;
};
/// Appends the steps of j (a Sequence is flattened) to `steps`.
void make_decoders(const JsonAt& j, std::vector<std::unique_ptr<Decoder>>& steps);

}  // namespace luminal::io::tok
