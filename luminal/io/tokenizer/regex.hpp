#pragma once
// PCRE2 regular expressions (UTF + Unicode properties, JIT-compiled where available) for the
// split patterns tokenizer.json specifies (internal).
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace luminal::io::tok {

class Regex {
 public:
  /// Throws luminal::Error naming the pattern and the offset of a syntax error.
  explicit Regex(const std::string& pattern);
  Regex(const Regex&) = delete;
  Regex& operator=(const Regex&) = delete;
  ~Regex();

  /// Appends the [begin, end) byte ranges of the non-overlapping, non-empty matches in `s`
  /// (valid UTF-8), left to right.
  void find_all(std::string_view s, std::vector<std::pair<size_t, size_t>>& out) const;
  const std::string& pattern() const { return pattern_; }

 private:
  std::string pattern_;
  void* code_ = nullptr;  // pcre2_code_8
  bool jit_ = false;
};

/// Appends the pieces of an isolated split of `s` at `matches` (find_all's): every match and every
/// gap between them, in order.
void push_isolated(std::string_view s, const std::vector<std::pair<size_t, size_t>>& matches,
                   std::vector<std::string_view>& out);

class JsonAt;
/// Compiles `pattern`, read from tokenizer.json at `at`: a syntax error names that path.
std::unique_ptr<Regex> make_regex(const std::string& pattern, const JsonAt& at);

}  // namespace luminal::io::tok
