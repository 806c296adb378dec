#pragma once
// CompileOptions: how the compiler searches (candidates, seed, trials, time, memory, saturation
// limits) and the buckets of each dynamic dim; a Session or compile(g, backend, options) takes
// them.
// Example: examples/snippets/compiler/options.cpp (a seeded search with two buckets of s).
//
// Buckets: inclusive ranges of a dynamic dim, each searched separately at its representative
// value (default (min+max)/2); the plan chosen for a bucket is valid for every value in it.
// Overlapping buckets are rejected here; executing with a value outside every bucket throws,
// listing the buckets. A dynamic dim without buckets gets one plan for its declared range.
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "luminal/egraph/schedule.hpp"

namespace luminal {

class DimBucket {
 public:
  /// Inclusive [min, max]; throws luminal::Error if min > max or min < 0.
  DimBucket(int64_t min, int64_t max);
  /// The value the search profiles this bucket at (must lie in the range).
  DimBucket representative(int64_t value) const;
  int64_t min() const { return min_; }
  int64_t max() const { return max_; }
  int64_t rep() const { return rep_ ? *rep_ : min_ + (max_ - min_) / 2; }
  bool contains(int64_t v) const { return min_ <= v && v <= max_; }
  /// "[2, 512] (rep 16)"
  std::string to_string() const;

 private:
  int64_t min_, max_;
  std::optional<int64_t> rep_;
};

class CompileOptions {
 public:
  /// Most candidates profiled per bucket (default 100).
  CompileOptions& search_graph_limit(int n);
  /// Timed runs per candidate; the median counts (default 3).
  CompileOptions& trials(int n);
  /// Best candidates kept as parents of the next generation (default 1).
  CompileOptions& keep_best(int n);
  /// New candidates per generation (default 10).
  CompileOptions& generation_size(int n);
  /// Genes changed per mutation (default 10).
  CompileOptions& mutations(int n);
  /// Seed of the search (default 0): the same seed gives the same search.
  CompileOptions& seed(uint64_t s);
  /// Wall-clock budget of the search per bucket, in seconds (default: none).
  CompileOptions& time_budget(double seconds);
  /// A candidate whose timed run takes longer is rejected (default 1 s).
  CompileOptions& profile_timeout(double seconds);
  /// A candidate that takes longer to load (compile) is rejected (default 60 s).
  CompileOptions& candidate_timeout(double seconds);
  /// Plans needing more memory are rejected (default: no limit).
  CompileOptions& max_memory(uint64_t bytes);
  CompileOptions& max_memory_mib(uint64_t mib) { return max_memory(mib << 20); }
  CompileOptions& max_memory_gib(uint64_t gib) { return max_memory(gib << 30); }
  /// Buckets of a dynamic dim. Throws luminal::Error if two overlap or the list is empty.
  CompileOptions& dim_buckets(const std::string& dim, std::vector<DimBucket> buckets);
  /// Limits of e-graph saturation.
  CompileOptions& saturation_limits(Limits l);
  /// Progress bar / report on stderr (default true).
  CompileOptions& verbose(bool v);
  /// Root of the caches (programs/, kernels/, models/); default $XDG_CACHE_HOME/luminal, else
  /// ~/.cache/luminal. LUMINAL_CACHE=off turns the program cache off.
  CompileOptions& cache_dir(std::filesystem::path dir);
  /// Load-time folding (compiler/fold.hpp): a value computed from weights alone may be offered
  /// to the search as computed once when the weights are bound (default true; LUMINAL_FOLD=off
  /// turns it off).
  CompileOptions& folding(bool on);
  /// Bytes that folded values may add to the session's memory beyond the weights they replace
  /// (default 0: folds that take no more memory than the weights they release, such as a
  /// transpose or a concatenation; more lets the search keep, say, a dequantised copy).
  CompileOptions& fold_limit(uint64_t bytes);
  /// The smallest value offered for folding (default 64 KiB).
  CompileOptions& fold_min_bytes(uint64_t bytes);

  int search_graph_limit() const { return search_graph_limit_; }
  int trials() const { return trials_; }
  int keep_best() const { return keep_best_; }
  int generation_size() const { return generation_size_; }
  int mutations() const { return mutations_; }
  uint64_t seed() const { return seed_; }
  std::optional<double> time_budget() const { return time_budget_; }
  double profile_timeout() const { return profile_timeout_; }
  double candidate_timeout() const { return candidate_timeout_; }
  std::optional<uint64_t> max_memory() const { return max_memory_; }
  const std::map<std::string, std::vector<DimBucket>>& dim_buckets() const { return buckets_; }
  const Limits& saturation_limits() const { return limits_; }
  bool verbose() const { return verbose_; }
  const std::filesystem::path& cache_dir() const { return cache_dir_; }
  /// folding(), false when LUMINAL_FOLD=off.
  bool folding() const;
  uint64_t fold_limit() const { return fold_limit_; }
  uint64_t fold_min_bytes() const { return fold_min_bytes_; }

 private:
  int search_graph_limit_ = 100;
  int trials_ = 3;
  int keep_best_ = 1;
  int generation_size_ = 10;
  int mutations_ = 10;
  uint64_t seed_ = 0;
  std::optional<double> time_budget_;
  double profile_timeout_ = 1.0;
  double candidate_timeout_ = 60.0;
  std::optional<uint64_t> max_memory_;
  std::map<std::string, std::vector<DimBucket>> buckets_;
  Limits limits_;
  bool verbose_ = true;
  std::filesystem::path cache_dir_;
  bool folding_ = true;
  uint64_t fold_limit_ = 0;
  uint64_t fold_min_bytes_ = 64 << 10;
};

}  // namespace luminal
