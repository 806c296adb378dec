// luminal/cuda/compile_batch.hpp: many generated kernels compiled several to an NVRTC program,
// on a few threads (no GPU needed).
#include <iostream>
#include <string>
#include <vector>

#include "luminal/core/error.hpp"
#include "luminal/cuda/compile_batch.hpp"
#include "luminal/cuda/prelude.hpp"
#include "snippet.hpp"

using namespace luminal::cuda;

int main() {
  std::vector<std::string> sources, whats;
  for (int i = 0; i < 3; ++i) {
    sources.push_back(device_prelude() +
                      "extern \"C\" __global__ void LMN_ENTRY(lmn_map)(float* out) {\n"
                      "  out[threadIdx.x] = " +
                      std::to_string(i) + ";\n}\n");
    whats.push_back("node %" + std::to_string(i));
  }
  try {
    CompiledBatches c = compile_batched(sources, whats, "sm_90", 4);
    // source i: cubin c.batches[c.batch_of[i]].cubin, entry "lmn_map" + c.suffix[i]
    expect(c.batch_of.size() == 3 && c.suffix.size() == 3, "one batch and suffix per source");
  } catch (const luminal::Error& e) {
    std::cerr << e.what() << "\n";  // no NVRTC library here
  }
}
