// cuda.ExpertGemv and cuda.ExpertRows: a matmul over the chosen experts' weights, read in place
// by expert id (compiler/expert_rule.hpp matches nn::expert_linear's gather of weight rows under
// a matmul): out[r, n] = sum over d of act[r, d] * W[ids[r], n, d], W [E, N, D] in f32, f16,
// bf16 or a block type the CUDA backend reads (q4_0 .. q6_k). Only the experts the rows name are
// read, the gathered rows are never written, and the ids are read on the device (no sync).
//
// The rule offers cuda.ExpertGemv(act, ids, W) where the rows are a constant count of at most 8
// (decode: one token's k choices) and cuda.ExpertRows, the same kernel, for more or a dynamic
// count (prefill: a gathered-row loop, each row reading its expert's matrix; a baseline, since
// rows that share an expert read it again). With 16-bit weights a second e-node reads the
// activation through the graph's cast up to f32 (16 bits, exact), so no cast kernel runs. Neither
// dominates the unfused form (the gathered rows written, then a matmul): the seed cost (below a
// Gather's and a GEMV's together) makes the fewest-kernels seed take them, and the search times
// both.
//
// The kernel: an output (r, n) is one weight row dotted with one activation row; W warps share
// it (split over D), a block of 256 threads holds 8 / W outputs, consecutive outputs walk n of
// one row (one expert's matrix in order). Floats: each lane loads U weight chunks of V values
// before it multiplies (16 bytes where D, the strides and the activation's rows allow, else fewer
// down to one value; x from L1, as many bytes or two 16-byte loads). Blocks: each lane takes units
// of 32 values (quant_device.hpp's QT_<t>, as cuda.QGemv's f32 form), U at a time. W is 1 while
// there are enough outputs to fill the GPU (decode's N * k), more for few outputs over a long D.
//
// Numerics: f32 accumulation. Floats: a lane's products join its accumulator by fused
// multiply-adds (a product of two 16-bit values is exact; f32 x f32 rounds once with the add),
// then 5 shuffle levels and the W warps (in turn) add in f32; so |result - sum_d w_d x_d| <=
// gamma(L + 5 + W - 1) sum_d |w_d x_d|, L the values a lane adds (V ceil(D / (32 W V))),
// gamma(n) = n 2^-24 / (1 - n 2^-24). Blocks: cuda.QGemv's f32 form with one row (qgemv.cpp):
// gamma(32 + units a lane + 11) sum_j (|w_j| + 2 |b_j|) |x_j|, plus 2^-24 sum |w_j x_j| for the
// reference's rounding of w_j in the types with a min. tests/cuda/expert_test.cpp checks both.
// An id outside [0, E) writes 0 and sets the error word to 2 (the next sync reports it, naming
// the expert matmul).
//
// cuda.ExpertGemvCast / cuda.ExpertRowsCast: the same kernel storing its f32 sum as bf16 or f16,
// offered for the graph's Cast down after the expert matmul (the model's expert outputs in its
// dtype), so the Cast runs no kernel of its own; the same bits (one rounding of the same f32).
//
// cuda.ExpertGemvGlu / cuda.ExpertRowsGlu (on unless LUMINAL_CUDA_EXPERT_GLU=0; right on an H100,
// 2026-12-06, and with the sum form Qwen3-MoE's 12-layer decode 1.41-1.45 -> 1.35 ms): an
// elementwise region that reads an expert matmul's value through its two halves
// along n, element i of the first half with element i of the second (SwiGLU's SiLU(gate) * up
// over a packed experts.gate_up_proj), stored by the matmul's kernel: each output n < N/2 dots
// weight rows n and n + N/2 with the activation (one pass each, as the plain kernel would for
// either), rounds both as the matmul stores them (f32, or bf16/f16 for the cast form) and applies
// the region. One kernel and no [rows, N] value in memory where the matmul and the region were
// two. Matched on structure: the region's two inputs are the same class, read [M, N/2] with
// strides (N, 1) at offsets 0 and N/2; no other input, no f64, no row reduction, and a constant
// element count (decode, and prefill buckets of a constant row count; as the GEMV epilogues).
//
// cuda.ExpertGemvSum, the weighted sum of a token's experts in the down matmul's kernel, is in
// expert_sum.cpp (the k loops are shared: expert_loops.hpp).
//
// LUMINAL_CUDA_EXPERT=0 offers none of them (the unfused programs, to compare);
// LUMINAL_CUDA_EXPERT_WARPS (1, 2, 4, 8) forces W, for tests and sweeps.
#include <algorithm>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "luminal/compiler/expert_rule.hpp"
#include "luminal/core/error.hpp"
#include "luminal/cuda/cuda_op.hpp"
#include "luminal/cuda/expert_loops.hpp"
#include "luminal/cuda/matmul_operands.hpp"
#include "luminal/cuda/prelude.hpp"
#include "luminal/cuda/quant_device.hpp"
#include "luminal/kernels/epilogue_rule.hpp"
#include "luminal/kernels/fused_program.hpp"
#include "luminal/kernels/fusion_detail.hpp"
#include "luminal/kernels/matmul_rule.hpp"

