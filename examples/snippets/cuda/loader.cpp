// luminal/cuda/loader.hpp: libraries opened with dlopen the first time they are asked for, once
// per process; what failed says why. Here the library is the C math library. No GPU needed.
#include <dlfcn.h>

#include <string>
#include <vector>

#include "luminal/cuda/loader.hpp"
#include "snippet.hpp"

using namespace luminal::cuda;

struct MathApi {
  double (*cos)(double) = nullptr;
};

LoadedApi<MathApi> load_math() {
  LoadedApi<MathApi> l;
  std::string tried;
  void* lib = open_library({"libm.so.6"}, nullptr, &tried);  // null: `tried` lists what was tried
  if (!lib) {
    l.error = "libm: cannot load " + tried;
    return l;
  }
  l.api.cos = reinterpret_cast<double (*)(double)>(dlsym(lib, "cos"));
  return l;
}

int main() {
  const MathApi& api = load_once(load_math).get();  // loaded once; throws why it did not
  expect(api.cos(0) == 1, "a function of the library");
  expect(&load_once(load_math) == &load_once(load_math), "once per process");

  std::string tried;
  expect(!open_library({"libluminal-absent.so", "libluminal-absent.so.2"}, nullptr, &tried) &&
             tried == "libluminal-absent.so, libluminal-absent.so.2",
         "what was tried, comma-separated");
  const std::vector<std::string> where = toolkit_library({"libnvrtc.so.13"}, "libnvrtc.so.13");
  expect(where.front() == "libnvrtc.so.13" &&
             where.back() == "/usr/local/cuda-13.0/lib64/libnvrtc.so.13",
         "the names first, the toolkit's folders after");
}
