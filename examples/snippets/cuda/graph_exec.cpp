// luminal/cuda/graph_exec.hpp: the graph executor of a plan: one CUDA graph per parity, built
// from the plan's steps in a chain (GraphSteps) and launched as one. Here the "plan" is two
// kernels: out[i] = i, then out[i] *= 2. Needs a GPU to run.
#include <cstdint>
#include <string>
#include <vector>

#include "cuda/no_gpu.hpp"
#include "luminal/cuda/cublaslt/lt_islands.hpp"
#include "luminal/cuda/device.hpp"
#include "luminal/cuda/graph_exec.hpp"
#include "luminal/cuda/modules.hpp"
#include "luminal/cuda/prelude.hpp"
#include "luminal/cuda/queue.hpp"
#include "snippet.hpp"

using namespace luminal;
using namespace luminal::cuda;

// Every kernel of a plan starts with lmn_pdl(): with programmatic edges (sm_90+) it waits there
// for the kernel before it.
const char* kFill =
    "extern \"C\" __global__ void LMN_ENTRY(lmn_map)(float* out) {\n"
    "  lmn_pdl();\n  out[threadIdx.x] = threadIdx.x;\n}\n";
const char* kTwice =
    "extern \"C\" __global__ void LMN_ENTRY(lmn_map)(float* out) {\n"
    "  lmn_pdl();\n  out[threadIdx.x] *= 2.0f;\n}\n";

class TwoKernels final : public GraphSteps {
 public:
  TwoKernels(std::vector<CUfunction> f, CUdeviceptr out) : f_(std::move(f)), out_(out) {
    args_[0] = &out_;
  }
  size_t step_count() const override { return f_.size(); }
  bool library_step(size_t) const override { return false; }
  bool in_graph(int, size_t) const override { return true; }
  CUDA_KERNEL_NODE_PARAMS kernel_params(int, size_t s) const override {
    CUDA_KERNEL_NODE_PARAMS p{};
    p.func = f_[s];
    p.gridDimX = p.gridDimY = p.gridDimZ = 1;
    p.blockDimX = 32;
    p.blockDimY = p.blockDimZ = 1;
    p.kernelParams = const_cast<void**>(args_);  // the driver copies the values
    return p;
  }
  std::string dims_text() const override { return ""; }
  void point_to(CUdeviceptr out) { out_ = out; }

 private:
  std::vector<CUfunction> f_;
  CUdeviceptr out_;
  void* args_[1];
};

int main() {
  if (no_gpu()) return 0;  // nothing to run here
  Device dev(CudaOptions{}, lt_available);
  std::vector<KernelHandle> k = dev.modules->kernels_of(
      {device_prelude() + kFill, device_prelude() + kTwice}, {"fill", "twice"});
  const uint64_t bytes = 32 * sizeof(float);
  Buffer first = dev.allocate(bytes), second = dev.allocate(bytes);
  auto address = [](Buffer b) { return reinterpret_cast<CUdeviceptr>(b.ptr); };
  TwoKernels steps({k[0].function("lmn_map"), k[1].function("lmn_map")}, address(first));
  CUstream stream = dev.default_queue->stream;
  {
    GraphExecutor exec(dev, steps, /*library=*/nullptr, /*plan=*/&steps);
    exec.build(0, stream);  // parity 0: built, instantiated, uploaded
    exec.launch(0, stream, /*dims_copied=*/false, GraphExecutor::Clock::now());
    steps.point_to(address(second));  // a re-bind moved the buffer: both nodes take it
    exec.rebind(0, stream, /*same_launches=*/true, /*moved=*/{true, true});
    exec.launch(0, stream, /*dims_copied=*/false, GraphExecutor::Clock::now());
    dev.sync(nullptr);
  }
  for (Buffer b : {first, second}) {
    std::vector<float> host(32);
    dev.download(host.data(), b, 0, bytes, nullptr);
    dev.release(b);
    expect(host[5] == 10 && host[31] == 62, "both kernels ran, in order");
  }
  const GraphStats g = dev.graphs.stats();
  expect(g.instantiations == 1 && g.launches == 2 && g.node_updates == 2,
         "one graph, its nodes updated in place; counted in the device's counters");
}
