#pragma once
// The BPE model of tokenizer.json (internal): vocabulary, merges by rank (applied lowest rank
// first with a priority queue, as Hugging Face's Word::merge_all), byte fallback, unk, and a cache
// of the ids of repeated words.
#include <array>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace luminal::io::tok {

class JsonAt;

struct StringHash {
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
using StringMap = std::unordered_map<std::string, int32_t, StringHash, std::equal_to<>>;

class Bpe {
 public:
  /// model: the "model" object (type BPE).
  explicit Bpe(const JsonAt& model);

  /// Raw pieces are mapped to byte-level characters before the merges (the cache is keyed by
  /// the raw piece).
  void set_byte_level_input(bool on) { byte_level_input_ = on; }
  /// Appends the ids of one pre-tokenized piece.
  void encode(std::string_view piece, std::vector<int32_t>& out) const;

  const StringMap& vocab() const { return vocab_; }

 private:
  void encode_word(std::string_view word, std::vector<int32_t>& out) const;
  void merge_word(std::string_view word, std::vector<int32_t>& out) const;

  StringMap vocab_;
  struct Merge {
    int32_t rank;
    int32_t id;
  };
  std::unordered_map<uint64_t, Merge> merges_;
  std::array<int32_t, 256> byte_ids_{};  // "<0xNN>", -1 where absent
  std::optional<int32_t> unk_;
  bool byte_fallback_ = false;
  bool fuse_unk_ = false;
  bool ignore_merges_ = false;
  bool byte_level_input_ = false;
  // SentencePiece-style input is one long "word" (no pre-tokenizer). Where no token has "▁"
  // after another character than "▁", no merge crosses the start of a "▁" run, so the word is
  // split there and the parts go through the cache: the same ids, much faster.
  bool split_at_metaspace_ = false;

  // Word cache: raw piece -> [offset, length) in cache_ids_.
  static constexpr size_t kCacheCapacity = 1 << 17;
  static constexpr size_t kCacheMaxWord = 256;
  mutable std::mutex cache_mutex_;
  mutable std::unordered_map<std::string, std::pair<uint32_t, uint32_t>, StringHash,
                             std::equal_to<>>
      cache_;
  mutable std::vector<int32_t> cache_ids_;
};

}  // namespace luminal::io::tok
