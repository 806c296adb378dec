#include <unicode/bytestream.h>
#include <unicode/normalizer2.h>
#include <unicode/stringpiece.h>
#include <unicode/uniset.h>
#include <unicode/ustring.h>
#include <unicode/utf16.h>

#include <climits>

#include "luminal/core/error.hpp"
#include "luminal/io/tokenizer/components.hpp"
#include "luminal/io/tokenizer/json_at.hpp"
#include "luminal/io/tokenizer/regex.hpp"
#include "luminal/io/unicode.hpp"

namespace luminal::io::tok {

namespace {

class Sequence final : public Normalizer {
 public:
  explicit Sequence(std::vector<std::unique_ptr<Normalizer>> steps) : steps_(std::move(steps)) {}
  void apply(std::string& s) const override {
    for (const auto& n : steps_)
      n->apply(s);
  }

 private:
  std::vector<std::unique_ptr<Normalizer>> steps_;
};

class Prepend final : public Normalizer {
 public:
  explicit Prepend(std::string p) : prepend_(std::move(p)) {}
  void apply(std::string& s) const override {
    if (!s.empty()) s.insert(0, prepend_);
  }

 private:
  std::string prepend_;
};

class Replace final : public Normalizer {
 public:
  Replace(const JsonAt& pattern, std::string content) : content_(std::move(content)) {
    const char* form = "{\"String\": ...} or {\"Regex\": ...}";
    pattern.expect_object(form);
    if (auto lit = pattern.opt("String")) {
      literal_ = lit->str("the text to replace");
    } else if (auto re = pattern.opt("Regex")) {
      regex_ = make_regex(re->str("a regular expression"), *re);
    } else {
      pattern.fail(std::string("a Replace pattern must be ") + form);
    }
  }
  void apply(std::string& s) const override {
    std::vector<std::pair<size_t, size_t>> matches;
    if (regex_ != nullptr) {
      regex_->find_all(s, matches);
    } else if (!literal_.empty()) {
      for (size_t pos = s.find(literal_); pos != std::string::npos;
           pos = s.find(literal_, pos + literal_.size()))
        matches.emplace_back(pos, pos + literal_.size());
    }
    if (matches.empty()) return;
    std::string out;
    out.reserve(s.size() + matches.size() * content_.size());
    size_t prev = 0;
    for (auto [b, e] : matches) {
      out.append(s, prev, b - prev);
      out += content_;
      prev = e;
    }
    out.append(s, prev, std::string::npos);
    s = std::move(out);
  }

 private:
  std::string literal_;
  std::unique_ptr<Regex> regex_;
  std::string content_;
};

class Strip final : public Normalizer {
 public:
  Strip(bool left, bool right) : left_(left), right_(right) {}
  void apply(std::string& s) const override {
    size_t b = 0, e = s.size();
    if (left_) {
      for (size_t i = 0; i < s.size();) {
        size_t at = i;
        if (!is_whitespace(next_code_point(s, i))) {
          b = at;
          break;
        }
        b = i;
      }
    }
    if (right_) {
      while (e > b) {
        size_t start = e - 1;
        while (start > b && (static_cast<unsigned char>(s[start]) & 0xC0) == 0x80)
          --start;
        size_t i = start;
        if (!is_whitespace(next_code_point(s, i))) break;
        e = start;
      }
    }
    s = s.substr(b, e - b);
  }

