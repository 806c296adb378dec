#pragma once
// Hash helpers shared by every interned or hash-consed structure (internal). They give the same
// value in every process (never std::hash). Example: examples/snippets/core/hash.cpp.
#include <cstddef>
#include <cstdint>
#include <string_view>

namespace luminal {

/// 64-bit finaliser (splitmix64) so that combined hashes spread over every bit.
inline uint64_t hash_mix(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  x ^= x >> 31;
  return x;
}

/// Folds `v` into `h` (order-sensitive).
inline void hash_combine(size_t& h, uint64_t v) {
  h = static_cast<size_t>(hash_mix(h ^ (v + 0x9e3779b97f4a7c15ULL + (h << 6))));
}
inline size_t hash_combined(size_t h, uint64_t v) {
  hash_combine(h, v);
  return h;
}

/// FNV-1a of a string: stable across runs and platforms (std::hash is not guaranteed to be).
inline uint64_t hash_string(std::string_view s) {
  uint64_t h = 1469598103934665603ULL;
  for (char c : s)
    h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
  return h;
}

}  // namespace luminal
