// Forced programs timed on fresh device buffers (cuda_bench.hpp): the shape sections (gemv, qgemm,
// expert) bind a program they picked themselves and time its replays.
#include <algorithm>
#include <vector>

#include "bench/cuda_bench.hpp"
#include "luminal/cuda/device.hpp"
#include "tests/support/llir_direct.hpp"

namespace luminal::bench_cuda {

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
