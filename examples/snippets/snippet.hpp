#pragma once
// What every snippet includes: expect(), which stops the snippet (exit code 1, with a message)
// when a claim of its header's comment does not hold; error_of(), the message of the
// luminal::Error a call throws; scratch_dir() for snippets that write files.
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "luminal/core/error.hpp"

inline void expect(bool ok, const char* claim) {
  if (ok) return;
  std::fprintf(stderr, "snippet: this does not hold: %s\n", claim);
  std::exit(1);
}

/// The message of the luminal::Error that `call()` throws ("" when it throws none).
template <class F>
std::string error_of(F call) {
  try {
    call();
  } catch (const luminal::Error& e) {
    return e.what();
  }
  return "";
}

/// An empty folder of this process under the temporary directory (remove it when done).
inline std::filesystem::path scratch_dir(const char* name) {
  const auto dir = std::filesystem::temp_directory_path() /
                   (std::string(name) + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  return dir;
}
