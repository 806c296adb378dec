// cuda.Gemv's tensor-core form (opt-in, LUMINAL_CUDA_GEMV_MMA=1; gemv.cpp calls it first where a
// node has no epilogue, product or pair).
#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>

#include "luminal/core/error.hpp"
#include "luminal/cuda/cuda_op.hpp"
#include "luminal/cuda/gemv_kernel.hpp"
#include "luminal/cuda/prelude.hpp"

namespace luminal::cuda {

namespace {
constexpr int kBlock = kGemvBlock;
constexpr int kWarps = kGemvWarps;
}  // namespace

/// The tensor-core form (bf16 or f16 operands of one dtype, f32 products, k a multiple of 32,
/// the row operand the same for every output: a linear layer x @ W^T): a warp computes a tile of
/// 16 outputs for all (up to 8) rows with mma.sync m16n8k16 (the weight rows as A, x^T as B,
/// padded to 8 columns), over its share of k; the W warps of a tile add their f32 tiles in
/// double through shared memory. Each lane loads 16 bytes of two weight rows and of one x row per
/// 32 elements of k; the k order inside a 32-element block is permuted the same way for A and B
/// (a sum does not depend on it), so the loads are plain 16-byte vectors. Products of two 16-bit
/// floats are exact; the tensor core adds them in f32. Only with LUMINAL_CUDA_GEMV_MMA=1: on the
/// H200 it ran at about half the copy bandwidth for every row count (a warp reads 16 weight rows
/// in 4 dependent rounds of loads, against one round for the CUDA-core form with 8 warps an
/// output), below the CUDA-core form; it needs more warps a tile (split-k across a cluster).
std::optional<KernelGen> gen_gemv_mma(const LlirNode& n, const GenContext& ctx,
                                      const GemvForm& form, DType product_t, const Expr& P,
                                      const View& out_full, const View& w_view, Codegen& cg) {
  const int axis = n.attrs.axis;
  const int w = form.shared, x = 1 - w;
  const DType tw = n.input_dtypes[static_cast<size_t>(w)];
  const DType tx = n.input_dtypes[static_cast<size_t>(x)];
  const Expr K = n.attrs.views[0].dims[axis];
  const int mode = env_int("LUMINAL_CUDA_GEMV_MMA", -1, 0, 1);
  if (mode != 1) return std::nullopt;
  if (product_t != DType::F32 || tw != tx || !sixteen_bit_float(tw) || K.as_const() % 32 != 0)
    return std::nullopt;
  const View& vx = n.attrs.views[static_cast<size_t>(x)];
  for (int d = 0; d < vx.rank(); ++d)
    if (d != axis && d != form.row_axis && !(vx.strides[d] == Expr(0)) && !(vx.dims[d] == Expr(1)))
      return std::nullopt;
  const int M = form.rows, ra = form.row_axis;
  const int64_t KB = K.as_const() / 32;
  const Expr tiles = ceil_div(P, Expr(16));
  const int64_t t_hi = tiles.bounds(ctx.facts).hi;
  int W = 1;
  while (W < kWarps && KB >= int64_t{4} * W * 2 && t_hi * W * 2 <= int64_t{ctx.sm_count} * 64)
    W *= 2;
  W = env_int("LUMINAL_CUDA_GEMV_WARPS", W, 1, kWarps);
  const int U = env_int("LUMINAL_CUDA_GEMV_UNROLL", 4, 1, 8);
  const int G = kWarps / W;
  const std::string& I = cg.idx();
  const std::string mma = std::string("mma.sync.aligned.m16n8k16.row.col.f32.") +
                          (tw == DType::BF16 ? "bf16.bf16" : "f16.f16") + ".f32";
  std::string rows_a, rows_b, rows_o0, rows_o1;
  const std::string oa = cg.view_offset(w_view, "pa", "wa_", rows_a, axis);
  const std::string ob = cg.view_offset(w_view, "pb", "wb_", rows_b, axis);
  View o_no_row = out_full;
  if (ra >= 0) o_no_row.dims[static_cast<size_t>(ra)] = Expr(1);
  const std::string oo0 = cg.view_offset(o_no_row, "pa", "oa_", rows_o0, axis);
  const std::string oo1 = cg.view_offset(o_no_row, "pb", "ob_", rows_o1, axis);
  const std::string x_row = ra >= 0 ? cg.axis_offset(vx, ra, "g") : "0";
  const std::string o_step0 = ra >= 0 ? cg.axis_offset(out_full, ra, "mi") : "0";
  const std::string Ws = std::to_string(W), Gs = std::to_string(G), Us = std::to_string(U),
                    Ms = std::to_string(M);
  std::string body = lines({
      "  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;",
      "  const int g = lane >> 2, tig = lane & 3;",
      "  const int part = warp % " + Ws + ";",
      "  __shared__ float red[8][32][4];",
      "  const " + I + " KB = K / 32, TILES = (P + 15) / 16;",
      "  for (" + I + " tb = (" + I + ")blockIdx.x * " + Gs + "; tb < TILES; tb += (" + I +
          ")gridDim.x * " + Gs + ") {",
      "    const " + I + " tile = tb + warp / " + Ws + ";",
      "    const " + I + " pa = tile * 16 + g, pb = pa + 8;",
      "    float d[4] = {0.0f, 0.0f, 0.0f, 0.0f};",
      "    if (tile < TILES) {",
      "    const uint4* ra = nullptr;",
      "    const uint4* rb = nullptr;",
      "    if (pa < P) {",
  });
  body += rows_a + "    ra = reinterpret_cast<const uint4*>(in" + std::to_string(w) + " + " + oa +
          ");\n    }\n    if (pb < P) {\n" + rows_b + "    rb = reinterpret_cast<const uint4*>(in" +
          std::to_string(w) + " + " + ob + ");\n    }\n";
  body += lines({
      "    const uint4* rx = g < " + Ms + " ? reinterpret_cast<const uint4*>(in" +
          std::to_string(x) + " + " + x_row + ") : nullptr;",
      "    const uint4 z4 = make_uint4(0u, 0u, 0u, 0u);",
      "    for (" + I + " kb0 = (" + I + ")part * " + Us +
          "; kb0 < KB; kb0 += " + std::to_string(W * U) + ") {",
      "      uint4 qa[" + Us + "], qb[" + Us + "], qx[" + Us + "];",
      "#pragma unroll",
      "      for (int u = 0; u < " + Us + "; ++u) {",
      "        const " + I + " c = (kb0 + u) * 4 + tig;",
      "        const bool in = kb0 + u < KB;",
      "        qa[u] = in && ra ? __ldg(ra + c) : z4;",
      "        qb[u] = in && rb ? __ldg(rb + c) : z4;",
      "        qx[u] = in && rx ? __ldg(rx + c) : z4;",
      "      }",
      "#pragma unroll",
      "      for (int u = 0; u < " + Us + "; ++u) {",
      "        asm volatile(\"" + mma +
          " {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\" : \"+f\"(d[0]), "
          "\"+f\"(d[1]), \"+f\"(d[2]), \"+f\"(d[3]) : \"r\"(qa[u].x), \"r\"(qb[u].x), "
          "\"r\"(qa[u].y), \"r\"(qb[u].y), \"r\"(qx[u].x), \"r\"(qx[u].y));",
      "        asm volatile(\"" + mma +
          " {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\" : \"+f\"(d[0]), "
          "\"+f\"(d[1]), \"+f\"(d[2]), \"+f\"(d[3]) : \"r\"(qa[u].z), \"r\"(qb[u].z), "
          "\"r\"(qa[u].w), \"r\"(qb[u].w), \"r\"(qx[u].z), \"r\"(qx[u].w));",
      "      }",
      "    }",
      "    }",
  });
  // d[0], d[1]: output row pa, rows (mi) 2 tig and 2 tig + 1; d[2], d[3]: row pb.
  std::string store = lines({
      "      double v[4];",
      "#pragma unroll",
      "      for (int i = 0; i < 4; ++i) v[i] = (double)d[i];",
  });
  if (W > 1)
    store += lines({
        "      for (int q = 1; q < " + Ws + "; ++q)",
        "#pragma unroll",
        "        for (int i = 0; i < 4; ++i) v[i] += (double)red[warp + q][lane][i];",
    });
  store += lines({"#pragma unroll", "      for (int i = 0; i < 2; ++i) {",
                  "        const int mi = 2 * tig + i;", "        if (mi >= " + Ms + ") continue;",
                  "        if (pa < P) {"}) +
           rows_o0 + "        out[" + oo0 + " + " + o_step0 + "] = st_" + dtype_tag(n.attrs.dtype) +
           "(v[i]);\n        }\n        if (pb < P) {\n" + rows_o1 + "        out[" + oo1 + " + " +
           o_step0 + "] = st_" + dtype_tag(n.attrs.dtype) + "(v[2 + i]);\n        }\n      }\n";
  if (W > 1) {
    body += lines({
        "#pragma unroll",
        "    for (int i = 0; i < 4; ++i) red[warp][lane][i] = d[i];",
        "    __syncthreads();",
        "    if (part == 0 && tile < TILES) {",
    });
    body += store + "    }\n    __syncthreads();\n";
  } else {
    body += "    if (tile < TILES) {\n" + store + "    }\n";
  }
  body += "  }\n";
  KernelGen gen = gemv_kernel("lmn_gemv_mma", cg, P, K, body,
                              min(ceil_div(tiles, Expr(G)), Expr(int64_t{ctx.sm_count} * 16)));
  const Expr count = numel(n.attrs.shape);
  gen.bytes = P * K * size_bytes(tw) + Expr(int64_t{M}) * K * size_bytes(tx) +
              count * size_bytes(n.attrs.dtype);
  gen.flops = count * K * 2;
  return gen;
}

}  // namespace luminal::cuda