namespace luminal::cuda {

namespace expert {

int64_t coef(const Expr& stride) { return stride.eval({}, 1); }

/// The float form's chunk width V (weight elements a lane loads at once: 16 bytes, or fewer
/// where D, the strides or the activation's rows are not aligned to that, down to 1), or 0 when
/// the kernel cannot read W [E, N, D] (dtype tw) with the activation rows `xv` (dtype tx): block
/// rows must start at blocks (V is then 32, a unit) beside an f32 activation; the activation
/// must be contiguous along D.
int chunk_width(const View& xv, DType tx, const View& wv, DType tw) {
  if (wv.rank() != 3 || !wv.dims[2].is_const() || xv.rank() < 1) return 0;
  if (wv.has_base()) return 0;  // weights at an element offset: not supported
  const int64_t D = wv.dims[2].as_const();
  const int64_t R = coef(wv.strides[0]), NS = coef(wv.strides[1]);
  const int last = xv.rank() - 1;
  if (!(xv.strides[static_cast<size_t>(last)] == Expr::z())) return 0;
  if (is_block(tw)) {
    const int64_t bs = block_size(tw);
    const bool ok =
        cuda_block_type(tw) && tx == DType::F32 && D % bs == 0 && R % bs == 0 && NS % bs == 0;
    return ok ? 32 : 0;
  }
  if (!is_float(tw) || size_bytes(tw) > 4 || !is_float(tx) || size_bytes(tx) > 4) return 0;
  for (int V = 16 / size_bytes(tw); V > 1; V /= 2)
    if (D % V == 0 && R % V == 0 && NS % V == 0 && aligned_chunks(xv, last, V)) return V;
  return 1;
}

/// The float form's k loop: lane chunks c of V weight elements (one load of V * size bytes)
/// against the activation's V elements (NX loads of `vx_t`).
std::string float_loop(DType tx, DType tw, int V, int W, int U, const std::string& I) {
  const int xbytes = V * size_bytes(tx);
  const int NX = std::max(1, xbytes / 16);
  const std::string vw_t = vector_type(V * size_bytes(tw));
  const std::string vx_t = vector_type(std::min(16, xbytes));
  const std::string step = std::to_string(32 * W), Us = std::to_string(U), NXs = std::to_string(NX);
  const std::string sw = "S_" + dtype_tag(tw), sx = "S_" + dtype_tag(tx);
  return lines({
      "      const " + vw_t + "* rw = reinterpret_cast<const " + vw_t + "*>(in2 + wo);",
      "      const " + vx_t + "* rx = reinterpret_cast<const " + vx_t + "*>(in0 + xo);",
      "      for (" + I + " c = part * 32 + lane; c < KC; c += " + std::to_string(32 * W * U) +
          ") {",
      "        " + vw_t + " qw[" + Us + "];",
      "#pragma unroll",
      "        for (int u = 0; u < " + Us + "; ++u)",
      "          if (c + u * " + step + " < KC) qw[u] = __ldg(rw + c + u * " + step + ");",
      "#pragma unroll",
      "        for (int u = 0; u < " + Us + "; ++u) {",
      "          const " + I + " cu = c + u * " + step + ";",
      "          if (cu >= KC) break;",
      "          " + vx_t + " qx[" + NXs + "];",
      "#pragma unroll",
      "          for (int i = 0; i < " + NXs + "; ++i) qx[i] = __ldg(rx + cu * " + NXs + " + i);",
      "          const " + sx + "* ex = reinterpret_cast<const " + sx + "*>(qx);",
      "          const " + sw + "* ew = reinterpret_cast<const " + sw + "*>(&qw[u]);",
      "#pragma unroll",
      "          for (int j = 0; j < " + std::to_string(V) + "; ++j)",
      "            acc = __fmaf_rn(ldm_" + dtype_tag(tx) + "(ex[j]), ldm_" + dtype_tag(tw) +
          "(ew[j]), acc);",
      "        }",
      "      }",
  });
}

/// The block form's k loop: lane units u of 32 values (QT_<t>), U loaded before any is decoded,
/// against the f32 activation's 32 values (8 float4 loads when `vec`).
std::string block_loop(DType tw, int W, int U, bool vec) {
  const std::string QT = "QT_" + quant_tag(tw);
  const std::string step = std::to_string(32 * W), Us = std::to_string(U);
  std::string s = lines({
      "      const unsigned char* row = (const unsigned char*)in2 + wo;",
      "      const float* xrow = in0 + xo;",
      "      for (int u0 = part * 32 + lane; u0 < NU; u0 += " + std::to_string(32 * W * U) + ") {",
      "        " + QT + "::Raw rr[" + Us + "];",
      "#pragma unroll",
      "        for (int uu = 0; uu < " + Us + "; ++uu)",
      "          if (u0 + uu * " + step + " < NU) " + QT + "::load(row, u0 + uu * " + step +
          ", rr[uu]);",
      "#pragma unroll",
      "        for (int uu = 0; uu < " + Us + "; ++uu) {",
      "          const int u = u0 + uu * " + step + ";",
      "          if (u >= NU) break;",
      "          float q[32], a0, a1, b;",
      "          " + QT + "::dec(rr[uu], q, a0, a1, b);",
      "          const float* xr = xrow + u * 32;",
      "          float s0 = 0.0f, s1 = 0.0f, sx = 0.0f;",
  });
  if (vec) {
    s += lines({
        "          const float4* x4 = reinterpret_cast<const float4*>(xr);",
        "#pragma unroll",
        "          for (int t = 0; t < 8; ++t) {",
        "            const float4 v = __ldg(x4 + t);",
        "            float& sh = t < 4 ? s0 : s1;",
        "            sh = __fmaf_rn(q[4 * t], v.x, sh);",
        "            sh = __fmaf_rn(q[4 * t + 1], v.y, sh);",
        "            sh = __fmaf_rn(q[4 * t + 2], v.z, sh);",
        "            sh = __fmaf_rn(q[4 * t + 3], v.w, sh);",
        "            if (" + QT +
            "::HAS_B) sx = __fadd_rn(__fadd_rn(__fadd_rn(__fadd_rn(sx, v.x), v.y), v.z), v.w);",
        "          }",
    });
  } else {
    s += lines({
        "#pragma unroll",
        "          for (int j = 0; j < 32; ++j) {",
        "            const float v = __ldg(xr + j);",
        "            float& sh = j < 16 ? s0 : s1;",
        "            sh = __fmaf_rn(q[j], v, sh);",
        "            if (" + QT + "::HAS_B) sx = __fadd_rn(sx, v);",
        "          }",
    });
  }
  s += lines({
      "          acc = __fmaf_rn(a0, s0, acc);",
      "          acc = __fmaf_rn(a1, s1, acc);",
      "          if (" + QT + "::HAS_B) acc = __fmaf_rn(b, sx, acc);",
      "        }",
      "      }",
  });
  return s;
}

int lane_loads(DType tw, int64_t chunks, int W) {
  const int umax = is_block(tw) && block_size(tw) == 256 ? 2 : 4;
  return static_cast<int>(
      std::min<int64_t>(umax, std::max<int64_t>(1, (chunks + 32 * W - 1) / (32 * W))));
}

std::string row_start(Codegen& cg, const View& ids, const View& act, DType ti, DType tw,
                      const View& weight, int64_t& row_step) {
  std::string s;
  const std::string oi = cg.view_offset(ids, "r", "oi", s);
  const std::string ox = cg.view_offset(act, "r", "ox", s, act.rank() - 1);
  // The weight row's start: elements (floats) or bytes (blocks), 64-bit.
  const int64_t R = coef(weight.strides[0]), NS = coef(weight.strides[1]);
  const bool block = is_block(tw);
  const int64_t rs = block ? R / block_size(tw) * block_bytes(tw) : R;
  row_step = block ? NS / block_size(tw) * block_bytes(tw) : NS;
  return s + lines({
                 "    const long long e = ld_" + dtype_tag(ti) + "(in1[" + oi + "]);",
                 "    bad = e < 0 || e >= " + std::to_string(weight.dims[0].as_const()) + "LL;",
                 "    if (bad) {",
                 "      if (lane == 0 && part == 0) atomicCAS(err, 0u, 2u);",
                 "    } else {",
                 "      const long long wo = e * " + std::to_string(rs) + "LL + (long long)n * " +
                     std::to_string(row_step) + "LL;",
                 "      const " + cg.idx() + " xo = " + ox + ";",
             });
}

}  // namespace expert

namespace {

using namespace expert;

// (one kernel where the unfused form runs a Gather and a matmul: below both together and below
// cuda.Gemv's 0.95, so the fewest-kernels seeds take it; the search times the unfused form)
const OpDef kExpertGemv{.name = "cuda.ExpertGemv", .seed_cost = 0.9};
const OpDef kExpertRows{.name = "cuda.ExpertRows", .seed_cost = 0.9};
// The same kernels storing their f32 sums cast to bf16/f16 (the graph's Cast after the expert
// matmul: one rounding, the Cast kernel's), so that Cast runs no kernel of its own.
const OpDef kExpertGemvCast{.name = "cuda.ExpertGemvCast", .seed_cost = 0.9};
const OpDef kExpertRowsCast{.name = "cuda.ExpertRowsCast", .seed_cost = 0.9};
// The matmul and the region over its two halves in one kernel (the two were 0.9 and 1).
const OpDef kExpertGemvGlu{.name = "cuda.ExpertGemvGlu", .seed_cost = 0.95};
const OpDef kExpertRowsGlu{.name = "cuda.ExpertRowsGlu", .seed_cost = 0.95};
bool glu_op(const OpDef* op) { return op == &kExpertGemvGlu || op == &kExpertRowsGlu; }

constexpr int kMaxRows = 8;

/// LUMINAL_CUDA_EXPERT=0: no expert ops (the rules' list is empty, so the compile cache's key
/// tells the settings apart).
bool offered() { return env_switch_on("LUMINAL_CUDA_EXPERT"); }

int forced_warps() {
  const char* v = std::getenv("LUMINAL_CUDA_EXPERT_WARPS");
  if (v == nullptr || *v == 0) return 0;
  const int w = std::atoi(v);
  if (w != 1 && w != 2 && w != 4 && w != 8)
    throw Error(std::string("LUMINAL_CUDA_EXPERT_WARPS=") + v + " is not a warp count; give 1, " +
                "2, 4 or 8");
  return w;
}

/// The activation's row count when it is a constant.
std::optional<int64_t> const_rows(const View& ids_rows) {
  int64_t m = 1;
  for (const Expr& d : ids_rows.dims) {
    if (!d.is_const()) return std::nullopt;
    m *= d.as_const();
  }
  return m;
}

struct Offer {
  const OpDef* op;
  Attrs attrs;
  std::vector<ClassId> children;
};

std::vector<Offer> offers(const EGraph& eg, const Match& m) {
  if (!offered()) return {};
  const std::optional<ExpertMatmulParts> p = expert_matmul_parts(eg, m);
  if (!p || !is_integer(eg.dtype(p->ids)) || p->sum.dtype != DType::F32) return {};
  const std::optional<int64_t> rows = const_rows(p->ids_rows);
  const OpDef* op = rows && *rows <= kMaxRows ? &kExpertGemv : &kExpertRows;
  std::vector<Offer> out;
  auto add = [&](ClassId act, const View& xv) {
    if (chunk_width(xv, eg.dtype(act), p->weight_view, p->wtype) == 0) return;
    Offer o{op, {}, {act, p->ids, p->weight}};
    o.attrs.dtype = p->sum.dtype;
    o.attrs.shape = p->sum.shape;
    o.attrs.views = {xv, p->ids_rows, p->weight_view};
    out.push_back(std::move(o));
  };
  add(p->act, p->act_rows);
  if (!is_block(p->wtype))
    if (std::optional<std::pair<ClassId, View>> u = uncast(eg, p->act, p->act_rows))
      add(u->first, u->second);
  return out;
}

/// Whether `v` reads, for element i of a region of `count` elements, element
/// (i / h) * (2h) + i % h + at of a class of `count` * 2 elements.
bool reads_half(const View& v, int64_t count, int64_t h, int64_t at) {
  if (count % h != 0) return false;
  const std::optional<View> r = v.reshape({Expr(count / h), Expr(h)});
  if (!r || !(r->base == Expr(at))) return false;
  return (count / h == 1 || r->strides[0] == Expr(2 * h) * Expr::z()) &&
         (h == 1 || r->strides[1] == Expr::z());
}

/// The glu rule's builder: the region e-node m.node("e") (its class's largest or leanest fused
/// region, or an HLIR elementwise e-node) over the two halves of an expert matmul's value.
void offer_glu(const Match& m, EGraph& eg) {
  const ENodeId id = m.node("e");
  const ClassId root = eg.find(m.root);
  const std::optional<fusion_detail::Built> b = epilogue_region(cuda_fused_op(), eg, id, 2);
  if (!b || b->children.size() != 2) return;
  const ClassId c = eg.find(b->children[0]);
  if (eg.find(b->children[1]) != c || c == root) return;
  const Shape& cs = eg.shape(c);
  const Expr count = numel(eg.attrs_of(id).shape);
  if (cs.empty() || !cs.back().is_const() || !count.is_const()) return;
  const int64_t n = cs.back().as_const(), h = n / 2;
  if (n % 2 != 0 || !(numel(cs) == Expr(count.as_const() * 2))) return;
  // Load 0 the first half (the gate), load 1 the second.
  int first = -1;
  if (reads_half(b->views[0], count.as_const(), h, 0) &&
      reads_half(b->views[1], count.as_const(), h, h))
    first = 0;
  else if (reads_half(b->views[1], count.as_const(), h, 0) &&
           reads_half(b->views[0], count.as_const(), h, h))
    first = 1;
  if (first < 0) return;
  FusedProgram prog = b->program;
  if (first == 1)
    for (FusedInst& in : prog.insts)
      if (in.op == FusedOpcode::Load) in.a = 1 - in.a;
  const Attrs like = eg.attrs_of(id);
  std::vector<std::pair<ENodeId, const OpDef*>> producers;
  for (ENodeId e : eg.nodes_of(c)) {
    const OpDef* op = eg.node(e).op;
    if (eg.attrs_of(e).payload) continue;
    if (op == &kExpertGemv || op == &kExpertGemvCast) producers.emplace_back(e, &kExpertGemvGlu);
    if (op == &kExpertRows || op == &kExpertRowsCast) producers.emplace_back(e, &kExpertRowsGlu);
  }
  for (const auto& [e, op] : producers) {
    const ENode pn = eg.node(e);
    Attrs a = eg.attrs_of(e);
    a.dtype = like.dtype;
    a.shape = like.shape;
    a.payload = std::make_shared<FusedProgram>(prog);
    eg.merge(eg.add(op, a, std::vector<ClassId>(pn.children.begin(), pn.children.end())), root);
  }
}

std::vector<Rule> expert_rules() {
  Rule r{"cuda.expert-gemv", matmul_pattern(),
         [](const Match& m, const EGraph& eg) { return !offers(eg, m).empty(); },
         [](const Match& m, EGraph& eg) {
           for (const Offer& o : offers(eg, m))
             add_merged(eg, o.op, o.attrs, o.children, m.root);
         }};
  auto cast_of = [](const OpDef* op, const OpDef* cast_op, const std::string& name) {
    return cast_down_rule(name, op,
                          [cast_op](EGraph& eg, const Attrs& a, const std::vector<ClassId>& ch,
                                    ClassId root) { eg.merge(eg.add(cast_op, a, ch), root); });
  };
  // (a rule, not a condition: the compile cache's key names the rules in force)
  if (!offered()) return {};
  std::vector<Rule> rules{r, cast_of(&kExpertGemv, &kExpertGemvCast, "cuda.expert-gemv-cast"),
                          cast_of(&kExpertRows, &kExpertRowsCast, "cuda.expert-rows-cast")};
  for (Rule& sr : expert::sum_rules())
    rules.push_back(std::move(sr));
  if (env_switch_on("LUMINAL_CUDA_EXPERT_GLU"))  // the paired forms (=0: none, to compare)
    rules.push_back(Rule{"cuda.expert-glu", fusion_detail::region_pattern(cuda_fused_op()), nullptr,
                         offer_glu});
  return rules;
}

KernelGen gen_expert(const LlirNode& n, const GenContext& ctx) {
  const std::string op(n.op->name);
  if (n.input_dtypes.size() != 3 || n.attrs.views.size() != 3)
    throw Error(op + ": needs the activation, the expert ids and the stacked weight");
  const DType tx = n.input_dtypes[0], ti = n.input_dtypes[1], tw = n.input_dtypes[2];
  const View& xv = n.attrs.views[0];
  const View& iv = n.attrs.views[1];
  const View& wv = n.attrs.views[2];
  if (!is_integer(ti))
    throw Error(op + ": expert ids must be integers, got " + std::string(name(ti)));
  const bool cast = n.op == &kExpertGemvCast || n.op == &kExpertRowsCast;
  const bool glu = glu_op(n.op);
  const auto* epi = dynamic_cast<const FusedProgram*>(n.attrs.payload.get());
  if (glu && !epi) throw Error(op + ": the node has no FusedProgram payload (the region)");
  if (!glu && !cast && n.attrs.dtype != DType::F32) throw Error(op + ": the output must be f32");
  if (cast && n.attrs.dtype != DType::BF16 && n.attrs.dtype != DType::F16)
    throw Error(op + ": the output must be bf16 or f16");
  const int V = chunk_width(xv, tx, wv, tw);
  if (V == 0)
    throw Error(op + ": cannot read weights of " + std::string(name(tw)) + " " + wv.to_string() +
                " with activation rows of " + std::string(name(tx)) + " " + xv.to_string() +
                " (float weights, or block rows of whole blocks with an f32 activation; the "
                "activation contiguous along D)");
  const bool block = is_block(tw);
  const int64_t NW = wv.dims[1].as_const(), D = wv.dims[2].as_const();
  if (glu && NW % 2 != 0) throw Error(op + ": the weight's n (" + std::to_string(NW) + ") is odd");
  // The outputs walk n over N: the weight's rows, or the first half's with the glu forms.
  const int64_t N = glu ? NW / 2 : NW;
  const Expr M = iv.numel();
  const Expr P = M * Expr(N);

  Codegen cg(n, ctx);
  cg.require(P);
  cg.require(M * Expr(D));
  cg.require(numel(n.attrs.shape));
  const std::string& I = cg.idx();
  const int64_t p_hi = P.bounds(ctx.facts).hi;
  // W: split D over more warps only while each lane keeps 2 loads or more and the outputs leave
  // SMs idle (decode's N * k outputs fill the GPU with one warp each).
  const int64_t chunks = D / V;  // lane steps: chunks of V values, or 32-value units
  int W = 1;
  while (W < kWarps && chunks >= int64_t{128} * W && p_hi * W * 2 <= int64_t{ctx.sm_count} * 64)
    W *= 2;
  if (const int f = forced_warps()) W = f;
  const int U = lane_loads(tw, chunks, W);
  const int G = kWarps / W;
  const std::string Ws = std::to_string(W), Gs = std::to_string(G), Ns = std::to_string(N);
  std::string body = lines({
      "  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;",
      "  const int g = warp / " + Ws + ", part = warp % " + Ws + ";",
      "  __shared__ float red[" + std::to_string(kWarps) + "];",
      "  (void)red;",
      glu ? "  __shared__ float red2[" + std::to_string(kWarps) + "];" : "",
      block ? "  const int NU = " + std::to_string(chunks) + ";"
            : "  const " + I + " KC = " + std::to_string(chunks) + ";",
      "  for (" + I + " pb = (" + I + ")blockIdx.x * " + Gs + "; pb < P; pb += (" + I +
          ")gridDim.x * " + Gs + ") {",
      "    const " + I + " p = pb + g;",
      glu ? "    float acc = 0.0f, acc2 = 0.0f;" : "    float acc = 0.0f;",
      "    bool bad = false;",
      "    if (p < P) {",
      "    const " + I + " r = p / " + Ns + ", n = p % " + Ns + ";",
  });
  int64_t ns = 0;
  body += row_start(cg, iv, xv, ti, tw, wv, ns);
  const bool vec = block && vector_width(xv, xv.rank() - 1, DType::F32) >= 4;
  const std::string loop = block ? block_loop(tw, W, U, vec) : float_loop(tx, tw, V, W, U, I);
  if (glu) {
    // The first half's row, then the second's (n + N/2): the same loop over each, so each sum is
    // the plain kernel's for that row.
    body += "      const long long wo0 = wo;\n      {\n      const long long wo = wo0;\n" + loop +
            "      }\n      acc2 = acc;\n      acc = 0.0f;\n      {\n      const long long wo = "
            "wo0 + " +
            std::to_string(N * ns) + "LL;\n" + loop + "      }\n";
  } else {
    body += loop;
  }
  body += lines({
      "    }",
      "    }",
      "    for (int s = 16; s > 0; s >>= 1) acc = __fadd_rn(acc, __shfl_xor_sync(0xffffffffu, "
      "acc, s));",
  });
  if (glu)
    body +=
        "    for (int s = 16; s > 0; s >>= 1) acc2 = __fadd_rn(acc2, "
        "__shfl_xor_sync(0xffffffffu, acc2, s));\n";
  const std::string st = "st_" + dtype_tag(n.attrs.dtype);
  // The stored value from the sum(s): the region over the two halves (load 0 the first half's
  // sum g, load 1 the second's u, each rounded to the matmul's dtype as it would store it), or
  // the sum itself.
  auto store = [&](const std::string& g, const std::string& u) {
    if (!glu) return "out[p] = " + st + "(bad ? 0.0f : " + u + ");\n";
    std::string b = "{\n";
    const std::string r = emit_statements(*epi, b, [&](const FusedInst& in, size_t, bool keep) {
      const std::string v = in.a == 0 ? g : u;
      return load_fn(in.dtype, keep) + "(st_" + dtype_tag(in.dtype) + "(" + v + "))";
    });
    return b + "    out[p] = bad ? " + st + "(0.0f) : " + st + "(" + r + ");\n    }\n";
  };
  if (W == 1) {
    body += "    if (lane == 0 && p < P) " + store("acc2", "acc");
  } else {
    body += lines({
        "    if (lane == 0) red[warp] = acc;",
        glu ? "    if (lane == 0) red2[warp] = acc2;" : "",
        "    __syncthreads();",
        "    if (part == 0 && lane == 0 && p < P) {",
        "      float t = red[warp];",
        "      for (int o = 1; o < " + Ws + "; ++o) t = __fadd_rn(t, red[warp + o]);",
        glu ? "      float t2 = red2[warp];" : "",
        glu ? "      for (int o = 1; o < " + Ws + "; ++o) t2 = __fadd_rn(t2, red2[warp + o]);" : "",
        "      " + store("t2", "t"),
        "    }",
        "    __syncthreads();",
    });
  }
  body += "  }\n";
  const std::string pcode = cg.c(P);
  std::string k = "extern \"C\" __global__ void __launch_bounds__(" + std::to_string(kBlock) +
                  ") LMN_ENTRY(lmn_expert_gemv)(" + cg.params() + ") {\n";
  k += cg.dims_prologue() + "  const " + I + " P = " + pcode + ";\n" + body + "}\n";
  KernelGen gen;
  gen.source = Codegen::unit((block ? quant_device_source() : std::string()) + k);
  gen.launches.push_back(
      Launch{"lmn_expert_gemv",
             kBlock,
             {min(ceil_div(P, Expr(G)), Expr(int64_t{ctx.sm_count} * 16)), 1, 1}});
  const int64_t row_bytes = static_cast<int64_t>(storage_bytes(tw, D));
  const int64_t rows_read = glu ? 2 : 1;
  gen.bytes = P * Expr(rows_read * row_bytes) + M * Expr(D * size_bytes(tx) + size_bytes(ti)) +
              P * Expr(int64_t{size_bytes(n.attrs.dtype)});
  gen.flops = P * Expr(rows_read * 2 * D);
  return gen;
}

}  // namespace

const OpDef* expert::gemv_op() { return &kExpertGemv; }
const OpDef* expert::gemv_cast_op() { return &kExpertGemvCast; }

void register_expert_ops(std::vector<const CudaOp*>& ops) {
  static const CudaOp gemv{&kExpertGemv, "cuda.library", expert_rules, gen_expert};
  static const CudaOp rows{&kExpertRows, "cuda.library", nullptr, gen_expert};
  static const CudaOp gemv_cast{&kExpertGemvCast, "", nullptr, gen_expert};
  static const CudaOp rows_cast{&kExpertRowsCast, "", nullptr, gen_expert};
  static const CudaOp gemv_glu{&kExpertGemvGlu, "", nullptr, gen_expert};
  static const CudaOp rows_glu{&kExpertRowsGlu, "", nullptr, gen_expert};
  ops.push_back(&gemv);
  ops.push_back(&rows);
  ops.push_back(&gemv_cast);
  ops.push_back(&rows_cast);
  ops.push_back(&gemv_glu);
  ops.push_back(&rows_glu);
  ops.push_back(expert::sum_op());
}

}  // namespace luminal::cuda
