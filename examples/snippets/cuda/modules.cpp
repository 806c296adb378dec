// luminal/cuda/modules.hpp: a device's compiled kernels: from memory, else from disk, else
// compiled with NVRTC (several sources to a program) and loaded as modules. Needs a GPU to run.
#include <string>
#include <vector>

#include "cuda/no_gpu.hpp"
#include "luminal/cuda/cublaslt/lt_islands.hpp"
#include "luminal/cuda/device.hpp"
#include "luminal/cuda/modules.hpp"
#include "luminal/cuda/prelude.hpp"
#include "snippet.hpp"

using namespace luminal;
using namespace luminal::cuda;

int main() {
  if (no_gpu()) return 0;  // nothing to run here
  Device dev(CudaOptions{}, lt_available);
  // A cache of its own, nothing on disk (given a KernelCache with a folder, cubins go there too).
  ModuleCache cache(*dev.cu, dev.ctx, dev.arch, dev.nvrtc, 2, nullptr);
  std::vector<std::string> sources, whats;
  for (int i = 0; i < 2; ++i) {
    sources.push_back(device_prelude() +
                      "extern \"C\" __global__ void LMN_ENTRY(lmn_map)(float* out) {\n"
                      "  out[threadIdx.x] = " +
                      std::to_string(i) + ";\n}\n");
    whats.push_back("node %" + std::to_string(i));
  }
  std::vector<KernelHandle> k = cache.kernels_of(sources, whats);
  CUfunction f = k[0].function("lmn_map");  // the entry, renamed by its batch suffix
  expect(f != nullptr && k.size() == 2, "one handle per source");
  expect(cache.stats().compiled == 2, "both compiled with NVRTC");
  cache.kernels_of(sources, whats);
  expect(cache.stats().memory_hits == 2, "the second time from memory");
  cache.clear();  // before the device's context goes
}
