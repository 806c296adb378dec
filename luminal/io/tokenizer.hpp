#pragma once
// Tokenizers read from a Hugging Face tokenizer.json (+ tokenizer_config.json): encode, decode,
// and a stream decoder that decodes token by token, never giving half a UTF-8 character.
// Example: examples/snippets/io/tokenizer.cpp.
//
// Kinds: byte-level BPE (Llama 3, Qwen2/3, GPT-2: regex pre-tokenizer with Unicode classes,
// byte-to-unicode map, merges by rank) and SentencePiece-style BPE (Metaspace "▁", byte fallback
// <0xNN>, as Llama 2 / Mistral / Gemma). Added and special tokens are matched before
// pre-tokenization; `special` tokens are dropped by decode(skip_special_tokens = true).
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace luminal::io {

class Tokenizer {
 public:
  /// tokenizer.json and, when present, tokenizer_config.json (BOS/EOS, add_bos_token).
  static Tokenizer from_folder(const std::filesystem::path& dir);
  static Tokenizer from_files(const std::filesystem::path& tokenizer_json,
                              const std::optional<std::filesystem::path>& tokenizer_config = {});
  /// The same from the texts of tokenizer.json and (when not empty) tokenizer_config.json;
  /// `source` names them in errors (e.g. "model.gguf").
  static Tokenizer from_json(std::string_view tokenizer_json,
                             std::string_view tokenizer_config_json = {},
                             std::string_view source = "<memory>");
  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;
  ~Tokenizer();

  /// `add_special_tokens`: the BOS/EOS the tokenizer's post-processor/config adds.
  std::vector<int32_t> encode(std::string_view text, bool add_special_tokens = false) const;
  std::string decode(std::span<const int32_t> ids, bool skip_special_tokens = false) const;
  /// The vocabulary string of a token (e.g. "Ġworld", "▁the", "<0x0A>").
  std::string token(int32_t id) const;
  std::optional<int32_t> token_id(std::string_view token) const;

  /// "byte-level BPE" or "SentencePiece BPE".
  std::string_view kind() const;
  int32_t vocab_size() const;
  std::optional<int32_t> bos_id() const;
  std::optional<int32_t> eos_id() const;
  /// Added tokens with their ids and whether they are special.
  struct AddedToken {
    std::string content;
    int32_t id;
    bool special;
  };
  const std::vector<AddedToken>& added_tokens() const;

  /// Incremental decoding: push() returns the text that became complete (never a partial UTF-8
  /// sequence); flush() returns what is left.
  class StreamDecoder {
   public:
    std::string push(int32_t id);
    std::string flush();

   private:
    friend class Tokenizer;
    explicit StreamDecoder(const Tokenizer* t, bool skip_special) : tok_(t), skip_(skip_special) {}
    const Tokenizer* tok_;
    bool skip_;
    // A window of the ids pushed (Hugging Face's DecodeStream): prefix_ is decode(ids_), all of
    // it returned already; ids_[prefix_index_..] are the tokens of the last text returned, kept
    // as context for the next one.
    std::vector<int32_t> ids_;
    std::string prefix_;
    size_t prefix_index_ = 0;
  };
  StreamDecoder stream_decoder(bool skip_special_tokens = false) const;

  struct Impl;

 private:
  explicit Tokenizer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace luminal::io
