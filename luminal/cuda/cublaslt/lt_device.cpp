// The device's cuBLASLt (lt_islands.hpp): whether the library loads, its handle, and whether
// its calls can be captured into CUDA graphs here (the capture probe).
#include <atomic>
#include <cstdio>
#include <mutex>

#include "luminal/core/error.hpp"
#include "luminal/cuda/cublaslt/lt_islands.hpp"
#include "luminal/cuda/cublaslt/lt_prepare.hpp"
#include "luminal/cuda/testing.hpp"

namespace luminal::cuda {

bool lt_available(std::string* why) { return lt_api(why) != nullptr; }

LtHandle& lt_handle(Device& dev) {
  std::lock_guard<std::mutex> lock(dev.lt.mu);
  if (!dev.lt.handle) {
    std::string why;
    const LtApi* api = lt_api(&why);
    if (!api) throw Error("cuda: " + why);
    dev.bind_context();
    dev.lt.handle = std::make_shared<LtHandle>(*api);
  }
  return *dev.lt.handle;
}

namespace {
std::atomic<bool> fail_probe{false};
}

void TestHooks::fail_lt_capture_probe(bool fail) { fail_probe = fail; }

bool lt_capture_works(Device& dev) {
  LtHandle& h = lt_handle(dev);
  std::lock_guard<std::mutex> lock(dev.lt.mu);
  if (dev.lt.probe >= 0) return dev.lt.probe == 1;
  const CudaApi* cu = dev.cu;
  std::string why;
  if (fail_probe.exchange(false)) {
    why = "forced by a test";
  } else {
    try {
      dev.bind_context();
      LtSpec s;
      s.m = s.n = s.k = 1;
      s.a = s.b = s.c = s.d = LtMatrixSpec{CUDA_R_32F, 1, 1, 1, 0, CUBLASLT_ORDER_COL};
      LtPrepared prep(h, s, static_cast<int>(dev.cu_device));
      CUdeviceptr mem = 0;
      check(cu->cuMemAlloc(&mem, 256 * 3), "cuMemAlloc");
      const float ab[2] = {2.0f, 3.0f};
      float d = 0;
      CUstream st = nullptr;
      CUgraph g = nullptr;
      CUgraphExec ex = nullptr;
      CUresult r = cu->cuStreamCreate(&st, CU_STREAM_NON_BLOCKING);
      if (r == CUDA_SUCCESS) r = cu->cuMemcpyHtoDAsync(mem, ab, sizeof ab[0], st);
      if (r == CUDA_SUCCESS) r = cu->cuMemcpyHtoDAsync(mem + 256, ab + 1, sizeof ab[1], st);
      if (r == CUDA_SUCCESS) r = cu->cuStreamSynchronize(st);
      if (r == CUDA_SUCCESS) r = cu->cuGraphCreate(&g, 0);
      if (r == CUDA_SUCCESS)
        r = cu->cuStreamBeginCaptureToGraph(st, g, nullptr, nullptr, 0,
                                            CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
      if (r == CUDA_SUCCESS) {
        CUgraph ended = nullptr;
        try {
          prep.enqueue({mem, mem + 256, mem + 512, mem + 512}, 0, st);
        } catch (const std::exception& e) {
          why = e.what();
        }
        r = cu->cuStreamEndCapture(st, &ended);
      }
      if (r == CUDA_SUCCESS && why.empty()) r = cu->cuGraphInstantiateWithFlags(&ex, g, 0);
      if (r == CUDA_SUCCESS && why.empty()) r = cu->cuGraphLaunch(ex, st);
      if (r == CUDA_SUCCESS && why.empty()) r = cu->cuStreamSynchronize(st);
      if (r == CUDA_SUCCESS && why.empty()) r = cu->cuMemcpyDtoHAsync(&d, mem + 512, sizeof d, st);
      if (r == CUDA_SUCCESS && why.empty()) r = cu->cuStreamSynchronize(st);
      if (r != CUDA_SUCCESS && why.empty()) why = "CUDA error " + std::to_string(r);
      if (why.empty() && d != 6.0f) why = "the captured product gave " + std::to_string(d);
      if (ex) cu->cuGraphExecDestroy(ex);
      if (g) cu->cuGraphDestroy(g);
      if (st) cu->cuStreamDestroy(st);
      cu->cuMemFree(mem);
    } catch (const std::exception& e) {
      why = e.what();
    }
  }
  dev.lt.probe = why.empty() ? 1 : 0;
  if (!why.empty())
    std::fprintf(stderr,
                 "luminal: cuBLASLt calls cannot be captured into CUDA graphs here (%s); plans "
                 "with cuBLASLt steps run on the stream\n",
                 why.c_str());
  return dev.lt.probe == 1;
}

}  // namespace luminal::cuda
