#include "luminal/cuda/cublaslt/lt_api.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <vector>

#include "luminal/core/error.hpp"
#include "luminal/cuda/loader.hpp"

namespace luminal::cuda {

namespace {

using Loaded = LoadedApi<LtApi>;

Loaded load() {
  Loaded l;
  std::vector<std::string> names;
  if (const char* v = std::getenv("LUMINAL_CUBLASLT"); v && *v) {
    if (std::string(v) == "off") {
      l.error = "cuBLASLt is off (LUMINAL_CUBLASLT=off)";
      return l;
    }
    names.push_back(v);
  } else {
    names = toolkit_library({"libcublasLt.so.13"}, "libcublasLt.so.13");
  }
  std::string tried;
  void* lib = open_library(names, &l.api.library, &tried);
  if (!lib) {
    l.error = "cuBLASLt is not available: could not load " + tried +
              " (install the CUDA 13 toolkit's cuBLAS, or set LUMINAL_CUBLASLT to the library's "
              "path)";
    return l;
  }
#define LUMINAL_LT_LOAD(name)                                                                  \
  l.api.name = reinterpret_cast<decltype(l.api.name)>(dlsym(lib, #name));                      \
  if (!l.api.name) {                                                                           \
    l.error = "cuBLASLt is not available: " + l.api.library + " has no " #name " (need 13.x)"; \
    return l;                                                                                  \
  }
  LUMINAL_CUBLASLT_FUNCTIONS(LUMINAL_LT_LOAD)
#undef LUMINAL_LT_LOAD
  l.api.version = l.api.cublasLtGetVersion();
  if (l.api.version / 10000 != CUBLAS_VER_MAJOR) {
    l.error = "cuBLASLt is not available: " + l.api.library + " is version " +
              std::to_string(l.api.version) + ", built against major version " +
              std::to_string(CUBLAS_VER_MAJOR);
    return l;
  }
  return l;
}

const Loaded& loaded() { return load_once(load); }

}  // namespace

const LtApi* lt_api(std::string* why) {
  const Loaded& l = loaded();
  if (l.error.empty()) return &l.api;
  if (why) *why = l.error;
  return nullptr;
}

void check_lt(const LtApi& lt, cublasStatus_t s, const char* call) {
  if (s == CUBLAS_STATUS_SUCCESS) return;
  const char* name = lt.cublasLtGetStatusName(s);
  const char* text = lt.cublasLtGetStatusString(s);
  throw Error(std::string("cuBLASLt: ") + call + " failed: " + (name ? name : "unknown status") +
              " (" + (text ? text : "") + ")");
}

}  // namespace luminal::cuda
