#include "luminal/io/tokenizer/bpe.hpp"

#include <climits>
#include <nlohmann/json.hpp>
#include <queue>

#include "luminal/core/error.hpp"
#include "luminal/io/tokenizer/byte_level.hpp"
#include "luminal/io/tokenizer/json_at.hpp"
#include "luminal/io/unicode.hpp"

namespace luminal::io::tok {

namespace {

uint64_t pair_key(int32_t a, int32_t b) {
  return (uint64_t(uint32_t(a)) << 32) | uint64_t(uint32_t(b));
}

}  // namespace

Bpe::Bpe(const JsonAt& model) {
  const JsonAt vocab = model.req("vocab", "a BPE model needs its vocab: token -> id");
  if (!vocab.json().is_object()) vocab.wrong_type("an object of token -> id", "the BPE vocab");
  vocab_.reserve(vocab.json().size());
  for (const auto& [tok, id] : vocab.json().items()) {
    if (id.is_number_unsigned() && id.get<uint64_t>() <= uint64_t(INT32_MAX)) {
      vocab_.emplace(tok, int32_t(id.get<uint64_t>()));
    } else {  // a negative, fractional or non-number id: the error names the token
      vocab_.emplace(tok, JsonAt(id, member_path(vocab.path(), tok)).id(""));
    }
  }
  const JsonAt merges = model.req("merges", "a BPE model needs its merges");
  if (!merges.json().is_array())
    merges.wrong_type("an array of merges: \"a b\" strings or [\"a\", \"b\"] pairs", "");
  auto lookup = [&](const std::string& s, size_t rank) -> int32_t {
    auto it = vocab_.find(s);
    if (it == vocab_.end())
      throw Error("'" + element_path(merges.path(), rank) + "' uses \"" + s +
                  "\", which is not in '" + vocab.path() + "' (every merge's parts and result " +
                  "must be tokens of the vocab)");
    return it->second;
  };
  const char* merge_form = "a merge: \"a b\" or [\"a\", \"b\"]";
  int32_t rank = 0;
  for (const auto& m : merges.json()) {
    std::string a, b;
    if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      a = m[0].get<std::string>();
      b = m[1].get<std::string>();
    } else if (m.is_string()) {
      const std::string& s = m.get_ref<const std::string&>();
      size_t sp = s.find(' ', 1);
      if (sp == std::string::npos)
        throw Error("'" + element_path(merges.path(), size_t(rank)) + "' is \"" + s +
                    "\", expected two tokens separated by a space");
      a = s.substr(0, sp);
      b = s.substr(sp + 1);
    } else {
      wrong_type_at(element_path(merges.path(), size_t(rank)), m, merge_form, "");
    }
    int32_t merged = lookup(a + b, size_t(rank));
    merges_.emplace(pair_key(lookup(a, size_t(rank)), lookup(b, size_t(rank))),
                    Merge{rank, merged});
    ++rank;
  }
  const char* unsupported = "not supported (only plain byte-level or SentencePiece-style BPE)";
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"})
    if (!model.str_or(key, "", "or null").empty())
      model.req(key, "").fail(std::string("BPE ") + key + " is " + unsupported);
  if (auto dropout = model.opt("dropout"); dropout && dropout->number("0 or null") != 0.0)
    dropout->fail("BPE dropout is not supported (set it to null)");
  if (auto u = model.opt("unk_token")) {
    auto it = vocab_.find(u->str("the unknown token, or null"));
    if (it != vocab_.end()) unk_ = it->second;
  }
  byte_fallback_ = model.bool_or("byte_fallback", false, "");
  fuse_unk_ = model.bool_or("fuse_unk", false, "");
  ignore_merges_ = model.bool_or("ignore_merges", false, "");
  const std::string meta = "\u2581";
  split_at_metaspace_ = vocab_.contains(meta);
  for (const auto& [tok, id] : vocab_) {
    for (size_t pos = tok.find(meta, 1); pos != std::string::npos && split_at_metaspace_;
         pos = tok.find(meta, pos + 1))
      if (pos < meta.size() || tok.compare(pos - meta.size(), meta.size(), meta) != 0)
        split_at_metaspace_ = false;
  }
  static const char* hex = "0123456789ABCDEF";
  for (int b = 0; b < 256; ++b) {
    std::string name = std::string("<0x") + hex[b >> 4] + hex[b & 15] + ">";
    auto it = vocab_.find(name);
    byte_ids_[b] = it == vocab_.end() ? -1 : it->second;
  }
}

