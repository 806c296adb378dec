// Gather, Scatter and cuda.ScatterInPlace on CUDA.
//
//   Gather(indexes, data):        out[i] = data_view_flat[indexes[i]]. An index outside the data
//                                 writes 0 and sets the error word; the backend turns it into a
//                                 luminal::Error at the next sync (the CPU throws at once).
//   Scatter(dest, indexes, src):  out = dest (a map launch), then out[indexes[i]] = src[i] in
//                                 order, later writes winning, indices outside the output skipped.
//   cuda.ScatterInPlace:          the same without the copy: the output is dest's buffer (the
//                                 shared rule, luminal/kernels/inplace_rule.hpp).
// Elements move as raw storage, so every dtype is bit-exact. The ordered scatter runs in one
// block over chunks of 1024 indices; within a chunk a thread writes only when no later thread of
// the chunk has the same index, and chunks are separated by a barrier: the last write wins, as in
// the sequential definition. A chunk whose indexes rise strictly (a KV-cache write at positions
// only known at run time: torch's index_copy_) has no two alike and skips the search for them,
// which costs each thread up to 1023 shared-memory reads (38 us for one 8B decode step's row).
//   cuda.ScatterUnique:           in place, when the indexes are provably distinct: an Iota
//                                 that distinct_over (core/expr_distinct.hpp) proves, read
//                                 contiguously (a KV-cache write: rows (c - s) * d + z; concat and
//                                 pad), or indexes that kernels/index_proof.hpp proves distinct
//                                 (iotas plus one run-time position broadcast over them: torch's
//                                 `cache[:, :, pos] = k`). No two writes meet, so a grid-stride
//                                 loop over the indexes is the sequential definition, at full
//                                 width.
//   cuda.ScatterDistinct:         the same indexes, not in place: the copy, then the
//                                 grid-stride loop, where dest cannot be aliased (the zeros that
//                                 concat and pad start from, a strided view) or has other
//                                 readers. It dominates the ordered Scatter. Both come from the
//                                 "cuda.inplace" rule set, with the in-place rules.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "luminal/core/error.hpp"
#include "luminal/core/expr_distinct.hpp"
#include "luminal/core/expr_static.hpp"
#include "luminal/cuda/cuda_op.hpp"
#include "luminal/cuda/prelude.hpp"
#include "luminal/egraph/egraph.hpp"
#include "luminal/kernels/index_proof.hpp"
#include "luminal/kernels/inplace_rule.hpp"
#include "luminal/kernels/matmul_rule.hpp"

