#include "luminal/io/tokenizer.hpp"

#include <deque>

#include "luminal/core/error.hpp"
#include "luminal/io/tokenizer/impl.hpp"
#include "luminal/io/unicode.hpp"

namespace luminal::io {

void Tokenizer::Impl::encode(std::string_view text, std::vector<int32_t>& out) const {
  std::string clean;
  if (!tok::is_valid_utf8(text)) {  // HF takes only valid UTF-8: replace what is not
    clean = tok::utf8_lossy(text);
    text = clean;
  }
  std::vector<tok::Segment> segments, inner;
  std::vector<std::string_view> pieces, next;
  std::deque<std::string> arena;
  std::string normalized;
  auto tokenize = [&](std::string_view part, bool first) {
    pieces.assign(1, part);
    for (const auto& step : pre_tokenizers) {
      next.clear();
      step->apply(pieces, first, next, arena);
      pieces.swap(next);
    }
    for (std::string_view p : pieces)
      model->encode(p, out);
    arena.clear();
  };
  raw_tokens->split(text, segments);
  for (const tok::Segment& seg : segments) {
    if (seg.id >= 0) {
      out.push_back(seg.id);
      continue;
    }
    std::string_view part = text.substr(seg.begin, seg.end - seg.begin);
    bool first = seg.begin == 0;
    if (normalizer) {
      normalized.assign(part);
      normalizer->apply(normalized);
      part = normalized;
    }
    if (normalized_tokens->empty()) {
      if (!part.empty()) tokenize(part, first);
      continue;
    }
    inner.clear();
    normalized_tokens->split(part, inner);
    for (const tok::Segment& s : inner) {
      if (s.id >= 0) {
        out.push_back(s.id);
      } else {
        tokenize(part.substr(s.begin, s.end - s.begin), first && s.begin == 0);
      }
    }
  }
}

std::string Tokenizer::Impl::decode(std::span<const int32_t> ids, bool skip_special) const {
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (int32_t id : ids) {
    if (id < 0 || size_t(id) >= added_index.size()) continue;  // unknown ids are skipped (as HF)
    if (int32_t a = added_index[size_t(id)]; a >= 0) {
      if (skip_special && added[size_t(a)].special) continue;
      tokens.push_back(added[size_t(a)].content);
    } else if (!model_tokens[size_t(id)].empty()) {
      tokens.push_back(model_tokens[size_t(id)]);
    }
  }
  if (decoders.empty()) {
    std::string out;
    for (size_t k = 0; k < tokens.size(); ++k)
      out += (k ? " " : "") + tokens[k];
    return out;
  }
  for (const auto& d : decoders)
    d->decode_chain(tokens);
  std::string out;
  for (const std::string& t : tokens)
    out += t;
  return out;
}

Tokenizer::Tokenizer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;
Tokenizer::~Tokenizer() = default;

Tokenizer Tokenizer::from_folder(const std::filesystem::path& dir) {
  std::filesystem::path json = dir / "tokenizer.json";
  if (!std::filesystem::exists(json))
    throw Error("tokenizer '" + json.string() +
                "': not found (a model folder holds its Hugging Face fast tokenizer there)");
  std::filesystem::path config = dir / "tokenizer_config.json";
  return from_files(json, std::filesystem::exists(config)
                              ? std::optional<std::filesystem::path>(config)
                              : std::nullopt);
}

Tokenizer Tokenizer::from_files(const std::filesystem::path& tokenizer_json,
                                const std::optional<std::filesystem::path>& tokenizer_config) {
  return Tokenizer(Impl::load(tokenizer_json, tokenizer_config));
}

Tokenizer Tokenizer::from_json(std::string_view tokenizer_json,
                               std::string_view tokenizer_config_json, std::string_view source) {
  return Tokenizer(Impl::load_text(tokenizer_json, tokenizer_config_json, std::string(source)));
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_special_tokens) const {
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 3 + 4);
  if (add_special_tokens) ids = impl_->prefix;
  impl_->encode(text, ids);
  if (add_special_tokens) ids.insert(ids.end(), impl_->suffix.begin(), impl_->suffix.end());
  return ids;
}

std::string Tokenizer::decode(std::span<const int32_t> ids, bool skip_special_tokens) const {
  return impl_->decode(ids, skip_special_tokens);
}

std::string Tokenizer::token(int32_t id) const {
  if (id < 0 || size_t(id) >= impl_->added_index.size())
    throw Error("tokenizer: token id " + std::to_string(id) + " is out of range (vocab size " +
                std::to_string(vocab_size()) + ")");
  if (int32_t a = impl_->added_index[size_t(id)]; a >= 0) return impl_->added[size_t(a)].content;
  return impl_->model_tokens[size_t(id)];
}

std::optional<int32_t> Tokenizer::token_id(std::string_view token) const {
  if (auto it = impl_->added_by_content.find(token); it != impl_->added_by_content.end())
    return it->second;
  if (auto it = impl_->model->vocab().find(token); it != impl_->model->vocab().end())
    return it->second;
  return std::nullopt;
}

std::string_view Tokenizer::kind() const { return impl_->kind; }
int32_t Tokenizer::vocab_size() const { return int32_t(impl_->added_index.size()); }
std::optional<int32_t> Tokenizer::bos_id() const { return impl_->bos; }
std::optional<int32_t> Tokenizer::eos_id() const { return impl_->eos; }
const std::vector<Tokenizer::AddedToken>& Tokenizer::added_tokens() const { return impl_->added; }

Tokenizer::StreamDecoder Tokenizer::stream_decoder(bool skip_special_tokens) const {
  return StreamDecoder(this, skip_special_tokens);
}

// Hugging Face's DecodeStream::step: decode a small window of ids; what it adds after the text
// already returned is new, unless it ends in U+FFFD (a character still incomplete).
std::string Tokenizer::StreamDecoder::push(int32_t id) {
  ids_.push_back(id);
  std::string text = tok_->decode(ids_, skip_);
  if (text.size() <= prefix_.size() || text.ends_with("\xEF\xBF\xBD") ||
      text.compare(0, prefix_.size(), prefix_) != 0)
    return {};
  std::string fresh = text.substr(prefix_.size());
  size_t new_index = ids_.size() - prefix_index_;
  ids_.erase(ids_.begin(), ids_.begin() + std::ptrdiff_t(prefix_index_));
  prefix_ = tok_->decode(ids_, skip_);
  prefix_index_ = new_index;
  return fresh;
}

std::string Tokenizer::StreamDecoder::flush() {
  std::string text = tok_->decode(ids_, skip_);
  size_t common = 0;
  while (common < text.size() && common < prefix_.size() && text[common] == prefix_[common])
    ++common;
  while (common > 0 && common < text.size() &&
         (static_cast<unsigned char>(text[common]) & 0xC0) == 0x80)
    --common;  // never split a character
  ids_.clear();
  prefix_.clear();
  prefix_index_ = 0;
  return text.substr(common);
}

}  // namespace luminal::io
