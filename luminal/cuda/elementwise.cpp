// Elementwise ops on CUDA: the HLIR unary and binary primitives, Cast, Constant and Iota, and
// cuda.Fused (a whole fused region from the shared FusedProgram, luminal/kernels/fusion.hpp).
//
// Every one is a map kernel: one thread per output element in a grid-stride loop over
// n = numel(shape); each input element is read through its view; each instruction computes in its
// dtype's compute type and rounds to the dtype (rd_T), as the reference does, so results match
// the CPU bit for bit wherever the math functions do (exp2f, log2f, sinf and sqrtf are not
// bit-identical to glibc's; +, *, /, fmod, casts and every integer op are).
//
// cuda.FusedQ8 (on by default since it ran on an H100, 2026-12-06; LUMINAL_CUDA_FUSED_Q8=0 offers
// neither it nor cuda.GemvKNQ8 / cuda.AttentionQ8) is
// cuda.QuantizeQ8(cuda.Fused(...)) to Q8_1 or Q8_K as one kernel: a warp a block (32 values,
// or 256 for Q8_K), lane j computing the region's values j, j + 32, ... of it (the same
// statements as cuda.Fused) and the warp writing the block with QuantizeQ8's own code
// (lmn_q8_1_warp, split where the split-layout GEMV reads it; lmn_q8_k_warp), so its bytes equal
// the two kernels'. Where a quantized down projection reads SwiGLU's
// product, that is one kernel fewer on the decode step's critical path (docs/cuda.md, "Kernels
// on the critical path"). Its rule (ruleset cuda.fused-q8, after the rules that add the
// QuantizeQ8 nodes) matches structure: a QuantizeQ8 reading a cuda.Fused class whole, in order.
#include <memory>
#include <string>

#include "luminal/core/error.hpp"
#include "luminal/cuda/cuda_op.hpp"
#include "luminal/cuda/prelude.hpp"
#include "luminal/cuda/q8_store.hpp"
#include "luminal/cuda/quant_device.hpp"
#include "luminal/kernels/fused_program.hpp"
#include "luminal/kernels/fusion.hpp"

