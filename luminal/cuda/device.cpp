#include "luminal/cuda/device.hpp"

#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>

#include "luminal/compiler/compile_cache.hpp"
#include "luminal/compiler/options.hpp"
#include "luminal/core/error.hpp"
#include "luminal/cuda/nvrtc.hpp"
#include "luminal/cuda/queue.hpp"

namespace luminal::cuda {

namespace {

/// `fallback`, unless environment variable `name` is set: then it must be "0" or "1".
bool env_switch(const char* name, bool fallback) {
  const char* e = std::getenv(name);
  if (!e || !*e) return fallback;
  const std::string v = e;
  if (v != "0" && v != "1")
    throw Error(std::string(name) + " must be '0' (off) or '1' (on), got '" + v + "'");
  return v == "1";
}

/// Variable `name`'s value among `choices` (by name), `fallback` when unset or empty; throws
/// luminal::Error naming the variable, the choices and the value otherwise.
template <class T>
T env_choice(const char* name, T fallback,
             std::initializer_list<std::pair<std::string_view, T>> choices) {
  const char* e = std::getenv(name);
  if (!e || !*e) return fallback;
  std::string names;
  for (const auto& [n, v] : choices) {
    if (n == e) return v;
    names += (names.empty() ? "'" : " or '") + std::string(n) + "'";
  }
  throw Error(std::string(name) + " must be " + names + ", got '" + e + "'");
}

}  // namespace

Device::Device(CudaOptions options, LibraryCheck cublaslt_loads) : opts(std::move(options)) {
  cu = &cuda_api();
  if (std::string why; !nvrtc_available(&why)) throw Error(why);
  const CudaApi& api = *cu;
  int count = 0;
  check(api.cuDeviceGetCount(&count), "cuDeviceGetCount");
  if (opts.device < 0 || opts.device >= count)
    throw Error("cuda: device " + std::to_string(opts.device) +
                " does not exist; this machine has " + std::to_string(count) + " GPU(s) (0 to " +
                std::to_string(count - 1) + ")");
  check(api.cuDeviceGet(&cu_device, opts.device), "cuDeviceGet");
  check(api.cuDevicePrimaryCtxRetain(&ctx, cu_device), "cuDevicePrimaryCtxRetain");
  bind_context();
  char name[256] = {0};
  check(api.cuDeviceGetName(name, sizeof name, cu_device), "cuDeviceGetName");
  gpu_name = name;
  check(
      api.cuDeviceGetAttribute(&cc_major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, cu_device),
      "cuDeviceGetAttribute");
  check(
      api.cuDeviceGetAttribute(&cc_minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, cu_device),
      "cuDeviceGetAttribute");
  check(api.cuDeviceGetAttribute(&sm_count, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, cu_device),
        "cuDeviceGetAttribute");
  check(api.cuDriverGetVersion(&driver_version), "cuDriverGetVersion");
  arch = "sm_" + std::to_string(cc_major) + std::to_string(cc_minor);
  nvrtc = nvrtc_version();
  default_queue = std::make_unique<CudaQueue>(*this);
  executor = env_choice(
      "LUMINAL_CUDA_EXECUTOR", opts.executor,
      {{"graph", CudaOptions::Executor::Graph}, {"stream", CudaOptions::Executor::Stream}});
  graph_edges = env_choice(
      "LUMINAL_CUDA_GRAPH_EDGES", opts.graph_edges,
      {{"chain", CudaOptions::GraphEdges::Chain}, {"dataflow", CudaOptions::GraphEdges::Dataflow}});
  new_dims = env_choice(
      "LUMINAL_CUDA_NEW_DIMS", opts.new_dims,
      {{"stream", CudaOptions::NewDims::Stream}, {"capture", CudaOptions::NewDims::Capture}});
  // griddepcontrol needs sm_90
  programmatic = env_switch("LUMINAL_CUDA_PDL", opts.programmatic_launch) && cc_major >= 9;
  lt_on = env_switch("LUMINAL_CUDA_CUBLASLT", opts.cublaslt);
  if (!lt_on) {
    lt_why = "cuBLASLt is off (CudaOptions::cublaslt = false or LUMINAL_CUDA_CUBLASLT=0)";
  } else if (!cublaslt_loads(&lt_why)) {
    lt_on = false;
    // Asked for but missing: said once per process, not per backend.
    static std::once_flag said;
    std::call_once(said, [&] {
      std::fprintf(stderr, "luminal: %s; CUDA matmuls use generated kernels\n", lt_why.c_str());
    });
  }
  tf32 = lt_on && env_switch("LUMINAL_CUDA_TF32", opts.allow_tf32);
  std::filesystem::path dir = opts.kernel_dir;
  if (dir.empty() && kernel_cache_enabled()) {
    const std::filesystem::path root = cache_root(CompileOptions());
    if (!root.empty()) dir = root / "kernels";
  }
  modules =
      std::make_unique<ModuleCache>(api, ctx, arch, nvrtc, opts.compile_threads,
                                    dir.empty() ? nullptr : std::make_unique<KernelCache>(dir));
}

Device::~Device() {
  bind_context();
  default_queue.reset();  // waits for its stream
  lt.handle.reset();      // the cuBLASLt handle, while the context is still held
  modules->clear();
  if (ctx) cu->cuDevicePrimaryCtxRelease(cu_device);
}

void Device::bind_context() const { make_current(*cu, ctx); }

CudaQueue& Device::queue(Queue* q) {
  if (!q) return *default_queue;
  auto* cq = dynamic_cast<CudaQueue*>(q);
  if (!cq || &cq->dev != this)
    throw Error("cuda: a queue made by another backend was passed to this one");
  return *cq;
}

ReaderPool& Device::readers() {
  std::call_once(readers_once_, [&] {
    reader_pool_ = std::make_unique<ReaderPool>(opts.upload_threads > 0 ? opts.upload_threads
                                                                        : default_host_threads());
  });
  return *reader_pool_;
}

}  // namespace luminal::cuda
