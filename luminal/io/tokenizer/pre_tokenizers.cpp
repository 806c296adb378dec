#include <algorithm>

#include "luminal/core/error.hpp"
#include "luminal/io/tokenizer/byte_level.hpp"
#include "luminal/io/tokenizer/components.hpp"
#include "luminal/io/tokenizer/json_at.hpp"
#include "luminal/io/tokenizer/regex.hpp"
#include "luminal/io/unicode.hpp"

namespace luminal::io::tok {

namespace {

using Ranges = std::vector<std::pair<size_t, size_t>>;

std::string escape_regex(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (std::string_view("\\^$.|?*+()[]{}").find(c) != std::string_view::npos) out += '\\';
    out += c;
  }
  return out;
}

enum class Behavior { Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous };

Behavior parse_behavior(const JsonAt& j) {
  const std::string s = j.str("a split behavior");
  if (s == "Removed") return Behavior::Removed;
  if (s == "Isolated") return Behavior::Isolated;
  if (s == "MergedWithPrevious") return Behavior::MergedWithPrevious;
  if (s == "MergedWithNext") return Behavior::MergedWithNext;
  if (s == "Contiguous") return Behavior::Contiguous;
  j.fail("unsupported Split behavior \"" + s +
         "\" (supported: Removed, Isolated, MergedWithPrevious, MergedWithNext, Contiguous)");
}

/// HF NormalizedString::split: `parts` covers the piece as (range, is_match) in order.
void split_by_behavior(std::string_view piece,
                       std::vector<std::pair<std::pair<size_t, size_t>, bool>>& parts,
                       Behavior behavior, std::vector<std::string_view>& out) {
  using Part = std::pair<std::pair<size_t, size_t>, bool>;
  std::vector<Part> acc;
  bool prev_match = false;
  switch (behavior) {
    case Behavior::Isolated: acc = parts; break;
    case Behavior::Removed:
      for (const Part& p : parts)
        if (!p.second) acc.push_back(p);
      break;
    case Behavior::MergedWithPrevious:
      for (const Part& p : parts) {
        if (p.second && !prev_match && !acc.empty()) {
          acc.back().first.second = p.first.second;
        } else {
          acc.push_back(p);
        }
        prev_match = p.second;
      }
      break;
    case Behavior::MergedWithNext:
      for (auto it = parts.rbegin(); it != parts.rend(); ++it) {
        if (it->second && !prev_match && !acc.empty()) {
          acc.back().first.first = it->first.first;
        } else {
          acc.push_back(*it);
        }
        prev_match = it->second;
      }
      std::reverse(acc.begin(), acc.end());
      break;
    case Behavior::Contiguous:
      for (const Part& p : parts) {
        if (p.second == prev_match && !acc.empty()) {
          acc.back().first.second = p.first.second;
        } else {
          acc.push_back(p);
        }
        prev_match = p.second;
      }
      break;
  }
  for (const Part& p : acc)
    if (p.first.second > p.first.first)
      out.push_back(piece.substr(p.first.first, p.first.second - p.first.first));
}

class Split final : public PreTokenizer {
 public:
  Split(std::unique_ptr<Regex> regex, Behavior behavior, bool invert)
      : regex_(std::move(regex)), behavior_(behavior), invert_(invert) {}
  void apply(const std::vector<std::string_view>& in, bool, std::vector<std::string_view>& out,
             std::deque<std::string>&) const override {
    Ranges matches;
    std::vector<std::pair<std::pair<size_t, size_t>, bool>> parts;
    for (std::string_view piece : in) {
      matches.clear();
      regex_->find_all(piece, matches);
      if (behavior_ == Behavior::Isolated) {  // the common case, without the parts list
        push_isolated(piece, matches, out);
        continue;
      }
      parts.clear();
      size_t prev = 0;
      for (auto [b, e] : matches) {
        if (b > prev) parts.push_back({{prev, b}, invert_});
        parts.push_back({{b, e}, !invert_});
        prev = e;
      }
      if (prev < piece.size()) parts.push_back({{prev, piece.size()}, invert_});
      split_by_behavior(piece, parts, behavior_, out);
    }
  }

