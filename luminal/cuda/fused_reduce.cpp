// cuda.FusedSum and cuda.FusedMax: a SumReduce / MaxReduce of an elementwise region, one kernel
// where the region's cuda.Fused kernel wrote its values to memory and the reduction's kernel read
// them back. The row rule (kernels/row_rule.hpp) fuses float reductions over the last axis whose
// result the region reads again (softmax, RMSNorm); these take what it leaves: a reduction to a
// smaller shape, of any axis and dtype (an integer count of comparisons: a mixture of experts'
// router ranks its experts with one, picks their ids with another and their weights with a
// third, each a cuda.Fused and a reduction before).
//
// Rule (ruleset "cuda.fused-reduce", after the fusion and row rules): a SumReduce / MaxReduce
// e-node R that reads its child class C whole and in order (a contiguous view of C's shape), over
// each cuda.Fused e-node F of C (each region: the one that saves a kernel may be neither the
// largest nor the leanest, as a router's pairwise ranks read the softmax's row kernel through a
// middle-sized region) that is not a float product nor one product of two loads (contractions: the
// matmul ops take those, with their GEMV, library and store forms; an integer product computed by a
// larger region, such as a router's chosen ids times their numbers, is taken). The new e-node has
// R's dtype, shape and axis, F's children, views (over C's shape, which is R's input domain) and
// program.
//
// Kernel: gen_reduction's plain forms (reduce.cpp), with the element computed by F's program from
// its loads at (output o, k) instead of loaded: a warp per output when some input is contiguous
// along the axis (lanes stride over k, then a butterfly), else a thread per output. Sums in double
// (integers wrap), max propagating NaN, as SumReduce and MaxReduce; the region's values round to
// its dtype as cuda.Fused rounds them. Same order of additions as the plain reduction forms, so
// integer results are exact and float sums within the order of the double additions.
// LUMINAL_CUDA_FUSED_REDUCE=0 offers neither.
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "luminal/core/error.hpp"
#include "luminal/cuda/cuda_op.hpp"
#include "luminal/cuda/prelude.hpp"
#include "luminal/kernels/fused_program.hpp"
#include "luminal/kernels/fusion_detail.hpp"

