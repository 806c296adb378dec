#pragma once
// One bucket's program through the compile cache: loaded when a program searched before is
// cached, else searched (search_bucket, compile.hpp) and stored. The report says which
// (SearchReport::cached, cache_note).
// Example: examples/snippets/compiler/compile_bucket.cpp (a miss that searches, then a hit that
// asks for no profile data).
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
