#pragma once
// Load-time folding in the compiler (program/fold.hpp says how programs see it).
//
// A class is weight-only when it holds a weight Input (persistent, not carried, static shape) or
// an e-node computing it from weight-only classes alone with no dynamic dim in its shape, views
// or iota. Each weight-only class that something else reads (the frontier) and that holds at
// least fold_min_bytes gets a Fold leaf, unless folding it could only grow memory past
// fold_limit (its bytes minus those of every weight it reads). A class whose cone reads no input
// at all (a constant: iotas, constants and what is computed from them, such as a MoE router's
// [E, E] tie-break comparison) gets a leaf whatever its size, unless it is a scalar, or an Iota,
// a Constant or a cast of one (cheaper to compute where it is read); such a leaf is free in the
// fewest-kernels seeds (FoldSpace::constants), which otherwise avoid folds. The search may pick the
// leaf; the chosen program then reads the value as an input, and the fold program that computes it
// (the class's cone over weight inputs, with one Output) runs once when the session binds weights.
// Example: tests/compiler/fold_test.cpp (a transposed, scaled weight folded once).
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "luminal/egraph/egraph.hpp"
#include "luminal/egraph/extract.hpp"
#include "luminal/ir/graph.hpp"
#include "luminal/program/backend.hpp"
#include "luminal/program/fold.hpp"
#include "luminal/program/llir.hpp"

namespace luminal {

struct FoldOptions {
  bool on = false;
  uint64_t min_bytes = 64 << 10;
  uint64_t limit = 0;
};

/// What add_fold_leaves found: the placeholder label of each leaf and its class, and for every
/// weight-only e-node its depth over weight inputs (0 for an input; -1 when not weight-only),
/// which the fold programs follow so that they never cycle.
struct FoldSpace {
  std::map<std::string, ClassId, std::less<>> leaves;
  std::set<ClassId> constants;  // leaves whose cone reads no input (free in the seeds; as added)
  std::vector<int> node_level;  // by ENodeId
};

/// Adds Fold leaves to a saturated, rebuilt e-graph of `g` (before pruning) and rebuilds it.
FoldSpace add_fold_leaves(EGraph& eg, const Graph& g, const FoldOptions& opts);

/// The program that computes one folded value: weight Inputs, the class's cone, and one Output
/// labelled with the value's content label.
struct FoldProgram {
  std::string label;  // "#fold/<16 hex>": a hash of the program's text
  LlirGraph llir;
  DType dtype = DType::F32;
  Shape shape;
  uint64_t bytes = 0;
  std::vector<std::string> inputs;  // the weight labels it reads

  /// A program from its LLIR (the compile cache's text): its Output's label is replaced by the
  /// content label of the rest, and the fields above are read off the nodes. Throws unless the
  /// LLIR has exactly one Output, reads only labelled inputs and has a static shape.
  static FoldProgram from_llir(LlirGraph llir);
};

/// Where run_fold gets what the program reads and the arena it runs in.
struct FoldRunContext {
  std::function<Buffer(const std::string&)> input;  // the buffer of a weight label it reads
  std::function<Buffer(uint64_t)> allocate;         // the arena (released through `release`)
  std::function<void(Buffer)> release;
  Queue* queue = nullptr;
};

/// Computes `fold`'s value into `out` (at least fold.bytes) on `backend`: its program loaded,
/// run once on `ctx.queue`, synchronised and dropped. The session runs its folds this way; the
/// search too, so that each candidate is timed on the values it will read (a MoE router's
/// tie-break comparison decides which expert ids the step computes: zeros there made the ranks
/// collide and the expert matmuls read ids past the last expert).
void run_fold(Backend& backend, const FoldProgram& fold, Buffer out, const FoldRunContext& ctx);

/// The fold programs of one bucket's search, by placeholder label (memoised).
class FoldResolver {
 public:
  FoldResolver(const SearchSpace& space, const FoldSpace& folds) : space_(space), folds_(folds) {}
  /// Throws for an unknown placeholder, or a class with no weight-only option left.
  const FoldProgram& program(std::string_view placeholder);
  /// The placeholders a program reads (its fold inputs), each once.
  static std::vector<std::string> placeholders(const LlirGraph& step);
  /// `step` with each placeholder input relabelled to its fold's content label; the programs of
  /// those folds are appended to `used` (each once).
  LlirGraph relabel(LlirGraph step, std::vector<FoldProgram>* used);

 private:
  const SearchSpace& space_;
  const FoldSpace& folds_;
  std::map<std::string, std::unique_ptr<FoldProgram>, std::less<>> memo_;
};

}  // namespace luminal
