#pragma once
// The compiler's front half, reusable on its own (tests, benchmarks, tools):
// HLIR -> e-graph -> saturate with the backend's rules -> prune -> search space, in which a
// Genome picks one program (to_llir).
// Example: examples/snippets/compiler/build_space.cpp (the first program of a matmul + relu).
#include <memory>

#include "luminal/compiler/fold.hpp"
#include "luminal/compiler/lower.hpp"
#include "luminal/egraph/extract.hpp"
#include "luminal/egraph/prune.hpp"
#include "luminal/egraph/schedule.hpp"
#include "luminal/program/backend.hpp"

namespace luminal {

struct BuiltSpace {
  std::unique_ptr<EGraph> eg;
  Lowered lowered;
  std::unique_ptr<SearchSpace> space;
  FoldSpace folds;  // the Fold leaves offered (none unless `fold.on`)
  SaturationReport saturation;
  PruneReport pruning;
  double lower_s = 0, saturate_s = 0, prune_s = 0, space_s = 0;
};

/// `facts`: ranges of the dynamic dims (a bucket's); a dim with lo == hi is substituted.
/// `fold`: load-time folding (compiler/fold.hpp), off by default; leaves are added after the
/// backend's rules, so values those rules make (a concatenation, a repacked weight) fold too.
BuiltSpace build_search_space(const Graph& g, Backend& backend, const Facts& facts,
                              const Limits& limits = {}, const FoldOptions& fold = {});

}  // namespace luminal
