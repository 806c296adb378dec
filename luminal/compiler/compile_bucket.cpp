#include "luminal/compiler/compile_bucket.hpp"

#include <iostream>
#include <optional>

#include "luminal/compiler/compile_cache.hpp"

namespace luminal {

namespace {

void warn(const std::string& w) {
  if (!w.empty()) std::cerr << "luminal: warning: " << w << "\n";
}

// The cached program loaded for the bucket, with the report a search would have written; no plan
// when it does not load (warned).
BucketPlan load_cached(const Graph& g, Backend& backend, BucketRanges ranges,
                       const std::vector<std::string>& dim_names, CachedProgram hit) {
  BucketPlan bp;
  bp.ranges = std::move(ranges);
  bp.spec.facts = bucket_facts(g, bp.ranges);
  bp.spec.dim_names = dim_names;
  try {
    bp.plan = backend.load(hit.llir, bp.spec);
  } catch (const std::exception& e) {
    warn("compile cache: " + hit.file.string() + " does not load (" + e.what() +
         "); searching again");
    return bp;
  }
  bp.llir = std::move(hit.llir);
  bp.folds = std::move(hit.folds);
  bp.report.bucket = bp.name();
  bp.report.hlir_nodes = g.nodes().size();
  bp.report.cached = true;
  bp.report.cache_note = hit.file.string();
  bp.report.best_seconds = hit.best_seconds;
  bp.report.best_op_mix = bp.llir.op_mix();
  return bp;
}

}  // namespace

BucketPlan compile_bucket(const Graph& g, Backend& backend, const CompileOptions& opts,
                          BucketRanges ranges, const std::vector<std::string>& dim_names,
                          const std::function<const ProfileData&()>& profile_data,
                          const Trace& trace) {
  const ProgramCache cache(opts);
  const std::string key =
      cache.enabled() ? program_key(g, opts, backend, ranges, dim_names) : std::string();
  std::string warning;
  std::optional<CachedProgram> hit = cache.load(key, backend, &warning);
  warn(warning);
  if (hit) {
    BucketPlan bp = load_cached(g, backend, ranges, dim_names, std::move(*hit));
    if (bp.plan) return bp;
  }
  BucketPlan bp =
      search_bucket(g, backend, opts, std::move(ranges), dim_names, profile_data(), trace);
  if (cache.enabled()) {
    warning.clear();
    cache.store(key, bp.llir, bp.folds, bp.report.best_seconds, &warning);
    warn(warning);
    bp.report.cache_note = warning.empty() ? "stored in " + cache.file_of(key).string() : warning;
  }
  return bp;
}

}  // namespace luminal
