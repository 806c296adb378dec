#pragma once
// Bringing a program's load-time folds within fold_limit by changing few genes.
//
// A fold replaces the weights it reads only where nothing else reads them as stored; a program
// that folds a weight (a repacked layout, say) and also reads it as stored somewhere keeps both
// copies. The fewest-kernels seed can do that: its genes are shared by alike classes across
// layers, and where one layer's class lacks an option the others take (SmolLM2's layer 1 in a
// q4_1 decode step: its output projection read both repacked and as stored), the seed both
// folds and reads that weight. The search ranks such a program after every one within the
// limit, so it never wins; repair_fold_excess finds the program next to it that fits.
// Used by compiler/search.cpp on the seed.
#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>

#include "luminal/compiler/fold.hpp"
#include "luminal/egraph/extract.hpp"
#include "luminal/program/llir.hpp"

namespace luminal {

/// What a program's folds add past fold_limit.
struct FoldExcess {
  int64_t bytes = 0;           // past the limit (<= 0: within it)
  std::set<std::string> kept;  // weights a fold reads that something still reads as stored
};

/// From `g` (whose folds pass the limit), one gene changed at a time: each time the change of
/// lowest program cost, among those of the genes of the classes that read a kept weight or hold
/// the fold leaf reading it, that lowers the excess (at most `tries` programs other than the
/// current one measured a step), until the program fits or `max_changes` were made. Returns the
/// genome that fits and how many changes it took, or nothing (also where the excess comes from
/// folds that no gene here can drop, such as an earlier bucket's). May throw what `excess`
/// or the fold resolver throws.
struct FoldRepair {
  Genome genome;
  int changes = 0;
};
std::optional<FoldRepair> repair_fold_excess(
    const SearchSpace& space, const FoldSpace& folds, Genome g,
    const std::function<FoldExcess(const LlirGraph&)>& excess, int max_changes = 8, int tries = 48);

}  // namespace luminal
