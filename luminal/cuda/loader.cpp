#include "luminal/cuda/loader.hpp"

#include <dlfcn.h>

#include <cstdlib>

namespace luminal::cuda {

std::vector<std::string> toolkit_library(std::vector<std::string> names, const std::string& file) {
  for (const char* env : {"CUDA_HOME", "CUDA_PATH"})
    if (const char* v = std::getenv(env); v && *v)
      names.push_back(std::string(v) + "/lib64/" + file);
  names.push_back("/usr/local/cuda/lib64/" + file);
  names.push_back("/usr/local/cuda-13.0/lib64/" + file);
  return names;
}

void* open_library(const std::vector<std::string>& names, std::string* loaded, std::string* tried) {
  std::string list;
  for (const std::string& n : names) {
    if (void* lib = dlopen(n.c_str(), RTLD_NOW | RTLD_LOCAL)) {
      if (loaded) *loaded = n;
      return lib;
    }
    list += (list.empty() ? "" : ", ") + n;
  }
  if (tried) *tried = list;
  return nullptr;
}

}  // namespace luminal::cuda
