// jinja2's lexer (jinja2/lexer.py) with the options transformers uses: trim_blocks and
// lstrip_blocks on, keep_trailing_newline off, default delimiters. The whitespace rules:
//  - `{%-`/`{{-`/`{#-` strip all whitespace before the tag; `-%}`/`-}}`/`-#}` all after it;
//  - trim_blocks: one newline right after `%}` or `#}` is removed (`+%}` keeps it);
//  - lstrip_blocks: spaces/tabs between a line start and `{%`/`{#` are removed (`{%+` keeps
//    them); "line start" includes the start of the template and the point after a tag whose end
//    consumed a newline.
#include <cctype>
#include <string>

#include "luminal/io/chat/ast.hpp"
#include "luminal/io/unicode.hpp"

namespace luminal::io::chat {
namespace {

// Python's \s on a UTF-8 string: length in bytes of the whitespace character at i, or 0.
size_t space_at(std::string_view s, size_t i) {
  auto c = static_cast<unsigned char>(s[i]);
  if (c < 0x80) return is_py_space(c) ? 1 : 0;
  auto chars = utf8_chars(s.substr(i, 4));
  std::string_view ch = chars.front();
  uint32_t cp = 0;
  auto lead = static_cast<unsigned char>(ch[0]);
  cp = ch.size() == 2 ? (lead & 0x1F) : ch.size() == 3 ? (lead & 0x0F) : (lead & 0x07);
  for (size_t k = 1; k < ch.size(); ++k)
    cp = (cp << 6) | (static_cast<unsigned char>(ch[k]) & 0x3F);
  return is_py_space(cp) ? ch.size() : 0;
}

size_t skip_space(std::string_view s, size_t i) {
  while (i < s.size()) {
    size_t n = space_at(s, i);
    if (!n) break;
    i += n;
  }
  return i;
}

std::string rstrip_space(std::string_view s) {
  // Find the end of the last non-whitespace character.
  size_t end = 0;
  for (size_t i = 0; i < s.size();) {
    size_t n = space_at(s, i);
    if (n) {
      i += n;
    } else {
      i += utf8_chars(s.substr(i, 4)).front().size();
      end = i;
    }
  }
  return std::string(s.substr(0, end));
}

bool all_space(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    size_t n = space_at(s, i);
    if (!n) return false;
    i += n;
  }
  return true;
}

int count_newlines(std::string_view s) {
  int n = 0;
  for (char c : s)
    n += c == '\n';
  return n;
}

void append_utf8(uint32_t cp, std::string& out) {
  tok::append_utf8(out, static_cast<char32_t>(cp));
}

// Python's "unicode-escape" decoding of a string literal body.
std::string unescape(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\' || i + 1 >= s.size()) {
      out += s[i];
      continue;
    }
    char c = s[++i];
    auto hex = [&](size_t n) -> long {
      if (i + n >= s.size()) return -1;
      std::string h(s.substr(i + 1, n));
      for (char x : h)
        if (!std::isxdigit(static_cast<unsigned char>(x))) return -1;
      i += n;
      return std::stol(h, nullptr, 16);
    };
    switch (c) {
      case '\n': break;
      case '\\': out += '\\'; break;
      case '\'': out += '\''; break;
      case '"': out += '"'; break;
      case 'a': out += '\a'; break;
      case 'b': out += '\b'; break;
      case 'f': out += '\f'; break;
      case 'n': out += '\n'; break;
      case 'r': out += '\r'; break;
      case 't': out += '\t'; break;
      case 'v': out += '\v'; break;
      case 'x':
      case 'u':
      case 'U': {
        long cp = hex(c == 'x' ? 2 : c == 'u' ? 4 : 8);
        if (cp < 0) throw SyntaxError{"invalid \\" + std::string(1, c) + " escape in string", 0};
        append_utf8(static_cast<uint32_t>(cp), out);
        break;
      }
      default:
        if (c >= '0' && c <= '7') {
          uint32_t v = static_cast<uint32_t>(c - '0');
          for (int k = 0; k < 2 && i + 1 < s.size() && s[i + 1] >= '0' && s[i + 1] <= '7'; ++k)
            v = v * 8 + static_cast<uint32_t>(s[++i] - '0');
          append_utf8(v, out);
        } else {
          out += '\\';
          out += c;
        }
    }
  }
  return out;
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// (\d+_)*\d+ starting at i; returns the end or i when there is none.
size_t match_digits(std::string_view s, size_t i) {
  size_t j = i;
  if (j >= s.size() || !is_digit(s[j])) return i;
  while (true) {
    while (j < s.size() && is_digit(s[j]))
      ++j;
    if (j + 1 < s.size() && s[j] == '_' && is_digit(s[j + 1])) {
      ++j;
      continue;
    }
    return j;
  }
}

