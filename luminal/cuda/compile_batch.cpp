#include "luminal/cuda/compile_batch.hpp"

#include <algorithm>
#include <atomic>
#include <thread>

#include "luminal/core/error.hpp"
#include "luminal/cuda/nvrtc.hpp"
#include "luminal/cuda/prelude.hpp"

namespace luminal::cuda {

CompiledBatches compile_batched(const std::vector<std::string>& sources,
                                const std::vector<std::string>& whats, const std::string& arch,
                                int threads, size_t per_batch) {
  const std::string& prelude = device_prelude();
  CompiledBatches out;
  out.batch_of.resize(sources.size());
  out.suffix.resize(sources.size());
  std::vector<std::vector<size_t>> members;
  per_batch = std::max<size_t>(per_batch, 1);
  for (size_t b = 0; b < sources.size(); b += per_batch) {
    CompiledBatches::Batch batch;
    batch.text = prelude;
    members.emplace_back();
    for (size_t i = b; i < std::min(sources.size(), b + per_batch); ++i) {
      if (sources[i].compare(0, prelude.size(), prelude) != 0)
        throw Error("cuda: the generated source of " + whats[i] + " lacks the device prelude");
      out.suffix[i] = "_k" + std::to_string(i - b);
      out.batch_of[i] = out.batches.size();
      batch.text += "#undef LMN_ENTRY\n#define LMN_ENTRY(n) n##" + out.suffix[i] + "\n" +
                    sources[i].substr(prelude.size());
      members.back().push_back(i);
    }
    out.batches.push_back(std::move(batch));
  }
  std::vector<std::string> errors(out.batches.size());
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t b = next++; b < out.batches.size(); b = next++) {
      try {
        out.batches[b].cubin =
            compile_cubin(out.batches[b].text, arch,
                          "a batch of " + std::to_string(members[b].size()) + " kernels");
      } catch (const std::exception& e) {
        errors[b] = e.what();
        // Compile the members alone for an error that names the culprit and its own lines.
        for (size_t i : members[b]) {
          try {
            compile_cubin(sources[i], arch, whats[i]);
          } catch (const std::exception& e2) {
            errors[b] = e2.what();
            break;
          }
        }
      }
    }
  };
  const size_t n = std::min<size_t>(static_cast<size_t>(std::max(threads, 1)), out.batches.size());
  if (n <= 1) {
    work();
  } else {
    std::vector<std::thread> pool;
    for (size_t t = 0; t < n; ++t)
      pool.emplace_back(work);
    for (std::thread& t : pool)
      t.join();
  }
  for (const std::string& e : errors)
    if (!e.empty()) throw Error(e);
  return out;
}

}  // namespace luminal::cuda
