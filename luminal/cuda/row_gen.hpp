#pragma once
// The source writer of cuda.Row kernels (internal to row.cpp, which documents the kernel): a row
// program's element code and the loops over a thread's elements of the row in each form
// (chunked: kept packed a 16-byte chunk at a time; kept: one element a register; re-read), and
// the online softmax pattern (match_online). row.cpp fills one RowGen per node (the node, its
// program, the Codegen and the per-load facts) and writes each pass's body as loop() over
// element_code() of the values the pass needs (closure()).
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "luminal/core/shape.hpp"
#include "luminal/cuda/codegen.hpp"
#include "luminal/kernels/fused_program.hpp"
#include "luminal/program/llir.hpp"

namespace luminal::cuda::rows {

struct RowGen {
  const LlirNode& n;
  const FusedProgram& prog;
  Codegen& cg;
  Shape domain;
  std::vector<View> views;    // each load's view over the domain
  std::vector<bool> uniform;  // the value is the same along the row
  std::vector<int> stage;     // the pass after which the value is known (0: before any)
  std::vector<int> cached;    // per load index: cache slot, or -1
  std::vector<bool> chunked;  // per load index: read a chunk at a time in the chunked form
  std::vector<bool> keep;     // per instruction: its NaN payload can reach the result
  std::vector<bool> keep_in;  // per load index: some load of it keeps its NaN payload
  bool use_cache = false;
  int T = 32, K = 1;
  /// Elements per chunk: > 1 when every kept load is read V elements at a time with one aligned
  /// vector load and kept packed (a thread owns chunks k*T + t of the row; K counts chunks).
  int V = 1;

  /// Input c's name in the kernel (`in<c>` unless `inputs` names it: a row computed inside
  /// another node's kernel, row_prologue.hpp).
  std::vector<std::string> inputs = {};
  std::string in(int c) const {
    return inputs.empty() ? "in" + std::to_string(c) : inputs.at(static_cast<size_t>(c));
  }

  std::string I() const { return cg.idx(); }
  /// The chunked form: kept loads read and held V elements at a time.
  bool chunked_form() const { return use_cache && V > 1; }

  /// In the chunked form, a loop over the thread's chunks (chunk k*T + t of the row, its first
  /// element l0) running `body` for each chunk inside the row.
  std::string chunk_loop(const std::string& body) const;

  /// The instructions an element value at `targets` needs, that are not row-uniform, in order.
  std::vector<int> closure(const std::vector<int>& targets) const;

  /// Statements computing the element values `order` at element l of the row (flat index i);
  /// kept loads come from registers (index k, and j within a chunk).
  std::string element_code(const std::vector<int>& order);

  /// In the chunked form, the head of a chunk reading, in one vector load each, the loads of
  /// `order` that are not kept but are contiguous and aligned along the row (a norm's weight).
  std::string chunk_loads(const std::vector<int>& order);

  /// A loop over the thread's elements of the row running `inner` (which may use v-values,
  /// `i` and `l`; `k` is the register index in the kept forms, `j` the element of a chunk, and
  /// chunk_head / chunk_tail wrap each chunk).
  std::string loop(const std::string& inner, const std::string& chunk_head = {},
                   const std::string& chunk_tail = {});
};

/// A row program's levels: per instruction, whether its value is the same along the row (a load
/// where `uniform_load(child)` says so, a constant, a reduction, math on such values) and the pass
/// after which it is known (0: before any; a reduction one pass after its operand); per pass, the
/// reductions it computes (reds[p], in program order). cuda.Row and cuda.Attention read their
/// programs through it.
struct Levels {
  std::vector<bool> uniform;
  std::vector<int> stage;
  std::vector<std::vector<int>> reds;
  int passes = 0;
};
Levels levels(const FusedProgram& p, const std::function<bool(int child)>& uniform_load);

/// The online form's pattern (softmax, log-softmax): pass 1's only reduction m = RowMax(u), pass
/// 2's only reduction s = RowSum(e) with e = exp2((u + m * -1) * c), all f32, c a positive
/// finite constant.
struct Online {
  int m = -1, s = -1, u = -1, neg = -1, diff = -1, scaled = -1, e = -1, c = -1;
};
std::optional<Online> match_online(const FusedProgram& p, const std::vector<std::vector<int>>& reds,
                                   const std::vector<bool>& uniform);

}  // namespace luminal::cuda::rows
