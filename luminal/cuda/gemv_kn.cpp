// cuda.GemvKN and cuda.GemvKNCast: a matmul with few rows per shared operand where that operand is
// stored along an output axis n, not along k (x [m, k] @ W [k, n], W contiguous along n). Decode
// attention's P @ V is one: the softmax row [groups, c] of a KV head times that head's V [c, hd],
// V read out of the cache row by row. cuda.Gemv needs both operands contiguous along k, so before
// this op P @ V ran as cuda.Matmul, a warp per output reading V down a column, which on the
// Llama-3-8B shape grew by 0.5 ms a token from context 128 to 1024.
//
// The kernel: a tile is one index of the outer (batch) axes and TC * CW outputs along n (TC
// column threads, CW elements of n each: one 16-byte load, or 8 bytes where 16 would need more
// than 32 accumulators for the rows). A thread block cluster of kCluster blocks shares a tile:
// its 256 * kCluster threads split k (each thread takes every KS-th step, KS = 256 / TC *
// kCluster), so the context is read by 64 blocks or more even when the tile count is small (8 KV
// heads). Each thread loads U chunks of W (and the rows' x values at those k) before it
// multiplies: bytes in flight. Numerics, as cuda.Gemv: the products of U steps sum in f32 (a
// fused multiply-add where two 16-bit operands make the product exact), then join a double
// accumulator; the k-lanes of a block add in double (warp shuffles, then shared memory in warp
// order), and the cluster's blocks in double in rank order (distributed shared memory), so the
// result does not depend on timing.
//
// cuda.GemvKNQ8 (unless LUMINAL_CUDA_FUSED_Q8=0, as cuda.FusedQ8): the same kernel whose store
// writes the output as Q8_1 blocks for the integer GEMV after it (the o projection's activation
// after P @ V), with cuda.QuantizeQ8's warp code: a warp stores 32 consecutive outputs of one row,
// so n and the tile's span are multiples of 32 and n is the output's innermost axis. One kernel
// fewer on a quantized decode step's critical path a layer.
//
// LUMINAL_CUDA_GEMV_KN=0 offers neither op (the programs of before, to compare); for tuning
// sweeps, LUMINAL_CUDA_GEMV_KN_UNROLL (1 to 16, default 8) sets U and
// LUMINAL_CUDA_GEMV_KN_CLUSTER (1, 2, 4 or 8, default 8) the cluster's blocks (1: no cluster, a
// block a tile).
#include <algorithm>
#include <optional>
#include <string>

#include "luminal/core/error.hpp"
#include "luminal/cuda/cuda_op.hpp"
#include "luminal/cuda/matmul_operands.hpp"
#include "luminal/cuda/prelude.hpp"
#include "luminal/cuda/q8_store.hpp"
#include "luminal/cuda/quant_device.hpp"
#include "luminal/kernels/matmul_rule.hpp"
#include "luminal/kernels/split_axes.hpp"

