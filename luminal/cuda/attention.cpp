// cuda.Attention: flash-decoding, the attention rule's e-node (kernels/attention_rule.hpp) on the
// GPU. A decode step's attention is three kernels today (the scores' cuda.Gemv, the masked softmax
// cuda.Row, P @ V's cuda.GemvKN); here it is one, reading each K and V row once for the query heads
// that share it, the context split over a thread block cluster and combined at the end.
//
// The form: the row program is a softmax of an element value x computed from the scores (load j)
// and other loads (masks, positions): the program rows::match_online finds (x, its row max m,
// e = exp2((x + m * -1) * C) with C > 0, its row sum s), whose result is e * (1 / s) (optionally
// cast to another float dtype). Rows whose K and V views step by 0 (a KV head's query heads, the
// group G, at most 8) share a block's reads; the other row axes (B blocks' worth) each get a
// cluster of CL blocks (cluster_size). Block q of a cluster takes keys l = q * W + w, + CL * W, ...
// (warp w of W), U keys a warp at once (up to 8, fewer for wide heads): the lanes load the U K
// rows (d elements, lane t taking t, t + 32, ...) and V rows, each query head's score of each key
// is a dot product over the lanes (warp butterflies, all U * G of them before the running sums),
// x is the program's element code at (row, l), and the warp's running max, sum and products
// (lane t holding outputs t, t + 32, ...) take the keys in order as online softmax does: with m'
// the new max, a = exp2((m - m') * C), s = s * a + e, acc = acc * a + e * V[l] (keys whose x and
// running max are -inf add nothing). Then the warps of a block, and the blocks of the cluster in
// rank order (distributed shared memory), join theirs the same way in double, and out = acc / s:
// the same value as the three kernels up to rounding (the running rescaling, the sums' order).
// All query heads masked everywhere give 0 / 0 (NaN), as the reference's row does.
//
// Opt-in until session 39 (LUMINAL_CUDA_ATTENTION=1 then): right on an H100
// (tests/cuda/attention_test.cpp, 2026-12-06) and faster at context 128 (8B q4_0 decode 2.749
// -> 2.670 ms, 64 kernels fewer; SmolLM2 q4_1 0.974 -> 0.951), but slower at 1024 (8B bf16 6.316
// -> 6.551 ms: about 15 us a layer more from 128 to 1024, against 7 us for the three kernels;
// BENCHMARKS.md, sessions 31 and 35). The program's other loads (the mask's positions, which an
// Iota kernel writes) were read inside the running sums, a dependent load per key and query head in
// each warp's serial chain: they are now issued with the key's K and V rows (xl<i> below): on an
// H100 (session 36) 8B bf16 decode 6.121 -> 6.032 ms at context 128 and 6.385 -> 6.457 at 1024,
// closer but still slower there. With the next keys' loads issued first and fewer query heads a
// cluster where blocks are few (block_group, prefetch_keys below) it was ahead at both contexts on
// an H200 (session 39) and is on by default; LUMINAL_CUDA_ATTENTION=0 gives the three kernels.
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "luminal/core/error.hpp"
#include "luminal/cuda/cuda_op.hpp"
#include "luminal/cuda/matmul_operands.hpp"
#include "luminal/cuda/prelude.hpp"
#include "luminal/cuda/q8_store.hpp"
#include "luminal/cuda/quant_device.hpp"
#include "luminal/cuda/row_gen.hpp"
#include "luminal/kernels/attention_rule.hpp"
#include "luminal/kernels/fused_program.hpp"
#include "luminal/kernels/row_rule.hpp"

