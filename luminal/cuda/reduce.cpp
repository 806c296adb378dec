// Reductions on CUDA: SumReduce, MaxReduce and cuda.Matmul (SumReduce over Mul, introduced by the
// shared matmul rule, luminal/kernels/matmul_rule.hpp; the catch-all matmul for any layout and
// dtype until library GEMMs join the search).
//
// One output element per warp when the reduced axis is contiguous in an input (lanes stride over
// k, then a butterfly of warp shuffles), else one per thread (consecutive threads then read
// consecutive outputs). Float sums accumulate in double and are rounded once, integer sums wrap,
// MaxReduce propagates NaN, and each matmul product is rounded to the dtype before it is summed:
// the reference's numerics, up to the order of the double additions.
#include <string>

#include "luminal/core/error.hpp"
#include "luminal/cuda/cuda_op.hpp"
#include "luminal/cuda/prelude.hpp"
#include "luminal/kernels/matmul_rule.hpp"

namespace luminal::cuda {

namespace {

const OpDef kMatmul{"cuda.Matmul"};

constexpr int kBlock = 256;

bool unit_stride(const View& v, int axis) { return v.strides[axis] == Expr::var("z"); }

/// Elements per 16-byte vector load along `axis`, or 1 when a row's start or length may break
/// the alignment: needs a unit stride along the axis, a constant length that is a multiple of the
/// width, and every other axis stepping by whole vectors (buffers themselves are 256-aligned).
int vector_width(const View& v, int axis, DType t) {
  const int width = 16 / size_bytes(t);
  if (width <= 1 || !unit_stride(v, axis)) return 1;
  if (!v.dims[axis].is_const() || v.dims[axis].as_const() % width != 0) return 1;
  for (int k = 0; k < v.rank(); ++k) {
    if (k == axis || v.strides[k] == Expr(0) || v.dims[k] == Expr(1)) continue;
    const auto lin = v.strides[k].as_linear("z");
    if (!lin || lin->second != Expr(0) || !lin->first.is_const() ||
        lin->first.as_const() % width != 0)
      return 1;
  }
  return width;
}

KernelGen gen_reduction(const LlirNode& n, const GenContext& ctx, bool matmul) {
  const bool is_max = !matmul && n.op == hlir_op(OpKind::MaxReduce);
  const int axis = n.attrs.axis;
  const int inputs = matmul ? 2 : 1;
  if (static_cast<int>(n.attrs.views.size()) != inputs)
    throw Error("cuda: " + std::string(n.op->name) + " needs " + std::to_string(inputs) +
                " input views");
  for (const View& v : n.attrs.views)
    if (axis < 0 || axis >= v.rank())
      throw Error("cuda: " + std::string(n.op->name) + " reduces axis " + std::to_string(axis) +
                  " of a rank-" + std::to_string(v.rank()) + " view");
  const DType in_t = n.input_dtypes.at(0);
  const DType out_t = n.attrs.dtype;
  const std::string it = dtype_tag(in_t), ot = dtype_tag(out_t);
  const bool integral = !is_float(in_t);
  const std::string acc_t = integral ? "long long" : "double";

  Codegen cg(n, ctx);
  const Expr K = n.attrs.views[0].dims[axis];
  cg.require(K);
  bool warp = false;
  for (const View& v : n.attrs.views)
    warp = warp || unit_stride(v, axis);

  std::string base;  // per-output offsets
  std::vector<std::string> off;
  for (int k = 0; k < inputs; ++k)
    off.push_back(cg.view_offset(n.attrs.views[k], "o", "b" + std::to_string(k), base, axis));
  std::string elem;
  auto load = [&](int k) {
    return "ld_" + it + "(in" + std::to_string(k) + "[" + off[k] + " + " +
           cg.axis_offset(n.attrs.views[k], axis, "k") + "])";
  };
  if (matmul) {
    elem = "(" + acc_t + ")rd_" + it + "(" +
           (integral ? "wrap_mul(" + load(0) + ", " + load(1) + ")" : load(0) + " * " + load(1)) +
           ")";
  } else {
    elem = "(" + acc_t + ")" + load(0);
  }
  std::string init, combine_a, combine_b;
  if (is_max) {
    init = integral ? literal(DType::I64, 0, static_cast<int64_t>(min_value(in_t)))
                    : "__longlong_as_double(0xFFF0000000000000LL)";
  } else {
    init = "(" + acc_t + ")0";
  }
  auto combine = [&](const std::string& a, const std::string& b) {
    if (is_max) return "lmn_max(" + a + ", " + b + ")";
    return integral ? "wrap_add(" + a + ", " + b + ")" : a + " + " + b;
  };
  const std::string& I = cg.idx();
  const std::string ncode = cg.c(numel(n.attrs.shape));
  const std::string kcode = cg.c(K);
  // The loop over outputs and the reduction of one output, in one of three shapes.
  auto lines = [](std::initializer_list<std::string> ls) {
    std::string r;
    for (const std::string& l : ls)
      r += l + "\n";
    return r;
  };
  const std::string warp_loop = lines({
      "  const " + I + " lane = threadIdx.x & 31;",
      "  const " + I + " nw = (" + I + ")gridDim.x * (blockDim.x >> 5);",
      "  for (" + I + " o = ((" + I + ")blockIdx.x * blockDim.x + threadIdx.x) >> 5; o < n; " +
          "o += nw) {",
  });
  const std::string warp_tail = lines({
      "    for (int s = 16; s > 0; s >>= 1) acc = " +
          combine("acc", "__shfl_xor_sync(0xffffffffu, acc, s)") + ";",
      "    if (lane == 0) out[o] = st_" + ot + "(acc);",
      "  }",
  });
  const int vec = matmul ? 1 : vector_width(n.attrs.views[0], axis, in_t);
  std::string body;
  if (warp && vec > 1) {
    // 16-byte loads: lane l reads vectors l, l + 32, ... of the row.
    const std::string V = std::to_string(vec), st = "S_" + it;
    body = warp_loop + base +
           lines({
               "    " + acc_t + " acc = " + init + ";",
               "    const uint4* row = reinterpret_cast<const uint4*>(in0 + " + off[0] + ");",
               "#pragma unroll 2",
               "    for (" + I + " k = lane; k < K / " + V + "; k += 32) {",
               "      const uint4 q = __ldg(row + k);",
               "      const " + st + "* e = reinterpret_cast<const " + st + "*>(&q);",
               "#pragma unroll",
               "      for (int j = 0; j < " + V +
                   "; ++j) acc = " + combine("acc", "(" + acc_t + ")ld_" + it + "(e[j])") + ";",
               "    }",
           }) +
           warp_tail;
  } else if (warp) {
    body = warp_loop + base +
           lines({
               "    " + acc_t + " acc = " + init + ";",
               "#pragma unroll 4",
               "    for (" + I + " k = lane; k < K; k += 32) acc = " + combine("acc", elem) + ";",
           }) +
           warp_tail;
  } else {
    body = lines({"  for (" + I + " o = (" + I + ")blockIdx.x * blockDim.x + threadIdx.x; o < n; " +
                  "o += (" + I + ")gridDim.x * blockDim.x) {"}) +
           base +
           lines({
               "    " + acc_t + " acc = " + init + ";",
               "    for (" + I + " k = 0; k < K; ++k) acc = " + combine("acc", elem) + ";",
               "    out[o] = st_" + ot + "(acc);",
               "  }",
           });
  }
  std::string k = "extern \"C\" __global__ void __launch_bounds__(" + std::to_string(kBlock) +
                  ") LMN_ENTRY(lmn_reduce)(" + cg.params() + ") {\n";
  // The body generated above registered the dims it reads; the prologue declares them.
  k += cg.dims_prologue() + "  const " + I + " n = " + ncode + ";\n  const " + I + " K = " + kcode +
       ";\n" + body + "}\n";
  KernelGen g;
  g.source = Codegen::unit(k);
  const Expr count = numel(n.attrs.shape);
  const Expr blocks = warp ? ceil_div(count, kBlock / 32) : ceil_div(count, kBlock);
  g.launches.push_back(
      Launch{"lmn_reduce", kBlock, {min(blocks, Expr(int64_t{ctx.sm_count} * 16)), 1, 1}});
  g.bytes = count * K * (inputs * size_bytes(in_t)) + count * size_bytes(out_t);
  g.flops = count * K * (matmul ? 2 : 1);
  return g;
}

KernelGen gen_reduce(const LlirNode& n, const GenContext& ctx) {
  return gen_reduction(n, ctx, false);
}
KernelGen gen_matmul(const LlirNode& n, const GenContext& ctx) {
  return gen_reduction(n, ctx, true);
}

std::vector<Rule> matmul_rules() { return {matmul_rule(&kMatmul, "cuda.matmul")}; }

}  // namespace

void register_reduce_ops(std::vector<const CudaOp*>& ops) {
  static const CudaOp sum{hlir_op(OpKind::SumReduce), "", nullptr, gen_reduce};
  static const CudaOp max{hlir_op(OpKind::MaxReduce), "", nullptr, gen_reduce};
  static const CudaOp matmul{&kMatmul, "cuda.library", matmul_rules, gen_matmul};
  ops.push_back(&sum);
  ops.push_back(&max);
  ops.push_back(&matmul);
}

}  // namespace luminal::cuda
