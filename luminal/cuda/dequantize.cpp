// Dequantize and cuda.QGather on CUDA: block-quantized values decoded element by element with
// the exact decoders of quant_device.hpp, so both are bit-exact with blocks::dequantize.
//
//   Dequantize(W):            out[i] = value i % K of row i / K of W read through the node's
//                             view (whole rows: row starts come from the view, K the last dim).
//                             Load-time folding runs it once per load where the search reads
//                             the f32 weight (dequantise-then-matmul).
//   cuda.DequantizeBF16(W):   the same, each value rounded to bf16 (to nearest even) as it is
//                             stored: a prefill's weight for a cuBLASLt bf16 call, written
//                             into the arena at every execute (qgemm.cpp, "cuda.qgemm-lt") where
//                             a resident bf16 copy would hold 3.6x a q4_0 file's bytes.
//   cuda.QGather(idx, W):     Gather(idx, Dequantize(W)) read contiguously (quant_rule.hpp): each
//                             index decodes the one value it addresses; an index outside the
//                             data writes 0 and sets the error word, as Gather does. It dominates
//                             the Gather it replaces (which needs the whole table decoded).
//   cuda.QGatherS(idx, QRepack(W)): the same over W's split layout (quant_repack.cpp), for the
//                             legacy types: each value's fields read from its block's head and
//                             body with the element decoders' operations, so the same bits. A tied
//                             embedding then reads the folded copy the LM head's cuda.QGemvQ8S
//                             reads, and the GGUF-layout weight, read by folds only, is released
//                             (SmolLM2's q8_0 head ran on GGUF blocks, 20 us alone on an H100, as
//                             the gather kept that layout). Opt-in (LUMINAL_CUDA_QGATHER_SPLIT=1)
//                             until a GPU has run its test.
// One thread an element, grid-stride; a block's bytes are read from L1 by the threads of its
// values.
#include <string>

#include "luminal/core/error.hpp"
#include "luminal/cuda/cuda_op.hpp"
#include "luminal/cuda/prelude.hpp"
#include "luminal/cuda/quant_device.hpp"
#include "luminal/kernels/matmul_rule.hpp"
#include "luminal/kernels/quant_rule.hpp"

