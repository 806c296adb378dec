// luminal/core/hash.hpp: hashes that are the same in every process (never std::hash), for
// interned and hash-consed structures and cache keys.
#include <cstddef>
#include <string>
#include <vector>

#include "luminal/core/hash.hpp"
#include "snippet.hpp"

int main() {
  const std::vector<int> a{1, 2, 3};
  const std::string label = "x";
  size_t h = 0;
  luminal::hash_combine(h, a.size());
  luminal::hash_combine(h, luminal::hash_string(label));  // stable: never std::hash
  expect(luminal::hash_string("x") == luminal::hash_string(std::string("x")),
         "hash_string depends on the characters only");
  expect(h != 0, "the combined hash is not the seed");
}
