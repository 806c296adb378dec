#pragma once
// UTF-8 helpers shared by the tokenizer and the chat templates (internal).
#include <cstddef>
#include <string>
#include <string_view>

namespace luminal::io::tok {

/// Length of the UTF-8 sequence a lead byte starts (1 for a byte that cannot lead one).
inline size_t utf8_len(unsigned char c) {
  if (c < 0x80) return 1;
  if ((c >> 5) == 0x6) return 2;
  if ((c >> 4) == 0xE) return 3;
  if ((c >> 3) == 0x1E) return 4;
  return 1;
}

/// Decodes the code point at s[i] (s valid UTF-8) and moves i past it.
char32_t next_code_point(std::string_view s, size_t& i);
void append_utf8(std::string& out, char32_t cp);

/// Length of the valid UTF-8 sequence at s[i], or 0 where none starts there.
size_t valid_sequence_length(std::string_view s, size_t i);
bool is_valid_utf8(std::string_view s);
/// Rust's String::from_utf8_lossy: each maximal invalid subpart becomes one U+FFFD.
std::string utf8_lossy(std::string_view bytes);

/// Unicode White_Space (Rust's char::is_whitespace).
bool is_whitespace(char32_t c);

}  // namespace luminal::io::tok