 private:
  bool left_, right_;
};

bool is_ascii(std::string_view s) {
  for (char c : s)
    if (static_cast<unsigned char>(c) >= 0x80) return false;
  return true;
}

// NFC / NFD / NFKC / NFKD, with ICU on the UTF-8 text. HF's unicode-normalization-alignments
// crate has the Unicode 9.0 tables: ICU's normalizer is filtered to the characters assigned by
// 9.0 (later ones pass through as starters, as they do there), which matches it exactly where
// plain ICU 72 would not (U+0D3C, U+11D44: combining classes since 10.0; U+32FF: NFKC since 12.1).
class UnicodeNormalize final : public Normalizer {
 public:
  explicit UnicodeNormalize(const std::string& form)
      : form_(form), unicode_9_(icu::UnicodeString(u"[:age=9.0:]"), status_) {
    const icu::Normalizer2* norm = nullptr;
    if (form == "NFC")
      norm = icu::Normalizer2::getNFCInstance(status_);
    else if (form == "NFD")
      norm = icu::Normalizer2::getNFDInstance(status_);
    else if (form == "NFKC")
      norm = icu::Normalizer2::getNFKCInstance(status_);
    else
      norm = icu::Normalizer2::getNFKDInstance(status_);
    if (U_FAILURE(status_) || norm == nullptr)
      throw Error("tokenizer: ICU has no " + form + " normalizer (" + u_errorName(status_) + ")");
    unicode_9_.freeze();
    norm_ = std::make_unique<icu::FilteredNormalizer2>(*norm, unicode_9_);
  }
  void apply(std::string& s) const override {
    if (is_ascii(s)) return;  // ASCII is invariant under all four forms
    if (s.size() > size_t(INT32_MAX))
      throw Error("tokenizer: " + form_ + ": text of " + std::to_string(s.size()) +
                  " bytes is too long");
    std::string out;
    out.reserve(s.size() + s.size() / 4);
    icu::StringByteSink<std::string> sink(&out);
    UErrorCode status = U_ZERO_ERROR;
    norm_->normalizeUTF8(0, icu::StringPiece(s.data(), int32_t(s.size())), sink, nullptr, status);
    if (U_FAILURE(status))
      throw Error("tokenizer: " + form_ + " normalization failed (" + u_errorName(status) + ")");
    s = std::move(out);
  }

 private:
  std::string form_;
  UErrorCode status_ = U_ZERO_ERROR;  // before unicode_9_, whose constructor sets it
  icu::UnicodeSet unicode_9_;
  std::unique_ptr<icu::FilteredNormalizer2> norm_;
};

// HF's NormalizedString::lowercase: char::to_lowercase of each code point on its own (full
// mappings such as U+0130 -> U+0069 U+0307, but no context: a final sigma stays U+03C3).
class Lowercase final : public Normalizer {
 public:
  void apply(std::string& s) const override {
    size_t i = 0;
    while (i < s.size() && static_cast<unsigned char>(s[i]) < 0x80) {
      if (s[i] >= 'A' && s[i] <= 'Z') s[i] = char(s[i] - 'A' + 'a');
      ++i;
    }
    if (i == s.size()) return;
    std::string out(s, 0, i);
    out.reserve(s.size());
    while (i < s.size()) {
      auto c = static_cast<unsigned char>(s[i]);
      if (c < 0x80) {
        out += c >= 'A' && c <= 'Z' ? char(c - 'A' + 'a') : char(c);
        ++i;
        continue;
      }
      char32_t cp = next_code_point(s, i);
      UChar src[2], dst[8];
      int32_t n = 0;
      U16_APPEND_UNSAFE(src, n, UChar32(cp));
      UErrorCode status = U_ZERO_ERROR;
      int32_t m = u_strToLower(dst, 8, src, n, "", &status);
      if (U_FAILURE(status) || m > 8) {  // cannot happen: at most 3 code units
        append_utf8(out, cp);
        continue;
      }
      for (int32_t k = 0; k < m;) {
        UChar32 lc;
        U16_NEXT_UNSAFE(dst, k, lc);
        append_utf8(out, char32_t(lc));
      }
    }
    s = std::move(out);
  }
};

}  // namespace

std::unique_ptr<Normalizer> make_normalizer(const JsonAt& j) {
  const std::string type = j.type("a normalizer");
  if (type == "Sequence") {
    std::vector<std::unique_ptr<Normalizer>> steps;
    for (const JsonAt& step : j.req("normalizers", "a Sequence lists its normalizers")
                                  .elements("a Sequence lists its normalizers"))
      steps.push_back(make_normalizer(step));
    return std::make_unique<Sequence>(std::move(steps));
  }
  if (type == "Prepend")
    return std::make_unique<Prepend>(
        j.req("prepend", "the text a Prepend normalizer adds").str("the text to prepend"));
  if (type == "Replace")
    return std::make_unique<Replace>(
        j.req("pattern", "what a Replace normalizer replaces"),
        j.req("content", "what a Replace normalizer writes").str("the replacement text"));
  if (type == "Strip")
    return std::make_unique<Strip>(j.bool_or("strip_left", true, ""),
                                   j.bool_or("strip_right", true, ""));
  if (type == "NFC" || type == "NFD" || type == "NFKC" || type == "NFKD")
    return std::make_unique<UnicodeNormalize>(type);
  if (type == "Lowercase") return std::make_unique<Lowercase>();
  j.fail("unsupported normalizer type \"" + type +
         "\" (supported: Sequence, Prepend, Replace, Strip, NFC, NFD, NFKC, NFKD, Lowercase)");
}

}  // namespace luminal::io::tok
