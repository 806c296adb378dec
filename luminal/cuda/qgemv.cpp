// cuda.QGemv: a linear layer over block-quantized weights with at most 8 activation rows
// (decode), reading the weight's blocks as stored and dequantising them in registers.
//
// The shared matcher (kernels/quant_rule.hpp) finds SumReduce(Mul(x, Dequantize(W))) as x @ W^T;
// the rule offers cuda.QGemv(x, W) beside it when x is f32, contiguous along k, and the
// activation rows (the axes W does not step through) are constants, at most 8 in all. It
// dominates nothing: dequantise-then-matmul (a folded f32 weight read by cuda.Gemv, cuda.Matmul
// or cuBLASLt) stays, and the search times both.
//
// The kernel works in units of 32 values (a legacy block, a K sub-block or Q6_K chunk;
// quant_device.hpp): consecutive lanes take consecutive units of a weight row, so a warp's loads
// cover contiguous bytes; each lane loads U units before decoding any (bytes in flight), decodes
// a unit once for every activation row, and W warps split a row (the most that keep the grid
// within about 32 warps an SM). A block of 256 threads holds 8 / W rows.
//
// Numerics: a unit of weight values a q_j + b (q_j small integers, exact as floats; a, b exact
// products of the block's f16 scales) against x gives a0 s0 + a1 s1 + b sx, with s0, s1 the f32
// fused multiply-add sums of q_j x_j over each half and sx the f32 sum of x_j; these join a
// lane's f32 accumulator with fused multiply-adds, lanes and warps add in f32. So with
// w_j the exact values and D = 32 + units a lane + 11 (the halves, the per-unit adds, 5
// shuffle levels, up to 8 warps), |result - sum w_j x_j| <= gamma(D) sum_j (|w_j| + 2|b_j|)|x_j|
// (gamma(n) = n 2^-24 / (1 - n 2^-24)); the reference's own rounding of w_j (types with a min)
// adds 2^-24 sum |w_j x_j|. tests/cuda/quant_test.cpp checks this bound.
//
// cuda.QGemvEpi is the same with an elementwise epilogue (kernels/epilogue_rule.hpp, as
// cuda.GemvEpi): the residual add after o_proj and down, SiLU(gate) * up after up; the epilogue's
// other inputs are loaded into registers before the k loop. LUMINAL_CUDA_GEMV_EPILOGUE=0 offers
// none.
//
// cuda.QGemvQ8 (and cuda.QGemvQ8Epi) is the integer form, as llama.cpp's: cuda.QuantizeQ8
// (quantize_q8.cpp) rounds each activation row to 8 bits once (Q8_1 beside the legacy types,
// Q8_K beside the K types, bit for bit core/quantize_ref.hpp; layers reading one activation
// share it), and a few lanes share a unit (the legacy types 2, or LUMINAL_CUDA_QGEMV_LANES; Q4_K
// and Q5_K 2; Q6_K 4), each dotting its words of four int8 weights with the activation's words by
// __dp4a (QI_<t> in quant_dp4a_device.cpp).
// Per unit the integer sum is exact; it joins the lane's f32 accumulator as
// fma(a * d_x, sum, acc), and lane 0 adds the min term from the activation's stored sum. So the
// result is within testing::quant_dot_bound (docs/quant.md, "Error bound": the activation's
// 8-bit rounding plus f32 rounding at the lanes' accumulation depth) of the f32 product.
// On the H200 it takes an 8B Q4_0 decode step from 9.9 ms (f32 form) to 3.5 ms. The search times
// both; LUMINAL_CUDA_QGEMV=f32 or int8 offers only one (default both).
//
// LUMINAL_CUDA_QGEMV_WARPS (1, 2, 4, 8) and LUMINAL_CUDA_QGEMV_UNROLL (1 to 8) override W and U.
//
// cuda.QGemvQ8Glu / cuda.QGemvQ8SGlu (on by default since 2026-12-07, LUMINAL_CUDA_QGEMV_GLU=0
// offers none; on an H100 they took a SmolLM2 q4_1 decode step from 0.830 to 0.813 ms and an 8B
// q4_0 one from 2.772 to 2.824, so their seed cost grows with the weight and the seeds take them
// for small weights only; docs/cuda.md "Gate and up in one kernel"): an elementwise region over two
// integer GEMVs of one quantized activation, element for element (SwiGLU's SiLU(gate) * up over
// separate gate_proj and up_proj weights), in one kernel: each output row p dots row p of both
// weights (same type and shape) with the activation words read once, each sum as the separate
// kernel computes it (but Q4_K over GGUF blocks: 32-value units, as LUMINAL_CUDA_QGEMV_Q4K_PAIRS=0
// computes it, not the default pairs), and stores the region of the two (load 0 the first child's
// value, load 1 the second's). Where a decode layer ran the gate GEMV, the up GEMV and the region
// (or an epilogue form of one), it runs one kernel reading the same bytes. Matched on structure
// (the region's two children are GEMV classes over the same activation class, each read whole
// through its own shape); the search times it against the separate kernels.#include <algorithm>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "luminal/core/error.hpp"
#include "luminal/cuda/cuda_op.hpp"
#include "luminal/cuda/gemv_epilogue.hpp"
#include "luminal/cuda/gemv_then.hpp"
#include "luminal/cuda/prelude.hpp"
#include "luminal/cuda/qgemv_ops.hpp"
#include "luminal/cuda/quant_device.hpp"
#include "luminal/cuda/row_prologue.hpp"

