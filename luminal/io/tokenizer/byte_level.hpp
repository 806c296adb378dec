#pragma once
// GPT-2's byte-to-unicode map (internal): every byte becomes a printable code point.
#include <cstdint>
#include <string>
#include <string_view>

namespace luminal::io::tok {

/// UTF-8 of the code point byte b maps to ("Ġ" for a space).
const std::string& byte_to_unicode(uint8_t b);
/// Appends the mapped form of every byte of `raw`.
void map_bytes(std::string_view raw, std::string& out);
/// The byte a code point stands for, or -1 where it is not in the map.
int unicode_to_byte(char32_t cp);

}  // namespace luminal::io::tok

#include <memory>

#include "luminal/io/tokenizer/components.hpp"
#include "luminal/io/tokenizer/regex.hpp"

namespace luminal::io::tok {

/// ByteLevel pre-tokenizer: optional prefix space, optional GPT-2 regex split, byte mapping.
class ByteLevelPreTokenizer final : public PreTokenizer {
 public:
  ByteLevelPreTokenizer(bool add_prefix_space, bool use_regex);
  void apply(const std::vector<std::string_view>& in, bool first,
             std::vector<std::string_view>& out, std::deque<std::string>& arena) const override;
  /// Off: pieces stay raw bytes (the BPE model maps them after its cache lookup).
  bool map = true;

 private:
  bool add_prefix_space_;
  std::unique_ptr<Regex> regex_;
};

/// ByteLevel decoder: token strings back to bytes, then lossy UTF-8 (one string).
std::unique_ptr<Decoder> make_byte_level_decoder();

}  // namespace luminal::io::tok