namespace luminal::cuda {

/// False when LUMINAL_CUDA_GEMV=0 (gemv.cpp): no decode alternatives at all.
bool decode_alternatives();

namespace {

const OpDef kGemvKN{.name = "cuda.GemvKN", .seed_cost = 0.95, .library_replaces = true};
const OpDef kGemvKNCast{.name = "cuda.GemvKNCast", .seed_cost = 0.95, .library_replaces = true};
// (below cuda.GemvKN's 0.95 and cuda.QuantizeQ8's 0.5 together)
const OpDef kGemvKNQ8{.name = "cuda.GemvKNQ8", .seed_cost = 1.4, .library_replaces = true};

constexpr int kBlock = 256;
constexpr int kWarps = kBlock / 32;
constexpr int kCluster = 8;
constexpr int kMaxRows = 8;
constexpr int kMaxAcc = 32;  // rows x chunk width: the double accumulators a thread keeps

/// How a matmul's attributes read as a GEMV over a weight stored along n.
struct KnForm {
  int shared = 1;     // the operand read once for every row (W)
  int n_axis = -1;    // the output axis W is contiguous along
  int row_axis = -1;  // the rows' axis (-1: one row)
  int rows = 1;
  int width = 1;  // elements of n a thread loads at once
  int64_t n = 1;  // length of n_axis
};

/// The operands' views over the domain a GemvKN reads and its reduced axis: the node's, or (unless
/// LUMINAL_CUDA_GEMV_KN_SPLIT=0) with axes split where that makes every stride linear
/// (kernels/split_axes.hpp): grouped-query heads repeated by repeat_interleave read a KV head
/// through c*(z/g), one batch index a query head, so each of its g query heads read the cache
/// again; split into [kv, g], the g heads are rows sharing one read. The output, row-major over
/// the domain, keeps its layout. On by default since it ran on an H100 (2026-12-05).
SplitDomain kn_domain(const Attrs& a) {
  if (env_switch_on("LUMINAL_CUDA_GEMV_KN_SPLIT"))
    if (std::optional<SplitDomain> d = split_for_linear_strides(a.views[0], a.views[1], a.axis))
      return *d;
  return SplitDomain{a.views[0], a.views[1], a.axis};
}

std::optional<KnForm> kn_form(const SplitDomain& d, DType t0, DType t1) {
  if (!is_float(t0) || !is_float(t1) || t0 == DType::F64 || t1 == DType::F64) return std::nullopt;
  const int axis = d.axis;
  const View& v0 = d.a;
  const View& v1 = d.b;
  if (axis < 0 || axis >= v0.rank() || v0.rank() != v1.rank()) return std::nullopt;
  if (v0.has_base() || v1.has_base()) return std::nullopt;
  std::optional<KnForm> best;
  for (int w = 1; w >= 0; --w) {
    const View& vw = w == 0 ? v0 : v1;
    const View& vx = w == 0 ? v1 : v0;
    const DType tw = w == 0 ? t0 : t1;
    if (vw.strides[axis] == Expr(0) || vw.strides[axis] == Expr::z()) continue;
    KnForm f{.shared = w};
    for (int d = 0; d < vw.rank() && f.n_axis < 0; ++d)
      if (d != axis && vw.strides[d] == Expr::z() && vx.strides[d] == Expr(0) &&
          vw.dims[d].is_const() && vw.dims[d].as_const() > 1)
        f.n_axis = d;
    if (f.n_axis < 0) continue;
    f.n = vw.dims[f.n_axis].as_const();
    int64_t product = 1;
    bool ok = true;
    for (int d = 0; d < vw.rank() && ok; ++d) {
      if (d == axis || d == f.n_axis || !(vw.strides[d] == Expr(0)) || vx.strides[d] == Expr(0) ||
          vw.dims[d] == Expr(1))
        continue;
      if (!vw.dims[d].is_const()) {
        ok = false;
        break;
      }
      const int64_t len = vw.dims[d].as_const();
      product *= len;
      if (len > f.rows) {
        f.row_axis = d;
        f.rows = static_cast<int>(len);
      }
    }
    if (!ok || product > kMaxRows || product != f.rows) continue;
    int width = 16 / size_bytes(tw);
    while (width > 1 && width * f.rows > kMaxAcc)
      width /= 2;
    if (width < 2 || !aligned_chunks(vw, f.n_axis, width)) continue;
    f.width = width;
    if (!best || f.rows > best->rows) best = f;
  }
  return best;
}

/// The tile's span along n (TC column threads of `width` elements).
int64_t kn_span(const KnForm& f) {
  int tc = 1;
  while (tc < 32 && tc * f.width < f.n)
    tc *= 2;
  return int64_t{tc} * f.width;
}

/// Whether the kernel can store `f`'s output over `d` as Q8_1 blocks: each warp's 32 consecutive
/// stores are one block (n and the span multiples of 32, n the output's innermost axis).
bool kn_q8_storable(const SplitDomain& d, const KnForm& f) {
  if (f.n % 32 != 0 || kn_span(f) % 32 != 0) return false;
  for (int k = f.n_axis + 1; k < d.a.rank(); ++k)
    if (k != d.axis && !(d.a.dims[static_cast<size_t>(k)] == Expr(1))) return false;
  return true;
}

/// `product_t`: the dtype each product rounds to (the matmul value's; f32 for cuda.GemvKNCast).
KernelGen gen_kn_node(const LlirNode& n, const GenContext& ctx, DType product_t) {
  if (n.input_dtypes.size() != 2 || n.attrs.views.size() != 2)
    throw Error(std::string(n.op->name) + ": needs two inputs, got " +
                std::to_string(n.input_dtypes.size()));
  const SplitDomain dom = kn_domain(n.attrs);
  const std::optional<KnForm> form = kn_form(dom, n.input_dtypes[0], n.input_dtypes[1]);
  if (!form)
    throw Error(std::string(n.op->name) + ": " + n.attrs.to_string() +
                " is no GEMV over a weight stored along n (no unit-stride output axis the rows "
                "share, or more than 8 rows)");
  const int axis = dom.axis, na = form->n_axis, ra = form->row_axis;
  const int w = form->shared, x = 1 - w;
  const int M = form->rows, CW = form->width;
  const bool q8 = n.attrs.dtype == DType::Q8_1;
  if (q8 && !kn_q8_storable(dom, *form))
    throw Error("cuda.GemvKNQ8: " + n.attrs.to_string() +
                " stores no whole Q8_1 block a warp (n must be a multiple of 32 and the output's "
                "innermost axis)");
  const DType tw = n.input_dtypes[static_cast<size_t>(w)];
  const DType tx = n.input_dtypes[static_cast<size_t>(x)];
  const View& vw = w == 0 ? dom.a : dom.b;
  const View& vx = w == 0 ? dom.b : dom.a;

  Codegen cg(n, ctx);
  const Expr K = dom.a.dims[axis];
  cg.require(K);
  cg.require(numel(n.attrs.shape));
  Shape odims = dom.a.dims;
  odims[static_cast<size_t>(axis)] = Expr(1);
  const View out_full = View::contiguous(odims);
  // Views with the row and n axes at length 1: the outer index p runs over the batch axes.
  auto outer = [&](View v) {
    if (ra >= 0) v.dims[static_cast<size_t>(ra)] = Expr(1);
    v.dims[static_cast<size_t>(na)] = Expr(1);
    return v;
  };
  Expr P = Expr(1);
  for (int d = 0; d < out_full.rank(); ++d)
    if (d != axis && d != ra && d != na) P = P * odims[static_cast<size_t>(d)];

  // TC column threads cover up to 32 chunks of n; the rest of the block's threads split k.
  const int64_t span = kn_span(*form);
  const int TC = static_cast<int>(span / CW);
  const int KL = kBlock / TC;
  const int64_t NT = (form->n + span - 1) / span;
  const int U = env_int("LUMINAL_CUDA_GEMV_KN_UNROLL", 8, 1, 16);
  const int CL = env_int("LUMINAL_CUDA_GEMV_KN_CLUSTER", kCluster, 1, 8);
  if (CL != 1 && CL != 2 && CL != 4 && CL != 8)
    throw Error("LUMINAL_CUDA_GEMV_KN_CLUSTER must be 1, 2, 4 or 8");
  // Rows reduced together through shared memory (each round is two barriers): as many as keep
  // the warps' partial sums within 32 KB.
  const int RR = std::max(1, std::min(M, static_cast<int>(32768 / (int64_t{kWarps} * span * 8))));

  std::string base;
  const std::string ow = cg.view_offset(outer(vw), "p", "bw", base, axis);
  const std::string ox = cg.view_offset(outer(vx), "p", "bx", base, axis);
  const std::string oo = cg.view_offset(outer(out_full), "p", "bo", base, axis);
  const std::string w_k = cg.axis_offset(vw, axis, "k");
  const std::string x_k = cg.axis_offset(vx, axis, "k");
  const std::string x_r = ra >= 0 ? cg.axis_offset(vx, ra, "r") : "0";
  const std::string o_r = ra >= 0 ? cg.axis_offset(out_full, ra, "r") : "0";
  const std::string o_n = cg.axis_offset(out_full, na, "nn");
  const std::string& I = cg.idx();
  const std::string vt = vector_type(CW * size_bytes(tw));
  const std::string sw = "S_" + dtype_tag(tw), sx = "S_" + dtype_tag(tx);
  const std::string fma =
      product_add(product_t, tx, tw, "xv[u][r]", operand_load(tw, "ew[j]"), "part[r][j]");
  const std::string Ms = std::to_string(M), CWs = std::to_string(CW), TCs = std::to_string(TC),
                    Us = std::to_string(U), CLs = std::to_string(CL), SPs = std::to_string(span),
                    NTs = std::to_string(NT), KSs = std::to_string(int64_t{KL} * CL),
                    RRs = std::to_string(RR), RSs = std::to_string(RR * span);
  std::string body = lines({
      CL > 1 ? "  const unsigned rank = lmn_cluster_rank();" : "  const unsigned rank = 0;",
      "  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;",
      "  const int col = threadIdx.x % " + TCs + ", kl = threadIdx.x / " + TCs + ";",
      "  __shared__ double red[" + std::to_string(kWarps) + "][" + RSs + "];",
      "  __shared__ double bpart[" + std::to_string(M * span) + "];",
      "  const " + I + " N = " + std::to_string(form->n) + ";",
      "  for (" + I + " t = (" + I + ")blockIdx.x / " + CLs + "; t < P * " + NTs + "; t += (" + I +
          ")gridDim.x / " + CLs + ") {",
      "    const " + I + " p = t / " + NTs + ";",
      "    const " + I + " n0 = (t % " + NTs + ") * " + SPs + ";",
      "    const " + I + " nc = n0 + (" + I + ")col * " + CWs + ";",
      "    double acc[" + Ms + "][" + CWs + "];",
      "#pragma unroll",
      "    for (int r = 0; r < " + Ms + "; ++r)",
      "#pragma unroll",
      "      for (int j = 0; j < " + CWs + "; ++j) acc[r][j] = 0.0;",
  });
  body += base;
  body += lines({
      "    if (nc < N) {",
      "      for (" + I + " k0 = (" + I + ")rank * " + std::to_string(KL) +
          " + kl; k0 < K; k0 += " + std::to_string(int64_t{KL} * CL * U) + ") {",
      "        " + vt + " q[" + Us + "];",
      "        float xv[" + Us + "][" + Ms + "];",
      "#pragma unroll",
      "        for (int u = 0; u < " + Us + "; ++u) {",
      "          const " + I + " k = k0 + u * " + KSs + ";",
      "          if (k < K) {",
      "            q[u] = __ldg(reinterpret_cast<const " + vt + "*>(in" + std::to_string(w) +
          " + " + ow + " + " + w_k + " + nc));",
      "#pragma unroll",
      "            for (int r = 0; r < " + Ms + "; ++r) xv[u][r] = " +
          operand_load(tx, "in" + std::to_string(x) + "[" + ox + " + " + x_r + " + " + x_k + "]") +
          ";",
      "          }",
      "        }",
      "        float part[" + Ms + "][" + CWs + "];",
      "#pragma unroll",
      "        for (int r = 0; r < " + Ms + "; ++r)",
      "#pragma unroll",
      "          for (int j = 0; j < " + CWs + "; ++j) part[r][j] = 0.0f;",
      "#pragma unroll",
      "        for (int u = 0; u < " + Us + "; ++u) {",
      "          if (k0 + u * " + KSs + " >= K) break;",
      "          const " + sw + "* ew = reinterpret_cast<const " + sw + "*>(&q[u]);",
      "#pragma unroll",
      "          for (int r = 0; r < " + Ms + "; ++r)",
      "#pragma unroll",
      "            for (int j = 0; j < " + CWs + "; ++j) part[r][j] = " + fma + ";",
      "        }",
      "#pragma unroll",
      "        for (int r = 0; r < " + Ms + "; ++r)",
      "#pragma unroll",
      "          for (int j = 0; j < " + CWs + "; ++j) acc[r][j] += (double)part[r][j];",
      "      }",
      "    }",
      // The k-lanes of a warp (lanes col, col + TC, ...), then the warps in order, RR rows a
      // round, into this block's partial sums.
      "#pragma unroll",
      "    for (int r0 = 0; r0 < " + Ms + "; r0 += " + RRs + ") {",
      "#pragma unroll",
      "      for (int r = r0; r < r0 + " + RRs + " && r < " + Ms + "; ++r)",
      "#pragma unroll",
      "        for (int j = 0; j < " + CWs + "; ++j) {",
      "          double v = acc[r][j];",
      "          for (int s = " + TCs +
          "; s < 32; s <<= 1) v += __shfl_xor_sync(0xffffffffu, v, s);",
      "          if (lane < " + TCs + ") red[warp][(r - r0) * " + SPs + " + lane * " + CWs +
          " + j] = v;",
      "        }",
      "      __syncthreads();",
      "      for (int o = threadIdx.x; o < " + RSs + " && r0 * " + SPs + " + o < " +
          std::to_string(M * span) + "; o += " + std::to_string(kBlock) + ") {",
      "        double s = 0.0;",
      "#pragma unroll",
      "        for (int q = 0; q < " + std::to_string(kWarps) + "; ++q) s += red[q][o];",
      "        bpart[r0 * " + SPs + " + o] = s;",
      "      }",
      "      __syncthreads();",
      "    }",
      // The cluster's blocks, in rank order (their values loaded first, then added); each block
      // stores a share of the tile.
      CL > 1 ? "    lmn_cluster_sync();" : "",
      "    for (int o = (int)rank * " + std::to_string(kBlock) + " + threadIdx.x; o < " +
          std::to_string(M * span) + "; o += " + std::to_string(kBlock * CL) + ") {",
      "      const int r = o / " + SPs + ";",
      "      const " + I + " nn = n0 + o % " + SPs + ";",
      "      if (nn >= N) continue;",
      CL > 1 ? "      unsigned long long bits[" + CLs +
                   "];\n#pragma unroll\n      for (unsigned q = 0; q < " + CLs +
                   "; ++q) bits[q] = lmn_cluster_ld(&bpart[o], q);\n      double s = 0.0;\n"
                   "#pragma unroll\n      for (int q = 0; q < " +
                   CLs + "; ++q) s += __longlong_as_double((long long)bits[q]);"
             : "      const double s = bpart[o];",
      q8 ? q8_1_store_value(n, "(float)s", oo + " + " + o_r + " + " + o_n, "lane", "      ")
         : "      out[" + oo + " + " + o_r + " + " + o_n + "] = st_" + dtype_tag(n.attrs.dtype) +
               "(s);",
      "    }",
      CL > 1 ? "    lmn_cluster_sync();" : "    __syncthreads();",
      "  }",
  });
  // (r is an int loop variable in both places that read o_r / x_r: the row axis' offset.)
  const std::string pcode = cg.c(P);
  const std::string kcode = cg.c(K);
  std::string k = "extern \"C\" __global__ void " +
                  (CL > 1 ? "__cluster_dims__(" + CLs + ", 1, 1) " : std::string()) +
                  "__launch_bounds__(" + std::to_string(kBlock) + ") LMN_ENTRY(lmn_gemv_kn)(" +
                  cg.params() + ") {\n";
  k += cg.dims_prologue() + "  const " + I + " P = " + pcode + ";\n  const " + I + " K = " + kcode +
       ";\n" + body + "}\n";
  KernelGen gen;
  gen.source = Codegen::unit(q8 ? quant_device_source() + k : k);
  const Expr tiles = P * Expr(NT);
  gen.launches.push_back(
      Launch{"lmn_gemv_kn",
             kBlock,
             {min(tiles, Expr(int64_t{ctx.sm_count} * 2)) * Expr(int64_t{CL}), 1, 1}});
  const Expr count = numel(n.attrs.shape);
  gen.bytes =
      P * Expr(form->n) * K * size_bytes(tw) + P * Expr(int64_t{M}) * K * size_bytes(tx) +
      (q8 ? count / Expr(32) * Expr(block_bytes(DType::Q8_1)) : count * size_bytes(n.attrs.dtype));
  gen.flops = count * K * 2;
  return gen;
}

/// (cuda.GemvKN, and cuda.GemvKNQ8 whose products are f32 as cuda.GemvKN's before its quantize)
KernelGen gen_kn(const LlirNode& n, const GenContext& ctx) {
  return gen_kn_node(n, ctx, n.attrs.dtype == DType::Q8_1 ? DType::F32 : n.attrs.dtype);
}
KernelGen gen_kn_cast(const LlirNode& n, const GenContext& ctx) {
  require_sixteen_bit_output(n);
  return gen_kn_node(n, ctx, DType::F32);
}

/// cuda.GemvKN for every matmul with a KN form (16-bit operands read through the graph's casts
/// where it casts them up), and cuda.GemvKNCast for its cast back to bf16/f16.
std::vector<Rule> kn_rules() {
  // (the rule's name says whether split domains are offered: the compile cache keys it)
  return matmul_op_rules(
      env_switch_on("LUMINAL_CUDA_GEMV_KN_SPLIT") ? "cuda.gemv-kn-split" : "cuda.gemv-kn", &kGemvKN,
      &kGemvKNCast, [](const EGraph& eg, MatmulParts& p) {
        if (!decode_alternatives() || !env_switch_on("LUMINAL_CUDA_GEMV_KN")) return false;
        if (p.attrs.views.size() != 2) return false;
        return kn_form(kn_domain(p.attrs), eg.dtype(p.children[0]), eg.dtype(p.children[1]))
            .has_value();
      });
}

/// cuda.GemvKNQ8 for a Q8_1 QuantizeQ8 that reads a cuda.GemvKN class whole and in order
/// (q8_store.hpp); ruleset cuda.fused-q8, after the rules that add the QuantizeQ8 nodes.
std::vector<Rule> kn_q8_rules() {
  if (!decode_alternatives() || !env_switch_on("LUMINAL_CUDA_GEMV_KN") ||
      !env_switch_on("LUMINAL_CUDA_FUSED_Q8"))
    return {};
  return {quantize_in_store_rule("cuda.gemv-kn-q8", &kGemvKN, &kGemvKNQ8, /*q8_k=*/false,
                                 [](const Attrs& a, const std::vector<DType>& in) {
                                   if (in.size() != 2 || a.views.size() != 2) return false;
                                   const SplitDomain d = kn_domain(a);
                                   const std::optional<KnForm> f = kn_form(d, in[0], in[1]);
                                   return f && kn_q8_storable(d, *f);
                                 })};
}

}  // namespace

void register_gemv_kn_ops(std::vector<const CudaOp*>& ops) {
  static const CudaOp kn{&kGemvKN, "cuda.library", kn_rules, gen_kn};
  static const CudaOp kn_cast{&kGemvKNCast, "", nullptr, gen_kn_cast};
  ops.push_back(&kn);
  ops.push_back(&kn_cast);
}

void register_gemv_kn_q8_ops(std::vector<const CudaOp*>& ops) {
  // (its rules run with cuda.FusedQ8's, after the QuantizeQ8 nodes exist: registered after
  // register_fused_q8_ops, so that ruleset keeps its place among the others)
  static const CudaOp kn_q8{&kGemvKNQ8, "cuda.fused-q8", kn_q8_rules, gen_kn};
  ops.push_back(&kn_q8);
}

}  // namespace luminal::cuda
