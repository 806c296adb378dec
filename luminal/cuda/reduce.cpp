// Reductions on CUDA: SumReduce, MaxReduce and cuda.Matmul (SumReduce over Mul, introduced by the
// shared matmul rule, luminal/kernels/matmul_rule.hpp; the catch-all matmul for any layout and
// dtype until library GEMMs join the search).
//
// One output element per warp when the reduced axis is contiguous in an input (lanes stride over
// k, then a butterfly of warp shuffles), else one per thread (consecutive threads then read
// consecutive outputs). Float sums accumulate in double and are rounded once, integer sums wrap,
// MaxReduce propagates NaN, and each matmul product is rounded to the dtype before it is summed:
// the reference's numerics, up to the order of the double additions (the vectorised matmul sums
// each chunk of up to 8 products in f32 first: within the project's eps * sqrt(k) for matmuls).
#include <algorithm>
#include <optional>
#include <string>

#include "luminal/core/error.hpp"
#include "luminal/cuda/cuda_op.hpp"
#include "luminal/cuda/matmul_operands.hpp"
#include "luminal/cuda/prelude.hpp"
#include "luminal/kernels/matmul_rule.hpp"

namespace luminal::cuda {

bool decode_alternatives();  // gemv.cpp: false when LUMINAL_CUDA_GEMV=0

namespace {

// (cuBLASLt does a matmul better where it is offered: the library-preferring seed avoids these)
const OpDef kMatmul{.name = "cuda.Matmul", .library_replaces = true};
const OpDef kMatmulCast{.name = "cuda.MatmulCast", .library_replaces = true};

constexpr int kBlock = 256;

bool unit_stride(const View& v, int axis) { return v.strides[axis] == Expr::var("z"); }

/// `product_t`: the dtype each product rounds to (a matmul's own dtype; f32 for cuda.MatmulCast,
/// which stores its f32 result rounded once more to its 16-bit dtype).
KernelGen gen_reduction(const LlirNode& n, const GenContext& ctx, bool matmul, DType product_t) {
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
  // Each operand is read in its own dtype (a matmul may read 16-bit operands its graph cast to
  // f32: the cast is exact); products round to the node's dtype.
  auto tag_of = [&](int k) { return dtype_tag(n.input_dtypes.at(static_cast<size_t>(k))); };
  const ReduceAcc racc{.is_max = is_max, .in = in_t};
  const bool integral = racc.integral();
  const std::string acc_t = racc.type();

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
  // A reduction never passes a NaN payload on (sums in double and lmn_max make NaNs canonical):
  // 16-bit loads may take the one-instruction form (load_fn, unless LUMINAL_CUDA_FAST_NAN=0).
  auto load = [&](int k) {
    return load_fn(n.input_dtypes.at(static_cast<size_t>(k)), false) + "(in" + std::to_string(k) +
           "[" + off[k] + " + " + cg.axis_offset(n.attrs.views[k], axis, "k") + "])";
  };
  auto product = [&](const std::string& a, const std::string& b) {
    return "(" + acc_t + ")rd_" + dtype_tag(product_t) + "(" +
           (integral ? "wrap_mul(" + a + ", " + b + ")" : a + " * " + b) + ")";
  };
  if (matmul) {
    elem = product(load(0), load(1));
  } else {
    elem = "(" + acc_t + ")" + load(0);
  }
  const std::string init = racc.init();
  auto combine = [&](const std::string& a, const std::string& b) { return racc.combine(a, b); };
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
  // A matmul whose operands are both contiguous along k and aligned: V elements per load of each
  // (V from the wider dtype's 16 bytes).
  int mvec = 1;
  if (matmul) {
    const DType t0 = n.input_dtypes.at(0), t1 = n.input_dtypes.at(1);
    const int v = 16 / std::max(size_bytes(t0), size_bytes(t1));
    // (vector_width >= v also means K is a multiple of v: both are powers of two.)
    if (v > 1 && vector_width(n.attrs.views[0], axis, t0) >= v &&
        vector_width(n.attrs.views[1], axis, t1) >= v)
      mvec = v;
  }
  // Thread mode (on by default; LUMINAL_CUDA_MATMUL_THREADS=0 turns it off): a matmul whose
  // operands are both contiguous along k, one of them constant along the output's innermost axis,
  // takes a thread an output (the chunks of k in order) instead of a warp an output: the 32 lanes
  // of a warp then share that operand's row (one load for all) and need no butterfly. For a
  // prefill's Q @ K^T (k = the head dim, 64-128; Q constant along the keys): a warp an output spent
  // 71 us a layer on an 8B q4_0 prefill of 128 tokens on an H100 (session 38), its 32 lanes each
  // taking one 16-byte chunk and then five double shuffles. On an H200 (session 39) a thread an
  // output took the SmolLM2 q4_1 prefill of 128 tokens from 3.04 to 2.44 ms (its 60 generated
  // matmuls 0.95 -> 0.64 ms); the 8B q4_0's stayed 24.7. (Any A B^T has such an operand: only where
  // the outputs are many, at least 2^14, and that axis at least a warp long, so that a thread an
  // output still fills the GPU; not a projection of a few rows.)
  bool thread_mode = false;
  if (matmul && mvec > 1 && warp && K.is_const() && K.as_const() <= 1024 &&
      numel(n.attrs.shape).bounds(ctx.facts).hi >= (int64_t{1} << 14) &&
      env_switch_on("LUMINAL_CUDA_MATMUL_THREADS")) {
    const int rank = n.attrs.views[0].rank();
    int inner = rank - 1;
    if (inner == axis) --inner;
    if (inner >= 0 && n.attrs.views[0].dims[static_cast<size_t>(inner)].bounds(ctx.facts).hi >= 32)
      for (const View& v : n.attrs.views)
        thread_mode = thread_mode || v.strides[static_cast<size_t>(inner)] == Expr(0);
  }
  std::string body;
  if (thread_mode || (warp && mvec > 1)) {
    // Each 16-byte chunk's V products sum in f32 (a fused multiply-add where the product of two
    // 16-bit floats is exact in f32, which holds unless it overflows or falls below f32's normal
    // range), then join the double accumulator: one conversion and one
    // double add per V products instead of per product, and loads of one instruction each (ldm_:
    // NaN payloads are not kept, which the product drops anyway).
    const std::string V = std::to_string(mvec);
    auto vtype = [&](int k) {
      return vector_type(mvec * size_bytes(n.input_dtypes.at(static_cast<size_t>(k))));
    };
    const bool chunk_f32 = !integral && compute_type(product_t) == "float";
    std::string loads;
    for (int k = 0; k < 2; ++k) {
      const std::string K_ = std::to_string(k);
      loads += "      const " + vtype(k) + " q" + K_ + " = __ldg(r" + K_ + " + k);\n";
      loads += "      const S_" + tag_of(k) + "* e" + K_ + " = reinterpret_cast<const S_" +
               tag_of(k) + "*>(&q" + K_ + ");\n";
    }
    std::string inner;
    if (chunk_f32) {
      // (one-instruction loads for f32, bf16 and f16; other float dtypes keep ld_T)
      const DType t0 = n.input_dtypes.at(0), t1 = n.input_dtypes.at(1);
      inner = lines({
          "      float part = 0.0f;",
          "#pragma unroll",
          "      for (int j = 0; j < " + V + "; ++j) part = " +
              product_add(product_t, t0, t1, operand_load(t0, "e0[j]"), operand_load(t1, "e1[j]"),
                          "part") +
              ";",
          "      acc = acc + (double)part;",
      });
    } else {
      inner = lines({
          "#pragma unroll",
          "      for (int j = 0; j < " + V + "; ++j) acc = " +
              combine("acc", product(load_fn(n.input_dtypes.at(0), false) + "(e0[j])",
                                     load_fn(n.input_dtypes.at(1), false) + "(e1[j])")) +
              ";",
      });
    }
    const std::string rows = lines({
        "    " + acc_t + " acc = " + init + ";",
        "    const " + vtype(0) + "* r0 = reinterpret_cast<const " + vtype(0) + "*>(in0 + " +
            off[0] + ");",
        "    const " + vtype(1) + "* r1 = reinterpret_cast<const " + vtype(1) + "*>(in1 + " +
            off[1] + ");",
        "#pragma unroll 4",
    });
    if (thread_mode)
      body = lines({"  for (" + I + " o = (" + I + ")blockIdx.x * blockDim.x + threadIdx.x; " +
                    "o < n; o += (" + I + ")gridDim.x * blockDim.x) {  // a thread an output"}) +
             base + rows + lines({"    for (" + I + " k = 0; k < K / " + V + "; ++k) {"}) + loads +
             inner + lines({"    }", "    out[o] = st_" + ot + "(acc);", "  }"});
    else
      body = warp_loop + base + rows +
             lines({"    for (" + I + " k = lane; k < K / " + V + "; k += 32) {"}) + loads + inner +
             lines({"    }"}) + warp_tail;
  } else if (warp && vec > 1) {
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
               "      for (int j = 0; j < " + V + "; ++j) acc = " +
                   combine("acc", "(" + acc_t + ")" + load_fn(in_t, false) + "(e[j])") + ";",
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
  const Expr blocks = warp && !thread_mode ? ceil_div(count, kBlock / 32) : ceil_div(count, kBlock);
  g.launches.push_back(
      Launch{"lmn_reduce", kBlock, {min(blocks, Expr(int64_t{ctx.sm_count} * 16)), 1, 1}});
  int64_t in_bytes = 0;
  for (int k = 0; k < inputs; ++k)
    in_bytes += size_bytes(n.input_dtypes.at(static_cast<size_t>(k)));
  g.bytes = count * K * in_bytes + count * size_bytes(out_t);
  g.flops = count * K * (matmul ? 2 : 1);
  return g;
}

KernelGen gen_reduce(const LlirNode& n, const GenContext& ctx) {
  return gen_reduction(n, ctx, false, n.attrs.dtype);
}
KernelGen gen_matmul(const LlirNode& n, const GenContext& ctx) {
  return gen_reduction(n, ctx, true, n.attrs.dtype);
}
KernelGen gen_matmul_cast(const LlirNode& n, const GenContext& ctx) {
  require_sixteen_bit_output(n);
  // The f32 sum rounded to f32, then to the 16-bit dtype: st_bf16/st_f16 of a double go through
  // float, which is exactly Cast(Matmul f32).
  return gen_reduction(n, ctx, true, DType::F32);
}

/// cuda.SumSplit / cuda.MaxSplit: a SumReduce / MaxReduce as a two-stage reduction for few
/// outputs over a long axis (an argmax over 128k logits): a thread block cluster of kCluster
/// blocks per output (grid-stride over outputs), each block reducing an interleaved share of the
/// axis (16-byte loads where the axis is contiguous and aligned; a warp butterfly, then one round
/// through shared memory), then block 0 of the cluster combining the blocks' values read from
/// their shared memory (distributed shared memory, sm_90). The same numerics as the one-stage
/// kernel (sums in double, max propagating NaN); the additions in another order.
// (seed cost below the one-stage reduction's: offered only where it should win, see split_rules)
const OpDef kSumSplit{.name = "cuda.SumSplit", .seed_cost = 0.95};
const OpDef kMaxSplit{.name = "cuda.MaxSplit", .seed_cost = 0.95};
constexpr int64_t kSplitMaxOutputs = 64;

constexpr int kCluster = 8;
constexpr int kSplitBlock = 512;

KernelGen gen_reduce_split(const LlirNode& n, const GenContext& ctx) {
  const bool is_max = n.op == &kMaxSplit;
  const int axis = n.attrs.axis;
  if (n.attrs.views.size() != 1 || axis < 0 || axis >= n.attrs.views[0].rank())
    throw Error("cuda: " + std::string(n.op->name) + " needs one input view with axis " +
                std::to_string(axis));
  const View& v = n.attrs.views[0];
  const DType in_t = n.input_dtypes.at(0);
  const DType out_t = n.attrs.dtype;
  const ReduceAcc racc{.is_max = is_max, .in = in_t};
  const bool integral = racc.integral();
  const std::string acc_t = racc.type();
  Codegen cg(n, ctx);
  const Expr K = v.dims[axis];
  cg.require(K);
  cg.require(numel(n.attrs.shape));
  const std::string& I = cg.idx();
  std::string base;
  const std::string off = cg.view_offset(v, "o", "b0", base, axis);
  const std::string init = racc.init();
  auto combine = [&](const std::string& a, const std::string& b) { return racc.combine(a, b); };
  const int vec = vector_width(v, axis, in_t);
  const std::string T = std::to_string(kSplitBlock), CL = std::to_string(kCluster);
  std::string loop;
  if (vec > 1) {
    const std::string V = std::to_string(vec), st = "S_" + dtype_tag(in_t);
    loop = "    const uint4* row = reinterpret_cast<const uint4*>(in0 + " + off + ");\n" +
           "#pragma unroll 4\n" + "    for (" + I + " c = (" + I + ")rank * " + T +
           " + threadIdx.x; c < K / " + V + "; c += " + std::to_string(kCluster * kSplitBlock) +
           ") {\n" + "      const uint4 q = __ldg(row + c);\n" + "      const " + st +
           "* e = reinterpret_cast<const " + st + "*>(&q);\n" + "#pragma unroll\n" +
           "      for (int j = 0; j < " + V +
           "; ++j) acc = " + combine("acc", "(" + acc_t + ")" + load_fn(in_t, false) + "(e[j])") +
           ";\n    }\n";
  } else {
    loop = "#pragma unroll 4\n    for (" + I + " k = (" + I + ")rank * " + T +
           " + threadIdx.x; k < K; k += " + std::to_string(kCluster * kSplitBlock) + ") acc = " +
           combine("acc", "(" + acc_t + ")" + load_fn(in_t, false) + "(in0[" + off + " + " +
                              cg.axis_offset(v, axis, "k") + "])") +
           ";\n";
  }
  // Block rank r of a cluster reads the shared value of block q through lmn_cluster_ld (the
  // prelude's cluster helpers).
  std::string k;
  const std::string from_bits = integral
                                    ? "(long long)lmn_cluster_ld(&bsum, q)"
                                    : "__longlong_as_double((long long)lmn_cluster_ld(&bsum, q))";
  std::string body =
      "  const unsigned rank = lmn_cluster_rank();\n"
      "  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;\n"
      "  __shared__ " +
      acc_t + " wsum[" + std::to_string(kSplitBlock / 32) +
      "];\n"
      "  __shared__ " +
      acc_t +
      " bsum;\n"
      "  for (" +
      I + " o = (" + I + ")blockIdx.x / " + CL + "; o < n; o += (" + I + ")gridDim.x / " + CL +
      ") {\n" + base + "    " + acc_t + " acc = " + init + ";\n" + loop +
      "    for (int s = 16; s > 0; s >>= 1) acc = " +
      combine("acc", "__shfl_xor_sync(0xffffffffu, acc, s)") +
      ";\n"
      "    if (lane == 0) wsum[warp] = acc;\n"
      "    __syncthreads();\n"
      "    if (threadIdx.x == 0) {\n"
      "      " +
      acc_t + " b = " + init +
      ";\n"
      "      for (int w = 0; w < " +
      std::to_string(kSplitBlock / 32) + "; ++w) b = " + combine("b", "wsum[w]") +
      ";\n"
      "      bsum = b;\n"
      "    }\n"
      "    lmn_cluster_sync();\n"
      "    if (rank == 0 && threadIdx.x == 0) {\n"
      "      " +
      acc_t + " t = " + init +
      ";\n"
      "      for (unsigned q = 0; q < " +
      CL + "; ++q) t = " + combine("t", from_bits) +
      ";\n"
      "      out[o] = st_" +
      dtype_tag(out_t) +
      "(t);\n"
      "    }\n"
      "    lmn_cluster_sync();\n"
      "  }\n";
  k += "extern \"C\" __global__ void __cluster_dims__(" + CL + ", 1, 1) __launch_bounds__(" + T +
       ") LMN_ENTRY(lmn_reduce_split)(" + cg.params() + ") {\n";
  const std::string ncode = cg.c(numel(n.attrs.shape));
  const std::string kcode = cg.c(K);
  k += cg.dims_prologue() + "  const " + I + " n = " + ncode + ";\n  const " + I + " K = " + kcode +
       ";\n" + body + "}\n";
  KernelGen g;
  g.source = Codegen::unit(k);
  const Expr count = numel(n.attrs.shape);
  g.launches.push_back(Launch{
      "lmn_reduce_split",
      kSplitBlock,
      {min(count, Expr(int64_t{ctx.sm_count} * 4 / kCluster)) * Expr(int64_t{kCluster}), 1, 1}});
  g.bytes = count * K * size_bytes(in_t) + count * size_bytes(out_t);
  g.flops = count * K;
  return g;
}

/// cuda.SumSplit / cuda.MaxSplit beside every SumReduce / MaxReduce of at most 64 outputs (a
/// constant count) whose axis is not a constant below 4096 (where one warp an output is enough),
/// except a sum of a Mul (a matmul's reduction: the matmul ops take it).
std::vector<Rule> split_rules() {
  std::vector<Rule> rules;
  for (OpKind kind : {OpKind::SumReduce, OpKind::MaxReduce}) {
    const OpDef* op = kind == OpKind::SumReduce ? &kSumSplit : &kMaxSplit;
    rules.push_back(
        Rule{std::string("cuda.") + (kind == OpKind::SumReduce ? "sum" : "max") + "-split",
             Pattern::op(kind).bind("r"), nullptr, [op](const Match& m, EGraph& eg) {
               if (!decode_alternatives()) return;
               const ENode node = eg.node(m.root_node);
               const Attrs a = eg.attrs(node.attr);
               if (node.children.size() != 1 || a.views.size() != 1) return;
               if (a.axis < 0 || a.axis >= a.views[0].rank()) return;
               const Expr& K = a.views[0].dims[a.axis];
               if (K.is_const() && K.as_const() < 4096) return;
               const Expr count = numel(a.shape);
               if (!count.is_const() || count.as_const() > kSplitMaxOutputs) return;
               if (op == &kSumSplit)
                 for (ENodeId id : eg.nodes_of(node.children[0]))
                   if (is_op(eg.node(id).op, OpKind::Mul)) return;
               eg.merge(eg.add(op, a, node.children), m.root);
             }});
  }
  return rules;
}

/// cuda.Matmul for every matmul match, and, where the graph casts 16-bit operands up to f32 for
/// the product, a cuda.Matmul that reads them in 16 bits (half the bytes, no cast kernel).
std::vector<Rule> matmul_rules() {
  Rule r = matmul_parts_rule("cuda.matmul", [](EGraph& eg, const MatmulParts& p, ClassId root) {
    add_matmul_node(eg, &kMatmul, p, root);
    if (std::optional<MatmulParts> q = uncast_operands(eg, p))
      eg.merge(eg.add(&kMatmul, q->attrs, q->children), root);
  });
  // Cast(f32 matmul) to bf16/f16, the last step of every 16-bit matmul: one kernel that stores
  // the rounded result.
  Rule cast = cast_down_rule("cuda.matmul-cast", &kMatmul,
                             [](EGraph& eg, const Attrs& a, const std::vector<ClassId>& ch,
                                ClassId root) { eg.merge(eg.add(&kMatmulCast, a, ch), root); });
  return {std::move(r), std::move(cast)};
}

}  // namespace

void register_reduce_ops(std::vector<const CudaOp*>& ops) {
  static const CudaOp sum{hlir_op(OpKind::SumReduce), "", nullptr, gen_reduce};
  static const CudaOp max{hlir_op(OpKind::MaxReduce), "", nullptr, gen_reduce};
  static const CudaOp matmul{&kMatmul, "cuda.library", matmul_rules, gen_matmul};
  static const CudaOp matmul_cast{&kMatmulCast, "", nullptr, gen_matmul_cast};
  ops.push_back(&sum);
  ops.push_back(&max);
  ops.push_back(&matmul);
  ops.push_back(&matmul_cast);
  static const CudaOp sum_split{&kSumSplit, "cuda.library", split_rules, gen_reduce_split};
  static const CudaOp max_split{&kMaxSplit, "", nullptr, gen_reduce_split};
  ops.push_back(&sum_split);
  ops.push_back(&max_split);
}

}  // namespace luminal::cuda
