#pragma once
// Loading the CUDA libraries at run time (internal to luminal/cuda): the driver, NVRTC and
// cuBLASLt are opened with dlopen the first time they are asked for, once per process, so that
// binaries start on machines without them and only asking for them there fails, saying why.
// Example: examples/snippets/cuda/loader.cpp (a library loaded once; what was tried when none
// loads).
#include <string>
#include <vector>

#include "luminal/core/error.hpp"

namespace luminal::cuda {

/// A library's API as loaded once: its functions, or why they could not be loaded.
template <class Api>
struct LoadedApi {
  Api api;
  std::string error;  // empty: loaded

  /// The API; throws luminal::Error saying why it did not load.
  const Api& get() const {
    if (!error.empty()) throw Error(error);
    return api;
  }
  /// Whether it loaded; `why` (if given) gets the reason (empty when it loaded).
  bool available(std::string* why) const {
    if (why) *why = error;
    return error.empty();
  }
};

/// `load()`'s result, computed on the first call only (one per library: per Api).
template <class Api>
const LoadedApi<Api>& load_once(LoadedApi<Api> (*load)()) {
  static const LoadedApi<Api> l = load();
  return l;
}

/// Where a CUDA toolkit library is looked for: `names` (given to dlopen as they are), then
/// <dir>/lib64/`file` for $CUDA_HOME and $CUDA_PATH where set, /usr/local/cuda and
/// /usr/local/cuda-13.0.
std::vector<std::string> toolkit_library(std::vector<std::string> names, const std::string& file);

/// The first of `names` that dlopen loads (RTLD_NOW | RTLD_LOCAL), its name in `loaded` (if
/// given); null when none does, `tried` (if given) then listing them, comma-separated.
void* open_library(const std::vector<std::string>& names, std::string* loaded, std::string* tried);

}  // namespace luminal::cuda