void Bpe::encode(std::string_view piece, std::vector<int32_t>& out) const {
  if (!split_at_metaspace_ || byte_level_input_) return encode_word(piece, out);
  static constexpr std::string_view meta = "\u2581";
  size_t start = 0;
  for (size_t pos = piece.find(meta, 1); pos != std::string_view::npos;
       pos = piece.find(meta, pos + meta.size())) {
    if (pos >= meta.size() && piece.substr(pos - meta.size(), meta.size()) == meta)
      continue;  // inside a run of "▁"
    encode_word(piece.substr(start, pos - start), out);
    start = pos;
  }
  encode_word(piece.substr(start), out);
}

void Bpe::encode_word(std::string_view piece, std::vector<int32_t>& out) const {
  if (piece.empty()) return;
  bool cacheable = piece.size() <= kCacheMaxWord;
  if (cacheable) {
    std::lock_guard<std::mutex> lock(cache_mutex_);
    auto it = cache_.find(piece);
    if (it != cache_.end()) {
      auto [off, len] = it->second;
      out.insert(out.end(), cache_ids_.begin() + off, cache_ids_.begin() + off + len);
      return;
    }
  }
  size_t start = out.size();
  if (byte_level_input_) {
    std::string mapped;
    map_bytes(piece, mapped);
    merge_word(mapped, out);
  } else {
    merge_word(piece, out);
  }
  if (cacheable) {
    std::lock_guard<std::mutex> lock(cache_mutex_);
    if (cache_.size() < kCacheCapacity && !cache_.contains(piece)) {
      cache_.emplace(
          std::string(piece),
          std::pair<uint32_t, uint32_t>(uint32_t(cache_ids_.size()), uint32_t(out.size() - start)));
      cache_ids_.insert(cache_ids_.end(), out.begin() + start, out.end());
    }
  }
}

void Bpe::merge_word(std::string_view w, std::vector<int32_t>& out) const {
  if (ignore_merges_) {
    if (auto it = vocab_.find(w); it != vocab_.end()) {
      out.push_back(it->second);
      return;
    }
  }
  struct Symbol {
    int32_t id;
    int32_t prev;
    int32_t next;
    bool alive;
  };
  std::vector<Symbol> syms;
  syms.reserve(w.size());
  auto add = [&](int32_t id) {
    int32_t n = int32_t(syms.size());
    syms.push_back({id, n - 1, n + 1, true});
  };
  bool pending_unk = false;
  for (size_t i = 0; i < w.size();) {
    size_t n = std::min(utf8_len(static_cast<unsigned char>(w[i])), w.size() - i);
    std::string_view ch = w.substr(i, n);
    i += n;
    if (auto it = vocab_.find(ch); it != vocab_.end()) {
      if (pending_unk) add(*unk_);
      pending_unk = false;
      add(it->second);
      continue;
    }
    if (byte_fallback_) {
      bool all = true;
      for (char c : ch)
        all = all && byte_ids_[static_cast<uint8_t>(c)] >= 0;
      if (all) {
        for (char c : ch)
          add(byte_ids_[static_cast<uint8_t>(c)]);
        continue;
      }
    }
    if (unk_) {
      if (pending_unk && !fuse_unk_) add(*unk_);
      pending_unk = true;
    }
  }
  if (pending_unk) add(*unk_);
  if (syms.empty()) return;
  syms.back().next = -1;

  struct Candidate {
    int32_t rank;
    int32_t pos;
    int32_t id;
    bool operator>(const Candidate& o) const {
      return rank != o.rank ? rank > o.rank : pos > o.pos;
    }
  };
  std::priority_queue<Candidate, std::vector<Candidate>, std::greater<>> queue;
  auto find = [&](int32_t a, int32_t b) -> const Merge* {
    auto it = merges_.find(pair_key(a, b));
    return it == merges_.end() ? nullptr : &it->second;
  };
  for (size_t k = 0; k + 1 < syms.size(); ++k)
    if (const Merge* m = find(syms[k].id, syms[k + 1].id)) queue.push({m->rank, int32_t(k), m->id});
  while (!queue.empty()) {
    Candidate top = queue.top();
    queue.pop();
    Symbol& cur = syms[top.pos];
    if (!cur.alive || cur.next < 0) continue;
    Symbol& right = syms[cur.next];
    const Merge* m = find(cur.id, right.id);
    if (m == nullptr || m->id != top.id) continue;
    cur.id = top.id;
    right.alive = false;
    cur.next = right.next;
    if (cur.next >= 0) syms[cur.next].prev = top.pos;
    if (cur.prev >= 0)
      if (const Merge* p = find(syms[cur.prev].id, cur.id)) queue.push({p->rank, cur.prev, p->id});
    if (cur.next >= 0)
      if (const Merge* p = find(cur.id, syms[cur.next].id)) queue.push({p->rank, top.pos, p->id});
  }
  for (int32_t k = 0; k >= 0; k = syms[k].next)
    out.push_back(syms[k].id);
}

}  // namespace luminal::io::tok
