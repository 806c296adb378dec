#pragma once
// A cuda.Row's one row computed inside another kernel: the GEMV that reads it as its activation
// (cuda.RowGemv, row_prologue.cpp; codegen.hpp's RowPrologue). row.cpp writes the row's code.
#include <cstdint>
#include <string>
#include <vector>

#include "luminal/cuda/codegen.hpp"

namespace luminal::cuda {

/// The statements computing row node `row`'s single row (its output [1, L] or [L], L a
/// constant) with all `threads` threads of the kernel's block into `dest`, a shared array of L
/// elements of the row's dtype the caller declares (16-byte aligned), reading input c as
/// `inputs[c]`: cuda.Row's code for that row (its passes, sums in double, its stores), with the
/// block's thread count in place of the one cuda.Row would choose. They end with a
/// __syncthreads(). Throws luminal::Error naming the op when `row` is not such a row.
/// The length of the one row that `v` reads along `axis`: unit stride there, stride 0 (or length
/// 1) on every other axis, no base, a constant length; 0 when `v` reads otherwise. (The activation
/// a cuda.RowGemv computes: its rule and the GEMV generators that take it check the same.)
int64_t one_row_length(const View& v, int axis);

std::string row_into_shared(const LlirNode& row, const GenContext& ctx, Codegen& cg, int threads,
                            const std::string& dest, const std::vector<std::string>& inputs);

}  // namespace luminal::cuda
