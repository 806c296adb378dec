// cuda.QuantizeQ8(x): activation rows [m axes..., K] (f32, read through the node's view)
// quantized to Q8_1 (32 values a block) or Q8_K (256), bit for bit as
// blocks::quantize_reference (core/quantize_ref.hpp): the integer GEMV (cuda.QGemvQ8, qgemv.cpp)
// reads them. The rule that offers cuda.QGemvQ8 adds this node; linear layers reading one
// activation through one view share it (the e-graph hash-conses it). With int_value 1 it writes
// Q8_1 in the split layout cuda.QGemvQ8S reads: each row's 32-byte q blocks, then their (d, s)
// pairs (same bytes). In the BF16 format it writes the rows as bf16 instead (cuda.QGemmBF16's
// activation, qgemm_bf16.cpp).
//
// One warp a block (lmn_q8_1_warp, lmn_q8_k_warp in quant_dp4a_device.cpp): lane j holds values
// j, j + 32, ... of it; the block's largest magnitude (Q8_K: the first value of largest
// magnitude) and the sums of q come from warp shuffles.
#include <string>

#include "luminal/core/error.hpp"
#include "luminal/cuda/cuda_op.hpp"
#include "luminal/cuda/prelude.hpp"
#include "luminal/cuda/q8_store.hpp"
#include "luminal/cuda/quant_device.hpp"

namespace luminal::cuda {

namespace {

const OpDef kQuantizeQ8{.name = "cuda.QuantizeQ8", .seed_cost = 0.5};

constexpr int kBlock = 256;

/// The BF16 format (cuda.QGemmBF16's activation rows, qgemm_bf16.cpp): each value rounded to
/// the nearest bf16 (ties to even; NaN stays NaN), written contiguously.
KernelGen gen_bf16_rows(const LlirNode& n, const GenContext& ctx) {
  if (n.attrs.int_value != 0)
    throw Error("cuda.QuantizeQ8: the split layout is q8_1's, not bf16's");
  Codegen cg(n, ctx);
  const Expr count = numel(n.attrs.shape);
  cg.require(count);
  const std::string& I = cg.idx();
  std::string body = "  for (" + I + " i = (" + I + ")blockIdx.x * " + std::to_string(kBlock) +
                     " + threadIdx.x; i < " + cg.c(count) + "; i += (" + I + ")gridDim.x * " +
                     std::to_string(kBlock) + ") {\n";
  const std::string xo = cg.view_offset(n.attrs.views[0], "i", "xo", body);
  body += "    out[i] = lmn_f32_to_bf16(in0[" + xo + "]);\n  }\n";
  KernelGen g;
  g.source = Codegen::unit("extern \"C\" __global__ void __launch_bounds__(" +
                           std::to_string(kBlock) + ") LMN_ENTRY(lmn_bf16_rows)(" + cg.params() +
                           ") {\n" + cg.dims_prologue() + body + "}\n");
  g.launches.push_back(
      Launch{"lmn_bf16_rows",
             kBlock,
             {min(ceil_div(count, Expr(int64_t{kBlock})), Expr(int64_t{ctx.sm_count} * 16)),
              Expr(1), Expr(1)}});
  g.bytes = count * 6;
  g.flops = count;
  return g;
}

KernelGen gen_quantize_q8(const LlirNode& n, const GenContext& ctx) {
  const DType fmt = n.attrs.dtype;
  if (fmt != DType::Q8_1 && fmt != DType::Q8_K && fmt != DType::BF16)
    throw Error("cuda.QuantizeQ8: writes q8_1, q8_k or bf16, not " + std::string(name(fmt)));
  if (n.input_dtypes.size() != 1 || n.attrs.views.size() != 1 || n.input_dtypes[0] != DType::F32)
    throw Error("cuda.QuantizeQ8: needs one f32 input read through one view");
  if (fmt == DType::BF16) return gen_bf16_rows(n, ctx);
  const Shape& shape = n.attrs.shape;
  const int64_t bs = block_size(fmt);
  if (shape.empty() || !shape.back().is_const() || shape.back().as_const() % bs != 0)
    throw Error("cuda.QuantizeQ8: the row length must be a static multiple of " +
                std::to_string(bs));
  Codegen cg(n, ctx);
  const Expr count = numel(shape);
  cg.require(count);
  const std::string& I = cg.idx();
  const View& v = n.attrs.views[0];
  std::string body = "  const int lane = threadIdx.x & 31;\n";
  body += "  const " + I + " nb = " + cg.c(count) + " / " + std::to_string(bs) + ";\n";
  body += "  for (" + I + " b = (" + I + ")blockIdx.x * " + std::to_string(kBlock / 32) +
          " + (threadIdx.x >> 5); b < nb; b += (" + I + ")gridDim.x * " +
          std::to_string(kBlock / 32) + ") {\n";
  const bool split = n.attrs.int_value == 1;
  if (split && fmt != DType::Q8_1)
    throw Error("cuda.QuantizeQ8: the split layout is q8_1's, not " + std::string(name(fmt)));
  if (fmt == DType::Q8_1) {
    body += "      const " + I + " fi = b * 32 + lane;\n";
    const std::string xo = cg.view_offset(v, "fi", "xo", body);
    // (split: row r's blocks' q, 32 bytes each, then their (d, s) pairs)
    body += q8_1_store("in0[" + xo + "]", "b", shape.back().as_const(), split, "lane", "      ");
  } else {
    body += "      float v[8];\n#pragma unroll\n      for (int r = 0; r < 8; ++r) {\n";
    body += "      const " + I + " fi = b * 256 + r * 32 + lane;\n";
    std::string off;
    const std::string xo = cg.view_offset(v, "fi", "xo", off);
    body += off + "      v[r] = in0[" + xo + "];\n      }\n";
    body += "      lmn_q8_k_warp(v, out + (long long)b * 292, lane);\n";
  }
  body += "  }\n";
  std::string k = "extern \"C\" __global__ void __launch_bounds__(" + std::to_string(kBlock) +
                  ") LMN_ENTRY(lmn_quantize_q8)(" + cg.params() + ") {\n" + cg.dims_prologue() +
                  body + "}\n";
  KernelGen g;
  g.source = Codegen::unit(quant_device_source() + k);
  g.launches.push_back(
      Launch{"lmn_quantize_q8",
             kBlock,
             {min(ceil_div(count, Expr(bs * (kBlock / 32))), Expr(int64_t{ctx.sm_count} * 16)),
              Expr(1), Expr(1)}});
  g.bytes = count * 4 + count * block_bytes(fmt) / bs;
  g.flops = count * 4;
  return g;
}

}  // namespace

const OpDef* quantize_q8_op() { return &kQuantizeQ8; }

DType cuda_activation_format(DType weight) {
  return block_size(weight) == 256 ? DType::Q8_K : DType::Q8_1;
}

void register_quantize_q8_ops(std::vector<const CudaOp*>& ops) {
  static const CudaOp quantize{&kQuantizeQ8, "cuda.library", nullptr, gen_quantize_q8};
  ops.push_back(&quantize);
}

}  // namespace luminal::cuda
