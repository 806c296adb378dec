#include "luminal/io/tokenizer/added_tokens.hpp"

#include <algorithm>

#include "luminal/io/unicode.hpp"

namespace luminal::io::tok {

namespace {

// Rust's char::is_alphanumeric || '_' for the single_word check (ASCII and any non-ASCII
// non-whitespace letter-like code point are treated as word characters).
bool is_word_char(char32_t c) {
  if (c < 0x80)
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
  return !is_whitespace(c);
}

char32_t last_char(std::string_view s) {
  size_t i = s.size() - 1;
  while (i > 0 && (static_cast<unsigned char>(s[i]) & 0xC0) == 0x80)
    --i;
  return next_code_point(s, i);
}

}  // namespace

AddedTokenMatcher::AddedTokenMatcher(std::vector<AddedTokenSpec> tokens)
    : tokens_(std::move(tokens)) {
  trie_.emplace_back();
  for (size_t t = 0; t < tokens_.size(); ++t) {
    const std::string& s = tokens_[t].content;
    if (s.empty()) continue;
    first_byte_[static_cast<unsigned char>(s[0])] = true;
    int32_t node = 0;
    for (char ch : s) {
      auto c = static_cast<unsigned char>(ch);
      int32_t n = child(node, c);
      if (n < 0) {
        n = int32_t(trie_.size());
        trie_.emplace_back();
        auto& next = trie_[node].next;
        next.insert(std::lower_bound(next.begin(), next.end(), std::make_pair(c, int32_t(-1))),
                    {c, n});
      }
      node = n;
    }
    if (trie_[node].token < 0) trie_[node].token = int32_t(t);
  }
}

int32_t AddedTokenMatcher::child(int32_t node, unsigned char c) const {
  const auto& next = trie_[node].next;
  auto it = std::lower_bound(next.begin(), next.end(), std::make_pair(c, int32_t(-1)));
  return it != next.end() && it->first == c ? it->second : -1;
}

void AddedTokenMatcher::split(std::string_view text, std::vector<Segment>& out) const {
  size_t start_offset = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    if (!first_byte_[static_cast<unsigned char>(text[pos])]) {
      ++pos;
      continue;
    }
    // Longest token starting at pos.
    int32_t node = 0, best = -1;
    size_t best_end = 0;
    for (size_t k = pos; k < text.size(); ++k) {
      node = child(node, static_cast<unsigned char>(text[k]));
      if (node < 0) break;
      if (trie_[node].token >= 0) {
        best = trie_[node].token;
        best_end = k + 1;
      }
    }
    if (best < 0) {
      ++pos;
      continue;
    }
    const AddedTokenSpec& tok = tokens_[best];
    size_t start = pos, stop = best_end;
    pos = best_end;  // a skipped match is consumed all the same (aho-corasick find_iter)
    if (tok.single_word) {
      bool start_space = start == 0 || !is_word_char(last_char(text.substr(0, start)));
      size_t i = stop;
      bool stop_space = stop == text.size() || !is_word_char(next_code_point(text, i));
      if (!start_space || !stop_space) continue;
    }
    if (tok.lstrip) {
      size_t s = start;
      while (s > 0) {
        size_t b = s - 1;
        while (b > 0 && (static_cast<unsigned char>(text[b]) & 0xC0) == 0x80)
          --b;
        size_t i = b;
        if (!is_whitespace(next_code_point(text, i))) break;
        s = b;
      }
      start = std::max(s, start_offset);
    }
    if (tok.rstrip) {
      while (stop < text.size()) {
        size_t i = stop;
        if (!is_whitespace(next_code_point(text, i))) break;
        stop = i;
      }
      pos = std::max(pos, stop);
    }
    if (start_offset < start) out.push_back({start_offset, start, -1});
    out.push_back({start, stop, tok.id});
    start_offset = stop;
  }
  if (start_offset < text.size()) out.push_back({start_offset, text.size(), -1});
}

}  // namespace luminal::io::tok
