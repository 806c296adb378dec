#pragma once
// The compiler's back half: one search per dim bucket (bucket_combinations lists the buckets,
// search_bucket searches one), each producing a Plan loaded for the bucket's PlanSpec.
// Example: examples/snippets/compiler/compile.cpp (two buckets of s, searched on buffers made by
// hand).
//
// A session (luminal/runtime/session.hpp) owns the buffers the search profiles on, gets each
// bucket's program from compile_bucket (compile_bucket.hpp: the compile cache, else this search),
// then binds the winners to its buffers.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "luminal/compiler/options.hpp"
#include "luminal/compiler/search.hpp"
#include "luminal/compiler/trace.hpp"
#include "luminal/ir/graph.hpp"
#include "luminal/program/backend.hpp"

namespace luminal {

using BucketRanges = std::map<std::string, DimBucket>;

struct BucketPlan {
  BucketRanges ranges;  // the bucketed dims' ranges
  PlanSpec spec;        // every dim's range in this bucket, and the slot order
  LlirGraph llir;
  std::unique_ptr<Plan> plan;
  /// The load-time folds the program reads (inputs labelled "#fold/..."): a session runs them
  /// once when weights are bound (compiler/fold.hpp).
  std::vector<FoldProgram> folds;
  SearchReport report;
  /// "s=[2, 512] (rep 16)"; "" without buckets.
  std::string name() const;
};

/// Every combination of one bucket per bucketed dim ({{}} when no dim has buckets). Throws if a
/// bucketed dim is not a dim of the graph.
std::vector<BucketRanges> bucket_combinations(const Graph& g, const CompileOptions& opts);

/// The ranges of every dim of `g` in a bucket: declared ranges, overridden by the bucket's.
/// Throws naming a dim with neither a bucket nor a declared range (declare_dim was never called:
/// nothing bounds its buffers).
Facts bucket_facts(const Graph& g, const BucketRanges& ranges);

/// The dims a bucket is timed at (slot order of `dim_names`): a bucket's representative, else the
/// graph's set_dim value, else the middle of the range in `facts` (bucket_facts of the bucket).
std::vector<int64_t> representative_dims(const Graph& g, const BucketRanges& ranges,
                                         const Facts& facts,
                                         const std::vector<std::string>& dim_names);

/// Saturates, prunes and searches one bucket, timing candidates on `data`.
BucketPlan search_bucket(const Graph& g, Backend& backend, const CompileOptions& opts,
                         BucketRanges ranges, const std::vector<std::string>& dim_names,
                         const ProfileData& data, const Trace& trace);

}  // namespace luminal
