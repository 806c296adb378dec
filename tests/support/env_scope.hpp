#pragma once
// Test helper: an environment variable set for a scope (a switch the code reads when it runs),
// unset at its end, even when an ASSERT leaves the test early.
//
//   testing::EnvScope on("LUMINAL_CUDA_GEMV_SPLIT", "1");
#include <cstdlib>

namespace luminal::testing {

struct EnvScope {
  EnvScope(const char* k, const char* v) : key(k) { ::setenv(k, v, 1); }
  ~EnvScope() { ::unsetenv(key); }
  EnvScope(const EnvScope&) = delete;
  EnvScope& operator=(const EnvScope&) = delete;
  const char* key;
};

}  // namespace luminal::testing
