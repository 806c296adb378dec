// cuda.QRepack(W): a block-quantized weight in its split layout (quant_dp4a_device.cpp, "The
// split layouts"): each block less its scale head, in order, then every head. The bodies of
// Q4_0, Q4_1, Q8_0 and Q6_K become 16-byte aligned (their GGUF blocks of 18, 20, 34 and 210
// bytes allow 2- or 4-byte loads only), so cuda.QGemvQ8S reads a lane's quants in one vector
// load. Same dtype, shape and bytes as W. The rules that offer cuda.QGemvQ8S and cuda.QGemmQ8S
// add this node (add_qrepack: one class for both buckets' forms); it is meant to run once per
// load (load-time folding: OpDef::fold_preferred makes the seed read its Fold leaf), and costs a
// kernel a step where it is not folded.
#include <string>

#include "luminal/core/error.hpp"
#include "luminal/cuda/cuda_op.hpp"
#include "luminal/cuda/prelude.hpp"
#include "luminal/cuda/quant_device.hpp"

namespace luminal::cuda {
namespace {

const OpDef kQRepack{.name = "cuda.QRepack", .seed_cost = 2.0, .fold_preferred = true};

constexpr int kBlock = 256;

KernelGen gen_qrepack(const LlirNode& n, const GenContext& ctx) {
  const DType t = n.attrs.dtype;
  const std::optional<SplitLayout> sl = split_layout(t);
  if (!sl || n.input_dtypes.size() != 1 || n.input_dtypes[0] != t || n.attrs.views.size() != 1 ||
      !n.attrs.views[0].is_contiguous() || !(n.attrs.views[0].dims == n.attrs.shape))
    throw Error(
        "cuda.QRepack: reads one q4_0, q4_1, q5_0, q5_1, q8_0 or q6_k tensor whole, as "
        "its output's dtype and shape");
  Codegen cg(n, ctx);
  const Expr count = numel(n.attrs.shape);
  cg.require(count);
  const std::string& I = cg.idx();
  const std::string bb = std::to_string(block_bytes(t)), body = std::to_string(sl->body),
                    head = std::to_string(sl->head);
  const std::string body_at = std::to_string(sl->head_at == 0 ? sl->head : 0),
                    head_at = std::to_string(sl->head_at);
  // One thread a block, 2-byte copies (every body and head starts at an even offset).
  std::string k = "extern \"C\" __global__ void __launch_bounds__(" + std::to_string(kBlock) +
                  ") LMN_ENTRY(lmn_qrepack)(" + cg.params() + ") {\n" + cg.dims_prologue();
  k += "  const " + I + " nb = " + cg.c(count) + " / " + std::to_string(block_size(t)) + ";\n";
  k += "  for (" + I + " b = (" + I + ")blockIdx.x * " + std::to_string(kBlock) +
       " + threadIdx.x; b < nb; b += (" + I + ")gridDim.x * " + std::to_string(kBlock) + ") {\n";
  k += "    const unsigned short* s = (const unsigned short*)(in0 + (long long)b * " + bb + ");\n";
  k += "    unsigned short* ob = (unsigned short*)(out + (long long)b * " + body + ");\n";
  k += "    unsigned short* oh = (unsigned short*)(out + (long long)nb * " + body +
       " + (long long)b * " + head + ");\n";
  k += "    for (int j = 0; j < " + body + " / 2; ++j) ob[j] = s[" + body_at + " / 2 + j];\n";
  k += "    for (int j = 0; j < " + head + " / 2; ++j) oh[j] = s[" + head_at + " / 2 + j];\n";
  k += "  }\n}\n";
  KernelGen g;
  g.source = Codegen::unit(quant_device_source() + k);
  const Expr blocks = ceil_div(count, Expr(int64_t{block_size(t)}));
  g.launches.push_back(Launch{
      "lmn_qrepack",
      kBlock,
      {min(ceil_div(blocks, Expr(kBlock)), Expr(int64_t{ctx.sm_count} * 32)), Expr(1), Expr(1)}});
  g.bytes = blocks * Expr(int64_t{2 * block_bytes(t)});
  g.flops = Expr(0);
  return g;
}

}  // namespace

std::optional<SplitLayout> split_layout(DType t) {
  switch (t) {
    case DType::Q4_0: return SplitLayout{16, 2, 0};
    case DType::Q4_1: return SplitLayout{16, 4, 0};
    case DType::Q5_0: return SplitLayout{20, 2, 0};
    case DType::Q5_1: return SplitLayout{20, 4, 0};
    case DType::Q8_0: return SplitLayout{32, 2, 0};
    case DType::Q6_K: return SplitLayout{208, 2, 208};
    default: return std::nullopt;
  }
}

ClassId add_qrepack(EGraph& eg, ClassId weight) {
  Attrs ra;
  ra.dtype = eg.dtype(weight);
  ra.shape = eg.shape(weight);
  ra.views = {View::contiguous(ra.shape)};
  return eg.add(&kQRepack, ra, {weight});
}

void register_qrepack_ops(std::vector<const CudaOp*>& ops) {
  static const CudaOp repack{&kQRepack, "cuda.library", nullptr, gen_qrepack};
  ops.push_back(&repack);
}

}  // namespace luminal::cuda
