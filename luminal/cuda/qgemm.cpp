// cuda.QGemmQ8: a linear layer over block-quantized weights with many activation rows (prefill)
// on the int8 tensor cores, reading the weight's GGUF blocks as stored.
//
// The shared matcher (kernels/quant_rule.hpp) finds SumReduce(Mul(x, Dequantize(W))) as x @ W^T;
// where the activation rows are more than 8 or a dynamic count (the GEMVs of qgemv.cpp take up
// to 8), the rule offers cuda.QGemmQ8(cuda.QuantizeQ8(x), W) beside dequantise-then-matmul (an
// f32 weight widened every step, then cuBLASLt in f32): x rounded to Q8_1 rows once (shared
// with every layer reading x, as the GEMV's integer form), each block of 32 values one
// mma.sync.m16n8k32 on s8. Types: q4_0, q4_1, q5_0, q5_1 and q8_0 (a legacy block is one k32
// step); the K types (a 32-value sub-block a unit, Q8_K activation rows, Q6_K as two k16 products
// for its two scales; LUMINAL_CUDA_QGEMM_K=0 offers them none). LUMINAL_CUDA_QGEMM=0 offers
// none, nor does LUMINAL_CUDA_QGEMV=f32 (only f32 activations). cuda.QGemmQ8S (unless
// LUMINAL_CUDA_QGEMM_SPLIT=0) reads the weight in the split layout instead (cuda.QRepack,
// quant_repack.cpp: the class the decode bucket's cuda.QGemvQ8S folds at load), so a session
// holds that one copy and releases the GGUF layout (an 8B q4_0 session held both, 11.6 GB on an
// H100; with the split form and the K types for its q6_k LM head, 5.57 GB for 4.79 GB of
// weights).
//
// Layout: a block of 8 warps covers 32 activation rows and 32 weight rows (two m16 tiles by four
// n8 tiles), its warps splitting k in 8 slices of blocks; the slices' sums are joined in slice
// order through shared memory (a prefill has few row tiles: with one warp a tile an 8B layer's
// GEMMs kept about 4 warps an SM busy). LUMINAL_CUDA_QGEMM_SLICES = 4, 2 or 1 gives a block
// 8 / slices such groups side by side instead.
//
// Lane (g = lane / 4, t = lane % 4) loads the fragments of mma.m16n8k32 straight from memory:
// activation words t and t + 4 of rows g and g + 8 of each m16 tile (Q8_1 rows, word-aligned),
// and of weight row g of each n8 tile the byte-word t of the quants, whose low nibbles are values
// 4t..4t+3 and high nibbles 16+4t..16+4t+3: exactly the B fragment (QI_<t><4> of
// quant_dp4a_device.cpp; Q8_0 its words t and t + 4). The weight scales of the C fragment's
// columns 2t, 2t + 1 come from lanes 8t and 8t + 4 by shuffles.
//
// Numerics as cuda.QGemvQ8's: a block's integer sum is exact; it joins the f32 accumulator of
// each output as fma(a * d_x, sum, acc), then fma(b, s_x, acc) for types with a min; blocks in
// order within a slice, then the slices added in order. So every output is within
// testing::quant_dot_bound at depth 2 K / 32 + 8 (docs/quant.md).
//
// Dequantise to the arena, then cuBLASLt (rule "cuda.qgemm-lt", opt-in: LUMINAL_CUDA_QGEMM_LT=1
// until a GPU has run it): beside the kernels above, the layer as x in bf16 rows (cuda.QuantizeQ8
// in BF16, as cuda.QGemmBF16 reads them) times cuda.DequantizeBF16(W) (the whole weight decoded
// and rounded to bf16 into the arena at every execute, dequantize.cpp), written as the graph's
// own SumReduce(Mul(Cast(.), Cast(.))) over those two bf16 tensors, so that the cuBLASLt rules
// offer their bf16 x bf16 -> f32 call (and the generated matmuls theirs). The generated
// cuda.QGemmBF16 ran at about 110 TFLOPS on an H100 (BENCHMARKS.md, session 33) where cuBLASLt's
// bf16 GEMMs of the dense 8B prefill run at about 2x that: decoding a weight once into 2 bytes a
// value and reading them back costs 4 bytes a value more than the tile kernel reads (8B q4_0
// prefill estimate: ~6 ms decoding + 7.5-9.5 ms of GEMMs against the tile kernels' 18.9 ms). The
// seeds count kernels and keep the tile kernels; with the switch on, the seed that prefers library
// calls (SearchSpace::LibrarySeed::Prefer) takes this form for every prefill layer (the tile
// kernels are then library_replaces) and the search times it against them. It is offered wherever
// the tile kernels are (the K types only with LUMINAL_CUDA_QGEMM_K on), so that seed never falls
// back to the f32 dequantise and f32 call; the arena then holds one layer's bf16 weight at a time
// (an 8B's gate 117 MB; a 128k-vocabulary LM head over every row 1 GB).
// Numerics as cuda.QGemmBF16's (x and w each rounded to bf16 once, products exact in f32) but
// the sums in cuBLASLt's f32 order: within sum |x w| (2^-7 + 2^-15) + gamma(K) sum |x w|.
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "luminal/core/error.hpp"
#include "luminal/cuda/cuda_op.hpp"
#include "luminal/cuda/prelude.hpp"
#include "luminal/cuda/qgemm.hpp"
#include "luminal/cuda/quant_device.hpp"
#include "luminal/kernels/matmul_rule.hpp"
#include "luminal/kernels/quant_rule.hpp"