namespace luminal::cuda {

namespace {

const OpDef kQGather{.name = "cuda.QGather"};
// (just under cuda.QGather: with the split layout's fold free in the seed, a tied embedding and
// its LM head share it)
const OpDef kQGatherS{.name = "cuda.QGatherS", .seed_cost = 0.95};
// (under half a kernel in the seeds: it writes half the bytes of Dequantize's f32, and with the
// activation's cuda.QuantizeQ8 (0.5) the seed that prefers library calls then takes it and the
// bf16 call, 1.8, over the f32 Dequantize and the f32 call, 2)
const OpDef kDequantizeBF16{.name = "cuda.DequantizeBF16", .seed_cost = 0.3};

constexpr int kBlock = 256;

/// LUMINAL_CUDA_QGATHER_SPLIT=1: offer cuda.QGatherS (opt-in until a GPU has run its test).
bool gather_split() { return env_opt_in("LUMINAL_CUDA_QGATHER_SPLIT"); }

// The row length (static) of a whole-row view of a block tensor, or an error naming `op`.
int64_t row_length(const View& v, DType t, const char* op) {
  if (v.rank() == 0 || !v.dims.back().is_const() || v.dims.back().as_const() % block_size(t) != 0)
    throw Error(std::string(op) + ": the " + std::string(name(t)) +
                " input is not read through a view of whole rows (a static last axis of whole "
                "blocks)");
  if (!cuda_block_type(t))
    throw Error(std::string(op) + ": no CUDA decoder for " + std::string(name(t)) +
                "; give one of q4_0 q4_1 q5_0 q5_1 q8_0 q4_k q5_k q6_k");
  return v.dims.back().as_const();
}

// Statements setting `blk` (a const unsigned char*) to the block holding value `col` of row `row`
// of input `in` (block type t) read through view `v`, and `e` to the value's index in it.
std::string block_of(Codegen& cg, const View& v, DType t, const std::string& in,
                     const std::string& row, const std::string& col, std::string& body) {
  const std::string off = cg.view_offset(v, row, "ro", body, v.rank() - 1);
  const std::string bs = std::to_string(block_size(t)), bb = std::to_string(block_bytes(t));
  body += "    const unsigned char* blk = (const unsigned char*)" + in + " + ((long long)(" + off +
          " / " + bs + ") + (long long)(" + col + " / " + bs + ")) * " + bb + "LL;\n";
  body += "    const int e = (int)(" + col + " % " + bs + ");\n";
  return "lmn_deq_" + quant_tag(t) + "(blk, e)";
}

std::string grid_loop(const std::string& I, const std::string& n) {
  return "  for (" + I + " i = (" + I + ")blockIdx.x * blockDim.x + threadIdx.x; i < " + n +
         "; i += (" + I + ")gridDim.x * blockDim.x) {\n";
}

KernelGen finish(const char* entry, Codegen& cg, const std::string& pre, const std::string& body,
                 const Expr& count, const GenContext& ctx) {
  const std::string& I = cg.idx();
  const std::string ncode = cg.c(count);
  std::string k = "extern \"C\" __global__ void __launch_bounds__(256) LMN_ENTRY(" +
                  std::string(entry) + ")(" + cg.params() + ") {\n" + cg.dims_prologue() +
                  "  const " + I + " n = " + ncode + ";\n" + pre + grid_loop(I, "n") + body +
                  "  }\n}\n";
  KernelGen g;
  g.source = Codegen::unit(quant_device_source() + k);
  g.launches.push_back(Launch{
      entry, kBlock, {min(ceil_div(count, kBlock), Expr(int64_t{ctx.sm_count} * 16)), 1, 1}});
  return g;
}

KernelGen gen_dequantize(const LlirNode& n, const GenContext& ctx) {
  if (n.attrs.views.size() != 1 || n.input_dtypes.size() != 1)
    throw Error("cuda: Dequantize needs one input");
  if (n.op == &kDequantizeBF16 && n.attrs.dtype != DType::BF16)
    throw Error("cuda.DequantizeBF16 writes bf16, not " + std::string(name(n.attrs.dtype)));
  const DType t = n.input_dtypes[0];
  const View& v = n.attrs.views[0];
  const int64_t K = row_length(v, t, "Dequantize");
  Codegen cg(n, ctx);
  const Expr count = numel(n.attrs.shape);
  cg.require(count);
  std::string body = "    const " + cg.idx() + " r = i / " + std::to_string(K) + ", c = i % " +
                     std::to_string(K) + ";\n";
  const std::string value = block_of(cg, v, t, "in0", "r", "c", body);
  body += "    out[i] = st_" + dtype_tag(n.attrs.dtype) + "(" + value + ");\n";
  KernelGen g = finish("lmn_dequantize", cg, "", body, count, ctx);
  g.bytes = count * size_bytes(n.attrs.dtype) + count * block_bytes(t) / block_size(t);
  g.flops = count * 2;
  return g;
}

// Statements setting `bh` and `bb` to the head and the body of the block holding value `col` of
// row `row` of input `in` in its split layout (`nb` blocks in all: the bodies, then the heads;
// quant_repack.cpp), and `e` to the value's index in it; returns the value: the legacy types'
// element decoders (quant_device.cpp) with each field read from the head or the body (a legacy
// GGUF block is its head, then its body), so the same operations and bits.
std::string split_block_of(Codegen& cg, const View& v, DType t, const SplitLayout& sl, int64_t nb,
                           const std::string& in, const std::string& row, const std::string& col,
                           std::string& body) {
  const std::string off = cg.view_offset(v, row, "ro", body, v.rank() - 1);
  const std::string bs = std::to_string(block_size(t));
  body += "    const long long b = (long long)(" + off + " / " + bs + ") + (long long)(" + col +
          " / " + bs + ");\n";
  body += "    const unsigned char* bb = (const unsigned char*)" + in + " + b * " +
          std::to_string(sl.body) + "LL;\n";
  body += "    const unsigned char* bh = (const unsigned char*)" + in + " + " +
          std::to_string(nb * sl.body) + "LL + b * " + std::to_string(sl.head) + "LL;\n";
  body += "    const int e = (int)(" + col + " % " + bs + ");\n";
  switch (t) {
    case DType::Q4_0: return "__fmul_rn(lmn_hf(bh), (float)((int)lmn_nib(bb, e) - 8))";
    case DType::Q4_1:
      return "__fadd_rn(__fmul_rn(lmn_hf(bh), (float)lmn_nib(bb, e)), lmn_hf(bh + 2))";
    case DType::Q5_0: return "__fmul_rn(lmn_hf(bh), (float)((int)lmn_q5(bb, bb + 4, e) - 16))";
    case DType::Q5_1:
      return "__fadd_rn(__fmul_rn(lmn_hf(bh), (float)lmn_q5(bb, bb + 4, e)), lmn_hf(bh + 2))";
    case DType::Q8_0: return "__fmul_rn((float)(signed char)lmn_b(bb + e), lmn_hf(bh))";
    default:
      throw Error("cuda.QGatherS: no split decoder for " + std::string(name(t)) +
                  "; give q4_0, q4_1, q5_0, q5_1 or q8_0");
  }
}

/// The legacy block types (blocks of 32 values) with a split layout: cuda.QGatherS's.
bool gather_split_type(DType t) { return block_size(t) == 32 && split_layout(t).has_value(); }

KernelGen gen_qgather(const LlirNode& n, const GenContext& ctx) {
  const bool split = n.op == &kQGatherS;
  const char* op = split ? "cuda.QGatherS" : "cuda.QGather";
  if (n.attrs.views.size() != 2 || n.input_dtypes.size() != 2)
    throw Error(std::string(op) + " needs 2 inputs and views");
  const DType t = n.input_dtypes[1];
  const View& wv = n.attrs.views[1];
  const int64_t K = row_length(wv, t, op);
  if (split && (!gather_split_type(t) || n.attrs.int_value <= 0))
    throw Error(
        "cuda.QGatherS: reads a q4_0, q4_1, q5_0, q5_1 or q8_0 table in its split "
        "layout, with its block count (got " +
        std::string(name(t)) + ", " + std::to_string(n.attrs.int_value) + " blocks)");
  Codegen cg(n, ctx);
  const Expr count = numel(n.attrs.shape);
  cg.require(count);
  cg.require(wv.numel());
  const std::string& I = cg.idx();
  std::string body;
  const std::string io = cg.view_offset(n.attrs.views[0], "i", "oi", body);
  const DType it = n.input_dtypes[0];
  const std::string v = "ld_" + dtype_tag(it) + "(in0[" + io + "])";
  body += "    const long long j = " +
          (is_float(it) ? "lmn_sat_i64((double)" + v + ")" : "(long long)" + v) + ";\n";
  body += "    if (j < 0 || j >= (long long)dn) { atomicCAS(err, 0u, 1u); out[i] = st_" +
          dtype_tag(n.attrs.dtype) + "(0LL); continue; }\n";
  body += "    const " + I + " r = (" + I + ")(j / " + std::to_string(K) + "), c = (" + I +
          ")(j % " + std::to_string(K) + ");\n";
  const std::string value =
      split ? split_block_of(cg, wv, t, *split_layout(t), n.attrs.int_value, "in1", "r", "c", body)
            : block_of(cg, wv, t, "in1", "r", "c", body);
  body += "    out[i] = st_" + dtype_tag(n.attrs.dtype) + "(" + value + ");\n";
  const std::string pre = "  const " + I + " dn = " + cg.c(wv.numel()) + ";\n";
  KernelGen g = finish("lmn_qgather", cg, pre, body, count, ctx);
  g.bytes =
      count * (size_bytes(it) + size_bytes(n.attrs.dtype)) + count * block_bytes(t) / block_size(t);
  g.flops = count * 2;
  return g;
}

std::vector<Rule> qgather_rules() {
  auto guard = [](const Match& m, const EGraph& eg) {
    const std::optional<QuantGatherParts> p = quant_gather_parts(eg, m);
    return p && cuda_block_type(eg.dtype(p->weight));
  };
  std::vector<Rule> out;
  out.push_back(Rule{"cuda.qgather", quant_gather_pattern(), guard, [](const Match& m, EGraph& eg) {
                       std::optional<QuantGatherParts> p = quant_gather_parts(eg, m);
                       if (!p || !cuda_block_type(eg.dtype(p->weight))) return;
                       Attrs a = p->gather;
                       a.views = {p->index_view, p->weight_view};
                       if (std::optional<ENodeId> q =
                               add_merged(eg, &kQGather, a, {p->indexes, p->weight}, m.root))
                         eg.dominate(*q, p->gather_node);
                     }});
  // The same over the split layout: W whole, of a static size (a rule only with the switch:
  // the compile cache's key names the rules).
  if (gather_split())
    out.push_back(
        Rule{"cuda.qgather-split", quant_gather_pattern(), guard, [](const Match& m, EGraph& eg) {
               std::optional<QuantGatherParts> p = quant_gather_parts(eg, m);
               if (!p) return;
               const DType t = eg.dtype(p->weight);
               const Expr count = numel(eg.shape(p->weight));
               if (!gather_split_type(t) || !count.is_const()) return;
               Attrs a = p->gather;
               a.views = {p->index_view, p->weight_view};
               a.int_value = count.as_const() / block_size(t);
               add_merged(eg, &kQGatherS, a, {p->indexes, add_qrepack(eg, p->weight)}, m.root);
             }});
  return out;
}

}  // namespace

const OpDef* dequantize_bf16_op() { return &kDequantizeBF16; }

void register_dequantize_ops(std::vector<const CudaOp*>& ops) {
  static const CudaOp dequantize{hlir_op(OpKind::Dequantize), "", nullptr, gen_dequantize};
  static const CudaOp dequantize16{&kDequantizeBF16, "", nullptr, gen_dequantize};
  static const CudaOp qgather{&kQGather, "cuda.library", qgather_rules, gen_qgather};
  static const CudaOp qgather_s{&kQGatherS, "", nullptr, gen_qgather};
  ops.push_back(&dequantize);
  ops.push_back(&dequantize16);
  ops.push_back(&qgather);
  ops.push_back(&qgather_s);
}

}  // namespace luminal::cuda
