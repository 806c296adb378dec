#pragma once
// A session's load-time folds (internal to Session): each fold program the chosen programs read
// (compiler/fold.hpp), its buffer, and the inputs it reads. Folds run on the first execute after
// compile() and again after a weight they read is set; then every weight that only folds read is
// released (Residency::release_input), so the folded value replaces it in memory.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "luminal/compiler/fold.hpp"
#include "luminal/ir/graph.hpp"
#include "luminal/runtime/residency.hpp"

namespace luminal {

class FoldStore {
 public:
  /// Adds a bucket's folds; a label already held is shared. `res` maps their inputs.
  void adopt(const std::vector<FoldProgram>& folds, const Graph& g, const Residency& res);
  /// The index of a fold label, or -1.
  int index_of(std::string_view label) const;
  bool empty() const { return folds_.empty(); }
  /// Allocates every fold's buffer from `res` (compile(), before the memory check).
  void allocate(Residency& res);
  Buffer buffer(int f) const { return folds_[static_cast<size_t>(f)].buf; }
  /// Bytes of every fold's buffer.
  uint64_t bytes() const;

  /// Whether some fold must run before the next execute.
  bool dirty() const { return dirty_; }
  /// Input k changed: the folds reading it must run again.
  void input_changed(int k);
  /// Marks every fold stale (after compile()).
  void mark_all_stale();
  /// Runs every stale fold on `res`'s backend and queue (each program loaded, run once, and
  /// dropped). Returns the bytes of the folds that ran.
  uint64_t run(Residency& res);
  /// The inputs the folds read (indices into Residency::in).
  std::vector<int> inputs() const;
  /// Number of fold runs so far.
  uint64_t runs() const { return runs_; }
  /// One line per fold: label, dtype and shape, bytes, the weights it reads.
  std::string report() const;

 private:
  struct Fold {
    FoldProgram program;
    std::vector<int> inputs;  // Residency::in indices, in the order of program.inputs
    Buffer buf;
    bool stale = true;
  };
  std::vector<Fold> folds_;
  std::vector<std::vector<int>> readers_;  // per input index: the folds reading it
  bool dirty_ = false;
  uint64_t runs_ = 0;
};

}  // namespace luminal
