#pragma once
// Added tokens (internal): leftmost-longest matching of their contents in text, before
// pre-tokenization, with the lstrip / rstrip / single_word flags of Hugging Face's
// AddedVocabulary.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace luminal::io::tok {

struct AddedTokenSpec {
  std::string content;  // as matched (normalized tokens: the normalized content)
  int32_t id;
  bool special, lstrip, rstrip, single_word, normalized;
};

/// A part of a text: an added token (id >= 0) or text to tokenize (id == -1).
struct Segment {
  size_t begin, end;
  int32_t id;
};

class AddedTokenMatcher {
 public:
  explicit AddedTokenMatcher(std::vector<AddedTokenSpec> tokens);
  bool empty() const { return tokens_.empty(); }
  /// Splits text into non-empty segments (the whole text when there are no tokens).
  void split(std::string_view text, std::vector<Segment>& out) const;

 private:
  struct Node {
    std::vector<std::pair<unsigned char, int32_t>> next;  // sorted by byte
    int32_t token = -1;                                   // index into tokens_
  };
  int32_t child(int32_t node, unsigned char c) const;
  std::vector<AddedTokenSpec> tokens_;
  std::vector<Node> trie_;
  bool first_byte_[256] = {};
};

}  // namespace luminal::io::tok
