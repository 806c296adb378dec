#pragma once
// cpu.Row's program runner (internal). See row.cpp.
#include <cstdint>
#include <functional>
#include <vector>

#include "luminal/cpu/cpu_op.hpp"
#include "luminal/cpu/fused_eval.hpp"
#include "luminal/cpu/strided.hpp"

namespace luminal::cpu {

/// The cpu.Row op.
const OpDef* row_op();

/// A row program of a node (its payload, views and shape [rows..., L]) and its pass schedule.
class RowProgram {
 public:
  /// Throws luminal::Error naming `op` for a node without a valid row program.
  RowProgram(const LlirNode& n, const char* op);

  /// Receives each block of the result: the scratch, the result's instruction, the block's
  /// first element (flat index over the node's shape) and its length (elements [0, n) of the
  /// instruction's array).
  using BlockSink = std::function<void(const uint8_t* s, int inst, int64_t flat, int64_t n)>;
  /// Runs every row (split over the pool), handing the result's blocks to `sink`: whole rows,
  /// or a long row's pieces, from several threads at once (disjoint pieces, in any order).
  void run(const KernelContext& k, const BlockSink& sink);

  DType result_dtype() const { return ev_.insts().back().dtype; }
  const SlotEval& eval() const { return ev_; }
  /// At these dims (valid in and after run()): the row length, the scratch arrays' length.
  int64_t row_len() const { return row_len_; }
  int64_t block_len() const { return len_; }
  int64_t rows() const;
  void prepare(const KernelContext& k);

 private:
  void run_rows(const KernelContext& k, int64_t r0, int64_t r1, const BlockSink& sink);
  /// One row in fixed pieces over the pool (rows fewer than the threads).
  void run_long_row(const KernelContext& k, int64_t row, int threads, const BlockSink& sink);
  /// Pass p's row values (rows b0 .. b0 + nb of a block; acc: the reductions so far, block_rows_
  /// a reduction) into the row arrays rs, and those element instructions read into s.
  void row_values(const KernelContext& k, int p, int64_t b0, int64_t nb, const double* acc,
                  uint8_t* rs, uint8_t* s);
  /// The element instructions `insts` (loads and math) over elements [flat, flat + n) into s.
  void eval_block(const KernelContext& k, const std::vector<int>& insts, uint8_t* s, int64_t flat,
                  int64_t n) const;
  /// t joined with reduction instruction i (RowSum or RowMax) over elements [e, e + n) of its
  /// operand's array in s.
  double reduce_segment(int i, uint8_t* s, int64_t e, int64_t n, double t) const;
  static std::vector<double>& acc_scratch();

  LlirNode node_;
  SlotEval ev_;
  std::vector<bool> row_level_;  // per instruction: one value per row
  std::vector<int> stage_;       // the pass from which its value exists
  int passes_ = 1;
  std::vector<bool> element_consts_;  // constants element-level instructions read
  struct Pass {
    std::vector<int> row_insts;  // row values it computes first (program order)
    std::vector<int> expand;     // those element-level instructions read
    std::vector<int> work;       // element-level instructions it evaluates
    std::vector<int> fresh;      // those no earlier pass evaluated
    std::vector<int> reduce;     // reductions it accumulates
  };
  std::vector<Pass> pass_;
  uint64_t version_ = 0;
  std::vector<StridedIndex> idx_;
  std::vector<double> long_acc_, long_part_;  // run_long_row's reductions and pieces' partials
  int64_t numel_ = 0, row_len_ = 0, len_ = 8, block_rows_ = 1;
};

}  // namespace luminal::cpu