namespace luminal::cuda {

WeightSize gemm_weight_size(const EGraph& eg, uint32_t enode) {
  const ENode& n = eg.node(enode);
  if (n.children.size() < 2) return WeightSize::Unknown;
  const Expr count = numel(eg.shape(eg.find(n.children[1])));
  if (!count.is_const()) return WeightSize::Unknown;
  return count.as_const() >= (int64_t{1} << 22) ? WeightSize::Large : WeightSize::Small;
}

namespace {

/// 0.4 more for a weight of 2^22 values and up where the bf16 forms are offered for its type
/// (qgemm_bf16.cpp): for an 8B model's weights they ran in 0.43-0.58 of this form's time on an
/// H100 (session 33), but the seeds still took this one after a norm, whose row kernel can write
/// Q8_1 (cuda.RowQ8, 1.1 for a row kernel's 1.0 and a quantize's 0.5): three GEMMs reading one
/// normed row (q, k, v; gate and up) kept the integer form, and an 8B q4_0 prefill ran 4 of its 7
/// GEMMs a layer in it (10.2 of its 24.7 ms for 19% of the FLOPs, BENCHMARKS.md session 38).
/// With 0.4 each, the bf16 forms win even for a group of three (2.25 against 3.2).
double large_weight_extra(const EGraph& eg, uint32_t enode) {
  if (gemm_weight_size(eg, enode) != WeightSize::Large || !env_switch_on("LUMINAL_CUDA_QGEMM_BF16"))
    return 0;
  const DType t = eg.dtype(eg.find(eg.node(enode).children[1]));
  return is_block(t) && (block_size(t) != 256 || env_switch_on("LUMINAL_CUDA_QGEMM_BF16_K")) ? 0.4
                                                                                             : 0.0;
}

// (the integer GEMV's 0.3-0.35: with cuda.QuantizeQ8's 0.5 below a Dequantize and a matmul)
// (not const: qgemm_rules() marks them library_replaces with the dequantise + cuBLASLt form on)
OpDef kQGemmQ8{.name = "cuda.QGemmQ8", .seed_cost = 0.35, .seed_extra = large_weight_extra};
// Over the split layout (cuda.QRepack, folded at load, shared with the decode's cuda.QGemvQ8S): a
// little below, so the seeds take it where it is offered.
OpDef kQGemmQ8S{.name = "cuda.QGemmQ8S", .seed_cost = 0.3, .seed_extra = large_weight_extra};

// A block: 8 warps, in groups of `slices` warps that split k (LUMINAL_CUDA_QGEMM_SLICES: 1, 2, 4
// or 8; default 8: on an H100 an 8B q4_0 prefill's 224 GEMMs took 28.9 ms with 8, 31.8 with 4, 38.9
// with 2, 45.5 with 1); the groups split the block's weight rows, 32 each.
constexpr int kWarps = 8;
constexpr int kBlock = 32 * kWarps;
constexpr int kRowsPerBlock = 32;  // activation rows a block
constexpr int kMaxGemvRows = 8;    // fewer constant rows: the GEMVs (qgemv.cpp)

/// The types the rule offers the kernel for: the legacy ones, and with `k_types`
/// (unless LUMINAL_CUDA_QGEMM_K=0) Q4_K, Q5_K and Q6_K.
bool mma_type(DType t, bool k_types) {
  return legacy_type(t) || (k_types && (t == DType::Q4_K || t == DType::Q5_K || t == DType::Q6_K));
}

/// The axes of a product over `dims` read through the activation view `xv` and weight view `wv`
/// (k = `axis`): m axes (W's stride 0, x's not) and n axes (the others), axes of length 1
/// skipped; nothing when an m axis follows an n axis (the output's flat index is then not
/// row * N + column).
struct Axes {
  std::vector<int> m, n;
};
std::optional<Axes> axes_of(const View& xv, const View& wv, int axis) {
  Axes a;
  for (int d = 0; d < wv.rank(); ++d) {
    if (d == axis || wv.dims[static_cast<size_t>(d)] == Expr(1)) continue;
    const bool m = wv.strides[static_cast<size_t>(d)] == Expr(0) &&
                   !(xv.strides[static_cast<size_t>(d)] == Expr(0));
    if (m && !a.n.empty()) return std::nullopt;
    (m ? a.m : a.n).push_back(d);
  }
  return a;
}

/// The parts of a quantized linear layer this kernel takes: an f32 activation of more than 8
/// rows (or a dynamic count), a type mma_type offers, m axes before n axes.
std::optional<QuantMatmulParts> gemm_parts(const EGraph& eg, const Match& m, bool k_types) {
  std::optional<QuantMatmulParts> p = quant_matmul_parts(eg, m);
  if (!p || !mma_type(p->wtype, k_types) || eg.dtype(p->act) != DType::F32 ||
      p->sum.dtype != DType::F32 || p->act_rows_view.has_base() || p->weight_view.has_base())
    return std::nullopt;
  int64_t rows = 1;
  for (size_t i = 0; i + 1 < p->act_rows.size() && rows >= 0; ++i)
    rows = p->act_rows[i].is_const() ? rows * p->act_rows[i].as_const() : -1;
  if (rows >= 0 && rows <= kMaxGemvRows) return std::nullopt;
  const QuantMatmulAttrs a = quant_matmul_attrs(*p, DType::Q8_1);
  if (!axes_of(a.matmul.views[0], a.matmul.views[1], a.matmul.axis)) return std::nullopt;
  return p;
}

/// gemm_parts for the split form: a type with a split layout, a static weight only linear
/// layers read.
std::optional<QuantMatmulParts> split_gemm_parts(const EGraph& eg, const Match& m) {
  std::optional<QuantMatmulParts> p = gemm_parts(eg, m, false);
  if (!p || !legacy_type(p->wtype) || !split_layout(p->wtype) || !only_matmuls_read(eg, p->weight))
    return std::nullopt;
  for (const Expr& d : eg.shape(p->weight))
    if (!d.is_const()) return std::nullopt;
  return p;
}

/// A rule offering `op`(cuda.QuantizeQ8(x), W) where the layer is one gemm_parts takes (with
/// the K types when `k`): x's rows in bf16 when `bf16`, else in the GEMV's 8-bit format; with
/// `split` the layer split_gemm_parts takes, over cuda.QRepack(W) (the class the decode bucket's
/// split GEMV folds, so a session holds one copy and releases the GGUF layout) with the weight's
/// block count in int_value.
Rule gemm_rule(std::string name, const OpDef* op, bool bf16, bool split, bool k) {
  auto parts = [split, k](const EGraph& eg, const Match& m) {
    return split ? split_gemm_parts(eg, m) : gemm_parts(eg, m, k);
  };
  return Rule{std::move(name), matmul_pattern(),
              [parts](const Match& m, const EGraph& eg) { return parts(eg, m).has_value(); },
              [parts, op, bf16, split](const Match& m, EGraph& eg) {
                const std::optional<QuantMatmulParts> p = parts(eg, m);
                if (!p) return;
                QuantMatmulAttrs a =
                    quant_matmul_attrs(*p, bf16 ? DType::BF16 : cuda_activation_format(p->wtype));
                const ClassId x = eg.add(quantize_q8_op(), a.quantize, {p->act});
                ClassId w = p->weight;
                if (split) {
                  w = add_qrepack(eg, p->weight);
                  a.matmul.int_value = numel(eg.shape(p->weight)).as_const() / 32;
                }
                add_merged(eg, op, a.matmul, {x, w}, m.root);
              }};
}

/// The parts of a layer the dequantise + cuBLASLt form takes: those the tile kernels take (the K
/// types with `k_types`), so that wherever the seed preferring library calls avoids a tile
/// kernel this form stands in its place.
std::optional<QuantMatmulParts> lt_parts(const EGraph& eg, const Match& m, bool k_types) {
  std::optional<QuantMatmulParts> p = gemm_parts(eg, m, k_types);
  if (!p || !numel(eg.shape(p->weight)).is_const()) return std::nullopt;
  return p;
}

/// The attributes of cuda.DequantizeBF16(W): the layer's Dequantize's (its shape, as the layer
/// reads it, and its view of W) where that view reads W whole in order, else W's own shape.
Attrs dequantize16_attrs(const EGraph& eg, const QuantMatmulParts& p) {
  const Shape ws = eg.shape(p.weight);
  Attrs d;
  d.shape = ws;
  d.views = {View::contiguous(ws)};
  for (ENodeId id : eg.nodes_of(p.dequantized)) {
    if (!is_op(eg.node(id).op, OpKind::Dequantize)) continue;
    const Attrs& da = eg.attrs_of(id);
    if (da.views.size() == 1 && da.views[0].is_contiguous() && !da.views[0].has_base() &&
        da.views[0].numel() == numel(ws))
      d = da;
    break;
  }
  d.dtype = DType::BF16;
  return d;
}

Rule lt_rule(bool k_types) {
  return Rule{
      "cuda.qgemm-lt", matmul_pattern(),
      [k_types](const Match& m, const EGraph& eg) { return lt_parts(eg, m, k_types).has_value(); },
      [k_types](const Match& m, EGraph& eg) {
        const std::optional<QuantMatmulParts> p = lt_parts(eg, m, k_types);
        if (!p) return;
        const QuantMatmulAttrs a = quant_matmul_attrs(*p, DType::BF16);
        const ClassId x16 = eg.add(quantize_q8_op(), a.quantize, {p->act});
        const Attrs d = dequantize16_attrs(eg, *p);
        const ClassId w16 = eg.add(dequantize_bf16_op(), d, {p->weight});
        auto up = [&eg](ClassId c, const Shape& s) {
          Attrs c32;
          c32.shape = s;
          c32.views = {View::contiguous(s)};
          return eg.add(hlir_op(OpKind::Cast), c32, {c});
        };
        // The Mul over the layer's dims: x16 as the quantized rows are read (a.matmul's
        // view 0), w16 as W is (w16 holds W's values in W's element order).
        Attrs mul;
        mul.shape = p->dims;
        mul.views = a.matmul.views;
        const ClassId prod =
            eg.add(hlir_op(OpKind::Mul), mul, {up(x16, p->act_rows), up(w16, d.shape)});
        eg.merge(eg.add(hlir_op(OpKind::SumReduce), p->sum, {prod}), m.root);
      }};
}

std::vector<Rule> qgemm_rules() {
  // (rules, not conditions: the compile cache's key names the rules in force)
  // The dequantise + cuBLASLt form, opt-in; with it the tile kernels give way to library calls
  // in the seed that prefers them.
  // (Written only when it changes, which only a change of the environment between compiles
  // does: concurrent compiles read it and write nothing.)
  const bool lt = env_opt_in("LUMINAL_CUDA_QGEMM_LT");
  for (OpDef* op : {&kQGemmQ8, &kQGemmQ8S, qgemm_bf16_op(false), qgemm_bf16_op(true)})
    if (op->library_replaces != lt) op->library_replaces = lt;
  if (!env_switch_on("LUMINAL_CUDA_QGEMM")) return {};
  // LUMINAL_CUDA_QGEMV=f32 (qgemv.cpp) keeps every activation f32: no integer form here either.
  if (const char* v = std::getenv("LUMINAL_CUDA_QGEMV"); v != nullptr && std::string(v) == "f32")
    return {};
  const bool k = env_switch_on("LUMINAL_CUDA_QGEMM_K");
  // The split forms unless LUMINAL_CUDA_QGEMM_SPLIT=0.
  const bool split = env_switch_on("LUMINAL_CUDA_QGEMM_SPLIT");
  std::vector<Rule> out{
      gemm_rule(k ? "cuda.qgemm-q8-k" : "cuda.qgemm-q8", &kQGemmQ8, false, false, k)};
  if (lt) out.push_back(lt_rule(k));
  if (split) out.push_back(gemm_rule("cuda.qgemm-q8s", &kQGemmQ8S, false, true, false));
  // The bf16 forms (qgemm_bf16.cpp): x as bf16 rows, the weight dequantised a tile at a time;
  // LUMINAL_CUDA_QGEMM_BF16=0 offers none; LUMINAL_CUDA_QGEMM_BF16_K=0 none for the K types.
  if (!env_switch_on("LUMINAL_CUDA_QGEMM_BF16")) return out;
  const bool kb = k && env_switch_on("LUMINAL_CUDA_QGEMM_BF16_K");
  out.push_back(gemm_rule(kb ? "cuda.qgemm-bf16-k" : "cuda.qgemm-bf16", qgemm_bf16_op(false), true,
                          false, kb));
  if (split) out.push_back(gemm_rule("cuda.qgemm-bf16s", qgemm_bf16_op(true), true, true, false));
  return out;
}

// Device code: the B fragment (b0, b1) of weight row `row`'s block u for lane t, its scale a and
// min b, per type; the s8 MMA.
const char* kMmaSource = R"(
#ifndef LMN_QGEMM_DEVICE
#define LMN_QGEMM_DEVICE
template <class Q>
LMN void lmn_qb(const unsigned char* row, int u, int t, int& b0, int& b1, float& a, float& b) {
  typename Q::Raw r;
  Q::load(row, u, t, r);
  int v[2], w[2];
  Q::ints(r, t, v, w, a, b);
  b0 = v[0]; b1 = v[1];
}
struct QB_q8_0 {
  enum { HAS_B = 0 };
  static LMN void get(const unsigned char* row, int u, int t, int& b0, int& b1, float& a, float& b) {
    const unsigned char* p = row + u * 34;
    a = lmn_h16(lmn_u16(p)); b = 0.0f;
    b0 = (int)lmn_w16(p + 2 + 4 * t); b1 = (int)lmn_w16(p + 18 + 4 * t);
  }
};
/* The split layout's: bodies at `body`, heads at `head` (a row's first block's). */
template <class Q>
LMN void lmn_qbs(const unsigned char* body, const unsigned char* head, int u, int t, int& b0,
                 int& b1, float& a, float& b) {
  typename Q::Raw r;
  Q::load(body, head, u, t, r);
  int v[2], w[2];
  Q::ints(r, t, v, w, a, b);
  b0 = v[0]; b1 = v[1];
}
struct QBS_q8_0 {
  enum { HAS_B = 0 };
  static LMN void get(const unsigned char* body, const unsigned char* head, int u, int t, int& b0,
                      int& b1, float& a, float& b) {
    a = lmn_h16(lmn_u16(head + 2 * u)); b = 0.0f;
    b0 = __ldg((const int*)(body + u * 32 + 4 * t)); b1 = __ldg((const int*)(body + u * 32 + 16 + 4 * t));
  }
};
#define LMN_QBS(T) struct QBS_##T { enum { HAS_B = QI_##T<4>::HAS_B }; \
  static LMN void get(const unsigned char* body, const unsigned char* head, int u, int t, int& b0, \
                      int& b1, float& a, float& b) \
  { lmn_qbs<QS_##T<4>>(body, head, u, t, b0, b1, a, b); } };
LMN_QBS(q4_0) LMN_QBS(q4_1) LMN_QBS(q5_0) LMN_QBS(q5_1)
#define LMN_QB(T) struct QB_##T { enum { HAS_B = QI_##T<4>::HAS_B }; \
  static LMN void get(const unsigned char* row, int u, int t, int& b0, int& b1, float& a, float& b) \
  { lmn_qb<QI_##T<4>>(row, u, t, b0, b1, a, b); } };
LMN_QB(q4_0) LMN_QB(q4_1) LMN_QB(q5_0) LMN_QB(q5_1)
/* The K types (one unit: sub-block u % 8 of super-block u / 8), scales a (values 0..15) and a2
   (16..31), equal but for Q6_K's 16-value sub-blocks, and min b (a weight value is a q + b). Each
   in two steps, as cuda.QGemmBF16 reads them (qgemm_bf16.cpp): load(row, u, t, raw), lane t's
   bytes of the unit; dec(raw, u, ...), its words and scales; get (QBK) both. */
template <class Q>
struct QBK {
  static LMN void get(const unsigned char* row, int u, int t, int& b0, int& b1, float& a,
                      float& a2, float& b) {
    typename Q::Raw r;
    Q::load(row, u, t, r);
    Q::dec(r, u, b0, b1, a, a2, b);
  }
};
struct QB_q4_k : QBK<QB_q4_k> {
  enum { HAS_B = 1 };
  struct Raw { uint4 sc; unsigned int q0, q1; };
  static LMN void load(const unsigned char* row, int u, int t, Raw& r) {
    const unsigned char* p = row + (u >> 3) * 144;
    const unsigned char* q = p + 16 + ((u & 7) >> 1) * 32;
    r.q0 = __ldg((const unsigned int*)(q + 4 * t));
    r.q1 = __ldg((const unsigned int*)(q + 16 + 4 * t));
    r.sc = __ldg((const uint4*)p);
  }
  static LMN void dec(const Raw& r, int u, int& b0, int& b1, float& a, float& a2, float& b) {
    const int i = u & 7, sh = (i & 1) * 4;
    b0 = (int)((r.q0 >> sh) & 0x0F0F0F0Fu);
    b1 = (int)((r.q1 >> sh) & 0x0F0F0F0Fu);
    lmn_qk_scale(r.sc, i, a, b);
    a2 = a;
  }
};
struct QB_q5_k : QBK<QB_q5_k> {
  enum { HAS_B = 1 };
  struct Raw { uint4 sc; unsigned int q0, q1, h0, h1; };
  static LMN void load(const unsigned char* row, int u, int t, Raw& r) {
    const unsigned char* p = row + (u >> 3) * 176;
    const unsigned char* q = p + 48 + ((u & 7) >> 1) * 32;
    r.h0 = __ldg((const unsigned int*)(p + 16 + 4 * t));
    r.h1 = __ldg((const unsigned int*)(p + 32 + 4 * t));
    r.q0 = __ldg((const unsigned int*)(q + 4 * t));
    r.q1 = __ldg((const unsigned int*)(q + 16 + 4 * t));
    r.sc = __ldg((const uint4*)p);
  }
  static LMN void dec(const Raw& r, int u, int& b0, int& b1, float& a, float& a2, float& b) {
    const int i = u & 7, sh = (i & 1) * 4;
    b0 = (int)(((r.q0 >> sh) & 0x0F0F0F0Fu) | (((r.h0 >> i) & 0x01010101u) << 4));
    b1 = (int)(((r.q1 >> sh) & 0x0F0F0F0Fu) | (((r.h1 >> i) & 0x01010101u) << 4));
    lmn_qk_scale(r.sc, i, a, b);
    a2 = a;
  }
};
struct QB_q6_k : QBK<QB_q6_k> {
  enum { HAS_B = 0 };
  struct Raw { unsigned int l0, l1, h0, h1, sc, d; };
  static LMN void load(const unsigned char* row, int u, int t, Raw& r) {
    const unsigned char* p = row + (u >> 3) * 210;
    const int c = u & 7, hh = c >> 2;
    const unsigned char* ql = p + hh * 64 + (c & 1) * 32;
    const unsigned char* qh = p + 128 + hh * 32;
    r.l0 = lmn_w16(ql + 4 * t); r.l1 = lmn_w16(ql + 16 + 4 * t);
    r.h0 = lmn_w16(qh + 4 * t); r.h1 = lmn_w16(qh + 16 + 4 * t);
    r.sc = lmn_u16(p + 192 + 2 * c);
    r.d = lmn_u16(p + 208);
  }
  static LMN void dec(const Raw& r, int u, int& b0, int& b1, float& a, float& a2, float& b) {
    const int k = u & 3, sl = (k >> 1) * 4, sh = 2 * k;
    b0 = lmn_off(((r.l0 >> sl) & 0x0F0F0F0Fu) | (((r.h0 >> sh) & 0x03030303u) << 4), 32u);
    b1 = lmn_off(((r.l1 >> sl) & 0x0F0F0F0Fu) | (((r.h1 >> sh) & 0x03030303u) << 4), 32u);
    const float d = lmn_h16(r.d);
    a = __fmul_rn(d, (float)(signed char)(r.sc & 255u));
    a2 = __fmul_rn(d, (float)(signed char)((r.sc >> 8) & 255u));
    b = 0.0f;
  }
};
/* (float)c for |c| < 2^22, exactly: 1.5 2^23 + c has c in its low mantissa bits (an MMA's sum
   over a 32-value block is at most 32 x 128 x 127 in magnitude). */
LMN float lmn_i2f(int c) { return __fsub_rn(__int_as_float(0x4B400000 + c), 12582912.0f); }
LMN void lmn_mma_s8_k16(int* c, int a0, int a1, int b0) {
  asm("mma.sync.aligned.m16n8k16.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5}, {%6}, "
      "{%0,%1,%2,%3};\n"
      : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
      : "r"(a0), "r"(a1), "r"(b0));
}
LMN void lmn_mma_s8(int* c, const int* a, int b0, int b1) {
  asm("mma.sync.aligned.m16n8k32.row.col.s32.s8.s8.s32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
               "{%8,%9}, {%0,%1,%2,%3};\n"
               : "+r"(c[0]), "+r"(c[1]), "+r"(c[2]), "+r"(c[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
#endif
)";

KernelGen gen_qgemm_q8(const LlirNode& n, const GenContext& ctx) {
  const bool split = n.op == &kQGemmQ8S;
  const GemmOperands op = gemm_operands(
      n, split, [](DType x, DType w) { return x == cuda_activation_format(w); },
      "q8_1 activation rows beside q4_0, q4_1, q5_0, q5_1 or q8_0 weights (q8_k beside q4_k, "
      "q5_k or q6_k)");
  const DType tx = op.tx, tw = op.tw;
  const bool k_type = !legacy_type(tw);
  const bool two_scales = tw == DType::Q6_K;  // two 16-value scales a unit
  const Expr &M = op.M, &N = op.N, &K = op.K;
  const int64_t NU = op.units;
  Codegen cg(n, ctx);
  cg.require(M * N);
  cg.require(M * K);
  cg.require(N * K);
  const std::string& I = cg.idx();
  const std::string T = (split ? "QBS_" : "QB_") + quant_tag(tw);
  const std::string XB = std::to_string(storage_bytes(tx, K.as_const()));
  const int slices = env_int("LUMINAL_CUDA_QGEMM_SLICES", 8, 1, kWarps);
  if (kWarps % slices != 0) throw Error("LUMINAL_CUDA_QGEMM_SLICES must be 1, 2, 4 or 8");
  const int groups = kWarps / slices, cols = 32 * groups;  // weight rows a block
  const std::string S = std::to_string(slices);
  // An MMA's integer sum as a float: lmn_i2f (an integer add and a float subtract, the same
  // value), or with LUMINAL_CUDA_QGEMM_I2F=0 the conversion instruction (a quarter of the FMA
  // rate).
  const bool add_form = env_switch_on("LUMINAL_CUDA_QGEMM_I2F");
  auto i2f = [&](const std::string& v) { return add_form ? "lmn_i2f(" + v + ")" : "(float)" + v; };
  std::string body = lines({
      "  const " + I + " M = " + cg.c(M) + ", N = " + cg.c(N) + ";",
      "  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, t = lane & 3;",
      "  const int slice = warp % " + S + ", grp = warp / " + S + ";",
      "  const " + I + " m0 = (" + I + ")blockIdx.x * " + std::to_string(kRowsPerBlock) + ";",
      "  const " + I + " nw = (" + I + ")blockIdx.y * " + std::to_string(cols) + " + grp * 32;",
      "  __shared__ float part[" + std::to_string(kWarps) + "][32][33];",
      "  const unsigned char* wr[4];",
  });
  if (split) body += "  const unsigned char* wh[4];\n";
  // Weight row p's blocks (the split layout: its bodies, and its heads after all the bodies).
  for (int j = 0; j < 4; ++j)
    weight_row_pointer(cg, op, "nw + " + std::to_string(8 * j) + " + g", j, body);
  // Slice s takes blocks [u0, u1): NU split as evenly as can be.
  body += lines({
      "  const unsigned char* xr[4];",
      "#pragma unroll",
      "  for (int i = 0; i < 4; ++i) {",
      "    const " + I + " r = m0 + (i >> 1) * 16 + (i & 1) * 8 + g;",
      "    xr[i] = r < M ? (const unsigned char*)in0 + (long long)r * " + XB + "LL : nullptr;",
      "  }",
      "  float acc[2][4][4];",
      "#pragma unroll",
      "  for (int i = 0; i < 32; ++i) (&acc[0][0][0])[i] = 0.0f;",
      "  const int u0 = slice * " + std::to_string(NU) + " / " + S + ", u1 = (slice + 1) * " +
          std::to_string(NU) + " / " + S + ";",
      "#pragma unroll 2",
      "  for (int u = u0; u < u1; ++u) {",
      "    int a[2][4];",
      "    float dx[4], sx[4];",
      "#pragma unroll",
      "    for (int i = 0; i < 4; ++i) {",
  });
  // An activation unit: its words t and t + 4, d, and the sum of its values for a min term (Q8_1:
  // s; Q8_K: d times the unit's two 16-value sums).
  if (k_type)
    body += lines({
        "      int lo = 0, hi = 0;",
        "      unsigned int bs = 0u;",
        "      float dxi = 0.0f;",
        "      if (xr[i]) {",
        "        const unsigned char* p = xr[i] + (u >> 3) * 292;",
        "        const unsigned char* q = p + 4 + 32 * (u & 7);",
        "        dxi = __ldg((const float*)p);",
        "        bs = __ldg((const unsigned int*)(p + 260 + 4 * (u & 7)));",
        "        lo = __ldg((const int*)(q + 4 * t));",
        "        hi = __ldg((const int*)(q + 16 + 4 * t));",
        "      }",
        "      dx[i] = dxi;",
        "      sx[i] = lmn_bsum2(dxi, bs);",
    });
  else
    body += lines({
        "      int lo = 0, hi = 0;",
        "      unsigned int ds = 0u;",
        "      if (xr[i]) {",
        "        const unsigned char* p = xr[i] + u * 36;",
        "        ds = __ldg((const unsigned int*)p);",
        "        lo = __ldg((const int*)(p + 4 + 4 * t));",
        "        hi = __ldg((const int*)(p + 20 + 4 * t));",
        "      }",
        "      dx[i] = lmn_h16(ds);",
        "      sx[i] = lmn_h16(ds >> 16);",
    });
  body += lines({
      "      a[i >> 1][i & 1] = lo;",
      "      a[i >> 1][2 + (i & 1)] = hi;",
      "    }",
      "#pragma unroll",
      "    for (int j = 0; j < 4; ++j) {",
      "      int b0 = 0, b1 = 0;",
  });
  // The weight unit: the K types give a scale for each half (Q6_K's differ: two k16 products).
  if (k_type)
    body += lines({
        "      float aw = 0.0f, aw2 = 0.0f, bw = 0.0f;",
        "      if (wr[j]) " + T + "::get(wr[j], u, t, b0, b1, aw, aw2, bw);",
        "      const float a0h = __shfl_sync(0xffffffffu, aw2, 8 * t);",
        "      const float a1h = __shfl_sync(0xffffffffu, aw2, 8 * t + 4);",
    });
  else
    body += lines({
        "      float aw = 0.0f, bw = 0.0f;",
        "      if (wr[j]) " + T + "::get(" + (split ? "wr[j], wh[j]" : "wr[j]") +
            ", u, t, b0, b1, aw, bw);",
    });
  body += lines({
      "      const float a0 = __shfl_sync(0xffffffffu, aw, 8 * t);",
      "      const float a1 = __shfl_sync(0xffffffffu, aw, 8 * t + 4);",
      "      const float m0w = " + T + "::HAS_B ? __shfl_sync(0xffffffffu, bw, 8 * t) : 0.0f;",
      "      const float m1w = " + T + "::HAS_B ? __shfl_sync(0xffffffffu, bw, 8 * t + 4) : 0.0f;",
      "#pragma unroll",
      "      for (int mi = 0; mi < 2; ++mi) {",
      "        int c[4] = {0, 0, 0, 0};",
  });
  if (two_scales)
    body += lines({
        "        int c2[4] = {0, 0, 0, 0};",
        "        lmn_mma_s8_k16(c, a[mi][0], a[mi][1], b0);",
        "        lmn_mma_s8_k16(c2, a[mi][2], a[mi][3], b1);",
        "        float* o = acc[mi][j];",
        "        const float x0 = dx[2 * mi], x1 = dx[2 * mi + 1];",
        "        o[0] = __fmaf_rn(__fmul_rn(a0, x0), " + i2f("c[0]") + ", o[0]);",
        "        o[1] = __fmaf_rn(__fmul_rn(a1, x0), " + i2f("c[1]") + ", o[1]);",
        "        o[2] = __fmaf_rn(__fmul_rn(a0, x1), " + i2f("c[2]") + ", o[2]);",
        "        o[3] = __fmaf_rn(__fmul_rn(a1, x1), " + i2f("c[3]") + ", o[3]);",
        "        o[0] = __fmaf_rn(__fmul_rn(a0h, x0), " + i2f("c2[0]") + ", o[0]);",
        "        o[1] = __fmaf_rn(__fmul_rn(a1h, x0), " + i2f("c2[1]") + ", o[1]);",
        "        o[2] = __fmaf_rn(__fmul_rn(a0h, x1), " + i2f("c2[2]") + ", o[2]);",
        "        o[3] = __fmaf_rn(__fmul_rn(a1h, x1), " + i2f("c2[3]") + ", o[3]);",
    });
  else
    body += lines({
        "        lmn_mma_s8(c, a[mi], b0, b1);",
        "        float* o = acc[mi][j];",
        "        const float x0 = dx[2 * mi], x1 = dx[2 * mi + 1];",
        "        o[0] = __fmaf_rn(__fmul_rn(a0, x0), " + i2f("c[0]") + ", o[0]);",
        "        o[1] = __fmaf_rn(__fmul_rn(a1, x0), " + i2f("c[1]") + ", o[1]);",
        "        o[2] = __fmaf_rn(__fmul_rn(a0, x1), " + i2f("c[2]") + ", o[2]);",
        "        o[3] = __fmaf_rn(__fmul_rn(a1, x1), " + i2f("c[3]") + ", o[3]);",
    });
  body += lines({
      "        if (" + T + "::HAS_B) {",
      "          o[0] = __fmaf_rn(m0w, sx[2 * mi], o[0]);",
      "          o[1] = __fmaf_rn(m1w, sx[2 * mi], o[1]);",
      "          o[2] = __fmaf_rn(m0w, sx[2 * mi + 1], o[2]);",
      "          o[3] = __fmaf_rn(m1w, sx[2 * mi + 1], o[3]);",
      "        }",
      "      }",
      "    }",
      "  }",
      // The slices' sums joined in slice order through shared memory: element (row, column) of
      // the warp group's 32 x 32 tile at part[warp][row][column].
      "#pragma unroll",
      "  for (int mi = 0; mi < 2; ++mi)",
      "#pragma unroll",
      "    for (int j = 0; j < 4; ++j)",
      "#pragma unroll",
      "      for (int e = 0; e < 4; ++e)",
      "        part[warp][mi * 16 + (e >> 1) * 8 + g][j * 8 + 2 * t + (e & 1)] = acc[mi][j][e];",
      "  __syncthreads();",
      "  for (int e = threadIdx.x; e < " + std::to_string(groups * 32 * 32) +
          "; e += " + std::to_string(kBlock) + ") {",
      "    const int gi = e / 1024, row = (e / 32) % 32, col = e % 32;",
      "    const " + I + " r = m0 + row, p = (" + I + ")blockIdx.y * " + std::to_string(cols) +
          " + gi * 32 + col;",
      "    if (r >= M || p >= N) continue;",
      "    float v = part[gi * " + S + "][row][col];",
      "    for (int sl = 1; sl < " + S + "; ++sl) v = __fadd_rn(v, part[gi * " + S +
          " + sl][row][col]);",
      "    out[r * N + p] = v;",
      "  }",
  });
  std::string k = "extern \"C\" __global__ void __launch_bounds__(" + std::to_string(kBlock) +
                  ") LMN_ENTRY(lmn_qgemm)(" + cg.params() + ") {\n";
  k += cg.dims_prologue() + body + "}\n";
  KernelGen gen;
  gen.source = Codegen::unit(quant_device_source() + kMmaSource + k);
  gen.launches.push_back(Launch{
      "lmn_qgemm",
      kBlock,
      {ceil_div(M, Expr(int64_t{kRowsPerBlock})), ceil_div(N, Expr(int64_t{cols})), Expr(1)}});
  gen.bytes = N * Expr(static_cast<int64_t>(storage_bytes(tw, K.as_const()))) +
              M * Expr(static_cast<int64_t>(storage_bytes(tx, K.as_const()))) + M * N * Expr(4);
  gen.flops = M * N * K * Expr(2);
  return gen;
}

}  // namespace

bool legacy_type(DType t) {
  return t == DType::Q4_0 || t == DType::Q4_1 || t == DType::Q5_0 || t == DType::Q5_1 ||
         t == DType::Q8_0;
}

GemmOperands gemm_operands(const LlirNode& n, bool split, bool (*x_ok)(DType x, DType w),
                           const std::string& x_names) {
  const std::string what(n.op->name);
  if (n.input_dtypes.size() != 2 || n.attrs.views.size() != 2)
    throw Error(what + ": needs an activation and a weight");
  GemmOperands g;
  g.tx = n.input_dtypes[0];
  g.tw = n.input_dtypes[1];
  g.split = split;
  const bool k_type = g.tw == DType::Q4_K || g.tw == DType::Q5_K || g.tw == DType::Q6_K;
  if (!(legacy_type(g.tw) || k_type) || !x_ok(g.tx, g.tw) || n.attrs.dtype != DType::F32 ||
      (split && k_type))
    throw Error(what + ": reads " + x_names + " into f32 (the split form legacy types only), got " +
                std::string(name(g.tx)) + " and " + std::string(name(g.tw)) + " into " +
                std::string(name(n.attrs.dtype)));
  g.axis = n.attrs.axis;
  const View& xv = n.attrs.views[0];
  const View& wv = n.attrs.views[1];
  if (xv.has_base() || wv.has_base())
    throw Error(what + ": an input read at an element offset is not supported");
  g.K = wv.dims[static_cast<size_t>(g.axis)];
  if (!g.K.is_const() || g.K.as_const() % block_size(g.tw) != 0)
    throw Error(what + ": k must be a static whole number of 32-value blocks");
  const std::optional<Axes> ax = axes_of(xv, wv, g.axis);
  if (!ax) throw Error(what + ": the activation rows' axes must come before the weight's");
  // The activation: contiguous rows [m axes..., K] (rows_view_over).
  if (ax->m.empty() ||
      !(xv.strides[static_cast<size_t>(ax->m.back())].substitute("z", Expr(1)) == g.K))
    throw Error(what + ": the activation must be contiguous rows");
  g.M = Expr(1);
  g.N = Expr(1);
  for (int d : ax->m)
    g.M = g.M * wv.dims[static_cast<size_t>(d)];
  for (int d : ax->n)
    g.N = g.N * wv.dims[static_cast<size_t>(d)];
  g.units = g.K.as_const() / 32;
  // W's row of output column p: W through its view with the m axes at 0.
  g.wrow = wv;
  for (int d : ax->m)
    g.wrow.dims[static_cast<size_t>(d)] = Expr(1);
  if (split) {
    g.layout = split_layout(g.tw).value_or(SplitLayout{});
    g.blocks = n.attrs.int_value;
    if (g.layout.body == 0 || g.blocks <= 0)
      throw Error(what + ": needs a " + std::string(name(g.tw)) +
                  " weight in its split layout and its block count");
  }
  return g;
}

void weight_row_pointer(Codegen& cg, const GemmOperands& g, const std::string& p, int j,
                        std::string& body) {
  const std::string pj = "p" + std::to_string(j), js = std::to_string(j);
  body += "  {\n    const " + cg.idx() + " " + pj + " = " + p + ";\n";
  const std::string off = cg.view_offset(g.wrow, pj, "w" + js, body, g.axis);
  const std::string rb = "(long long)(" + off + " / " + std::to_string(block_size(g.tw)) + ")";
  if (g.split)
    body += "    wr[" + js + "] = " + pj + " < N ? (const unsigned char*)in1 + " + rb + " * " +
            std::to_string(g.layout.body) + "LL : nullptr;\n    wh[" + js +
            "] = (const unsigned char*)in1 + " + std::to_string(g.blocks * g.layout.body) +
            "LL + " + rb + " * " + std::to_string(g.layout.head) + "LL;\n  }\n";
  else
    body += "    wr[" + js + "] = " + pj + " < N ? (const unsigned char*)in1 + " + rb + " * " +
            std::to_string(block_bytes(g.tw)) + "LL : nullptr;\n  }\n";
}

const char* qgemm_device_source() { return kMmaSource; }

void register_qgemm_ops(std::vector<const CudaOp*>& ops) {
  static const CudaOp qgemm{&kQGemmQ8, "cuda.library", qgemm_rules, gen_qgemm_q8};
  static const CudaOp qgemm_s{&kQGemmQ8S, "cuda.library", nullptr, gen_qgemm_q8};
  ops.push_back(&qgemm);
  ops.push_back(&qgemm_s);
}

}  // namespace luminal::cuda
