#include "luminal/cuda/nvrtc.hpp"

#include <dlfcn.h>
#include <nvrtc.h>

#include <cstdlib>
#include <regex>
#include <sstream>

#include "luminal/core/error.hpp"
#include "luminal/cuda/loader.hpp"

namespace luminal::cuda {

namespace {

struct NvrtcApi {
  decltype(&::nvrtcVersion) nvrtcVersion = nullptr;
  decltype(&::nvrtcGetErrorString) nvrtcGetErrorString = nullptr;
  decltype(&::nvrtcCreateProgram) nvrtcCreateProgram = nullptr;
  decltype(&::nvrtcDestroyProgram) nvrtcDestroyProgram = nullptr;
  decltype(&::nvrtcCompileProgram) nvrtcCompileProgram = nullptr;
  decltype(&::nvrtcGetProgramLogSize) nvrtcGetProgramLogSize = nullptr;
  decltype(&::nvrtcGetProgramLog) nvrtcGetProgramLog = nullptr;
  decltype(&::nvrtcGetCUBINSize) nvrtcGetCUBINSize = nullptr;
  decltype(&::nvrtcGetCUBIN) nvrtcGetCUBIN = nullptr;
};

using Loaded = LoadedApi<NvrtcApi>;

Loaded load() {
  Loaded l;
  std::string tried;
  void* lib = open_library(toolkit_library({"libnvrtc.so.13", "libnvrtc.so"}, "libnvrtc.so.13"),
                           nullptr, &tried);
  if (!lib) {
    l.error = "NVRTC is not available: could not load " + tried +
              "; install the CUDA 13 toolkit's NVRTC (libnvrtc) or set CUDA_HOME";
    return l;
  }
#define LUMINAL_NVRTC_LOAD(name)                                                         \
  l.api.name = reinterpret_cast<decltype(l.api.name)>(dlsym(lib, #name));                \
  if (!l.api.name) {                                                                     \
    l.error = "NVRTC is not available: libnvrtc has no " #name "; use CUDA 12 or newer"; \
    return l;                                                                            \
  }
  LUMINAL_NVRTC_LOAD(nvrtcVersion)
  LUMINAL_NVRTC_LOAD(nvrtcGetErrorString)
  LUMINAL_NVRTC_LOAD(nvrtcCreateProgram)
  LUMINAL_NVRTC_LOAD(nvrtcDestroyProgram)
  LUMINAL_NVRTC_LOAD(nvrtcCompileProgram)
  LUMINAL_NVRTC_LOAD(nvrtcGetProgramLogSize)
  LUMINAL_NVRTC_LOAD(nvrtcGetProgramLog)
  LUMINAL_NVRTC_LOAD(nvrtcGetCUBINSize)
  LUMINAL_NVRTC_LOAD(nvrtcGetCUBIN)
#undef LUMINAL_NVRTC_LOAD
  return l;
}

const Loaded& loaded() { return load_once(load); }

const NvrtcApi& api() { return loaded().get(); }

void check(nvrtcResult r, const char* call) {
  if (r == NVRTC_SUCCESS) return;
  throw Error(std::string("nvrtc: ") + call + " failed: " + api().nvrtcGetErrorString(r));
}

/// The log with, after it, the numbered source lines around each "(line): error" it reports.
std::string annotate(const std::string& log, const std::string& source) {
  std::vector<std::string> lines;
  std::istringstream in(source);
  for (std::string line; std::getline(in, line);)
    lines.push_back(line);
  std::string out = log;
  static const std::regex where(R"(\((\d+)\): error)");
  std::vector<int> shown;
  for (auto it = std::sregex_iterator(log.begin(), log.end(), where); it != std::sregex_iterator();
       ++it) {
    const int line = std::stoi((*it)[1].str());
    if (std::find(shown.begin(), shown.end(), line) != shown.end()) continue;
    shown.push_back(line);
    out += "\n--- generated source around line " + std::to_string(line) + " ---\n";
    for (int k = std::max(1, line - 3);
         k <= std::min<int>(static_cast<int>(lines.size()), line + 3); ++k)
      out += (k == line ? ">" : " ") + std::to_string(k) + ": " + lines[k - 1] + "\n";
    if (shown.size() >= 3) break;
  }
  return out;
}

}  // namespace

bool nvrtc_available(std::string* why) { return loaded().available(why); }

std::string nvrtc_version() {
  int major = 0, minor = 0;
  check(api().nvrtcVersion(&major, &minor), "nvrtcVersion");
  return "nvrtc-" + std::to_string(major) + "." + std::to_string(minor);
}

std::vector<uint8_t> compile_cubin(const std::string& source, const std::string& arch,
                                   const std::string& what) {
  const NvrtcApi& nv = api();
  nvrtcProgram prog = nullptr;
  check(nv.nvrtcCreateProgram(&prog, source.c_str(), "luminal_kernel.cu", 0, nullptr, nullptr),
        "nvrtcCreateProgram");
  const std::string arch_opt = "--gpu-architecture=" + arch;
  const char* opts[] = {arch_opt.c_str(), "--std=c++17", "--fmad=false", "-default-device",
                        "--extra-device-vectorization"};
  const nvrtcResult r = nv.nvrtcCompileProgram(prog, 5, opts);
  size_t log_size = 0;
  nv.nvrtcGetProgramLogSize(prog, &log_size);
  std::string log(log_size, '\0');
  if (log_size > 1) nv.nvrtcGetProgramLog(prog, log.data());
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n'))
    log.pop_back();
  if (r != NVRTC_SUCCESS) {
    nv.nvrtcDestroyProgram(&prog);
    throw Error("cuda: compiling the kernel of " + what + " for " + arch + " failed (" +
                nv.nvrtcGetErrorString(r) + "):\n" + annotate(log, source));
  }
  size_t size = 0;
  check(nv.nvrtcGetCUBINSize(prog, &size), "nvrtcGetCUBINSize");
  std::vector<uint8_t> cubin(size);
  check(nv.nvrtcGetCUBIN(prog, reinterpret_cast<char*>(cubin.data())), "nvrtcGetCUBIN");
  nv.nvrtcDestroyProgram(&prog);
  return cubin;
}

}  // namespace luminal::cuda