namespace luminal::cuda {

namespace {

const OpDef kFused{.name = "cuda.Fused", .any_view = true};
// (just below cuda.Fused's 1 and cuda.QuantizeQ8's 0.5 together: the seeds take it where they
// took the two, and choose nothing else because of it; at 1.1 SmolLM2's q4_1 seed traded its
// f32-activation down GEMV with the residual in its store for this, the integer GEMV and a
// separate Add kernel: 465 -> 492 kernels, 340 -> 364 on the critical path)
const OpDef kFusedQ8{.name = "cuda.FusedQ8", .seed_cost = 1.45, .any_view = true};

constexpr int kBlock = 256;

/// The per-element statements of `prog` (loads through the node's views) and the name of the
/// result value.
std::string emit_program(const FusedProgram& prog, Codegen& cg, const LlirNode& n,
                         std::string& body) {
  std::vector<std::string> offsets(n.attrs.views.size());
  return emit_statements(prog, body, [&](const FusedInst& in, size_t, bool keep) {
    if (in.a < 0 || in.a >= static_cast<int>(n.attrs.views.size()))
      throw Error("cuda.Fused: a load reads child " + std::to_string(in.a) + " but the node has " +
                  std::to_string(n.attrs.views.size()) + " views");
    if (offsets[in.a].empty())
      offsets[in.a] = cg.view_offset(n.attrs.views[in.a], "i", "o" + std::to_string(in.a), body);
    return load_fn(in.dtype, keep) + "(in" + std::to_string(in.a) + "[" + offsets[in.a] + "])";
  });
}

/// The map kernel over the node's output elements; `element` appends the statements computing
/// the value for flat index `i` and returns its name (a value of the node dtype's compute type),
/// or an empty string when its statements store out[i] themselves.
template <class F>
KernelGen map_kernel(const LlirNode& n, const GenContext& ctx, F&& element) {
  Codegen cg(n, ctx);
  std::string body;
  const std::string result = element(cg, body);
  const Expr count = numel(n.attrs.shape);
  const std::string ncode = cg.c(count);
  const std::string& I = cg.idx();
  std::string k =
      "extern \"C\" __global__ void __launch_bounds__(" + std::to_string(kBlock) +
      ") LMN_ENTRY(lmn_map)(" + cg.params() + ") {\n" + cg.dims_prologue() + "  const " + I +
      " n = " + ncode + ";\n" + "  for (" + I + " i = (" + I +
      ")blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (" + I + ")gridDim.x * blockDim.x) {\n" +
      body +
      (result.empty() ? std::string()
                      : "    out[i] = st_" + dtype_tag(n.attrs.dtype) + "(" + result + ");\n") +
      "  }\n}\n";
  KernelGen g;
  g.source = Codegen::unit(k);
  Launch l{
      "lmn_map", kBlock, {min(ceil_div(count, kBlock), Expr(int64_t{ctx.sm_count} * 16)), 1, 1}};
  g.launches.push_back(l);
  int64_t in_bytes = 0;
  for (DType t : n.input_dtypes)
    in_bytes += size_bytes(t);
  g.bytes = count * (in_bytes + size_bytes(n.attrs.dtype));
  g.flops = count;
  return g;
}

FusedProgram primitive_program(const LlirNode& n) {
  auto load = [&](int k) {
    FusedInst i;
    i.op = FusedOpcode::Load;
    i.dtype = n.input_dtypes.at(static_cast<size_t>(k));
    i.a = k;
    return i;
  };
  const OpKind kind = n.op->kind;
  FusedInst r;
  r.dtype = n.attrs.dtype;
  switch (kind) {
    case OpKind::Constant:
      r.op = FusedOpcode::Const;
      r.value = n.attrs.value;
      r.int_value = n.attrs.int_value;
      return FusedProgram({r});
    case OpKind::Cast: r.op = FusedOpcode::Cast; break;
    case OpKind::Exp2: r.op = FusedOpcode::Exp2; break;
    case OpKind::Log2: r.op = FusedOpcode::Log2; break;
    case OpKind::Sin: r.op = FusedOpcode::Sin; break;
    case OpKind::Recip: r.op = FusedOpcode::Recip; break;
    case OpKind::Sqrt: r.op = FusedOpcode::Sqrt; break;
    case OpKind::Add: r.op = FusedOpcode::Add; break;
    case OpKind::Mul: r.op = FusedOpcode::Mul; break;
    case OpKind::Mod: r.op = FusedOpcode::Mod; break;
    case OpKind::LessThan: r.op = FusedOpcode::LessThan; break;
    default: throw Error("cuda: " + std::string(n.op->name) + " is not an elementwise primitive");
  }
  if (is_binary(kind)) {
    r.a = 0;
    r.b = 1;
    return FusedProgram({load(0), load(1), r});
  }
  r.a = 0;
  return FusedProgram({load(0), r});
}

KernelGen gen_primitive(const LlirNode& n, const GenContext& ctx) {
  const FusedProgram prog = primitive_program(n);
  return map_kernel(
      n, ctx, [&](Codegen& cg, std::string& body) { return emit_program(prog, cg, n, body); });
}

KernelGen gen_fused(const LlirNode& n, const GenContext& ctx) {
  const auto* prog = dynamic_cast<const FusedProgram*>(n.attrs.payload.get());
  if (!prog) throw Error("cuda.Fused: the node has no FusedProgram payload");
  prog->validate();
  if (prog->has_row_reduce())
    throw Error("cuda.Fused: the program has a row reduction (a cuda.Row program): " +
                prog->to_string());
  if (prog->insts.back().dtype != n.attrs.dtype)
    throw Error("cuda.Fused: the program's result dtype differs from the node's dtype");
  return map_kernel(
      n, ctx, [&](Codegen& cg, std::string& body) { return emit_program(*prog, cg, n, body); });
}

/// cuda.FusedQ8: the region's values in blocks of 32 (Q8_1; int_value 1: the split layout, each
/// row's q blocks then their (d, s) pairs) or 256 (Q8_K, the K types' activation), each warp one
/// block, quantized by QuantizeQ8's warp code.
KernelGen gen_fused_q8(const LlirNode& n, const GenContext& ctx) {
  const auto* prog = dynamic_cast<const FusedProgram*>(n.attrs.payload.get());
  if (!prog) throw Error("cuda.FusedQ8: the node has no FusedProgram payload");
  prog->validate();
  if (prog->has_row_reduce() || prog->insts.back().dtype != DType::F32)
    throw Error("cuda.FusedQ8: needs an elementwise program with an f32 result: " +
                prog->to_string());
  const Shape& shape = n.attrs.shape;
  const DType fmt = n.attrs.dtype;
  const bool k_blocks = fmt == DType::Q8_K;
  const int64_t bs = k_blocks ? 256 : 32;
  if ((fmt != DType::Q8_1 && !k_blocks) || shape.empty() || !shape.back().is_const() ||
      shape.back().as_const() % bs != 0 || (k_blocks && n.attrs.int_value != 0))
    throw Error(
        "cuda.FusedQ8: writes q8_1 (q8_k) rows of a static length, a multiple of 32 "
        "(256); the split layout is q8_1's");
  Codegen cg(n, ctx);
  const Expr count = numel(shape);
  cg.require(count);
  const std::string& I = cg.idx();
  const std::string warps = std::to_string(kBlock / 32);
  std::string body;
  if (k_blocks) {
    // Q8_K: lane j holds values j, j + 32, ... of the 256-value block (quantize_q8.cpp's order).
    std::string stmts = "      const " + I + " i = b * 256 + r * 32 + lane;\n";
    const std::string value = emit_program(*prog, cg, n, stmts);
    body += "    float v[8];\n#pragma unroll\n    for (int r = 0; r < 8; ++r) {\n" + stmts +
            "      v[r] = st_f32(" + value + ");\n    }\n";
    body += "    lmn_q8_k_warp(v, out + (long long)b * 292, lane);\n";
  } else {
    body += "    const " + I + " i = b * 32 + lane;\n";
    const std::string value = emit_program(*prog, cg, n, body);
    body += "    const float v = st_f32(" + value + ");\n";
    body += q8_1_store("v", "b", shape.back().as_const(), n.attrs.int_value == 1, "lane", "    ");
  }
  std::string k = "extern \"C\" __global__ void __launch_bounds__(" + std::to_string(kBlock) +
                  ") LMN_ENTRY(lmn_fused_q8)(" + cg.params() + ") {\n" + cg.dims_prologue() +
                  "  const int lane = threadIdx.x & 31;\n  const " + I + " nb = " + cg.c(count) +
                  " / " + std::to_string(bs) + ";\n  for (" + I + " b = (" + I + ")blockIdx.x * " +
                  warps + " + (threadIdx.x >> 5); b < nb; b += (" + I + ")gridDim.x * " + warps +
                  ") {\n" + body + "  }\n}\n";
  KernelGen g;
  g.source = Codegen::unit(quant_device_source() + k);
  g.launches.push_back(Launch{
      "lmn_fused_q8",
      kBlock,
      {min(ceil_div(count, Expr(bs * (kBlock / 32))), Expr(int64_t{ctx.sm_count} * 16)), 1, 1}});
  int64_t in_bytes = 0;
  for (DType t : n.input_dtypes)
    in_bytes += size_bytes(t);
  g.bytes = count * in_bytes + count * block_bytes(fmt) / bs;
  g.flops = count * 4;
  return g;
}

/// cuda.FusedQ8 for a Q8_1 or Q8_K QuantizeQ8 that reads a cuda.Fused class whole and in order
/// (q8_store.hpp).
std::vector<Rule> fused_q8_rules() {
  if (!env_switch_on("LUMINAL_CUDA_FUSED_Q8")) return {};
  return {quantize_in_store_rule("cuda.fused-q8", &kFused, &kFusedQ8, /*q8_k=*/true)};
}

KernelGen gen_iota(const LlirNode& n, const GenContext& ctx) {
  return map_kernel(n, ctx, [&](Codegen& cg, std::string& body) {
    // The value may exceed the index type: evaluate it in 64 bits.
    const std::string v = n.attrs.iota_expr.to_c({}, [&](const std::string& d) {
      return d == "z" ? std::string("((long long)i)") : "((long long)" + cg.c(Expr::var(d)) + ")";
    });
    body += "    const long long iv = (long long)(" + v + ");\n";
    return std::string("rd_") + dtype_tag(n.attrs.dtype) + "(iv)";
  });
}

std::vector<Rule> fusion() { return fusion_rules(&kFused, "cuda", true); }

}  // namespace

KernelGen gen_view_copy(const LlirNode& n, const GenContext& ctx) {
  if (n.attrs.views.size() != 1) throw Error("cuda: a copy needs one input view");
  return map_kernel(n, ctx, [&](Codegen& cg, std::string& body) {
    const std::string o = cg.view_offset(n.attrs.views[0], "i", "o0", body);
    body += "    out[i] = in0[" + o + "];\n";
    return std::string();  // stored raw above
  });
}

const OpDef* cuda_fused_op() { return &kFused; }

void register_fused_q8_ops(std::vector<const CudaOp*>& ops) {
  static const CudaOp fused_q8{&kFusedQ8, "cuda.fused-q8", fused_q8_rules, gen_fused_q8};
  ops.push_back(&fused_q8);
}

void register_elementwise_ops(std::vector<const CudaOp*>& ops) {
  static const CudaOp constant{hlir_op(OpKind::Constant), "", nullptr, gen_primitive};
  static const CudaOp iota{hlir_op(OpKind::Iota), "", nullptr, gen_iota};
  static std::vector<CudaOp> prims;
  if (prims.empty()) {
    for (OpKind k : {OpKind::Cast, OpKind::Exp2, OpKind::Log2, OpKind::Sin, OpKind::Recip,
                     OpKind::Sqrt, OpKind::Add, OpKind::Mul, OpKind::Mod, OpKind::LessThan})
      prims.push_back(CudaOp{hlir_op(k), "", nullptr, gen_primitive});
  }
  static const CudaOp fused{&kFused, "cuda.fusion", fusion, gen_fused};
  ops.push_back(&constant);
  ops.push_back(&iota);
  for (const CudaOp& p : prims)
    ops.push_back(&p);
  ops.push_back(&fused);
}

}  // namespace luminal::cuda
