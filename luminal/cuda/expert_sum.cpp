// cuda.ExpertGemvSum (on unless LUMINAL_CUDA_EXPERT_SUM=0; right on an H100, 2026-12-06:
// Qwen3-MoE's 12-layer decode 1.45 -> 1.37 ms, BENCHMARKS.md session 31): a token's chosen experts'
// outputs summed with the router's weights, out[s, n] = sum over j < k of w[s, j] * y[s, j, n] (a
// matmul over y = an expert matmul's value, reduced along its k rows of a token), computed by the
// expert matmul's kernel: a block an output, warp j dotting row s * k + j's weight row n with its
// activation (the plain kernel's loop, W = 1), the k sums rounded as the expert op stores them
// (f32, or bf16/f16 for the cast form), then warp 0's lane 0 adding w[s, j] * value in j order as
// the matmul kernels add a product into an f32 sum (codegen.hpp, product_add). One kernel and no
// [s, k, N] value in memory where there were two. Matched on structure: the matmul's domain [S, k,
// N] (constant), reduced along k, reading the expert value contiguously and the weights [S, k]
// broadcast along n. The k loops are expert_gemv.cpp's (expert_loops.hpp); docs/cuda.md, "Mixtures
// of experts".
#include <algorithm>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "luminal/core/error.hpp"
#include "luminal/cuda/cuda_op.hpp"
#include "luminal/cuda/expert_loops.hpp"
#include "luminal/cuda/prelude.hpp"
#include "luminal/cuda/quant_device.hpp"
#include "luminal/kernels/matmul_rule.hpp"

