#include "luminal/compiler/options.hpp"

#include <algorithm>

#include "luminal/core/error.hpp"

namespace luminal {

DimBucket::DimBucket(int64_t min, int64_t max) : min_(min), max_(max) {
  if (min < 0 || min > max) {
    throw Error("DimBucket(" + std::to_string(min) + ", " + std::to_string(max) +
                "): need 0 <= min <= max");
  }
}

DimBucket DimBucket::representative(int64_t value) const {
  if (!contains(value)) {
    throw Error("DimBucket [" + std::to_string(min_) + ", " + std::to_string(max_) +
                "]: representative " + std::to_string(value) + " is outside the range");
  }
  DimBucket b = *this;
  b.rep_ = value;
  return b;
}

std::string DimBucket::to_string() const {
  return "[" + std::to_string(min_) + ", " + std::to_string(max_) + "] (rep " +
         std::to_string(rep()) + ")";
}

namespace {
void require_positive(int v, const char* what) {
  if (v < 1) throw Error(std::string("CompileOptions::") + what + " must be at least 1");
}
void require_positive(double v, const char* what) {
  if (!(v > 0)) throw Error(std::string("CompileOptions::") + what + " must be positive");
}
}  // namespace

CompileOptions& CompileOptions::search_graph_limit(int n) {
  require_positive(n, "search_graph_limit");
  search_graph_limit_ = n;
  return *this;
}
CompileOptions& CompileOptions::trials(int n) {
  require_positive(n, "trials");
  trials_ = n;
  return *this;
}
CompileOptions& CompileOptions::keep_best(int n) {
  require_positive(n, "keep_best");
  keep_best_ = n;
  return *this;
}
CompileOptions& CompileOptions::generation_size(int n) {
  require_positive(n, "generation_size");
  generation_size_ = n;
  return *this;
}
CompileOptions& CompileOptions::mutations(int n) {
  require_positive(n, "mutations");
  mutations_ = n;
  return *this;
}
CompileOptions& CompileOptions::seed(uint64_t s) {
  seed_ = s;
  return *this;
}
CompileOptions& CompileOptions::time_budget(double seconds) {
  require_positive(seconds, "time_budget");
  time_budget_ = seconds;
  return *this;
}
CompileOptions& CompileOptions::profile_timeout(double seconds) {
  require_positive(seconds, "profile_timeout");
  profile_timeout_ = seconds;
  return *this;
}
CompileOptions& CompileOptions::candidate_timeout(double seconds) {
  require_positive(seconds, "candidate_timeout");
  candidate_timeout_ = seconds;
  return *this;
}
CompileOptions& CompileOptions::max_memory(uint64_t bytes) {
  max_memory_ = bytes;
  return *this;
}
CompileOptions& CompileOptions::saturation_limits(Limits l) {
  limits_ = l;
  return *this;
}
CompileOptions& CompileOptions::verbose(bool v) {
  verbose_ = v;
  return *this;
}

CompileOptions& CompileOptions::dim_buckets(const std::string& dim, std::vector<DimBucket> b) {
  if (b.empty()) throw Error("dim_buckets(\"" + dim + "\"): give at least one bucket");
  if (dim == "z") throw Error("dim_buckets: 'z' is the index variable, not a dynamic dimension");
  std::vector<DimBucket> sorted = b;
  std::sort(sorted.begin(), sorted.end(),
            [](const DimBucket& x, const DimBucket& y) { return x.min() < y.min(); });
  for (size_t i = 1; i < sorted.size(); ++i) {
    if (sorted[i].min() <= sorted[i - 1].max()) {
      throw Error("dim_buckets(\"" + dim + "\"): overlapping buckets " + sorted[i - 1].to_string() +
                  " and " + sorted[i].to_string() +
                  "; every value must fall in at most one bucket");
    }
  }
  buckets_[dim] = std::move(b);
  return *this;
}

CompileOptions& CompileOptions::cache_dir(std::filesystem::path dir) {
  cache_dir_ = std::move(dir);
  return *this;
}

}  // namespace luminal