namespace luminal::cuda {

namespace {

using Form = QGemvForm;

constexpr int kBlock = 256;
constexpr int kWarps = kBlock / 32;
/// LUMINAL_CUDA_QGEMV_LANES: lanes a unit of the legacy types in the integer form (1, 2 or 4).
/// Default 2 over GGUF blocks (2-byte-aligned: a lane's 8 bytes in 2-byte loads) and 1 over the
/// split layout (a lane's 16 bytes in one load): on the H200 an 8B Q4_0 decode step took 3.46 ms
/// with 4 lanes over GGUF blocks, 3.27 ms with 2, 2.91 ms split with 2 and 2.78 ms split with 1.
int legacy_lanes(bool split) {
  const int l = env_int("LUMINAL_CUDA_QGEMV_LANES", split ? 1 : 2, 1, 4);
  if (l == 3) throw Error("LUMINAL_CUDA_QGEMV_LANES must be 1, 2 or 4");
  return l;
}

/// LUMINAL_CUDA_QGEMV_Q4K_PAIRS (default on): Q4_K's integer form reads its sub-blocks in pairs
/// (QI_q4_k2: one 16-byte load a lane for 32 values of two sub-blocks); 0 takes one sub-block a
/// unit (QI_q4_k, which loads each byte chunk once per sub-block).
bool q4k_pairs() { return env_switch_on("LUMINAL_CUDA_QGEMV_Q4K_PAIRS"); }

/// `epi`: cuda.QGemvEpi's program (load 0: the f32 product; load j >= 1: input j + 1 through
/// views[j + 1] at the output's flat index), or null. `glu`: the paired form (inputs x, W and a
/// second weight W2 like W; `epi` is the region over the two products).
KernelGen gen_qgemv_node(const LlirNode& n, const GenContext& ctx, const FusedProgram* epi,
                         Form form, bool glu = false, const GemvThen* then = nullptr) {
  const bool q8 = form != Form::F32, split = form == Form::Q8S;
  const size_t extra = glu || then ? 1 : epi ? n.input_dtypes.size() - 2 : 0;
  if (n.input_dtypes.size() < 2 || n.input_dtypes.size() != 2 + extra ||
      n.attrs.views.size() != n.input_dtypes.size())
    throw Error(std::string(n.op->name) +
                ": needs an activation and a weight (and an epilogue's inputs, or a second "
                "weight)");
  if (glu && (!q8 || !epi || n.input_dtypes[2] != n.input_dtypes[1] ||
              !(n.attrs.views[2] == n.attrs.views[1])))
    throw Error(std::string(n.op->name) +
                ": pairs two integer GEMVs over weights of one type, read through one view, with "
                "a region");
  const DType tx = n.input_dtypes[0], tw = n.input_dtypes[1];
  if (!cuda_block_type(tw) || tx != (q8 ? cuda_activation_format(tw) : DType::F32))
    throw Error(
        std::string(n.op->name) + ": reads " +
        (q8 ? "q8_1 (legacy types) or q8_k (K types) activation blocks" : "an f32 activation") +
        " and q4_0 .. q6_k weights, got " + std::string(name(tx)) + " and " +
        std::string(name(tw)));
  const int axis = n.attrs.axis;
  const View& xv = n.attrs.views[0];
  const View& wv = n.attrs.views[1];
  if (xv.has_base() || wv.has_base())
    throw Error(std::string(n.op->name) + ": an input read at an element offset is not supported");
  const Expr K = wv.dims[static_cast<size_t>(axis)];
  if (!K.is_const() || K.as_const() % block_size(tw) != 0)
    throw Error("cuda.QGemv: k must be a static whole number of " + std::string(name(tw)) +
                " blocks");
  if (!q8 && !(xv.strides[static_cast<size_t>(axis)] == Expr::z()))
    throw Error("cuda.QGemv: the activation must be contiguous along k");
  // The row axis: the longest constant axis x steps through and W does not.
  const auto [M, ra] = row_axis(xv, wv, axis);
  if (M > kQGemvMaxRows)
    throw Error("cuda.QGemv: " + std::to_string(M) + " activation rows; at most 8");
  if (then && (M != 1 || !q8 || epi || glu || n.attrs.dtype != DType::F32))
    throw Error(std::string(n.op->name) +
                ": runs a product after an integer GEMV of one activation row, in f32");
  Codegen cg(n, ctx);
  cg.require(K);
  cg.require(numel(n.attrs.shape));
  Shape odims = wv.dims;
  odims[static_cast<size_t>(axis)] = Expr(1);
  const View out_full = View::contiguous(odims);
  auto drop_row = [&](View v) {
    if (ra >= 0) v.dims[static_cast<size_t>(ra)] = Expr(1);
    return v;
  };
  Expr P = Expr(1);
  for (int d = 0; d < wv.rank(); ++d)
    if (d != axis && d != ra) P = P * odims[static_cast<size_t>(d)];
  cg.require(P * K);

  // Q4_K's integer form takes its sub-blocks in pairs (QI_q4_k2: units of 64 values).
  const bool pairs = q8 && !split && tw == DType::Q4_K && q4k_pairs() && !glu;
  const int64_t NU = K.as_const() / (pairs ? 64 : 32);
  const int64_t p_hi = P.bounds(ctx.facts).hi;
  // Units a warp takes a step: the f32 form's lanes one each; the integer form's share a unit,
  // QI_<t>::LANES lanes each (the legacy types: legacy_lanes(); two for Q4_K and Q5_K, four for
  // Q6_K).
  const bool k_type = block_size(tw) == 256;
  const int lanes = !k_type ? legacy_lanes(split) : tw == DType::Q6_K ? 4 : 2;
  const int64_t step_units = q8 ? 32 / lanes : 32;
  int W = 1;
  while (W < kWarps && NU >= step_units * 2 * W && p_hi < int64_t{ctx.sm_count} * 32 / W)
    W *= 2;
  W = env_int("LUMINAL_CUDA_QGEMV_WARPS", W, 1, kWarps);
  if (W != 1 && W != 2 && W != 4 && W != 8)
    throw Error("LUMINAL_CUDA_QGEMV_WARPS must be 1, 2, 4 or 8");
  const int umax = q8 ? 4 : block_size(tw) == 256 ? 2 : 4;
  const int64_t per_lane = (NU + step_units * W - 1) / (step_units * W);
  const int U =
      env_int("LUMINAL_CUDA_QGEMV_UNROLL",
              static_cast<int>(std::min<int64_t>(umax, std::max<int64_t>(1, per_lane))), 1, 8);
  const int G = kWarps / W;
  const bool vec = vector_width(xv, axis, DType::F32) >= 4;
  // With a product after it (gemv_then.hpp): W and U as the GEMV alone has them (its sums' order),
  // P the tasks, TPB tasks a block-iteration when G >= T, else R rounds of G values for one task.
  ThenTasks tasks;
  if (then) {
    tasks = then_tasks(*then, n.op->name);
    P = tasks.P;
  }
  const int TPB = then ? std::max(1, G / tasks.T) : 1, R = then ? std::max(1, tasks.T / G) : 1;

  std::string base;
  const std::string ow = cg.view_offset(drop_row(wv), "p", "bw", base, axis);
  const std::string ox = cg.view_offset(drop_row(xv), "p", "bx", base, axis);
  const std::string oo = cg.view_offset(drop_row(out_full), "p", "bo", base, axis);
  const std::string x_step = ra >= 0 ? cg.axis_offset(xv, ra, "mi") : "0";
  const std::string o_step = ra >= 0 ? cg.axis_offset(out_full, ra, "mi") : "0";
  const std::string& I = cg.idx();
  // The epilogue's other inputs, read before the k loop (gemv_epilogue.hpp).
  const std::string out_at = oo + " + " + o_step;
  const GemvPrefetch pf =
      epi && !glu ? gemv_epilogue_prefetch(n, *epi, cg, M, out_at) : GemvPrefetch{};
  auto store = [&](const std::string& value, const std::string& value2) {
    if (then) return "        lmn_a[it] = " + value + ";\n";  // (f32: the product reads it)
    return glu ? gemv_pair_store(n, *epi, out_at, value, value2)
               : gemv_store(n, epi, out_at, value);
  };
  const std::string QT = "QT_" + quant_tag(tw);
  const std::string Ms = std::to_string(M), Us = std::to_string(U), Ws = std::to_string(W),
                    Gs = std::to_string(G), step = std::to_string(step_units * W);
  // The activation computed by the block (cuda.RowGemv, row_prologue.cpp): a cuda.RowQ8's one
  // row of Q8_1 blocks in shared memory, read by the integer form over GGUF blocks.
  const RowPrologue* rp = ctx.row_prologue;
  std::string row_code;
  if (rp) {
    const int64_t len = one_row_length(xv, axis);
    if (!q8 || tx != DType::Q8_1 || M != 1 || rp->row->attrs.dtype != DType::Q8_1 || len <= 0 ||
        !(numel(rp->row->attrs.shape) == Expr(len)))
      throw Error(std::string(n.op->name) + " with its row: the integer form over GGUF blocks, " +
                  "reading one Q8_1 row along k, got " + xv.to_string());
    row_code = "  __shared__ __align__(16) unsigned char lmn_xrow[" +
               std::to_string(storage_bytes(DType::Q8_1, K.as_const())) + "];\n" +
               row_into_shared(*rp->row, ctx, cg, kBlock, "lmn_xrow", rp->inputs);
  }
  std::string body =
      row_code +
      lines({
          "  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;",
          "  const int g = warp / " + Ws + ", part = warp % " + Ws + ";",
          "  __shared__ float red[" + std::to_string(kWarps) + "][" + Ms + "];",
          glu ? "  __shared__ float red2[" + std::to_string(kWarps) + "][" + Ms + "];" : "",
          "  const int NU = " + std::to_string(NU) + ";",
      });
  // (the group's output exists while `live` holds)
  const std::string live = gemv_loop_open(cg, then, tasks, G, TPB, R, body);
  body += lines({
      "    float acc[" + Ms + "]" + (glu ? ", acc2[" + Ms + "]" : "") + ";",
      "#pragma unroll",
      "    for (int mi = 0; mi < " + Ms + "; ++mi) acc[mi] = " + (glu ? "acc2[mi] = " : "") +
          "0.0f;",
  });
  body += pf.decl + "    if (" + live + ") {\n" + base + pf.load;
  // The k loop: a lane (the integer form: lane t of group grp, QI_<t>::LANES lanes a unit) loads
  // U units before using any, step units apart.
  const std::string T = !q8     ? QT
                        : pairs ? "QI_q4_k2"
                                : (split ? "QS_" : "QI_") + quant_tag(tw) +
                                      (k_type ? "" : "<" + std::to_string(lanes) + ">");
  // The weight row: its blocks (split: its bodies and heads, the heads after all TB bodies).
  // (`sfx` names the second weight's, input `in`, in the paired forms: read through the first's
  // view, so at the same offsets.)
  auto row_of = [&](const std::string& in, const std::string& sfx) {
    if (split) {
      const std::optional<SplitLayout> sl = split_layout(tw);
      if (!sl || n.attrs.int_value <= 0)
        throw Error(std::string(n.op->name) + ": needs a " + std::string(name(tw)) +
                    " weight in its split layout and its block count");
      const std::string rb = "(long long)(" + ow + " / " + std::to_string(block_size(tw)) + ")";
      return "    const unsigned char* body" + sfx + " = (const unsigned char*)" + in + " + " + rb +
             " * " + std::to_string(sl->body) + "LL;\n    const unsigned char* head" + sfx +
             " = (const unsigned char*)" + in + " + " +
             std::to_string(n.attrs.int_value * sl->body) + "LL + " + rb + " * " +
             std::to_string(sl->head) + "LL;\n";
    }
    return "    const unsigned char* row" + sfx + " = (const unsigned char*)" + in +
           " + (long long)(" + ow + " / " + std::to_string(block_size(tw)) + ") * " +
           std::to_string(block_bytes(tw)) + "LL;\n";
  };
  const std::string load_args = split ? "body, head, " : "row, ";
  const std::string load_args2 = split ? "body2, head2, " : "row2, ";
  body += row_of("in1", "");
  if (glu) body += row_of("in2", "2");
  body += lines({
      q8 ? "    const int grp = lane / " + T + "::LANES, t = lane % " + T + "::LANES;"
         : "    const int grp = lane;",
      "    for (int u0 = part * " + std::to_string(step_units) +
          " + grp; u0 < NU; u0 += " + std::to_string(step_units * W * U) + ") {",
      "      " + T + "::Raw r[" + Us + "]" + (glu ? ", r2[" + Us + "]" : "") + ";",
      "#pragma unroll",
      "      for (int uu = 0; uu < " + Us + "; ++uu)",
      "        if (u0 + uu * " + step + " < NU) {",
      "          " + T + "::load(" + load_args + "u0 + uu * " + step + (q8 ? ", t" : "") +
          ", r[uu]);",
      glu ? "          " + T + "::load(" + load_args2 + "u0 + uu * " + step + ", t, r2[uu]);" : "",
      "        }",
      "#pragma unroll",
      "      for (int uu = 0; uu < " + Us + "; ++uu) {",
      "        const int u = u0 + uu * " + step + ";",
      "        if (u >= NU) break;",
  });
  // The integer form's activation row mi (contiguous rows of activation blocks).
  const std::string x_row =
      rp   ? "          const unsigned char* xr = lmn_xrow;"
      : q8 ? "          const unsigned char* xr = (const unsigned char*)in0 + (long long)((" + ox +
                 " + " + x_step + ") / " + std::to_string(K.as_const()) + ") * " +
                 std::to_string(storage_bytes(tx, K.as_const())) + "LL;"
           : "";
  if (pairs) {
    // As below with two scales a unit: each sub-block's integer sum joins the accumulator with
    // its own scale, and lane 0 adds both min terms.
    body += lines({
        "        int v[8], w[8];",
        "        float a[2], b[2];",
        "        " + T + "::ints2(r[uu], t, v, w, a, b);",
        "#pragma unroll",
        "        for (int mi = 0; mi < " + Ms + "; ++mi) {",
        x_row,
        "          int xv[8];",
        "          float dx, sx0, sx1;",
        "          lmn_x2(xr, u, w, xv, dx, sx0, sx1);",
        "          int s0 = 0, s1 = 0;",
        "#pragma unroll",
        "          for (int j = 0; j < 4; ++j) {",
        "            s0 = __dp4a(v[j], xv[j], s0);",
        "            s1 = __dp4a(v[4 + j], xv[4 + j], s1);",
        "          }",
        "          acc[mi] = __fmaf_rn(__fmul_rn(a[0], dx), (float)s0, acc[mi]);",
        "          acc[mi] = __fmaf_rn(__fmul_rn(a[1], dx), (float)s1, acc[mi]);",
        "          if (t == 0) {",
        "            acc[mi] = __fmaf_rn(b[0], sx0, acc[mi]);",
        "            acc[mi] = __fmaf_rn(b[1], sx1, acc[mi]);",
        "          }",
        "        }",
    });
  } else if (q8) {
    // Lane t takes its share of unit u (QI_<t>::ints) against the activation unit's words (x
    // read as contiguous rows of activation blocks); lane 0 of the group adds the min term once
    // per unit.
    // (The paired forms: the same for r2 into acc2, against the activation words read once.)
    std::vector<std::pair<std::string, std::string>> ws = {{"", "acc"}};
    if (glu) ws.push_back({"2", "acc2"});
    std::string ints, dots;
    for (const auto& [sfx, ac] : ws) {
      ints += "        int v" + sfx + "[" + T + "::NW], w" + sfx + "[" + T + "::NW];\n" +
              "        float a" + sfx + ", b" + sfx + ";\n        " + T + "::ints(r" + sfx +
              "[uu], t, v" + sfx + ", w" + sfx + ", a" + sfx + ", b" + sfx + ");\n";
      dots += lines({
          "          {",
          "          int si = 0;",
          "#pragma unroll",
          "          for (int j = 0; j < " + T + "::NW; ++j) si = __dp4a(v" + sfx +
              "[j], xv[j], si);",
          "          " + ac + "[mi] = __fmaf_rn(__fmul_rn(a" + sfx + ", dx), (float)si, " + ac +
              "[mi]);",
          "          if (" + T + "::HAS_B && t == 0) " + ac + "[mi] = __fmaf_rn(b" + sfx +
              ", sx, " + ac + "[mi]);",
          "          }",
      });
    }
    // (the activation words a lane reads depend on the type and its share of the unit only, so
    // the second weight's w equals the first's)
    body += ints;
    body += lines({
        "#pragma unroll",
        "        for (int mi = 0; mi < " + Ms + "; ++mi) {",
        x_row,
        "          int xv[" + T + "::NW];",
        "          float dx, sx;",
        // (a row in shared memory: lmn_x's Q8_1 reads as plain loads, since __ldg reads global
        // memory only; inline, as kernels compiled in one batch share the device functions)
        rp ? "          { const unsigned char* p = xr + u * 36;\n"
             "            const int* q = (const int*)(p + 4);\n"
             "#pragma unroll\n"
             "            for (int j = 0; j < " +
                 T + "::NW; ++j) xv[j] = q[w[j]];\n" +
                 "            const unsigned int ds = *(const unsigned int*)p;\n"
                 "            dx = lmn_h16(ds); sx = lmn_h16(ds >> 16); }"
        : split && tx == DType::Q8_1
            ? "          " + T + "::xw(xr + u * 32, t, xv);\n          { const unsigned int ds = " +
                  "__ldg((const unsigned int*)(xr + " + std::to_string(NU * 32) +
                  " + u * 4)); dx = lmn_h16(ds); sx = lmn_h16(ds >> 16); }"
            : "          lmn_x<" + T + "::NW>(xr, " + T + "::XK, u, w, xv, dx, sx);",
    });
    body += dots + "        }\n";
  } else {
    // The activation values of a unit: x[j] for j < 32 from xr.
    std::string dot;
    if (vec) {
      dot = lines({
          "            const float4* x4 = reinterpret_cast<const float4*>(xr);",
          "#pragma unroll",
          "            for (int t = 0; t < 8; ++t) {",
          "              const float4 v = __ldg(x4 + t);",
          "              float& s = t < 4 ? s0 : s1;",
          "              s = __fmaf_rn(q[4 * t], v.x, s);",
          "              s = __fmaf_rn(q[4 * t + 1], v.y, s);",
          "              s = __fmaf_rn(q[4 * t + 2], v.z, s);",
          "              s = __fmaf_rn(q[4 * t + 3], v.w, s);",
          "              if (" + QT +
              "::HAS_B) sx = __fadd_rn(__fadd_rn(__fadd_rn(__fadd_rn(sx, v.x), "
              "v.y), v.z), v.w);",
          "            }",
      });
    } else {
      dot = lines({
          "#pragma unroll",
          "            for (int j = 0; j < 32; ++j) {",
          "              const float v = __ldg(xr + j);",
          "              float& s = j < 16 ? s0 : s1;",
          "              s = __fmaf_rn(q[j], v, s);",
          "              if (" + QT + "::HAS_B) sx = __fadd_rn(sx, v);",
          "            }",
      });
    }
    body += lines({
        "        float q[32], a0, a1, b;",
        "        " + QT + "::dec(r[uu], q, a0, a1, b);",
        "#pragma unroll",
        "        for (int mi = 0; mi < " + Ms + "; ++mi) {",
        "          const float* xr = in0 + " + ox + " + " + x_step + " + (" + I + ")u * 32;",
        "          float s0 = 0.0f, s1 = 0.0f, sx = 0.0f;",
        "          {",
    });
    body += dot;
    body += lines({
        "          }",
        "          acc[mi] = __fmaf_rn(a0, s0, acc[mi]);",
        "          acc[mi] = __fmaf_rn(a1, s1, acc[mi]);",
        "          if (" + QT + "::HAS_B) acc[mi] = __fmaf_rn(b, sx, acc[mi]);",
        "        }",
    });
  }
  body += "      }\n";
  body += lines({
      "    }",
      "    }",
      "#pragma unroll",
      "    for (int mi = 0; mi < " + Ms + "; ++mi)",
      "      for (int s = 16; s > 0; s >>= 1) {",
      "        acc[mi] = __fadd_rn(acc[mi], __shfl_xor_sync(0xffffffffu, acc[mi], s));",
      glu ? "        acc2[mi] = __fadd_rn(acc2[mi], __shfl_xor_sync(0xffffffffu, acc2[mi], s));"
          : "",
      "      }",
  });
  if (W == 1) {
    body += "    if (lane == 0 && " + live + ") {\n" + base +
            lines({
                "#pragma unroll",
                "      for (int mi = 0; mi < " + Ms + "; ++mi) {",
            }) +
            store("acc[mi]", "acc2[mi]") + "      }\n    }\n";
  } else {
    body += lines({
        "    if (lane == 0) {",
        "#pragma unroll",
        "      for (int mi = 0; mi < " + Ms + "; ++mi) {",
        "        red[warp][mi] = acc[mi];",
        glu ? "        red2[warp][mi] = acc2[mi];" : "",
        "      }",
        "    }",
        "    __syncthreads();",
        "    if (part == 0 && lane == 0 && " + live + ") {",
    });
    body += base;
    body += lines({
        "#pragma unroll",
        "      for (int mi = 0; mi < " + Ms + "; ++mi) {",
        "        float t = red[warp][mi];",
        "        for (int o = 1; o < " + Ws + "; ++o) t = __fadd_rn(t, red[warp + o][mi]);",
        glu ? "        float t2 = red2[warp][mi];" : "",
        glu ? "        for (int o = 1; o < " + Ws + "; ++o) t2 = __fadd_rn(t2, red2[warp + o][mi]);"
            : "",
    });
    body += store("t", "t2") + lines({"      }", "    }", "    __syncthreads();"});
  }
  // (the rounds end; then the tasks' products)
  body += then ? then_close(cg, *then, tasks, TPB, n, 2) : "  }\n";
  const std::string pcode = cg.c(P);
  std::string k = "extern \"C\" __global__ void __launch_bounds__(" + std::to_string(kBlock) +
                  ") LMN_ENTRY(lmn_qgemv)(" + cg.params() + ") {\n";
  k += cg.dims_prologue() + "  const " + I + " P = " + pcode + ";\n" + body + "}\n";
  KernelGen gen;
  gen.source = Codegen::unit(quant_device_source() + k);
  gen.launches.push_back(
      Launch{"lmn_qgemv",
             kBlock,
             {min(ceil_div(P, Expr(then ? TPB : G)), Expr(int64_t{ctx.sm_count} * 16)), 1, 1}});
  const Expr count = numel(n.attrs.shape);
  gen.bytes = P * Expr(static_cast<int64_t>(storage_bytes(tw, K.as_const())) * (glu ? 2 : 1)) +
              Expr(int64_t{M} *
                   static_cast<int64_t>(q8 ? storage_bytes(tx, K.as_const()) : K.as_const() * 4)) +
              count * size_bytes(n.attrs.dtype);
  for (size_t j = 2; j < n.input_dtypes.size() && !glu; ++j)
    gen.bytes = gen.bytes + count * size_bytes(n.input_dtypes[j]);
  gen.flops = count * K * (glu ? 4 : 2);
  if (then) {  // T weight rows a task; B's and the outputs' elements once each
    const Expr T = Expr(int64_t{tasks.T});
    gen.bytes = P * T * Expr(static_cast<int64_t>(storage_bytes(tw, K.as_const()))) +
                Expr(static_cast<int64_t>(storage_bytes(tx, K.as_const()))) +
                count * (T * size_bytes(n.input_dtypes[2]) + size_bytes(n.attrs.dtype));
    gen.flops = P * T * K * 2 + count * T * 2;
  }
  return gen;
}

KernelGen gen_qgemv(const LlirNode& n, const GenContext& ctx) {
  return gen_qgemv_node(n, ctx, nullptr, Form::F32);
}

KernelGen gen_qgemv_q8(const LlirNode& n, const GenContext& ctx) {
  return gen_qgemv_node(n, ctx, nullptr, Form::Q8);
}

const FusedProgram& epilogue_of(const LlirNode& n) {
  const std::string op(n.op->name);
  const auto* prog = dynamic_cast<const FusedProgram*>(n.attrs.payload.get());
  if (!prog) throw Error(op + ": the node has no epilogue program");
  prog->validate();
  if (prog->has_row_reduce() || prog->insts.back().dtype != n.attrs.dtype)
    throw Error(op + ": the epilogue " + prog->to_string() +
                " is not elementwise or does not give the node's dtype");
  for (const FusedInst& in : prog->insts)
    if (in.op == FusedOpcode::Load && in.a == 0 && in.dtype != DType::F32)
      throw Error(op + ": the epilogue reads the product as " + std::string(name(in.dtype)) +
                  "; it is f32");
  return *prog;
}

KernelGen gen_qgemv_epi(const LlirNode& n, const GenContext& ctx) {
  return gen_qgemv_node(n, ctx, &epilogue_of(n), Form::F32);
}

KernelGen gen_qgemv_q8_epi(const LlirNode& n, const GenContext& ctx) {
  return gen_qgemv_node(n, ctx, &epilogue_of(n), Form::Q8);
}

KernelGen gen_qgemv_q8s(const LlirNode& n, const GenContext& ctx) {
  return gen_qgemv_node(n, ctx, nullptr, Form::Q8S);
}

KernelGen gen_qgemv_q8s_epi(const LlirNode& n, const GenContext& ctx) {
  return gen_qgemv_node(n, ctx, &epilogue_of(n), Form::Q8S);
}

KernelGen gen_qgemv_q8_glu(const LlirNode& n, const GenContext& ctx) {
  return gen_qgemv_node(n, ctx, &epilogue_of(n), Form::Q8, true);
}

KernelGen gen_qgemv_q8s_glu(const LlirNode& n, const GenContext& ctx) {
  return gen_qgemv_node(n, ctx, &epilogue_of(n), Form::Q8S, true);
}

/// cuda.QGemvQ8Matmul / cuda.QGemvQ8SMatmul: inputs the activation blocks, the weight (the
/// GEMV's) and B; views the GEMV's two, then the product's view of B, k last; axis the GEMV's;
/// payload the product's view of A (GemvThenView).
KernelGen gen_qgemv_matmul_node(const LlirNode& n, const GenContext& ctx, Form form) {
  const GemvThen then = then_of(n);
  return gen_qgemv_node(n, ctx, nullptr, form, false, &then);
}
KernelGen gen_qgemv_q8_matmul(const LlirNode& n, const GenContext& ctx) {
  return gen_qgemv_matmul_node(n, ctx, Form::Q8);
}
KernelGen gen_qgemv_q8s_matmul(const LlirNode& n, const GenContext& ctx) {
  return gen_qgemv_matmul_node(n, ctx, Form::Q8S);
}

}  // namespace

void register_qgemv_ops(std::vector<const CudaOp*>& ops) {
  static const CudaOp qgemv{&kQGemv, "cuda.library", qgemv_rules, gen_qgemv};
  static const CudaOp qgemv_epi{&kQGemvEpi, "cuda.library", qgemv_epilogue_rules, gen_qgemv_epi};
  static const CudaOp qgemv_q8{&kQGemvQ8, "cuda.library", nullptr, gen_qgemv_q8};
  static const CudaOp qgemv_q8_epi{&kQGemvQ8Epi, "cuda.library", nullptr, gen_qgemv_q8_epi};
  ops.push_back(&qgemv);
  ops.push_back(&qgemv_epi);
  static const CudaOp qgemv_q8s{&kQGemvQ8S, "cuda.library", nullptr, gen_qgemv_q8s};
  static const CudaOp qgemv_q8s_epi{&kQGemvQ8SEpi, "cuda.library", nullptr, gen_qgemv_q8s_epi};
  ops.push_back(&qgemv_q8);
  ops.push_back(&qgemv_q8_epi);
  ops.push_back(&qgemv_q8s);
  ops.push_back(&qgemv_q8s_epi);
  static const CudaOp qgemv_q8_glu{&kQGemvQ8Glu, "cuda.library", qgemv_glu_rules, gen_qgemv_q8_glu};
  static const CudaOp qgemv_q8s_glu{&kQGemvQ8SGlu, "cuda.library", nullptr, gen_qgemv_q8s_glu};
  ops.push_back(&qgemv_q8_glu);
  ops.push_back(&qgemv_q8s_glu);
  static const CudaOp qgemv_q8_matmul{&kQGemvQ8Matmul, "cuda.library", qgemv_matmul_rules,
                                      gen_qgemv_q8_matmul};
  static const CudaOp qgemv_q8s_matmul{&kQGemvQ8SMatmul, "", nullptr, gen_qgemv_q8s_matmul};
  ops.push_back(&qgemv_q8_matmul);
  ops.push_back(&qgemv_q8s_matmul);
}

}  // namespace luminal::cuda
