#pragma once
// Compiling many generated kernels at once (internal to luminal/cuda). NVRTC's fixed cost per
// program (~0.13 s) dwarfs a small kernel (~0.02 s), so sources are compiled several to a
// program: the prelude once, then each source's kernels with their entry points renamed by a
// suffix (LMN_ENTRY), and the batches on a few threads. Needs no GPU. Source i's kernels are in
// the cubin of batch batch_of[i], entry `e` there named e + suffix[i].
// Example: examples/snippets/cuda/compile_batch.cpp (three sources compiled in batches).
#include <cstdint>
#include <string>
#include <vector>

namespace luminal::cuda {

struct CompiledBatches {
  struct Batch {
    std::string text;  // the program compiled
    std::vector<uint8_t> cubin;
  };
  std::vector<Batch> batches;
  std::vector<size_t> batch_of;     // per source
  std::vector<std::string> suffix;  // per source: appended to its entry names
};

/// Sources must each start with device_prelude(). Throws luminal::Error naming the failing
/// source (`whats[i]`), with the log and the lines around the error in that source alone.
CompiledBatches compile_batched(const std::vector<std::string>& sources,
                                const std::vector<std::string>& whats, const std::string& arch,
                                int threads, size_t per_batch = 16);

}  // namespace luminal::cuda