namespace luminal::cuda {

namespace {

const OpDef kAttention{.name = "cuda.Attention"};
// The same with the quantize to Q8_1 that reads its output in its store (below cuda.Attention's 1
// and cuda.QuantizeQ8's 0.5 together, as cuda.FusedQ8)
const OpDef kAttentionQ8{.name = "cuda.AttentionQ8", .seed_cost = 1.45};

constexpr int kWarps = 8;
constexpr int kMaxUnroll = 8;  // keys a warp loads before it takes them in (fewer for wide heads)
constexpr int kBlock = 32 * kWarps;
constexpr int kMaxCluster = 8;
constexpr int64_t kMaxGroup = 8;
constexpr int64_t kMaxHeadDim = 256;
constexpr int64_t kMaxGroupOutputs = 1024;  // G * n: the block's partial sums in shared memory

/// What the kernel needs of a node (or a candidate e-node), or nothing when it has no such form.
struct AttnForm {
  size_t j = 0, kc = 0, vc = 0;  // Q's child (load j: the scores), K's, V's
  int q = 0;                     // rank of the row domain D = [rows..., L]
  Shape D;
  std::vector<View> views;  // per child of the row program: its view over D (j: unused)
  std::vector<int64_t> row_dims;
  std::vector<bool> group_axis;  // per row axis: K and V step by 0 (the query heads of a KV head)
  int64_t rows = 0, G = 0, B = 0, d = 0, n = 0;
  rows::Online on;
  std::vector<int> x_code;  // the element instructions x needs, in program order
  const FusedProgram* prog = nullptr;
};

bool float_type(DType t) { return t == DType::F32 || t == DType::BF16 || t == DType::F16; }

std::optional<AttnForm> attn_form(const Attrs& a, const std::vector<DType>& in) {
  AttnForm f;
  const size_t count = a.views.size();
  if (count < 3 || in.size() != count || a.axis < 0 || static_cast<size_t>(a.axis) >= count - 2)
    return std::nullopt;
  f.j = static_cast<size_t>(a.axis);
  f.kc = count - 2;
  f.vc = count - 1;
  f.prog = dynamic_cast<const FusedProgram*>(a.payload.get());
  // (Q8_1: cuda.AttentionQ8, 32 outputs of a head a block)
  if (!f.prog || (!float_type(a.dtype) && a.dtype != DType::Q8_1)) return std::nullopt;
  for (size_t c : {f.j, f.kc, f.vc})
    if (!float_type(in[c])) return std::nullopt;
  const View& qv = a.views[f.j];
  const View& kv = a.views[f.kc];
  const View& vv = a.views[f.vc];
  f.q = qv.rank() - 1;
  if (f.q < 1 || kv.rank() != f.q + 1 || vv.rank() != f.q + 1) return std::nullopt;
  f.D.assign(qv.dims.begin(), qv.dims.end() - 1);
  const auto qs = static_cast<size_t>(f.q);
  if (!qv.dims[qs].is_const() || !vv.dims[qs - 1].is_const()) return std::nullopt;
  f.d = qv.dims[qs].as_const();
  f.n = vv.dims[qs - 1].as_const();
  if (f.d < 1 || f.d > kMaxHeadDim || f.n < 1 || f.n > kMaxHeadDim) return std::nullopt;
  f.rows = 1;
  f.G = 1;
  for (size_t ax = 0; ax + 1 < qs; ++ax) {
    if (!f.D[ax].is_const()) return std::nullopt;
    const int64_t len = f.D[ax].as_const();
    f.row_dims.push_back(len);
    f.rows *= len;
    const bool group = kv.strides[ax] == Expr(0) && vv.strides[ax] == Expr(0);
    f.group_axis.push_back(group);
    if (group) f.G *= len;
  }
  if (f.rows < 1 || f.G > kMaxGroup || f.G * f.n > kMaxGroupOutputs) return std::nullopt;
  if (a.dtype == DType::Q8_1 && f.n % 32 != 0) return std::nullopt;
  // static shared memory: the warps' partial sums (f32) and the block's (f64)
  const int64_t np = (f.n + 31) / 32 * 32;
  if (int64_t{kWarps} * f.G * (np + 2) * 4 + f.G * (f.n + 2) * 8 > 47 * 1024) return std::nullopt;
  f.B = f.rows / f.G;
  // The row program over D: uniform values, passes, the online softmax.
  const std::vector<FusedInst>& I = f.prog->insts;
  if (f.prog->num_children() > static_cast<int>(count - 2)) return std::nullopt;
  f.views.resize(count - 2);
  for (size_t c = 0; c + 2 < count; ++c) {
    if (c == f.j) continue;
    std::optional<View> over = view_over(a.views[c], f.D);
    if (!over) return std::nullopt;
    f.views[c] = *over;
  }
  const size_t N = I.size();
  for (const FusedInst& x : I) {
    if (x.op != FusedOpcode::Load) continue;
    if (x.a < 0 || static_cast<size_t>(x.a) >= count - 2) return std::nullopt;
    if (static_cast<size_t>(x.a) == f.j && !float_type(x.dtype)) return std::nullopt;  // scores
  }
  const rows::Levels lv = rows::levels(*f.prog, [&](int c) {
    return static_cast<size_t>(c) != f.j &&
           f.views[static_cast<size_t>(c)].strides.back() == Expr(0);
  });
  std::optional<rows::Online> on = rows::match_online(*f.prog, lv.reds, lv.uniform);
  if (!on) return std::nullopt;
  f.on = *on;
  // The result: e * (1 / s), perhaps cast to other float dtypes (a 16-bit model's P, rounded
  // to bf16 and read back as f32 by the product: the kernel does not round P).
  int root = static_cast<int>(N) - 1;
  while (I[static_cast<size_t>(root)].op == FusedOpcode::Cast) {
    if (!float_type(I[static_cast<size_t>(root)].dtype)) return std::nullopt;
    root = I[static_cast<size_t>(root)].a;
  }
  const FusedInst& r = I[static_cast<size_t>(root)];
  if (r.op != FusedOpcode::Mul || r.dtype != DType::F32) return std::nullopt;
  const int other = r.a == f.on.e ? r.b : (r.b == f.on.e ? r.a : -1);
  if (other < 0 || I[static_cast<size_t>(other)].op != FusedOpcode::Recip ||
      I[static_cast<size_t>(other)].a != f.on.s)
    return std::nullopt;
  // x's element code: its closure (no reductions in it).
  std::vector<bool> need(N, false);
  need[static_cast<size_t>(f.on.u)] = true;
  for (size_t i = N; i-- > 0;) {
    if (!need[i]) continue;
    if (is_row_reduce(I[i].op)) return std::nullopt;
    if (I[i].op == FusedOpcode::Load || I[i].op == FusedOpcode::Const) continue;
    for (int32_t o : {I[i].a, I[i].b, I[i].c})
      if (o >= 0) need[static_cast<size_t>(o)] = true;
  }
  for (size_t i = 0; i < N; ++i)
    if (need[i]) f.x_code.push_back(static_cast<int>(i));
  return f;
}

/// The view of `v`'s leading row axes only (q: the rank of D = [rows..., L]).
View rows_view(const View& v, int q) {
  View r;
  r.dims.assign(v.dims.begin(), v.dims.begin() + (q - 1));
  r.strides.assign(v.strides.begin(), v.strides.begin() + (q - 1));
  r.base = v.base;
  return r;
}

/// Blocks a cluster (the context split over them, merged through distributed shared memory):
/// 8 by default. LUMINAL_CUDA_ATTENTION_CLUSTER=N (1, 2, 4 or 8) sets it: at a short context a
/// block's warps hold few keys each (SmolLM2's 128 keys over 8 blocks of 8 warps: 2 a warp) and
/// the two cluster barriers and the merge may cost more than the keys; with 1 there is no cluster
/// (the block's merge stores the outputs).
int cluster_size() {
  const int c = env_int("LUMINAL_CUDA_ATTENTION_CLUSTER", kMaxCluster, 1, kMaxCluster);
  if (c != 1 && c != 2 && c != 4 && c != 8)
    throw Error("LUMINAL_CUDA_ATTENTION_CLUSTER must be 1, 2, 4 or 8");
  return c;
}

/// The query heads of a KV head one cluster takes (a divisor of G, the KV head's query heads; B:
/// the clusters with all G). By default the most (each K and V row read once) that still give
/// kMinBlocks blocks: with all G the SmolLM2 decode (G = 3, B = 3) gets 24 blocks, too few to
/// keep an H100's or H200's copy bandwidth busy; with one a cluster it gets 72, and the 8B's
/// (G = 4, B = 8) keeps its 64 (session 39, an H200, prefetching on: SmolLM2 q4_1 0.683 -> 0.660 ms
/// at context 128 and 0.850 -> 0.754 at 1024; the 8B q4_0 with one a cluster 2.290 -> 2.352 and
/// 2.539 -> 2.627). LUMINAL_CUDA_ATTENTION_GROUP=N (1..8) caps it instead.
int64_t block_group(int64_t G, int64_t B, int cluster) {
  constexpr int64_t kMinBlocks = 64;
  const int64_t cap = env_int("LUMINAL_CUDA_ATTENTION_GROUP", 0, 1, static_cast<int>(kMaxGroup));
  int64_t g = cap > 0 ? std::min(G, cap) : G;
  for (;; --g) {
    if (G % g != 0) continue;
    if (cap > 0 || g == 1 || B * (G / g) * cluster >= kMinBlocks) return g;
  }
}

/// A warp issues its next keys' loads before it takes in the ones it holds, so that they overlap
/// the running sums (twice the registers of K, V and the other loads: 192 a thread for the 8B's
/// kernel against 126, no spills). On by default (session 39, an H200: 8B q4_0 decode 2.308 ->
/// 2.290 ms at context 128 and 2.645 -> 2.539 at 1024); LUMINAL_CUDA_ATTENTION_PREFETCH=0 loads
/// them after, as before.
bool prefetch_keys() { return env_switch_on("LUMINAL_CUDA_ATTENTION_PREFETCH"); }

KernelGen gen_attention(const LlirNode& n, const GenContext& ctx) {
  std::optional<AttnForm> form = attn_form(n.attrs, n.input_dtypes);
  if (!form)
    throw Error(std::string(n.op->name) + ": " + n.attrs.to_string() +
                " has no flash-decoding form (an online softmax row, at most 8 query heads a "
                "KV head, head dims at most 256)");
  // A cluster takes G query heads of one KV head (block_group): the group's rows split in parts.
  const int64_t group = form->G;
  const int CL = cluster_size();
  form->G = block_group(group, form->B, CL);
  form->B *= group / form->G;
  const AttnForm& f = *form;
  const bool prefetch = prefetch_keys();
  const std::vector<FusedInst>& I = f.prog->insts;
  Codegen cg(n, ctx);
  const Expr L = f.D.back();
  cg.require(L);
  const View& qv = n.attrs.views[f.j];
  const View& kv = n.attrs.views[f.kc];
  const View& vv = n.attrs.views[f.vc];
  const DType qt = n.input_dtypes[f.j], kt = n.input_dtypes[f.kc], vt = n.input_dtypes[f.vc];
  const std::string Is = cg.idx();
  const int DU = static_cast<int>((f.d + 31) / 32), NU = static_cast<int>((f.n + 31) / 32);
  const std::string Gs = std::to_string(f.G), Ws = std::to_string(kWarps), CLs = std::to_string(CL),
                    ns = std::to_string(f.n), DUs = std::to_string(DU), NUs = std::to_string(NU),
                    STs = std::to_string(CL * kWarps);
  // keys a warp has in flight: up to 8, at most 16 registers of K and of V a lane
  // (LUMINAL_CUDA_ATTENTION_KEYS=1..8 sets it, for the A/Bs)
  const int U = env_int("LUMINAL_CUDA_ATTENTION_KEYS",
                        std::max(1, std::min(kMaxUnroll, 16 / std::max(DU, NU))), 1, kMaxUnroll);
  const std::string Us = std::to_string(U);
  const std::string C = literal(DType::F32, I[static_cast<size_t>(f.on.c)].value, 0);
  // The rows of block b: rows_tab[b * G + g] (row-major over the row axes: the group axes'
  // indices g, the others' b, each in axis order).
  std::string tab = "static __device__ const int LMN_ENTRY(lmn_att_rows)[] = {";
  bool identity = true;
  {
    std::vector<int64_t> idx(f.row_dims.size(), 0);
    std::vector<std::vector<int64_t>> by_block(static_cast<size_t>(f.B * f.G / group));
    for (int64_t r = 0; r < f.rows; ++r) {
      int64_t b = 0;
      for (size_t ax = 0; ax < f.row_dims.size(); ++ax)
        if (!f.group_axis[ax]) b = b * f.row_dims[ax] + idx[ax];
      by_block[static_cast<size_t>(b)].push_back(r);
      for (size_t ax = f.row_dims.size(); ax-- > 0;) {
        if (++idx[ax] < f.row_dims[ax]) break;
        idx[ax] = 0;
      }
    }
    bool first = true;
    int64_t at = 0;
    for (const std::vector<int64_t>& rs : by_block) {
      if (static_cast<int64_t>(rs.size()) != group)
        throw Error("cuda.Attention: a block's rows are not one query group");
      for (int64_t r : rs) {
        tab += (first ? "" : ", ") + std::to_string(r);
        first = false;
        identity = identity && r == at++;
      }
    }
  }
  tab += "};\n";
  // Row j of the table is j where the blocks take the rows in order (the 8B's query heads): the
  // index itself then, not a load from global memory that every other load of the kernel waits
  // for.
  // LUMINAL_CUDA_ATTENTION_EARLY=0: the table always, and the merge's loads where they are used
  // (the forms before 2026-12-07, to compare).
  const bool early = env_switch_on("LUMINAL_CUDA_ATTENTION_EARLY");
  identity = identity && early;
  if (identity) tab.clear();
  auto rows_at = [&](const std::string& j) {
    return identity ? "(" + j + ")" : "LMN_ENTRY(lmn_att_rows)[" + j + "]";
  };
  // The store of output e of query head g: its value, or (cuda.AttentionQ8) the warp's 32
  // consecutive outputs of one head as a Q8_1 block with QuantizeQ8's warp code (n a multiple of
  // 32, so the loop below gives a warp 32 outputs of one head; int_value 1: the split layout of
  // rows of the quantize's length).
  const bool q8 = n.attrs.dtype == DType::Q8_1;
  const std::string out_at = "(" + Is + ")" + rows_at("b * " + Gs + " + g") + " * " + ns + " + e";
  const std::string q8_store =
      q8 ? q8_1_store_value(n, "st_f32(A / S)", out_at, "(int)(threadIdx.x & 31)", "    ")
         : "    out[" + out_at + "] = st_" + dtype_tag(n.attrs.dtype) + "(A / S);";
  auto in_name = [](size_t c) { return "in" + std::to_string(c); };
  // A loop in which lane t loads elements t, t + 32, ... (those below `bound`; where `guard`
  // also holds) of input `c` into dst[u], indexed `var`, at offset `at` (`indent`: its depth).
  auto lane_loads = [&](const std::string& indent, const std::string& dst, int units,
                        const std::string& var, int64_t bound, const std::string& guard, size_t c,
                        const std::string& at) {
    return lines({
        "#pragma unroll",
        indent + "for (int u = 0; u < " + std::to_string(units) + "; ++u) {",
        indent + "  const " + cg.idx() + " " + var + " = lane + 32 * u;",
        indent + "  " + dst + "[u] = " + guard + var + " < " + std::to_string(bound) +
            " ? (float)" + load_fn(n.input_dtypes[c], false) + "(" + in_name(c) + "[" + at +
            "]) : 0.0f;",
        indent + "}",
    });
  };

  std::string body;
  std::string pre;  // offsets computed once per thread
  const std::string k_row = cg.view_offset(rows_view(kv, f.q), "r0", "ok", pre);
  const std::string v_row = cg.view_offset(rows_view(vv, f.q), "r0", "ov", pre);
  const auto qa = static_cast<int>(f.q);
  const std::string q_t = cg.axis_offset(qv, qa, "t");
  const std::string k_l = cg.axis_offset(kv, qa - 1, "l");
  const std::string k_t = cg.axis_offset(kv, qa, "t");
  const std::string v_l = cg.axis_offset(vv, qa, "l");
  const std::string v_e = cg.axis_offset(vv, qa - 1, "e");

  // x at (row r, key l): the program's element code, load j being the score. Its other loads
  // (a mask, the positions an Iota kernel wrote) are issued with the key's K and V rows, into
  // xl<i>[uu][g] (xdecl, xload): read inside the running sums, each would be a dependent load
  // in the serial chain of a warp's keys (16 keys and 4 query heads a warp at context 1024).
  std::string xcode, xdecl, xload;
  std::vector<int> xloads;  // the instructions with such an array
  for (int i : f.x_code) {
    const FusedInst& in = I[static_cast<size_t>(i)];
    const std::string ct = "C_" + dtype_tag(in.dtype);
    std::string rhs;
    if (in.op == FusedOpcode::Load && static_cast<size_t>(in.a) == f.j) {
      rhs = "rd_" + dtype_tag(in.dtype) + "(dot)";
    } else if (in.op == FusedOpcode::Load) {
      const auto c = static_cast<size_t>(in.a);
      const std::string arr = "@X" + std::to_string(i);  // (xl<i>, or xn<i>: the next keys')
      xloads.push_back(i);
      const std::string off = cg.view_offset(f.views[c], "i", "o" + std::to_string(i), xload);
      // (kept in the input's storage type, converted where read: an i32 position is one
      // register, where its compute type, C_i32, takes two)
      xdecl += "    S_" + dtype_tag(n.input_dtypes[c]) + " " + arr + "[" + std::to_string(U) +
               "][" + std::to_string(f.G) + "];\n";
      xload += "          " + arr + "[uu][g] = " + in_name(c) + "[" + off + "];\n";
      rhs = load_fn(in.dtype, true) + "(xl" + std::to_string(i) + "[uu][g])";
    } else {
      rhs = inst_code(in, true);
    }
    xcode += "          const " + ct + " v" + std::to_string(i) + " = " + rhs + ";\n";
  }
  const std::string x = "(float)v" + std::to_string(f.on.u);

  body += lines({
      CL > 1 ? "  const unsigned rank = lmn_cluster_rank();" : "  const unsigned rank = 0u;",
      "  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;",
      "  const int b = (int)(blockIdx.x / " + CLs + ");",
      "  const " + Is + " r0 = " + rows_at("b * " + Gs) + ";",
  });
  body += pre;
  body += lines({
      "  float qv[" + Gs + "][" + DUs + "];",
      "#pragma unroll",
      "  for (int g = 0; g < " + Gs + "; ++g) {",
      "    const " + Is + " rq = " + rows_at("b * " + Gs + " + g") + ";",
  });
  {
    std::string qo;
    const std::string qrow2 = cg.view_offset(rows_view(qv, f.q), "rq", "oqg", qo);
    body += qo;
    body += lane_loads("    ", "qv[g]", DU, "t", f.d, "", f.j, qrow2 + " + " + q_t);
    body += "  }\n";
  }
  body += lines({
      "  float mx[" + Gs + "], sm[" + Gs + "], acc[" + Gs + "][" + NUs + "];",
      "#pragma unroll",
      "  for (int g = 0; g < " + Gs + "; ++g) {",
      "    mx[g] = __int_as_float(0xff800000);",
      "    sm[g] = 0.0f;",
      "#pragma unroll",
      "    for (int u = 0; u < " + NUs + "; ++u) acc[g][u] = 0.0f;",
      "  }",
  });
  const std::string step = std::to_string(CL * kWarps * U);
  auto with_prefix = [](std::string text, const std::string& prefix) {
    for (size_t at = text.find("@X"); at != std::string::npos; at = text.find("@X", at))
      text.replace(at, 2, prefix);
    return text;
  };
  // The U keys from `base` on (in steps of STs) into K rows `kd`, V rows `vd` and the other loads'
  // arrays `xd`<i>, declared first.
  auto key_loads = [&](const std::string& kd, const std::string& vd, const std::string& xd,
                       const std::string& base) {
    std::string code = "    float " + kd + "[" + Us + "][" + DUs + "], " + vd + "[" + Us + "][" +
                       NUs + "];\n" + with_prefix(xdecl, xd);
    code += lines({
        "#pragma unroll",
        "    for (int uu = 0; uu < " + Us + "; ++uu) {",
        "      const " + Is + " l = " + base + " + uu * " + STs + ";",
        "      const bool in = l < L;",
    });
    code += lane_loads("      ", kd + "[uu]", DU, "t", f.d, "in && ", f.kc,
                       k_row + " + " + k_l + " + " + k_t);
    code += lane_loads("      ", vd + "[uu]", NU, "e", f.n, "in && ", f.vc,
                       v_row + " + " + v_l + " + " + v_e);
    if (!xload.empty())
      code += lines({
          "      if (in) {",
          "#pragma unroll",
          "        for (int g = 0; g < " + Gs + "; ++g) {",
          "          const " + Is + " i = (" + Is + ")" + rows_at("b * " + Gs + " + g") +
              " * L + l;",
          with_prefix(xload, xd) + "        }",
          "      }",
      });
    return code + "    }\n";
  };
  // (with prefetching, the next keys' loads are issued before this step's scores and sums, and
  // their registers become this step's at its end)
  const std::string first = "(" + Is + ")rank * " + Ws + " + warp";
  if (prefetch) body += key_loads("kr", "vr", "xl", first);
  body += "  for (" + Is + " l0 = " + first + "; l0 < L; l0 += " + step + ") {\n";
  body +=
      prefetch ? key_loads("kn", "vn", "xn", "l0 + " + step) : key_loads("kr", "vr", "xl", "l0");
  body += lines({
      "#pragma unroll",
      // every key's scores first (independent products and butterflies), then the running sums
      "    float dots[" + Us + "][" + Gs + "];",
      "#pragma unroll",
      "    for (int uu = 0; uu < " + Us + "; ++uu)",
      "#pragma unroll",
      "      for (int g = 0; g < " + Gs + "; ++g) {",
      "        float p = 0.0f;",
      "#pragma unroll",
      "        for (int u = 0; u < " + DUs + "; ++u) p = fmaf(qv[g][u], kr[uu][u], p);",
      "        dots[uu][g] = p;",
      "      }",
      "#pragma unroll",
      "    for (int s = 16; s >= 1; s >>= 1)",
      "#pragma unroll",
      "      for (int uu = 0; uu < " + Us + "; ++uu)",
      "#pragma unroll",
      "        for (int g = 0; g < " + Gs + "; ++g)",
      "          dots[uu][g] += __shfl_xor_sync(0xffffffffu, dots[uu][g], s);",
      "#pragma unroll",
      "    for (int uu = 0; uu < " + Us + "; ++uu) {",
      "    const " + Is + " l = l0 + uu * " + STs + ";",
      "    if (l >= L) break;",
      "#pragma unroll",
      "    for (int g = 0; g < " + Gs + "; ++g) {",
      "      const float dot = dots[uu][g];",
      "      const " + Is + " i = (" + Is + ")" + rows_at("b * " + Gs + " + g") + " * L + l;",
      "      {",
  });
  body += xcode;
  body += lines({
      "        const float x = " + x + ";",
      "        const float mn = fmaxf(mx[g], x);",
      "        if (mn != __int_as_float(0xff800000)) {",
      "          const float al = exp2f((mx[g] - mn) * " + C + ");",
      "          const float ev = rd_f32(exp2f(rd_f32(rd_f32(x + rd_f32(mn * -1.0f)) * " + C +
          ")));",
      "          sm[g] = sm[g] * al + ev;",
      "#pragma unroll",
      "          for (int u = 0; u < " + NUs + "; ++u)",
      "            acc[g][u] = fmaf(ev, vr[uu][u], acc[g][u] * al);",
      "          mx[g] = mn;",
      "        }",
      "      }",
      "    }",
      "    }",
  });
  if (prefetch) {
    body += lines({
        "#pragma unroll",
        "    for (int uu = 0; uu < " + Us + "; ++uu) {",
        "#pragma unroll",
        "      for (int u = 0; u < " + DUs + "; ++u) kr[uu][u] = kn[uu][u];",
        "#pragma unroll",
        "      for (int u = 0; u < " + NUs + "; ++u) vr[uu][u] = vn[uu][u];",
    });
    for (int i : xloads) {
      const std::string x = std::to_string(i);
      body += "#pragma unroll\n      for (int g = 0; g < " + Gs + "; ++g) xl" + x + "[uu][g] = xn" +
              x + "[uu][g];\n";
    }
    body += "    }\n";
  }
  // A warp's 32 outputs are of one query head where n is a multiple of 32, so the merges' weights
  // (exp2 in double of a partial max less the head's max: one a warp, one a block) are the same for
  // all 32: lane w computes weight w and the others take it by shuffle (the same values, one exp2
  // a lane instead of 8). Off with LUMINAL_CUDA_ATTENTION_EARLY=0.
  static_assert(kWarps <= 32 && kMaxCluster <= 32, "a lane a weight");
  const bool shared_weights = early && f.n % 32 == 0;
  const std::string warp_weights =
      shared_weights ? "      const double aw = lane < " + Ws + " ? exp2((double)(wm[lane < " + Ws +
                           " ? lane : 0][g] - M) * (double)" + C + ") : 0.0;"
                     : std::string("      // (each weight where it is used)");
  // The cluster's merge of each output: with `early`, every block's three values loaded before
  // any is used, so the loads from the other blocks' shared memory are in flight together, not
  // one latency after another (LUMINAL_CUDA_ATTENTION_EARLY=0: each loaded where it is used).
  // (one block a cluster: its own shared memory)
  auto cluster_ld = [&](const std::string& at) {
    return CL > 1 ? "__longlong_as_double((long long)lmn_cluster_ld(&" + at + ", c))" : at;
  };
  const std::string over_c = "for (unsigned c = 0; c < " + CLs + "; ++c)";
  std::string merge = "    double ms[" + CLs + "]" +
                      (early ? ", ss[" + CLs + "], as[" + CLs + "]" : std::string()) +
                      ", M = __longlong_as_double((long long)0xfff0000000000000ull);\n" +
                      "#pragma unroll\n    " + over_c + " {\n      ms[c] = " + cluster_ld("bm[g]") +
                      ";\n";
  merge += early ? "      ss[c] = " + cluster_ld("bs[g]") +
                       ";\n      as[c] = " + cluster_ld("bacc[g][e]") +
                       ";\n    }\n#pragma unroll\n    " + over_c + " M = fmax(M, ms[c]);\n"
                 : "      M = fmax(M, ms[c]);\n    }\n";
  merge += "    double S = 0.0, A = 0.0;\n    if (M != __int_as_float(0xff800000)) {\n";
  if (early)
    merge += shared_weights
                 ? "      double mc = 0.0;\n#pragma unroll\n      " + over_c +
                       " if (lane == (int)c) mc = ms[c];\n      const double ac = lane < " + CLs +
                       " ? exp2((mc - M) * (double)" + C + ") : 0.0;\n"
                 : "      // (each weight where it is used)\n";
  merge += "#pragma unroll\n      " + over_c + " {\n        const double a = " +
           (shared_weights ? std::string("__shfl_sync(0xffffffffu, ac, c)")
                           : "exp2((ms[c] - M) * (double)" + C + ")") +
           ";\n        S += " + (early ? std::string("ss[c]") : cluster_ld("bs[g]")) +
           " * a;\n        A += " + (early ? std::string("as[c]") : cluster_ld("bacc[g][e]")) +
           " * a;\n      }\n    }";
  body += lines({
      "  }",
      // The warps' partial sums, then the block's (in warp order, in double).
      "  __shared__ float wm[" + Ws + "][" + Gs + "], ws[" + Ws + "][" + Gs + "];",
      "  __shared__ float wacc[" + Ws + "][" + Gs + "][" + std::to_string(NU * 32) + "];",
      "  __shared__ double bm[" + Gs + "], bs[" + Gs + "], bacc[" + Gs + "][" + ns + "];",
      "#pragma unroll",
      "  for (int g = 0; g < " + Gs + "; ++g) {",
      "    if (lane == 0) {",
      "      wm[warp][g] = mx[g];",
      "      ws[warp][g] = sm[g];",
      "    }",
      "#pragma unroll",
      "    for (int u = 0; u < " + NUs + "; ++u) wacc[warp][g][lane + 32 * u] = acc[g][u];",
      "  }",
      "  __syncthreads();",
      "  for (int o = threadIdx.x; o < " + std::to_string(f.G * f.n) +
          "; o += " + std::to_string(kBlock) + ") {",
      "    const int g = o / " + ns + ", e = o % " + ns + ";",
      "    float M = __int_as_float(0xff800000);",
      "#pragma unroll",
      "    for (int w = 0; w < " + Ws + "; ++w) M = fmaxf(M, wm[w][g]);",
      "    double S = 0.0, A = 0.0;",
      "    if (M != __int_as_float(0xff800000)) {",
      warp_weights,
      "#pragma unroll",
      "      for (int w = 0; w < " + Ws + "; ++w) {",
      "        const double a = " +
          (shared_weights ? "__shfl_sync(0xffffffffu, aw, w)"
                          : "exp2((double)(wm[w][g] - M) * (double)" + C + ")") +
          ";",
      "        S += (double)ws[w][g] * a;",
      "        A += (double)wacc[w][g][e] * a;",
      "      }",
      "    }",
      "    bacc[g][e] = A;",
      "    if (e == 0) {",
      "      bm[g] = (double)M;",
      "      bs[g] = S;",
      "    }",
      "  }",
      CL > 1 ? "  lmn_cluster_sync();" : "  __syncthreads();",
      // The cluster's blocks in rank order; each block stores a share of the outputs.
      "  for (int o = (int)rank * " + std::to_string(kBlock) + " + threadIdx.x; o < " +
          std::to_string(f.G * f.n) + "; o += " + std::to_string(kBlock * CL) + ") {",
      "    const int g = o / " + ns + ", e = o % " + ns + ";",
      merge,
      q8_store,
      "  }",
      // (a block's shared memory stays until the cluster's other blocks have read it)
      CL > 1 ? "  lmn_cluster_sync();" : "",
  });
  const std::string Lc = cg.c(L);
  std::string k = tab + "extern \"C\" __global__ void " +
                  (CL > 1 ? "__cluster_dims__(" + CLs + ", 1, 1) " : std::string()) +
                  "__launch_bounds__(" + std::to_string(kBlock) + ") LMN_ENTRY(lmn_attention)(" +
                  cg.params() + ") {\n";
  k += cg.dims_prologue() + "  const " + Is + " L = " + Lc + ";\n" + body + "}\n";
  KernelGen gen;
  gen.source = Codegen::unit(q8 ? quant_device_source() + k : k);
  gen.launches.push_back(Launch{"lmn_attention", kBlock, {Expr(f.B * CL), 1, 1}});
  const int64_t out_bytes =
      q8 ? f.n / 32 * block_bytes(DType::Q8_1) : f.n * size_bytes(n.attrs.dtype);
  gen.bytes = Expr(f.B) * L * Expr(f.d * size_bytes(kt) + f.n * size_bytes(vt)) +
              Expr(f.rows * (f.d * size_bytes(qt) + out_bytes));
  gen.flops = Expr(f.rows) * L * Expr(2 * (f.d + f.n));
  return gen;
}

/// cuda.Attention where the candidate has the form above, Q, K and V read in 16 bits where the
/// graph casts them up to f32 (matmul_operands.hpp); none with LUMINAL_CUDA_ATTENTION=0.
std::vector<Rule> attention_rules() {
  if (!env_switch_on("LUMINAL_CUDA_ATTENTION")) return {};
  return {
      attention_rule("cuda.attention", cuda_row_op(), &kAttention,
                     [](const EGraph& eg, AttentionCandidate& c) {
                       const size_t count = c.children.size();
                       if (count < 3 || c.attrs.axis < 0) return false;
                       for (size_t k : {static_cast<size_t>(c.attrs.axis), count - 2, count - 1})
                         // (K and V at a run-time row too: a sliding layer's window read, its
                         // offset kept in the view, which the kernel reads through)
                         if (auto u = uncast(eg, c.children[k], c.attrs.views[k], false, true)) {
                           c.children[k] = u->first;
                           c.attrs.views[k] = u->second;
                         }
                       std::vector<DType> in;
                       for (ClassId ch : c.children)
                         in.push_back(eg.dtype(ch));
                       return attn_form(c.attrs, in).has_value();
                     }),
      // its value stored in 16 bits where the graph casts it down (a 16-bit model's
      // attention output), as cuda.GemvKNCast stores P @ V's
      cast_down_rule("cuda.attention-cast", &kAttention,
                     [](EGraph& eg, const Attrs& a, const std::vector<ClassId>& children,
                        ClassId cls) { eg.merge(eg.add(&kAttention, a, children), cls); })};
}

/// cuda.AttentionQ8 for a Q8_1 QuantizeQ8 that reads a cuda.Attention class whole and in order
/// (the o projection's integer GEMV after attention): one kernel fewer on the decode step's
/// critical path. Unless LUMINAL_CUDA_ATTENTION=0 or LUMINAL_CUDA_FUSED_Q8=0 (elementwise.cpp's
/// cuda.FusedQ8 is the same for an elementwise region); ruleset cuda.fused-q8, after the rules
/// that add the QuantizeQ8 nodes.
std::vector<Rule> attention_q8_rules() {
  if (!env_switch_on("LUMINAL_CUDA_ATTENTION") || !env_switch_on("LUMINAL_CUDA_FUSED_Q8"))
    return {};
  return {quantize_in_store_rule(
      "cuda.attention-q8", &kAttention, &kAttentionQ8, /*q8_k=*/false,
      [](const Attrs& a, const std::vector<DType>& in) { return attn_form(a, in).has_value(); })};
}

}  // namespace

void register_attention_ops(std::vector<const CudaOp*>& ops) {
  static const CudaOp op{&kAttention, "cuda.library", attention_rules, gen_attention};
  // (its rules run with cuda.FusedQ8's, after the QuantizeQ8 nodes exist)
  static const CudaOp q8{&kAttentionQ8, "cuda.fused-q8", attention_q8_rules, gen_attention};
  ops.push_back(&op);
  ops.push_back(&q8);
}

}  // namespace luminal::cuda
