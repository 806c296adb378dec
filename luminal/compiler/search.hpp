#pragma once
// The search: a genetic algorithm over a SearchSpace's genes, timing candidates on the backend.
//
// Generation 0 is the first genome plus random ones; every later generation mutates the
// keep_best fastest genomes found so far. A candidate that fails to load or run (or exceeds a
// timeout) is rejected and counted, never chosen. The search stops at search_graph_limit
// candidates, at the time budget, or when no unseen genome can be drawn.
#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "luminal/compiler/fold.hpp"
#include "luminal/compiler/options.hpp"
#include "luminal/egraph/extract.hpp"
#include "luminal/program/backend.hpp"
#include "luminal/program/llir.hpp"

namespace luminal {

struct SearchReport {
  std::string bucket;  // "s=[2, 512] rep 16" or "" without buckets
  size_t hlir_nodes = 0;
  size_t enodes = 0;
  size_t eclasses = 0;
  size_t genes = 0;
  double log10_space = 0;
  int candidates = 0;  // profiled or rejected
  int rejected = 0;
  std::string first_rejection;  // message of the first rejection
  std::string seed_rejection;   // why the fewest-kernels seed was rejected ("" when it ran)
  /// After a rejected seed: "candidate N, one choice changed" when a program one choice away
  /// from it ran; after a seed whose folds passed fold_limit: "candidate N, its folds within
  /// fold_limit after K choices changed" (compiler/fold_repair.hpp); else "".
  std::string seed_repair;
  int over_fold_limit = 0;  // timed candidates whose folds passed fold_limit
  int64_t fold_growth = 0;  // bytes the winner's folds add when none fitted fold_limit
  double best_seconds = 0;
  double first_seconds = 0;  // time of the first valid candidate
  double seed_seconds = 0;   // time of the fewest-kernels seed (0: rejected or not reached)
  /// The finalists timed again at the end (see search()): "" when none were, else one line
  /// naming each with its times and the winner.
  std::string finalists;
  std::map<std::string, int> best_op_mix;
  std::string stop;        // why the search ended
  bool cached = false;     // loaded from the compile cache: no search ran
  std::string cache_note;  // the cache file read or written, or why it was not used
  double lower_s = 0, saturate_s = 0, prune_s = 0, extract_s = 0, compile_s = 0, profile_s = 0;
  std::string saturation;  // SaturationReport::to_string()
  std::string pruning;     // PruneReport::to_string()
  /// Multi-line closing report.
  std::string to_string() const;
};

struct SearchResult {
  Genome best;
  /// The winner, its fold inputs relabelled to the folds' content labels.
  LlirGraph llir;
  /// The programs of the folds it reads (load-time folding, compiler/fold.hpp).
  std::vector<FoldProgram> folds;
  std::unique_ptr<Plan> plan;
  SearchReport report;
};

/// The data candidates run on while they are timed: a buffer of the backend per program input
/// and output label, sized for every value of the bucket. Candidates may write carried inputs in
/// place, so those must be scratch copies.
struct ProfileData {
  std::map<std::string, Buffer, std::less<>> inputs;
  std::map<std::string, Buffer, std::less<>> outputs;
  /// Bytes of the session's own buffers (weights, state, inputs, outputs): a candidate's arena
  /// and workspaces must fit in max_memory beside them.
  uint64_t fixed_bytes = 0;
  /// Load-time folds the buckets searched before this one chose (content label -> bytes and the
  /// weights it reads), and the inputs their programs read: a candidate's memory is counted with
  /// them (a weight that only folds read is released; one a step reads stays).
  struct Fold {
    uint64_t bytes = 0;
    std::vector<std::string> inputs;
  };
  std::map<std::string, Fold, std::less<>> earlier_folds;
  std::set<std::string, std::less<>> earlier_step_inputs;
};

/// Runs the search for the bucket `spec`, timing each candidate at `dims` (slot order of
/// spec.dim_names; the bucket's representative values) on `data`. A candidate's time is one
/// median of a few runs, and on a busy machine one such median can be off by a fifth: so at the
/// end the fastest few candidates within a small margin of the best (the finalists) are loaded
/// again and timed in alternating rounds, and the winner is the one with the lowest time any
/// round gave it. First timings do not count: they ran at different moments (a quieter one made
/// the best look best), and only the rounds time the finalists side by side. `trace` (may be
/// null) receives each new best candidate's LLIR. `folds` (add_fold_leaves of the space's e-graph;
/// may be null) lets candidates read folded values: they are timed on scratch buffers. A candidate
/// whose folds would grow memory past max_memory is rejected; one past fold_limit is chosen only
/// when no candidate fits it (then the one that passes it by the fewest bytes, the fastest of
/// those; SearchReport::fold_growth says by how much).
SearchResult search(const SearchSpace& space, Backend& backend, const CompileOptions& opts,
                    const PlanSpec& spec, const std::vector<int64_t>& dims, const ProfileData& data,
                    SearchReport report,
                    const std::function<void(const std::string&, const std::string&)>& trace,
                    const FoldSpace* folds = nullptr);

}  // namespace luminal
