// Forced programs timed on fresh device buffers (cuda_bench.hpp): the shape sections (gemv, qgemm,
// expert) bind a program they picked themselves and time its replays; the linear-layer shapes
// and the L2 size they share.
#include <algorithm>
#include <vector>

#include "bench/cuda_bench.hpp"
#include "luminal/cuda/device.hpp"
#include "tests/support/llir_direct.hpp"

namespace luminal::bench_cuda {

int l2_bytes(cuda::CudaBackend& be) {
  int l2 = 0;
  cuda::check(be.device().cu->cuDeviceGetAttribute(&l2, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE,
                                                   be.device().cu_device),
              "cuDeviceGetAttribute");
  return l2;
}

int copies_past_l2(int l2, double bytes, int most) {
  return std::min(most, std::max(1, static_cast<int>((2.0 * l2 + bytes - 1) / bytes)));
}

const std::vector<LinearShape>& linear_shapes() {
  static const std::vector<LinearShape> shapes = {
      {"8B", "q/o", 4096, 4096},       {"8B", "k/v", 1024, 4096},
      {"8B", "gate/up", 14336, 4096},  {"8B", "down", 4096, 14336},
      {"8B", "lm head", 128256, 4096}, {"SmolLM2", "q/o", 576, 576},
      {"SmolLM2", "k/v", 192, 576},    {"SmolLM2", "gate/up", 1536, 576},
      {"SmolLM2", "down", 576, 1536},  {"SmolLM2", "lm head", 49152, 576},
  };
  return shapes;
}

CUdeviceptr dptr(Buffer b) { return static_cast<CUdeviceptr>(reinterpret_cast<uintptr_t>(b.ptr)); }

void fill_pattern(cuda::CudaBackend& be, Buffer b) {
  cuda::Device& im = be.device();
  im.bind_context();
  cuda::check(im.cu->cuMemsetD8Async(dptr(b), 0x3c, b.bytes, static_cast<CUstream>(be.stream())),
              "cuMemsetD8Async");
}

double forced_plan_ms(cuda::CudaBackend& be, const LlirGraph& llir,
                      const std::function<uint64_t(const std::string&)>& input_bytes,
                      const std::function<uint64_t(size_t)>& output_bytes, int trials,
                      const std::function<void(const std::string&, Buffer)>& fill_input) {
  luminal::testing::LoadedPlan lp = luminal::testing::load_plan(be, llir);
  std::vector<Buffer> owned;
  Bindings bind;
  for (const std::string& label : lp->io().inputs) {
    owned.push_back(be.allocate(input_bytes(label)));
    if (fill_input)
      fill_input(label, owned.back());
    else
      fill_pattern(be, owned.back());
    bind.inputs.push_back(owned.back());
  }
  for (size_t i = 0; i < lp->io().outputs.size(); ++i) {
    owned.push_back(be.allocate(output_bytes(i)));
    bind.outputs.push_back(owned.back());
  }
  owned.push_back(be.allocate(std::max<uint64_t>(lp->arena_bytes(), 256)));
  bind.arena = owned.back();
  lp->bind(0, bind);
  const double ms = be.time(*lp.plan, 0, nullptr, trials, 30.0) * 1e3;
  lp.plan.reset();
  for (Buffer b : owned)
    be.release(b);
  return ms;
}

}  // namespace luminal::bench_cuda
