#pragma once
// What the expert matmul kernels share (expert_gemv.cpp: cuda.ExpertGemv, its cast and glu forms;
// expert_sum.cpp: cuda.ExpertGemvSum): the k loops over a chosen expert's weight row, the chunk
// width they read it with, and the expert ops the fused forms build on. Internal to luminal/cuda.
#include <cstdint>
#include <string>
#include <vector>

#include "luminal/core/dtype.hpp"
#include "luminal/core/shape.hpp"
#include "luminal/cuda/codegen.hpp"
#include "luminal/egraph/op_def.hpp"
#include "luminal/egraph/rule.hpp"

namespace luminal::cuda {

struct CudaOp;

namespace expert {

/// Threads a block, and its warps.
inline constexpr int kBlock = 256;
inline constexpr int kWarps = kBlock / 32;

/// The coefficient of a linear stride c*z.
int64_t coef(const Expr& stride);
/// The float form's chunk width V (weight elements a lane loads at once: 16 bytes, or fewer
/// where D, the strides or the activation's rows are not aligned to that, down to 1), or 0 when
/// the kernel cannot read W [E, N, D] (dtype tw) with the activation rows `xv` (dtype tx): block
/// rows must start at blocks (V is then 32, a unit) beside an f32 activation; the activation
/// must be contiguous along D.
int chunk_width(const View& xv, DType tx, const View& wv, DType tw);
/// The float form's k loop into `acc`: lane chunks c of V weight elements from in2 + wo against
/// the activation's V elements from in0 + xo (W warps split D, `part` the warp's share, U loads in
/// flight; I the index type).
std::string float_loop(DType tx, DType tw, int V, int W, int U, const std::string& I);
/// The block form's k loop into `acc`: lane units of 32 values (QT_<t>), U loaded before any is
/// decoded, against the f32 activation's 32 values (8 float4 loads when `vec`).
std::string block_loop(DType tw, int W, int U, bool vec);

/// Weight units a lane loads before it multiplies (U): up to 4 (2 for 256-value blocks), no more
/// than its share of the `chunks` steps over W warps.
int lane_loads(DType tw, int64_t chunks, int W);

/// The start of expert row r (a variable of the kernel), before its k loop: the view offsets of
/// its id and activation row, the id read into e, `bad` and the error word (2) set for an id
/// outside [0, E) (lane 0 of part 0), else an open block setting wo (the start of weight row n of
/// expert e: elements, or bytes for blocks) and xo (the activation row's). The caller's loop
/// follows and closes the block. `row_step` receives wo's step from one weight row to the next.
std::string row_start(Codegen& cg, const View& ids, const View& act, DType ti, DType tw,
                      const View& weight, int64_t& row_step);

/// cuda.ExpertGemv and cuda.ExpertGemvCast (the value of a few rows' expert matmul).
const OpDef* gemv_op();
const OpDef* gemv_cast_op();

/// cuda.ExpertGemvSum's rules (none with LUMINAL_CUDA_EXPERT_SUM=0) and op (expert_sum.cpp).
std::vector<Rule> sum_rules();
const CudaOp* sum_op();

}  // namespace expert
}  // namespace luminal::cuda