 private:
  std::unique_ptr<Regex> regex_;
  Behavior behavior_;
  bool invert_;
};

class Metaspace final : public PreTokenizer {
 public:
  Metaspace(std::string replacement, std::string scheme, bool split)
      : rep_(std::move(replacement)), scheme_(std::move(scheme)), split_(split) {}
  void apply(const std::vector<std::string_view>& in, bool first,
             std::vector<std::string_view>& out, std::deque<std::string>& arena) const override {
    for (size_t k = 0; k < in.size(); ++k) {
      std::string s;
      for (char c : in[k]) {
        if (c == ' ') {
          s += rep_;
        } else {
          s += c;
        }
      }
      bool starts = s.compare(0, rep_.size(), rep_) == 0;
      if (!starts && (scheme_ == "always" || (scheme_ == "first" && first && k == 0))) {
        s.insert(0, rep_);
      }
      arena.push_back(std::move(s));
      std::string_view v = arena.back();
      if (!split_ || rep_.empty()) {
        if (!v.empty()) out.push_back(v);
        continue;
      }
      // MergedWithNext on the replacement character.
      size_t start = 0;
      for (size_t pos = v.find(rep_); pos != std::string_view::npos;
           pos = v.find(rep_, pos + rep_.size())) {
        if (pos > start) out.push_back(v.substr(start, pos - start));
        start = pos;
      }
      if (start < v.size()) out.push_back(v.substr(start));
    }
  }

 private:
  std::string rep_;
  std::string scheme_;
  bool split_;
};

std::unique_ptr<Regex> pattern_of(const JsonAt& p) {
  const char* form = "{\"Regex\": ...} or {\"String\": ...}";
  p.expect_object(form);
  if (auto re = p.opt("Regex")) return make_regex(re->str("a regular expression"), *re);
  if (auto lit = p.opt("String")) return make_regex(escape_regex(lit->str("the text")), *lit);
  p.fail(std::string("a Split pattern must be ") + form);
}

}  // namespace

void make_pre_tokenizers(const JsonAt& j, std::vector<std::unique_ptr<PreTokenizer>>& steps) {
  const std::string type = j.type("a pre-tokenizer");
  if (type == "Sequence") {
    for (const JsonAt& step : j.req("pretokenizers", "a Sequence lists its pre-tokenizers")
                                  .elements("a Sequence lists its pre-tokenizers"))
      make_pre_tokenizers(step, steps);
  } else if (type == "Split") {
    steps.push_back(std::make_unique<Split>(
        pattern_of(j.req("pattern", "where a Split pre-tokenizer splits")),
        parse_behavior(j.req("behavior", "what a Split pre-tokenizer does with the matches")),
        j.bool_or("invert", false, "")));
  } else if (type == "ByteLevel") {
    steps.push_back(std::make_unique<ByteLevelPreTokenizer>(j.bool_or("add_prefix_space", true, ""),
                                                            j.bool_or("use_regex", true, "")));
  } else if (type == "Metaspace") {
    std::string scheme = j.str_or("prepend_scheme", "", "always, first or never");
    if (scheme.empty()) scheme = j.bool_or("add_prefix_space", true, "") ? "always" : "never";
    if (scheme != "always" && scheme != "first" && scheme != "never")
      j.req("prepend_scheme", "")
          .fail("unsupported Metaspace prepend_scheme \"" + scheme +
                "\" (supported: always, first, never)");
    steps.push_back(std::make_unique<Metaspace>(
        j.str_or("replacement", "\u2581", "the character that stands for a space"), scheme,
        j.bool_or("split", true, "")));
  } else {
    j.fail("unsupported pre_tokenizer type \"" + type +
           "\" (supported: Sequence, Split, ByteLevel, Metaspace)");
  }
}

bool defer_byte_level_mapping(std::vector<std::unique_ptr<PreTokenizer>>& steps) {
  if (steps.empty()) return false;
  auto* last = dynamic_cast<ByteLevelPreTokenizer*>(steps.back().get());
  if (last == nullptr) return false;
  last->map = false;
  return true;
}

}  // namespace luminal::io::tok
