#include "luminal/cuda/modules.hpp"

#include <cstdio>
#include <map>
#include <optional>

#include "luminal/core/error.hpp"
#include "luminal/core/hash.hpp"
#include "luminal/cuda/compile_batch.hpp"
#include "luminal/cuda/prelude.hpp"
#include "luminal/cuda/staged_upload.hpp"

namespace luminal::cuda {

Module::~Module() {
  if (module) cuda_api().cuModuleUnload(module);
}

CUfunction KernelHandle::function(const std::string& entry) const {
  CUfunction f = nullptr;
  check(cuda_api().cuModuleGetFunction(&f, module->module, (entry + suffix).c_str()),
        "cuModuleGetFunction");
  return f;
}

namespace {

std::string hex(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

std::vector<uint8_t> to_bytes(const std::string& s) { return {s.begin(), s.end()}; }

}  // namespace

ModuleCache::ModuleCache(const CudaApi& cu, CUcontext ctx, std::string arch, std::string nvrtc,
                         int compile_threads, std::unique_ptr<KernelCache> disk)
    : cu_(cu),
      ctx_(ctx),
      arch_(std::move(arch)),
      nvrtc_(std::move(nvrtc)),
      compile_threads_(compile_threads),
      disk_(std::move(disk)) {}

std::vector<KernelHandle> ModuleCache::kernels_of(const std::vector<std::string>& sources,
                                                  const std::vector<std::string>& whats) {
  const std::string& prelude = device_prelude();
  const std::string key_prefix = "kernel " + arch_ + " " + nvrtc_ + "\n";
  std::vector<size_t> missing;  // indices of distinct unknown sources
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (size_t i = 0; i < sources.size(); ++i) {
      if (sources[i].compare(0, prelude.size(), prelude) != 0)
        throw Error("cuda: generated source of " + whats[i] + " lacks the device prelude");
      if (kernels_.count(sources[i])) {
        ++stats_.memory_hits;
        continue;
      }
      bool dup = false;
      for (size_t j : missing)
        dup = dup || sources[j] == sources[i];
      if (!dup) missing.push_back(i);
    }
  }
  // Disk: each source's entry names its batch and suffix; the batch holds the cubin.
  struct Found {
    std::string batch_key, suffix;
  };
  std::vector<Found> found(missing.size());
  std::map<std::string, std::vector<uint8_t>> cubins;  // by batch key
  std::vector<size_t> to_compile;                      // positions in `missing`
  for (size_t m = 0; m < missing.size(); ++m) {
    std::optional<std::vector<uint8_t>> entry;
    if (disk_) entry = disk_->load(key_prefix + sources[missing[m]]);
    if (entry) {
      const std::string text(entry->begin(), entry->end());
      const size_t nl = text.find('\n');
      if (nl != std::string::npos) {
        Found f{text.substr(0, nl), text.substr(nl + 1)};
        bool have = cubins.count(f.batch_key) > 0;
        {
          std::lock_guard<std::mutex> lock(mu_);
          have = have || batches_.count(f.batch_key) > 0;
        }
        if (!have)
          if (auto bytes = disk_->load(f.batch_key))
            cubins[f.batch_key] = std::move(*bytes), have = true;
        if (have) {
          found[m] = f;
          std::lock_guard<std::mutex> lock(mu_);
          ++stats_.disk_hits;
          continue;
        }
      }
    }
    to_compile.push_back(m);
  }
  // The rest: compiled in batches, in parallel.
  std::vector<std::string> todo, todo_whats;
  for (size_t m : to_compile) {
    todo.push_back(sources[missing[m]]);
    todo_whats.push_back(whats[missing[m]]);
  }
  CompiledBatches compiled = compile_batched(
      todo, todo_whats, arch_, compile_threads_ > 0 ? compile_threads_ : default_host_threads());
  std::vector<std::string> batch_keys;
  for (CompiledBatches::Batch& batch : compiled.batches) {
    batch_keys.push_back("batch " + arch_ + " " + nvrtc_ + " " + hex(hash_string(batch.text)) +
                         " " + std::to_string(batch.text.size()));
    if (disk_) disk_->store(batch_keys.back(), batch.cubin);
    cubins[batch_keys.back()] = std::move(batch.cubin);
  }
  for (size_t j = 0; j < to_compile.size(); ++j) {
    Found& f = found[to_compile[j]];
    f.batch_key = batch_keys[compiled.batch_of[j]];
    f.suffix = compiled.suffix[j];
    if (disk_) disk_->store(key_prefix + todo[j], to_bytes(f.batch_key + "\n" + f.suffix));
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    stats_.compiled += to_compile.size();
  }
  // Load the new modules and record every kernel.
  make_current(cu_, ctx_);
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [key, cubin] : cubins) {
    if (batches_.count(key)) continue;
    auto mod = std::make_shared<Module>();
    check(cu_.cuModuleLoadData(&mod->module, cubin.data()), "cuModuleLoadData");
    batches_[key] = mod;
  }
  for (size_t m = 0; m < missing.size(); ++m)
    kernels_[sources[missing[m]]] = KernelHandle{batches_.at(found[m].batch_key), found[m].suffix};
  std::vector<KernelHandle> out;
  for (const std::string& s : sources)
    out.push_back(kernels_.at(s));
  return out;
}

KernelCacheStats ModuleCache::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

void ModuleCache::clear() {
  std::lock_guard<std::mutex> lock(mu_);
  kernels_.clear();
  batches_.clear();
}

}  // namespace luminal::cuda
