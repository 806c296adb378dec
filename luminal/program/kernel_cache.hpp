#pragma once
// KernelCache: compiled kernels shared by every candidate and bucket of a search, and across
// processes on disk (the compile cache's `kernels/` folder, cache_root(opts) / "kernels").
// get_or_build() keeps a built kernel in memory under its key (kernel_key: the node and what its
// code generation reads); load() and store() keep a kernel's bytes (a cubin) on disk. A cache
// made without a folder (KernelCache()) keeps nothing on disk.
// Example: examples/snippets/program/kernel_cache.cpp (a kernel built once, then found by key;
// bytes stored on disk and loaded by another cache).
//
// Keys are exact texts compared for equality, never just hashes: the op, its label-free
// attributes (payload included), every input to code generation that is not an attribute (the
// bucket facts of the dims the node uses, the architecture). A disk entry is named by the key's
// hash and stores the full key; an entry whose key differs, or that is truncated or corrupt, is a
// miss. Writes go to a temporary file renamed into place. Thread-safe.
#include <filesystem>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "luminal/core/expr.hpp"
#include "luminal/program/llir.hpp"

namespace luminal {

/// The exact key of a node's kernel: op name, label-free attributes, the facts of the dims it
/// uses (its shape, views and iota), and `arch` (whatever else code generation reads).
std::string kernel_key(const LlirNode& node, const Facts& facts, const std::string& arch);

class KernelCache {
 public:
  /// `disk_dir` empty: memory only.
  explicit KernelCache(std::filesystem::path disk_dir = {});

  /// The in-memory value for `key`, built once by `build` (which may throw: nothing is cached).
  template <class T>
  std::shared_ptr<const T> get_or_build(const std::string& key,
                                        const std::function<std::shared_ptr<const T>()>& build) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = memory_.find(key);
      if (it != memory_.end()) {
        ++hits_;
        return std::static_pointer_cast<const T>(it->second);
      }
    }
    std::shared_ptr<const T> v = build();
    std::lock_guard<std::mutex> lock(mu_);
    ++builds_;
    return std::static_pointer_cast<const T>(memory_.emplace(key, v).first->second);
  }

  /// Bytes stored on disk under `key`, or nothing (no disk, a miss, or an unusable entry).
  std::optional<std::vector<uint8_t>> load(const std::string& key) const;
  /// Stores bytes on disk under `key` (no-op without disk; write failures are ignored).
  void store(const std::string& key, const std::vector<uint8_t>& bytes) const;
  /// The file an entry of `key` lives in.
  std::filesystem::path file_of(const std::string& key) const;

  size_t hits() const { return hits_; }
  size_t builds() const { return builds_; }

 private:
  std::filesystem::path dir_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, std::shared_ptr<const void>> memory_;
  size_t hits_ = 0, builds_ = 0;
};

}  // namespace luminal
