#include "luminal/compiler/options.hpp"

#include <algorithm>
#include <cstdlib>
#include <string_view>

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

// Sets a field and returns the options: each setter is one line.
template <class T, class V>
CompileOptions& set(CompileOptions& o, T& field, V v) {
  field = std::move(v);
  return o;
}
template <class T, class V>
CompileOptions& set_positive(CompileOptions& o, T& field, V v, const char* what) {
  require_positive(v, what);
  return set(o, field, v);
}

}  // namespace

CompileOptions& CompileOptions::search_graph_limit(int n) {
  return set_positive(*this, search_graph_limit_, n, "search_graph_limit");
}
CompileOptions& CompileOptions::trials(int n) { return set_positive(*this, trials_, n, "trials"); }
CompileOptions& CompileOptions::keep_best(int n) {
  return set_positive(*this, keep_best_, n, "keep_best");
}
CompileOptions& CompileOptions::generation_size(int n) {
  return set_positive(*this, generation_size_, n, "generation_size");
}
CompileOptions& CompileOptions::mutations(int n) {
  return set_positive(*this, mutations_, n, "mutations");
}
CompileOptions& CompileOptions::seed(uint64_t s) { return set(*this, seed_, s); }
CompileOptions& CompileOptions::time_budget(double seconds) {
  return set_positive(*this, time_budget_, seconds, "time_budget");
}
CompileOptions& CompileOptions::profile_timeout(double seconds) {
  return set_positive(*this, profile_timeout_, seconds, "profile_timeout");
}
CompileOptions& CompileOptions::candidate_timeout(double seconds) {
  return set_positive(*this, candidate_timeout_, seconds, "candidate_timeout");
}
CompileOptions& CompileOptions::max_memory(uint64_t bytes) {
  return set(*this, max_memory_, bytes);
}
CompileOptions& CompileOptions::saturation_limits(Limits l) { return set(*this, limits_, l); }
CompileOptions& CompileOptions::verbose(bool v) { return set(*this, verbose_, v); }

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
  return set(*this, cache_dir_, std::move(dir));
}

CompileOptions& CompileOptions::folding(bool on) { return set(*this, folding_, on); }
CompileOptions& CompileOptions::fold_limit(uint64_t bytes) {
  return set(*this, fold_limit_, bytes);
}
CompileOptions& CompileOptions::fold_min_bytes(uint64_t bytes) {
  return set(*this, fold_min_bytes_, bytes);
}

bool CompileOptions::folding() const {
  if (!folding_) return false;
  const char* v = std::getenv("LUMINAL_FOLD");
  if (!v) return true;
  const std::string_view s(v);
  return !(s == "off" || s == "0" || s == "false" || s == "no");
}

}  // namespace luminal
