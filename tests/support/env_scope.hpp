#pragma once
// Test helper: an environment variable set (or, with a null value, unset) for a scope (a switch
// the code reads when it runs), put back as it was at its end, even when an ASSERT leaves the
// test early.
//
//   testing::EnvScope on("LUMINAL_CUDA_GEMV_SPLIT", "1");
#include <cstdlib>
#include <optional>
#include <string>

namespace luminal::testing {

struct EnvScope {
  EnvScope(const char* k, const char* v) : key(k) {
    if (const char* old = std::getenv(k)) before = old;
    if (v)
      ::setenv(k, v, 1);
    else
      ::unsetenv(k);
  }
  ~EnvScope() {
    if (before)
      ::setenv(key, before->c_str(), 1);
    else
      ::unsetenv(key);
  }
  EnvScope(const EnvScope&) = delete;
  EnvScope& operator=(const EnvScope&) = delete;
  const char* key;
  std::optional<std::string> before;
};

}  // namespace luminal::testing