namespace luminal::cuda {

namespace {

// (seed cost 1: one kernel where the region and the reduction are two)
const OpDef kFusedSum{.name = "cuda.FusedSum"};
const OpDef kFusedMax{.name = "cuda.FusedMax"};

constexpr int kBlock = 256;

/// The reduction's e-node over region f (an e-node of the reduced class), if it may stand.
std::optional<ENode> over_region(const OpDef* op, const Attrs& a, const EGraph& eg, ENodeId f,
                                 Attrs& out) {
  const ENode fn = eg.node(f);
  const Attrs& fa = eg.attrs(fn.attr);
  const auto* prog = dynamic_cast<const FusedProgram*>(fa.payload.get());
  if (!prog || prog->has_row_reduce() || fn.children.empty() ||
      fa.views.size() != fn.children.size())
    return std::nullopt;
  // A sum of products is a contraction, the matmul ops' (their GEMV, library and store forms:
  // rope's 2-term product, a cast operand's GEMV, an expert's), unless integer (a router's chosen
  // ids times their numbers) and computed by a larger region than the product.
  if (prog->insts.back().op == FusedOpcode::Mul &&
      (is_float(a.dtype) || fusion_detail::region_ops(*prog) == 1))
    return std::nullopt;
  for (const View& fv : fa.views)
    if (!(fv.dims == a.views[0].dims)) return std::nullopt;
  out = a;
  out.views = fa.views;
  out.payload = fa.payload;
  return ENode{op, 0, fn.children};
}

/// Adds op's e-nodes beside the reduction m.root_node where its child's class holds regions: one
/// over each (at most fusion's limit a class, kMaxFusedPerClass, and its greedy region). Until
/// 2026-12-05 only over the largest and the leanest: a Qwen3-MoE router's rank (a sum over its
/// [E, E] pairs) read the softmax's row kernel through neither, and ran as cuda.Fused then
/// SumReduce, a kernel a layer more.
void offer(const OpDef* op, const Match& m, EGraph& eg) {
  const ENode node = eg.node(m.root_node);
  const Attrs a = eg.attrs(node.attr);
  if (node.children.size() != 1 || a.views.size() != 1) return;
  const ClassId c = eg.find(node.children[0]);
  const View& v = a.views[0];
  if (a.axis < 0 || a.axis >= v.rank() || v.has_base() || !v.is_contiguous() ||
      !(v.dims == eg.shape(c)))
    return;
  std::vector<ENodeId> regions;
  for (ENodeId f : eg.nodes_of(c))
    if (eg.node(f).op == cuda_fused_op()) regions.push_back(f);
  std::vector<std::pair<Attrs, ENode>> adds;
  for (ENodeId f : regions) {
    Attrs r;
    if (std::optional<ENode> e = over_region(op, a, eg, f, r)) adds.emplace_back(r, *e);
  }
  for (auto& [r, e] : adds)
    eg.merge(eg.add(op, r, e.children), m.root);
}

std::vector<Rule> fused_reduce_rules() {
  if (!env_switch_on("LUMINAL_CUDA_FUSED_REDUCE")) return {};
  return {Rule{"cuda.fused-sum", Pattern::op(OpKind::SumReduce).bind("r"), nullptr,
               [](const Match& m, EGraph& eg) { offer(&kFusedSum, m, eg); }},
          Rule{"cuda.fused-max", Pattern::op(OpKind::MaxReduce).bind("r"), nullptr,
               [](const Match& m, EGraph& eg) { offer(&kFusedMax, m, eg); }}};
}

KernelGen gen_fused_reduce(const LlirNode& n, const GenContext& ctx) {
  const std::string name(n.op->name);
  const auto* prog = dynamic_cast<const FusedProgram*>(n.attrs.payload.get());
  if (!prog) throw Error(name + ": the node has no FusedProgram payload");
  prog->validate();
  if (prog->has_row_reduce()) throw Error(name + ": the region has a row reduction");
  const int axis = n.attrs.axis;
  if (n.attrs.views.empty() || n.attrs.views.size() != n.inputs.size())
    throw Error(name + ": needs one view per input, got " + std::to_string(n.attrs.views.size()) +
                " views for " + std::to_string(n.inputs.size()) + " inputs");
  for (const View& v : n.attrs.views)
    if (axis < 0 || axis >= v.rank() || !(v.dims == n.attrs.views[0].dims))
      throw Error(name + ": the views must share the region's dims and hold axis " +
                  std::to_string(axis));
  const bool is_max = n.op == &kFusedMax;
  const DType in_t = prog->insts.back().dtype;
  const DType out_t = n.attrs.dtype;

  Codegen cg(n, ctx);
  const Expr K = n.attrs.views[0].dims[static_cast<size_t>(axis)];
  cg.require(K);
  bool warp = false;
  for (const View& v : n.attrs.views)
    warp = warp || v.strides[static_cast<size_t>(axis)] == Expr::z();
  std::string base;  // per-output offsets
  std::vector<std::string> off;
  for (size_t k = 0; k < n.attrs.views.size(); ++k)
    off.push_back(cg.view_offset(n.attrs.views[k], "o", "b" + std::to_string(k), base, axis));
  // The region's statements at element (o, k): each load at its view's offset.
  std::string stmts;
  const std::string value =
      emit_statements(*prog, stmts, [&](const FusedInst& in, size_t, bool keep) -> std::string {
        if (in.a < 0 || in.a >= static_cast<int>(off.size()))
          throw Error(name + ": a load reads input " + std::to_string(in.a) + " of " +
                      std::to_string(off.size()));
        const View& v = n.attrs.views[static_cast<size_t>(in.a)];
        return load_fn(in.dtype, keep) + "(in" + std::to_string(in.a) + "[" +
               off[static_cast<size_t>(in.a)] + " + " + cg.axis_offset(v, axis, "k") + "])";
      });
  const ReduceAcc racc{.is_max = is_max, .in = in_t};
  const std::string acc_t = racc.type();
  const std::string init = racc.init();
  auto combine = [&](const std::string& a, const std::string& b) { return racc.combine(a, b); };
  const std::string step = "      acc = " + combine("acc", "(" + acc_t + ")" + value) + ";\n";
  const std::string& I = cg.idx();
  const std::string ot = dtype_tag(out_t);
  std::string body;
  if (warp) {
    body = "  const " + I + " lane = threadIdx.x & 31;\n  const " + I + " nw = (" + I +
           ")gridDim.x * (blockDim.x >> 5);\n  for (" + I + " o = ((" + I +
           ")blockIdx.x * blockDim.x + threadIdx.x) >> 5; o < n; o += nw) {\n" + base + "    " +
           acc_t + " acc = " + init + ";\n    for (" + I + " k = lane; k < K; k += 32) {\n" +
           stmts + step + "    }\n    for (int s = 16; s > 0; s >>= 1) acc = " +
           combine("acc", "__shfl_xor_sync(0xffffffffu, acc, s)") +
           ";\n    if (lane == 0) out[o] = st_" + ot + "(acc);\n  }\n";
  } else {
    body = "  for (" + I + " o = (" + I + ")blockIdx.x * blockDim.x + threadIdx.x; o < n; o += (" +
           I + ")gridDim.x * blockDim.x) {\n" + base + "    " + acc_t + " acc = " + init +
           ";\n    for (" + I + " k = 0; k < K; ++k) {\n" + stmts + step +
           "    }\n    out[o] = st_" + ot + "(acc);\n  }\n";
  }
  const Expr count = numel(n.attrs.shape);
  std::string k = "extern \"C\" __global__ void __launch_bounds__(" + std::to_string(kBlock) +
                  ") LMN_ENTRY(lmn_fused_reduce)(" + cg.params() + ") {\n";
  k += cg.dims_prologue() + "  const " + I + " n = " + cg.c(count) + ";\n  const " + I +
       " K = " + cg.c(K) + ";\n" + body + "}\n";
  KernelGen g;
  g.source = Codegen::unit(k);
  const Expr blocks = warp ? ceil_div(count, kBlock / 32) : ceil_div(count, kBlock);
  g.launches.push_back(
      Launch{"lmn_fused_reduce", kBlock, {min(blocks, Expr(int64_t{ctx.sm_count} * 16)), 1, 1}});
  int64_t in_bytes = 0;
  for (DType t : n.input_dtypes)
    in_bytes += size_bytes(t);
  g.bytes = count * K * in_bytes + count * size_bytes(out_t);
  g.flops = count * K * static_cast<int64_t>(prog->insts.size());
  return g;
}

}  // namespace

void register_fused_reduce_ops(std::vector<const CudaOp*>& ops) {
  static const CudaOp sum{&kFusedSum, "cuda.fused-reduce", fused_reduce_rules, gen_fused_reduce};
  static const CudaOp max{&kFusedMax, "", nullptr, gen_fused_reduce};
  ops.push_back(&sum);
  ops.push_back(&max);
}

}  // namespace luminal::cuda