namespace luminal::cuda {

namespace {

// Seed costs: in place skips the copy of dest; unique also skips the ordered single block.
const OpDef kScatterInPlace{"cuda.ScatterInPlace", OpKind::Input, false, /*inplace_input=*/0,
                            /*seed_cost=*/0.9};
const OpDef kScatterUnique{"cuda.ScatterUnique", OpKind::Input, false, /*inplace_input=*/0,
                           /*seed_cost=*/0.8};
const OpDef kScatterDistinct{"cuda.ScatterDistinct", OpKind::Input, false, /*inplace_input=*/-1,
                             /*seed_cost=*/0.85};

constexpr int kBlock = 256;
constexpr int kScatterBlock = 1024;

/// The index element at `off` of input `k` as a 64-bit integer (floats truncate, saturating).
std::string load_index(DType t, int k, const std::string& off) {
  const std::string v = "ld_" + dtype_tag(t) + "(in" + std::to_string(k) + "[" + off + "])";
  if (is_float(t)) return "lmn_sat_i64((double)" + v + ")";
  return "(long long)" + v;
}

std::string grid_loop(const std::string& I, const std::string& var, const std::string& n) {
  return "  for (" + I + " " + var + " = (" + I + ")blockIdx.x * blockDim.x + threadIdx.x; " + var +
         " < " + n + "; " + var + " += (" + I + ")gridDim.x * blockDim.x) {\n";
}

KernelGen gen_gather(const LlirNode& n, const GenContext& ctx) {
  if (n.attrs.views.size() != 2) throw Error("cuda: Gather needs 2 input views");
  Codegen cg(n, ctx);
  const std::string& I = cg.idx();
  std::string body;
  const std::string io = cg.view_offset(n.attrs.views[0], "i", "oi", body);
  body += "    const long long j = " + load_index(n.input_dtypes.at(0), 0, io) + ";\n";
  body += "    if (j < 0 || j >= (long long)dn) { atomicCAS(err, 0u, 1u); out[i] = st_" +
          dtype_tag(n.attrs.dtype) + "(0LL); continue; }\n";
  body += "    const " + I + " jj = (" + I + ")j;\n";
  const std::string od = cg.view_offset(n.attrs.views[1], "jj", "od", body);
  body += "    out[i] = in1[" + od + "];\n";
  const Expr count = numel(n.attrs.shape);
  const std::string ncode = cg.c(count), dcode = cg.c(n.attrs.views[1].numel());
  std::string k = "extern \"C\" __global__ void __launch_bounds__(256) LMN_ENTRY(lmn_gather)(" +
                  cg.params() + ") {\n" + cg.dims_prologue() + "  const " + I + " n = " + ncode +
                  ";\n  const " + I + " dn = " + dcode + ";\n" + grid_loop(I, "i", "n") + body +
                  "  }\n}\n";
  KernelGen g;
  g.source = Codegen::unit(k);
  g.launches.push_back(
      Launch{"lmn_gather",
             kBlock,
             {min(ceil_div(count, kBlock), Expr(int64_t{ctx.sm_count} * 16)), 1, 1}});
  g.bytes = count * (size_bytes(n.input_dtypes.at(0)) + 2 * size_bytes(n.attrs.dtype));
  g.flops = Expr(0);
  return g;
}

// In place, the copy runs only when the plan could not alias dest's buffer (its dest is an
// Output's value), and is skipped otherwise.
KernelGen gen_scatter_impl(const LlirNode& n, const GenContext& ctx, bool inplace,
                           bool unique = false) {
  if (n.attrs.views.size() != 3) throw Error("cuda: Scatter needs 3 input views");
  Codegen cg(n, ctx);
  const std::string& I = cg.idx();
  const Expr count = numel(n.attrs.shape);
  const Expr m = n.attrs.views[1].numel();
  cg.require(m);
  std::string kernels;
  KernelGen g;
  {
    std::string body;
    const std::string od = cg.view_offset(n.attrs.views[0], "i", "od", body);
    body += "    out[i] = in0[" + od + "];\n";
    const std::string ncode = cg.c(count);
    kernels += "extern \"C\" __global__ void __launch_bounds__(256) LMN_ENTRY(lmn_scatter_copy)(" +
               cg.params(false) + ") {\n" + cg.dims_prologue() + "  const " + I + " n = " + ncode +
               ";\n" + grid_loop(I, "i", "n") + body + "  }\n}\n";
    g.launches.push_back(
        Launch{"lmn_scatter_copy",
               kBlock,
               {min(ceil_div(count, kBlock), Expr(int64_t{ctx.sm_count} * 16)), 1, 1},
               inplace});
  }
  std::string body;
  const std::string oi = cg.view_offset(n.attrs.views[1], "t", "oi", body);
  std::string src_body;
  const std::string os = cg.view_offset(n.attrs.views[2], "t", "os", src_body);
  const std::string ncode = cg.c(count), mcode = cg.c(m);
  const std::string B = std::to_string(kScatterBlock);
  if (unique) {
    kernels += "extern \"C\" __global__ void __launch_bounds__(256) LMN_ENTRY(lmn_scatter)(" +
               cg.params(false) + ") {\n" + cg.dims_prologue() + "  const " + I + " n = " + ncode +
               ";\n  const " + I + " m = " + mcode + ";\n" + grid_loop(I, "t", "m") + body +
               "    const long long j = " + load_index(n.input_dtypes.at(1), 1, oi) + ";\n" +
               "    if (j >= 0 && j < (long long)n) {\n" + src_body + "      out[j] = in2[" + os +
               "];\n    }\n  }\n}\n";
    g.launches.push_back(Launch{
        "lmn_scatter", kBlock, {min(ceil_div(m, kBlock), Expr(int64_t{ctx.sm_count} * 16)), 1, 1}});
    g.source = Codegen::unit(kernels);
    g.bytes = (inplace ? Expr(0) : count * 2 * size_bytes(n.attrs.dtype)) +
              m * (size_bytes(n.input_dtypes.at(1)) + 2 * size_bytes(n.attrs.dtype));
    g.flops = Expr(0);
    return g;
  }
  kernels += "extern \"C\" __global__ void __launch_bounds__(" + B + ") LMN_ENTRY(lmn_scatter)(" +
             cg.params(false) + ") {\n" + cg.dims_prologue() + "  const " + I + " n = " + ncode +
             ";\n  const " + I + " m = " + mcode + ";\n  __shared__ long long js[" + B + "];\n" +
             "  for (" + I + " c = 0; c < m; c += " + B + ") {\n    const " + I +
             " t = c + threadIdx.x;\n    long long j = -1;\n    if (t < m) {\n" + body +
             "    j = " + load_index(n.input_dtypes.at(1), 1, oi) + ";\n    }\n" +
             "    js[threadIdx.x] = j;\n    __syncthreads();\n" +
             "    bool last = t < m && j >= 0 && j < (long long)n;\n" +
             "    const bool rising = threadIdx.x + 1 == " + B +
             " || c + threadIdx.x + 1 >= m ||\n" +
             "                        js[threadIdx.x + 1] > j;\n" +
             "    if (!__syncthreads_and(rising))\n" +
             "      for (int u = threadIdx.x + 1; last && u < " + B + " && c + u < m; ++u)\n" +
             "        if (js[u] == j) last = false;\n" + "    if (last) {\n" + src_body +
             "    out[j] = in2[" + os + "];\n    }\n" + "    __syncthreads();\n  }\n}\n";
  g.launches.push_back(Launch{"lmn_scatter", kScatterBlock, {1, 1, 1}});
  g.source = Codegen::unit(kernels);
  g.bytes = (inplace ? Expr(0) : count * 2 * size_bytes(n.attrs.dtype)) +
            m * (size_bytes(n.input_dtypes.at(1)) + 2 * size_bytes(n.attrs.dtype));
  g.flops = Expr(0);
  return g;
}

KernelGen gen_scatter(const LlirNode& n, const GenContext& ctx) {
  return gen_scatter_impl(n, ctx, false);
}
KernelGen gen_scatter_inplace(const LlirNode& n, const GenContext& ctx) {
  return gen_scatter_impl(n, ctx, true);
}

}  // namespace

const OpDef* scatter_unique_op() { return &kScatterUnique; }

namespace {

KernelGen gen_scatter_unique(const LlirNode& n, const GenContext& ctx) {
  return gen_scatter_impl(n, ctx, true, true);
}
KernelGen gen_scatter_distinct(const LlirNode& n, const GenContext& ctx) {
  return gen_scatter_impl(n, ctx, false, true);
}

/// Whether the index class holds an Iota with a different value at every position. An Iota is
/// I32: where its values are known (no dims), they must also fit in 32 bits, or two could wrap
/// onto one index.
bool distinct_iota(const EGraph& eg, ClassId c) {
  for (ENodeId id : eg.eclass(c).nodes) {
    const ENode& e = eg.node(id);
    if (!is_op(e.op, OpKind::Iota)) continue;
    const Attrs& a = eg.attrs(e.attr);
    if (!distinct_over(a.iota_expr, "z", a.iota_len)) continue;
    if (a.iota_len.is_const() && is_static(a.iota_expr)) {
      const Interval r = a.iota_expr.bounds({{"z", Interval{0, a.iota_len.as_const() - 1}}});
      if (r.lo < INT32_MIN || r.hi > INT32_MAX) continue;
    }
    return true;
  }
  return false;
}

std::vector<Rule> inplace_rules() {
  // Distinct indexes read contiguously: the parallel forms.
  Rule unique{
      "cuda.scatter-unique", Pattern::op(OpKind::Scatter).bind("scatter"), nullptr,
      [](const Match& m, EGraph& eg) {
        const ENode node = eg.node(m.root_node);
        if (!scatter_moves_elements(eg, node)) return;
        const Attrs a = eg.attrs(node.attr);
        if (!a.views[1].is_contiguous()) return;
        if (!distinct_iota(eg, node.children[1]) &&
            !distinct_index(eg, node.children[1], a.views[1]))
          return;
        // The copy and the parallel writes: always legal, never slower than the ordered scatter,
        // which it dominates. In place as well where dest can be aliased (pruning keeps that only
        // where dest has no other reader).
        if (std::optional<ENodeId> d = add_merged(eg, &kScatterDistinct, a, node.children, m.root))
          eg.dominate(*d, m.root_node);
        if (a.views[0].is_contiguous() && a.views[0].numel() == numel(a.shape))
          add_merged(eg, &kScatterUnique, a, node.children, m.root);
      }};
  return {scatter_inplace_rule(&kScatterInPlace, "cuda.scatter-inplace"), unique};
}

}  // namespace

void register_gather_scatter_ops(std::vector<const CudaOp*>& ops) {
  static const CudaOp gather{hlir_op(OpKind::Gather), "", nullptr, gen_gather};
  static const CudaOp scatter{hlir_op(OpKind::Scatter), "", nullptr, gen_scatter};
  static const CudaOp inplace{&kScatterInPlace, "cuda.inplace", inplace_rules, gen_scatter_inplace};
  ops.push_back(&gather);
  ops.push_back(&scatter);
  static const CudaOp unique{&kScatterUnique, "cuda.inplace", nullptr, gen_scatter_unique};
  static const CudaOp distinct{&kScatterDistinct, "cuda.inplace", nullptr, gen_scatter_distinct};
  ops.push_back(&inplace);
  ops.push_back(&unique);
  ops.push_back(&distinct);
}

}  // namespace luminal::cuda
