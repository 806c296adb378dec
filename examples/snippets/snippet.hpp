#pragma once
// What every snippet includes: expect(), which stops the snippet (exit code 1, with a message)
// when a claim of its header's comment does not hold.
#include <cstdio>
#include <cstdlib>

inline void expect(bool ok, const char* claim) {
  if (ok) return;
  std::fprintf(stderr, "snippet: this does not hold: %s\n", claim);
  std::exit(1);
}