namespace luminal::cuda {
namespace expert {
namespace {

// The expert matmul and the weighted sum of a token's k rows in one kernel.
const OpDef kExpertGemvSum{.name = "cuda.ExpertGemvSum", .seed_cost = 0.95};

/// The sum rule's builder: a matmul over [S, k, N] reduced along k whose one operand is an
/// expert matmul's value read contiguously and the other a [S, k] class broadcast along n.
void offer_sum(const Match& m, EGraph& eg) {
  const std::optional<MatmulParts> parts = matmul_parts(eg, m);
  if (!parts) return;
  const Attrs& a = parts->attrs;
  const View& v0 = a.views[0];
  if (a.axis != 1 || v0.rank() != 3) return;
  for (const Expr& d : v0.dims)
    if (!d.is_const()) return;
  const int64_t S = v0.dims[0].as_const(), K = v0.dims[1].as_const(), N = v0.dims[2].as_const();
  if (K < 1 || K > kWarps) return;
  const ClassId root = eg.find(m.root);
  for (int which = 0; which < 2; ++which) {
    const ClassId c = eg.find(parts->children[static_cast<size_t>(which)]);
    const ClassId w = eg.find(parts->children[static_cast<size_t>(1 - which)]);
    const View& vc = a.views[static_cast<size_t>(which)];
    const View& vw = a.views[static_cast<size_t>(1 - which)];
    if (!vc.is_contiguous() || !(numel(eg.shape(c)) == Expr(S * K * N))) continue;
    if (vw.has_base() || !(numel(eg.shape(w)) == Expr(S * K)) || !(vw.strides[2] == Expr(0)) ||
        !(K == 1 || vw.strides[1] == Expr::z()) ||
        !(S == 1 || vw.strides[0] == Expr(K) * Expr::z()))
      continue;
    std::vector<ENodeId> producers;
    for (ENodeId e : eg.nodes_of(c)) {
      const OpDef* op = eg.node(e).op;
      const Attrs& pa = eg.attrs_of(e);
      if ((op == gemv_op() || op == gemv_cast_op()) && !pa.payload && pa.dtype == a.dtype &&
          pa.views.size() == 3 && pa.views[1].numel() == Expr(S * K) &&
          pa.views[2].dims[1] == Expr(N))
        producers.push_back(e);
    }
    for (ENodeId e : producers) {
      const ENode pn = eg.node(e);
      Attrs na = eg.attrs_of(e);
      na.dtype = a.dtype;
      na.shape = a.shape;
      na.views.push_back(View::contiguous({Expr(S * K)}));
      std::vector<ClassId> children(pn.children.begin(), pn.children.end());
      children.push_back(w);
      add_merged(eg, &kExpertGemvSum, na, children, root);
    }
  }
}

/// cuda.ExpertGemvSum: a block an output (s, n); warp j < k dots row s * k + j (its expert's
/// weight row n against its activation row), lane 0 of warp 0 adds the rounded values times the
/// weights in j order.
KernelGen gen_expert_sum(const LlirNode& n, const GenContext& ctx) {
  const std::string op(n.op->name);
  if (n.input_dtypes.size() != 4 || n.attrs.views.size() != 4)
    throw Error(op + ": needs the activation, the expert ids, the stacked weight and the weights");
  const DType tx = n.input_dtypes[0], ti = n.input_dtypes[1], tw = n.input_dtypes[2];
  const DType t = n.attrs.dtype;
  if (n.input_dtypes[3] != t)
    throw Error(op + ": the weights' dtype must be the output's (" + std::string(name(t)) + ")");
  const View& xv = n.attrs.views[0];
  const View& iv = n.attrs.views[1];
  const View& wv = n.attrs.views[2];
  const int V = chunk_width(xv, tx, wv, tw);
  if (V == 0 || !is_integer(ti) || !iv.numel().is_const() || !numel(n.attrs.shape).is_const())
    throw Error(op + ": cannot read weights of " + std::string(name(tw)) + " " + wv.to_string() +
                " with activation rows " + xv.to_string());
  const bool block = is_block(tw);
  const int64_t N = wv.dims[1].as_const(), D = wv.dims[2].as_const();
  const int64_t M = iv.numel().as_const(), P = numel(n.attrs.shape).as_const();
  const int64_t S = P / N, K = S > 0 ? M / S : 0;
  if (S * N != P || S * K != M || K < 1 || K > kWarps)
    throw Error(op + ": " + std::to_string(M) + " expert rows do not make " + std::to_string(S) +
                " tokens of at most " + std::to_string(kWarps) + " choices");
  Codegen cg(n, ctx);
  cg.require(Expr(P * K));
  cg.require(Expr(M * D));
  const std::string& I = cg.idx();
  const int64_t chunks = D / V;
  const int U = lane_loads(tw, chunks, 1);
  const std::string Ks = std::to_string(K), Ns = std::to_string(N), tt = dtype_tag(t);
  std::string body = lines({
      "  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;",
      "  const int part = 0;",
      "  __shared__ float red[" + std::to_string(kWarps) + "];",
      block ? "  const int NU = " + std::to_string(chunks) + ";"
            : "  const " + I + " KC = " + std::to_string(chunks) + ";",
      "  for (" + I + " p = (" + I + ")blockIdx.x; p < " + std::to_string(P) + "; p += (" + I +
          ")gridDim.x) {",
      "    const " + I + " s = p / " + Ns + ", n = p % " + Ns + ";",
      "    float acc = 0.0f;",
      "    bool bad = false;",
      "    if (warp < " + Ks + ") {",
      "    const " + I + " r = s * " + Ks + " + warp;",
  });
  int64_t ns = 0;
  body += row_start(cg, iv, xv, ti, tw, wv, ns);
  const bool vec = block && vector_width(xv, xv.rank() - 1, DType::F32) >= 4;
  body += block ? block_loop(tw, 1, U, vec) : float_loop(tx, tw, V, 1, U, I);
  body += lines({
      "    }",
      "    }",
      "    for (int o = 16; o > 0; o >>= 1) acc = __fadd_rn(acc, __shfl_xor_sync(0xffffffffu, "
      "acc, o));",
      "    if (lane == 0) red[warp] = bad ? 0.0f : acc;",
      "    __syncthreads();",
      "    if (threadIdx.x == 0) {",
      "      float t = 0.0f;",
      "      for (int j = 0; j < " + Ks + "; ++j) {",
      "        const float v = ldm_" + tt + "(st_" + tt + "(red[j]));",
      "        const float w = ldm_" + tt + "(in3[s * " + Ks + " + j]);",
      "        t = " + product_add(t, t, t, "v", "w", "t") + ";",
      "      }",
      "      out[p] = st_" + tt + "(t);",
      "    }",
      "    __syncthreads();",
      "  }",
  });
  std::string k = "extern \"C\" __global__ void __launch_bounds__(" + std::to_string(kBlock) +
                  ") LMN_ENTRY(lmn_expert_gemv_sum)(" + cg.params() + ") {\n";
  k += cg.dims_prologue() + body + "}\n";
  KernelGen gen;
  gen.source = Codegen::unit((block ? quant_device_source() : std::string()) + k);
  gen.launches.push_back(Launch{
      "lmn_expert_gemv_sum", kBlock, {min(Expr(P), Expr(int64_t{ctx.sm_count} * 16)), 1, 1}});
  const int64_t row_bytes = static_cast<int64_t>(storage_bytes(tw, D));
  gen.bytes = Expr(P * K * row_bytes + M * (D * size_bytes(tx) + size_bytes(ti) + size_bytes(t)) +
                   P * size_bytes(t));
  gen.flops = Expr(P * K * 2 * D);
  return gen;
}

}  // namespace

std::vector<Rule> sum_rules() {
  if (!env_switch_on("LUMINAL_CUDA_EXPERT_SUM")) return {};  // (=0: none, to compare)
  return {Rule{"cuda.expert-sum", matmul_pattern(), nullptr, offer_sum}};
}

const CudaOp* sum_op() {
  static const CudaOp op{&kExpertGemvSum, "", nullptr, gen_expert_sum};
  return &op;
}

}  // namespace expert
}  // namespace luminal::cuda
