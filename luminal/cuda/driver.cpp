#include "luminal/cuda/driver.hpp"

#include <dlfcn.h>

#include <mutex>

#include "luminal/core/error.hpp"
#include "luminal/cuda/loader.hpp"

namespace luminal::cuda {

namespace {

using Loaded = LoadedApi<CudaApi>;

using GetProcAddress = CUresult (*)(const char*, void**, int, cuuint64_t,
                                    CUdriverProcAddressQueryResult*);

Loaded load() {
  Loaded l;
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    const char* e = dlerror();
    l.error = std::string(
                  "CUDA is not available: the NVIDIA driver library libcuda.so.1 could "
                  "not be loaded (") +
              (e ? e : "not found") +
              "); run on a machine with an NVIDIA GPU and driver, or use "
              "the CPU backend";
    return l;
  }
  auto get = reinterpret_cast<GetProcAddress>(dlsym(lib, "cuGetProcAddress_v2"));
  if (!get) {
    l.error =
        "CUDA is not available: the NVIDIA driver is older than CUDA 12 (no "
        "cuGetProcAddress_v2); update the driver to one that supports CUDA " +
        std::to_string(CUDA_VERSION / 1000) + "." + std::to_string(CUDA_VERSION % 1000 / 10);
    return l;
  }
#define LUMINAL_CUDA_LOAD(name)                                                                \
  {                                                                                            \
    void* fn = nullptr;                                                                        \
    CUdriverProcAddressQueryResult status{};                                                   \
    if (get(#name, &fn, CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, &status) != CUDA_SUCCESS || \
        !fn) {                                                                                 \
      l.error = "CUDA is not available: the driver has no " #name " for CUDA " +               \
                std::to_string(CUDA_VERSION) + "; update the NVIDIA driver";                   \
      return l;                                                                                \
    }                                                                                          \
    l.api.name = reinterpret_cast<decltype(l.api.name)>(fn);                                   \
  }
  LUMINAL_CUDA_FUNCTIONS(LUMINAL_CUDA_LOAD)
#undef LUMINAL_CUDA_LOAD
  CUresult r = l.api.cuInit(0);
  if (r != CUDA_SUCCESS) {
    const char* name = nullptr;
    l.api.cuGetErrorName(r, &name);
    l.error = std::string("CUDA is not available: cuInit failed with ") +
              (name ? name : "an unknown error") +
              " (no usable GPU, or the driver does not match the kernel module)";
    return l;
  }
  int count = 0;
  if (l.api.cuDeviceGetCount(&count) != CUDA_SUCCESS || count == 0) {
    l.error = "CUDA is not available: the driver sees no GPU";
    return l;
  }
  return l;
}

const Loaded& loaded() { return load_once(load); }

}  // namespace

const CudaApi& cuda_api() { return loaded().get(); }

bool driver_available(std::string* why) { return loaded().available(why); }

void make_current(const CudaApi& cu, CUcontext ctx) {
  thread_local CUcontext current = nullptr;
  if (current == ctx) return;
  check(cu.cuCtxSetCurrent(ctx), "cuCtxSetCurrent");
  current = ctx;
}

void check(CUresult r, const char* call) {
  if (r == CUDA_SUCCESS) return;
  const CudaApi& cu = loaded().api;
  const char* name = nullptr;
  const char* text = nullptr;
  if (cu.cuGetErrorName) cu.cuGetErrorName(r, &name);
  if (cu.cuGetErrorString) cu.cuGetErrorString(r, &text);
  throw Error(std::string("cuda: ") + call + " failed: " + (name ? name : "unknown error") + " (" +
              (text ? text : "no description") + ")");
}

}  // namespace luminal::cuda
