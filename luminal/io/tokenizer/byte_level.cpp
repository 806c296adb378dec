#include "luminal/io/tokenizer/byte_level.hpp"

#include <array>

#include "luminal/io/unicode.hpp"

namespace luminal::io::tok {

namespace {

constexpr const char* kGpt2Pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

struct Tables {
  std::array<std::string, 256> to_unicode;
  std::array<int, 512> to_byte{};
  Tables() {
    to_byte.fill(-1);
    int n = 0;
    for (int b = 0; b < 256; ++b) {
      bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
      char32_t cp = printable ? char32_t(b) : char32_t(256 + n++);
      append_utf8(to_unicode[b], cp);
      to_byte[cp] = b;
    }
  }
};

const Tables& tables() {
  static const Tables t;
  return t;
}

class ByteLevelDecoder final : public Decoder {
 public:
  void decode_chain(std::vector<std::string>& tokens) const override {
    std::string bytes;
    for (const std::string& t : tokens) {
      size_t mark = bytes.size();
      bool all = true;
      for (size_t i = 0; i < t.size();) {
        int b = unicode_to_byte(next_code_point(t, i));
        if (b < 0) {
          all = false;
          break;
        }
        bytes.push_back(static_cast<char>(b));
      }
      if (!all) {
        bytes.resize(mark);
        bytes += t;
      }
    }
    tokens.assign(1, utf8_lossy(bytes));
  }
};

}  // namespace

const std::string& byte_to_unicode(uint8_t b) { return tables().to_unicode[b]; }

void map_bytes(std::string_view raw, std::string& out) {
  const Tables& t = tables();
  for (char c : raw)
    out += t.to_unicode[static_cast<uint8_t>(c)];
}

int unicode_to_byte(char32_t cp) { return cp < 512 ? tables().to_byte[cp] : -1; }

ByteLevelPreTokenizer::ByteLevelPreTokenizer(bool add_prefix_space, bool use_regex)
    : add_prefix_space_(add_prefix_space) {
  if (use_regex) regex_ = std::make_unique<Regex>(kGpt2Pattern);
}

void ByteLevelPreTokenizer::apply(const std::vector<std::string_view>& in, bool,
                                  std::vector<std::string_view>& out,
                                  std::deque<std::string>& arena) const {
  std::vector<std::pair<size_t, size_t>> matches;
  for (std::string_view piece : in) {
    if (add_prefix_space_ && (piece.empty() || piece.front() != ' ')) {
      arena.push_back(" ");
      arena.back() += piece;
      piece = arena.back();
    }
    size_t start = out.size();
    if (regex_ != nullptr) {
      // Isolated split: matches and the gaps between them are all pieces.
      matches.clear();
      regex_->find_all(piece, matches);
      push_isolated(piece, matches, out);
    } else if (!piece.empty()) {
      out.push_back(piece);
    }
    if (map) {
      for (size_t k = start; k < out.size(); ++k) {
        arena.emplace_back();
        map_bytes(out[k], arena.back());
        out[k] = arena.back();
      }
    }
  }
}

std::unique_ptr<Decoder> make_byte_level_decoder() { return std::make_unique<ByteLevelDecoder>(); }

}  // namespace luminal::io::tok
