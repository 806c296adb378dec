#pragma once
// The compile cache: each bucket's winning program, kept across processes so that a second start
// skips the search. A ProgramCache (root and switches from the options and the environment)
// loads and stores the entry of a key (program_key); what goes wrong is a warning, given back
// through the `warning` argument, never an error.
// Example: examples/snippets/compiler/compile_cache.cpp (a program stored, then loaded back).
//
// Everything lives under one root: CompileOptions::cache_dir, else $XDG_CACHE_HOME/luminal, else
// ~/.cache/luminal, with `programs/` (this cache), `kernels/` (backends' compiled kernels) and
// `models/` beneath it. LUMINAL_CACHE=off disables `programs/` only; LUMINAL_KERNEL_CACHE=off
// disables `kernels/`.
//
// The key is text covering everything the winner depends on: the graph (exactly: every node,
// attribute and view), declared dim ranges and set_dim values, carried pairs, the bucket, the
// options that change the search's result, the backend, its device key and the names of the rules
// in force (a build with other rules, an environment switch that leaves some out), and the library
// version. An entry stores its full key and a checksum and is named by the key's hash; a
// truncated, corrupt or stale entry (another version or key) is ignored with a one-line warning
// and replaced. Writers write a temporary file, then rename it into place (atomic), so concurrent
// compiles of one graph are safe.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "luminal/compiler/compile.hpp"
#include "luminal/compiler/options.hpp"
#include "luminal/program/backend.hpp"

namespace luminal {

/// The cache root (see above).
std::filesystem::path cache_root(const CompileOptions& opts);
/// False when LUMINAL_KERNEL_CACHE=off.
bool kernel_cache_enabled();

/// The exact text the bucket's program depends on.
std::string program_key(const Graph& g, const CompileOptions& opts, const Backend& backend,
                        const BucketRanges& ranges, const std::vector<std::string>& dim_names);

struct CachedProgram {
  LlirGraph llir;
  std::vector<FoldProgram> folds;  // the load-time folds llir reads
  double best_seconds = 0;
  std::filesystem::path file;
};

class ProgramCache {
 public:
  explicit ProgramCache(const CompileOptions& opts);
  bool enabled() const { return enabled_; }
  const std::filesystem::path& dir() const { return dir_; }
  /// The entry for `key`, or nothing (a miss, or an unusable entry: then `warning` says why).
  std::optional<CachedProgram> load(const std::string& key, const Backend& backend,
                                    std::string* warning) const;
  /// Writes the entry (temporary file + rename). Failures to write are warnings, never errors.
  void store(const std::string& key, const LlirGraph& llir, const std::vector<FoldProgram>& folds,
             double best_seconds, std::string* warning) const;
  /// The entry file of a key.
  std::filesystem::path file_of(const std::string& key) const;

 private:
  bool enabled_ = false;
  std::filesystem::path dir_;
};

}  // namespace luminal
