
#include "luminal/core/error.hpp"
#include "luminal/io/tokenizer/byte_level.hpp"
#include "luminal/io/tokenizer/components.hpp"
#include "luminal/io/tokenizer/json_at.hpp"
#include "luminal/io/unicode.hpp"

namespace luminal::io::tok {

namespace {

void replace_all(std::string& s, const std::string& from, const std::string& to) {
  if (from.empty()) return;
  std::string out;
  size_t prev = 0;
  for (size_t pos = s.find(from); pos != std::string::npos; pos = s.find(from, prev)) {
    out.append(s, prev, pos - prev);
    out += to;
    prev = pos + from.size();
  }
  if (prev == 0) return;
  out.append(s, prev, std::string::npos);
  s = std::move(out);
}

class Replace final : public Decoder {
 public:
  Replace(std::string from, std::string to) : from_(std::move(from)), to_(std::move(to)) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (std::string& t : tokens)
      replace_all(t, from_, to_);
  }

 private:
  std::string from_, to_;
};

// "<0xNN>" tokens become bytes; a run that is not valid UTF-8 becomes one U+FFFD per byte.
class ByteFallback final : public Decoder {
 public:
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::vector<std::string> out;
    std::string run;
    size_t run_len = 0;
    auto flush = [&] {
      if (run_len == 0) return;
      if (is_valid_utf8(run)) {
        out.push_back(run);
      } else {
        for (size_t k = 0; k < run_len; ++k)
          out.emplace_back("\xEF\xBF\xBD");
      }
      run.clear();
      run_len = 0;
    };
    for (std::string& t : tokens) {
      int byte = parse(t);
      if (byte >= 0) {
        run.push_back(static_cast<char>(byte));
        ++run_len;
      } else {
        flush();
        out.push_back(std::move(t));
      }
    }
    flush();
    tokens = std::move(out);
  }

 private:
  static int hex(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
  }
  static int parse(const std::string& t) {
    if (t.size() != 6 || t.compare(0, 3, "<0x") != 0 || t[5] != '>') return -1;
    int hi = hex(t[3]), lo = hex(t[4]);
    return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
  }
};

class Fuse final : public Decoder {
 public:
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::string all;
    for (const std::string& t : tokens)
      all += t;
    tokens.assign(1, std::move(all));
  }
};

class Strip final : public Decoder {
 public:
  Strip(char32_t content, size_t start, size_t stop) : c_(content), start_(start), stop_(stop) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (std::string& t : tokens) {
      std::vector<char32_t> cps;
      for (size_t i = 0; i < t.size();)
        cps.push_back(next_code_point(t, i));
      size_t b = 0, e = cps.size();
      for (size_t i = 0; i < start_ && i < cps.size() && cps[i] == c_; ++i)
        b = i + 1;
      for (size_t i = 0; i < stop_ && i < cps.size(); ++i) {
        size_t idx = cps.size() - i - 1;
        if (cps[idx] != c_) break;
        e = idx;
      }
      std::string out;
      for (size_t i = b; i < e; ++i)
        append_utf8(out, cps[i]);
      t = std::move(out);
    }
  }

 private:
  char32_t c_;
  size_t start_, stop_;
};

class Metaspace final : public Decoder {
 public:
  Metaspace(std::string rep, bool strip_first) : rep_(std::move(rep)), strip_(strip_first) {}
  void decode_chain(std::vector<std::string>& tokens) const override {
    for (size_t i = 0; i < tokens.size(); ++i) {
      std::string& t = tokens[i];
      replace_all(t, rep_, i == 0 && strip_ ? std::string() : std::string(" "));
    }
  }

 private:
  std::string rep_;
  bool strip_;
};

char32_t single_char(const JsonAt& j) {
  const std::string s = j.str("one character");
  size_t i = 0;
  if (s.empty()) j.bad("is empty, expected one character");
  char32_t c = next_code_point(s, i);
  if (i != s.size()) j.bad("is \"" + s + "\", expected one character");
  return c;
}

}  // namespace

void make_decoders(const JsonAt& j, std::vector<std::unique_ptr<Decoder>>& steps) {
  const std::string type = j.type("a decoder");
  if (type == "Sequence") {
    for (const JsonAt& d : j.req("decoders", "a Sequence lists its decoders")
                               .elements("a Sequence lists its decoders"))
      make_decoders(d, steps);
  } else if (type == "ByteLevel") {
    steps.push_back(make_byte_level_decoder());
  } else if (type == "Replace") {
    const JsonAt p = j.req("pattern", "what a Replace decoder replaces");
    p.expect_object("{\"String\": ...}");
    if (!p.has("String")) p.fail("a Replace decoder supports only {\"String\": ...} patterns");
    steps.push_back(std::make_unique<Replace>(
        p.req("String", "").str("the text to replace"),
        j.req("content", "what a Replace decoder writes").str("the replacement text")));
  } else if (type == "ByteFallback") {
    steps.push_back(std::make_unique<ByteFallback>());
  } else if (type == "Fuse") {
    steps.push_back(std::make_unique<Fuse>());
  } else if (type == "Strip") {
    auto count = [&](const char* key) -> size_t {
      auto v = j.opt(key);
      return v ? size_t(v->count("how many characters to strip")) : 0;
    };
    steps.push_back(std::make_unique<Strip>(
        single_char(j.req("content", "the character a Strip decoder removes")), count("start"),
        count("stop")));
  } else if (type == "Metaspace") {
    const std::string scheme = j.str_or("prepend_scheme", "", "always, first or never");
    const bool strip = scheme.empty() ? j.bool_or("add_prefix_space", true, "") : scheme != "never";
    steps.push_back(std::make_unique<Metaspace>(
        j.str_or("replacement", "\u2581", "the character that stands for a space"), strip));
  } else {
    j.fail("unsupported decoder type \"" + type +
           "\" (supported: Sequence, ByteLevel, Replace, ByteFallback, Fuse, Strip, Metaspace)");
  }
}

}  // namespace luminal::io::tok