// jinja2's float rule: digits then either an exponent (with optional fraction) or a fraction.
size_t match_float(std::string_view s, size_t i) {
  if (i > 0 && s[i - 1] == '.') return i;
  size_t j = match_digits(s, i);
  if (j == i) return i;
  size_t frac = j;
  if (j < s.size() && s[j] == '.') {
    size_t k = match_digits(s, j + 1);
    if (k > j + 1) frac = k;
  }
  size_t e = frac;
  if (e < s.size() && (s[e] == 'e' || s[e] == 'E')) {
    size_t k = e + 1;
    if (k < s.size() && (s[k] == '+' || s[k] == '-')) ++k;
    size_t m = match_digits(s, k);
    if (m > k) return m;
  }
  return frac > j ? frac : i;
}

struct Lexer {
  std::string src;
  size_t pos = 0;
  int line = 1;
  std::vector<Token> out;

  [[noreturn]] void error(const std::string& msg, int at) { throw SyntaxError{msg, at}; }

  void run() {
    bool line_starting = true;
    while (pos < src.size()) {
      size_t open = std::string::npos;
      for (size_t k = pos; k + 1 < src.size(); ++k) {
        if (src[k] == '{' && (src[k + 1] == '{' || src[k + 1] == '%' || src[k + 1] == '#')) {
          open = k;
          break;
        }
      }
      if (open == std::string::npos) {
        out.push_back({Tok::Data, src.substr(pos), line});
        line += count_newlines(src.substr(pos));
        pos = src.size();
        break;
      }
      std::string text = src.substr(pos, open - pos);
      int text_line = line;
      line += count_newlines(text);
      char kind = src[open + 1];
      char sign = open + 2 < src.size() && (src[open + 2] == '-' || src[open + 2] == '+')
                      ? src[open + 2]
                      : 0;
      if (sign == '-') {
        text = rstrip_space(text);
      } else if (sign != '+' && kind != '{') {
        size_t l_pos = text.rfind('\n');
        l_pos = l_pos == std::string::npos ? 0 : l_pos + 1;
        if (l_pos > 0 || line_starting) {
          std::string_view rest = std::string_view(text).substr(l_pos);
          if (!rest.empty() && all_space(rest)) text.resize(l_pos);
        }
      }
      if (!text.empty()) out.push_back({Tok::Data, text, text_line});
      pos = open + 2 + (sign ? 1 : 0);
      std::string ended;
      if (kind == '#') {
        ended = comment();
      } else {
        ended = tag(kind == '{');
      }
      line_starting = !ended.empty() && ended.back() == '\n';
    }
    out.push_back({Tok::Eof, "", line});
  }

  // Matches the end of a block/comment tag at pos: "+%}", "-%}\s*", "%}\n?". Returns the
  // matched text (empty when none).
  std::string match_end(char c, bool trim) {
    std::string_view s(src);
    auto at = [&](size_t k, std::string_view w) { return s.substr(k, w.size()) == w; };
    std::string close = std::string(1, c) + "}";
    if (trim && at(pos, "+" + close)) return "+" + close;
    if (at(pos, "-" + close)) {
      size_t e = skip_space(s, pos + 3);
      return src.substr(pos, e - pos);
    }
    if (at(pos, close)) {
      size_t e = pos + 2;
      if (trim && e < s.size() && s[e] == '\n') ++e;
      return src.substr(pos, e - pos);
    }
    return "";
  }

  std::string comment() {
    int start = line;
    while (pos < src.size()) {
      std::string end = match_end('#', true);
      if (!end.empty()) {
        line += count_newlines(end);
        pos += end.size();
        return end;
      }
      if (src[pos] == '\n') ++line;
      ++pos;
    }
    error("Missing end of comment tag", start);
  }

