#pragma once
// One bucket's program through the compile cache: loaded when a program searched before is
// cached, else searched and stored.
//
//   for (const BucketRanges& ranges : bucket_combinations(g, opts)) {
//     BucketPlan b = compile_bucket(g, backend, opts, ranges, dim_names,
//                                   [&]() -> const ProfileData& { return data(); }, trace);
//     ...   // b.plan is loaded for b.spec; b.report.cached says whether a search ran
//   }
//
// The profile data is asked for only on a miss (a warm start uploads no generated data).
#include <functional>
#include <string>
#include <vector>

#include "luminal/compiler/compile.hpp"

namespace luminal {

/// The program of one bucket: the compile cache's entry (ProgramCache, compile_cache.hpp) when
/// there is one and it loads, reported as cached; else search_bucket on the data `profile_data`
/// returns (called only then), stored in the cache. An unusable entry, a cached program that does
/// not load and a failed store are warnings on stderr ("luminal: warning: ..."), never errors;
/// the report's cache_note names the file read or written, or why it was not.
BucketPlan compile_bucket(const Graph& g, Backend& backend, const CompileOptions& opts,
                          BucketRanges ranges, const std::vector<std::string>& dim_names,
                          const std::function<const ProfileData&()>& profile_data,
                          const Trace& trace);

}  // namespace luminal
