// Tokenizer encode throughput on one thread: ~10 MB of English-like text, for every tokenizer
// fixture written by scripts/fixtures/gen_tokenizers.py (or folders given on the command line).
//   bench_tokenizer [tokenizer folder ...]   (default: $LUMINAL_FIXTURES/tokenizers/*)
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "luminal/io/tokenizer.hpp"

namespace {

std::string english_text(size_t bytes) {
  static const char* words[] = {
      "the",     "of",      "and",    "to",      "in",         "is",        "was",   "that",
      "for",     "it",      "with",   "as",      "his",        "on",        "be",    "at",
      "by",      "had",     "are",    "but",     "from",       "or",        "have",  "they",
      "which",   "one",     "you",    "were",    "people",     "between",   "world", "little",
      "another", "because", "should", "through", "compiler",   "inference", "don't", "It's",
      "Monday",  "1984",    "tokens", "quickly", "government", "children",  "water", "history"};
  std::mt19937 rng(7);
  std::string s;
  s.reserve(bytes + 64);
  while (s.size() < bytes) {
    int n = 8 + int(rng() % 20);
    for (int k = 0; k < n; ++k) {
      std::string w = words[rng() % (sizeof words / sizeof *words)];
      if (k == 0) w[0] = char(std::toupper(static_cast<unsigned char>(w[0])));
      s += w;
      s += k + 1 == n ? ". " : (rng() % 12 == 0 ? ", " : " ");
    }
    if (rng() % 6 == 0) s += "\n\n";
  }
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::filesystem::path> dirs;
  for (int i = 1; i < argc; ++i)
    dirs.emplace_back(argv[i]);
  if (dirs.empty()) {
    const char* f = std::getenv("LUMINAL_FIXTURES");
    std::filesystem::path root = std::filesystem::path(f ? f : "build/fixtures") / "tokenizers";
    if (std::filesystem::exists(root))
      for (const auto& e : std::filesystem::directory_iterator(root))
        dirs.push_back(e.path());
  }
  if (dirs.empty()) {
    std::fprintf(stderr, "no tokenizer folders (run scripts/fixtures/generate.sh)\n");
    return 1;
  }
  const std::string text = english_text(10 << 20);
  for (const auto& dir : dirs) {
    auto tok = luminal::io::Tokenizer::from_folder(dir);
    // Documents of ~4 KB (a cold cache would only slow the first one) and one 10 MB string.
    size_t ids = 0;
    auto t0 = std::chrono::steady_clock::now();
    for (size_t off = 0; off < text.size(); off += 4096)
      ids += tok.encode(std::string_view(text).substr(off, 4096)).size();
    auto t1 = std::chrono::steady_clock::now();
    ids += tok.encode(text).size();
    auto t2 = std::chrono::steady_clock::now();
    double mb = double(text.size()) / 1e6;
    std::printf(
        "%-10s %-18s encode 4KB docs: %7.1f MB/s   one 10MB string: %7.1f MB/s   (%zu ids)\n",
        dir.filename().string().c_str(), std::string(tok.kind()).c_str(),
        mb / std::chrono::duration<double>(t1 - t0).count(),
        mb / std::chrono::duration<double>(t2 - t1).count(), ids);
  }
  return 0;
}