  std::string tag(bool variable) {
    out.push_back({variable ? Tok::VarBegin : Tok::BlockBegin, "", line});
    int start = line;
    std::vector<char> balance;
    std::string_view s(src);
    while (true) {
      if (pos >= src.size()) {
        error(variable ? "unexpected end of template, expected 'end of print statement'."
                       : "unexpected end of template, expected 'end of statement block'.",
              start);
      }
      if (balance.empty()) {
        std::string end;
        if (variable) {
          if (s.substr(pos, 3) == "-}}") {
            end = src.substr(pos, skip_space(s, pos + 3) - pos);
          } else if (s.substr(pos, 2) == "}}") {
            end = "}}";
          }
        } else {
          end = match_end('%', true);
        }
        if (!end.empty()) {
          out.push_back({variable ? Tok::VarEnd : Tok::BlockEnd, "", line});
          line += count_newlines(end);
          pos += end.size();
          return end;
        }
      }
      char c = src[pos];
      if (size_t n = space_at(s, pos)) {
        line += c == '\n';
        pos += n;
        continue;
      }
      // A number: a float where jinja2's float rule matches, else an integer; '_' dropped.
      const size_t float_end = match_float(s, pos);
      const bool is_float = float_end > pos;
      if (size_t e = is_float ? float_end : match_digits(s, pos); e > pos) {
        std::string t = src.substr(pos, e - pos);
        std::erase(t, '_');
        out.push_back({is_float ? Tok::Float : Tok::Integer, t, line});
        pos = e;
        continue;
      }
      if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
        size_t e = pos;
        while (e < src.size() &&
               (std::isalnum(static_cast<unsigned char>(src[e])) || src[e] == '_'))
          ++e;
        out.push_back({Tok::Name, src.substr(pos, e - pos), line});
        pos = e;
        continue;
      }
      if (c == '\'' || c == '"') {
        size_t e = pos + 1;
        while (e < src.size() && src[e] != c)
          e += src[e] == '\\' ? 2 : 1;
        if (e >= src.size())
          error("unexpected char " + repr(Value::string(std::string(1, c))) + " at " +
                    std::to_string(pos),
                line);
        std::string body = src.substr(pos + 1, e - pos - 1);
        try {
          out.push_back({Tok::String, unescape(body), line});
        } catch (SyntaxError& err) {
          err.line = line;
          throw;
        }
        line += count_newlines(body);
        pos = e + 1;
        continue;
      }
      static const char* ops2[] = {"//", "**", "==", "!=", ">=", "<="};
      bool matched = false;
      for (const char* op : ops2) {
        if (s.substr(pos, 2) == op) {
          out.push_back({Tok::Op, op, line});
          pos += 2;
          matched = true;
          break;
        }
      }
      if (matched) continue;
      if (std::string_view("+-/*%~[](){}><=.:|,;").find(c) != std::string_view::npos) {
        if (c == '(' || c == '[' || c == '{') {
          balance.push_back(c);
        } else if (c == ')' || c == ']' || c == '}') {
          char want = c == ')' ? '(' : c == ']' ? '[' : '{';
          if (balance.empty()) error("unexpected '" + std::string(1, c) + "'", line);
          if (balance.back() != want)
            error("unexpected '" + std::string(1, c) + "', expected '" +
                      std::string(1, balance.back() == '('   ? ')'
                                     : balance.back() == '[' ? ']'
                                                             : '}') +
                      "'",
                  line);
          balance.pop_back();
        }
        out.push_back({Tok::Op, std::string(1, c), line});
        ++pos;
        continue;
      }
      error("unexpected char " + repr(Value::string(std::string(1, c))) + " at " +
                std::to_string(pos),
            line);
    }
  }
};

}  // namespace

std::vector<Token> lex(std::string_view source) {
  Lexer lx;
  // Newlines are normalized to \n, and one trailing newline is dropped (keep_trailing_newline).
  lx.src.reserve(source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      lx.src += '\n';
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
    } else {
      lx.src += source[i];
    }
  }
  if (!lx.src.empty() && lx.src.back() == '\n') lx.src.pop_back();
  lx.run();
  return std::move(lx.out);
}

}  // namespace luminal::io::chat
