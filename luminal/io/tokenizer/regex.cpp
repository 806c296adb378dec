#include "luminal/io/tokenizer/regex.hpp"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "luminal/core/error.hpp"
#include "luminal/io/tokenizer/json_at.hpp"
#include "luminal/io/unicode.hpp"

namespace luminal::io::tok {

namespace {

// One JIT stack and match data per thread: matching must not share them across threads.
struct ThreadState {
  pcre2_jit_stack* stack = pcre2_jit_stack_create(32 * 1024, 8 * 1024 * 1024, nullptr);
  pcre2_match_context* context = pcre2_match_context_create(nullptr);
  pcre2_match_data* data = pcre2_match_data_create(1, nullptr);
  ThreadState() {
    if (stack != nullptr) pcre2_jit_stack_assign(context, nullptr, stack);
  }
  ~ThreadState() {
    pcre2_match_data_free(data);
    pcre2_match_context_free(context);
    if (stack != nullptr) pcre2_jit_stack_free(stack);
  }
  ThreadState(const ThreadState&) = delete;
  ThreadState& operator=(const ThreadState&) = delete;
};

ThreadState& thread_state() {
  thread_local ThreadState state;
  return state;
}

// Oniguruma (which tokenizer.json patterns are written for) and Rust read \s as Unicode
// White_Space; PCRE2 10.42's \s also matches U+180E. Spell \s and \S out as White_Space classes.
std::string with_white_space_classes(const std::string& p) {
  static const std::string ws =
      R"(\t-\r \x{85}\x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000})";
  std::string out;
  bool in_class = false;
  for (size_t i = 0; i < p.size(); ++i) {
    char c = p[i];
    if (c == '\\' && i + 1 < p.size()) {
      char e = p[++i];
      if (e == 's') {
        out += in_class ? ws : "[" + ws + "]";
      } else if (e == 'S' && !in_class) {
        out += "[^" + ws + "]";
      } else {
        out += c;
        out += e;
      }
      continue;
    }
    if (!in_class && c == '[') {
      in_class = true;
      out += c;
      if (i + 1 < p.size() && p[i + 1] == '^') out += p[++i];
      if (i + 1 < p.size() && p[i + 1] == ']') out += p[++i];  // a literal ']' first
      continue;
    }
    if (in_class && c == ']') in_class = false;
    out += c;
  }
  return out;
}

}  // namespace

Regex::Regex(const std::string& pattern) : pattern_(pattern) {
  int err = 0;
  PCRE2_SIZE offset = 0;
  std::string rewritten = with_white_space_classes(pattern);
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(rewritten.data()), rewritten.size(),
                                   PCRE2_UTF | PCRE2_UCP, &err, &offset, nullptr);
  if (code == nullptr) {
    PCRE2_UCHAR msg[256];
    pcre2_get_error_message(err, msg, sizeof msg);
    throw Error("cannot compile regex \"" + pattern + "\" at offset " + std::to_string(offset) +
                ": " + reinterpret_cast<const char*>(msg));
  }
  code_ = code;
  jit_ = pcre2_jit_compile(code, PCRE2_JIT_COMPLETE) == 0;
}

void push_isolated(std::string_view s, const std::vector<std::pair<size_t, size_t>>& matches,
                   std::vector<std::string_view>& out) {
  size_t prev = 0;
  for (auto [b, e] : matches) {
    if (b > prev) out.push_back(s.substr(prev, b - prev));
    out.push_back(s.substr(b, e - b));
    prev = e;
  }
  if (prev < s.size()) out.push_back(s.substr(prev));
}

std::unique_ptr<Regex> make_regex(const std::string& pattern, const JsonAt& at) {
  try {
    return std::make_unique<Regex>(pattern);
  } catch (const Error& e) {
    at.fail(e.what());
  }
}

Regex::~Regex() { pcre2_code_free(static_cast<pcre2_code*>(code_)); }

void Regex::find_all(std::string_view s, std::vector<std::pair<size_t, size_t>>& out) const {
  auto* code = static_cast<pcre2_code*>(code_);
  ThreadState& ts = thread_state();
  auto subject = reinterpret_cast<PCRE2_SPTR>(s.data());
  size_t offset = 0;
  while (offset < s.size()) {
    int rc = jit_ ? pcre2_jit_match(code, subject, s.size(), offset, 0, ts.data, ts.context)
                  : pcre2_match(code, subject, s.size(), offset, PCRE2_NO_UTF_CHECK, ts.data,
                                ts.context);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) {
      PCRE2_UCHAR msg[256];
      pcre2_get_error_message(rc, msg, sizeof msg);
      throw Error("tokenizer: regex \"" + pattern_ +
                  "\" failed to match: " + reinterpret_cast<const char*>(msg));
    }
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(ts.data);
    if (ov[1] == ov[0]) {  // empty match: step over one character
      offset = ov[1] + (ov[1] < s.size() ? utf8_len(static_cast<unsigned char>(s[ov[1]])) : 1);
      continue;
    }
    out.emplace_back(ov[0], ov[1]);
    offset = ov[1];
  }
}

}  // namespace luminal::io::tok
