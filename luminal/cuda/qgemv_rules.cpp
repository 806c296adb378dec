// cuda.QGemv's ops and the rules that offer them (qgemv_ops.hpp); the kernels, and what each form
// computes and how exactly, are qgemv.cpp's.
#include <algorithm>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "luminal/core/error.hpp"
#include "luminal/cuda/gemv_epilogue.hpp"
#include "luminal/cuda/gemv_then.hpp"
#include "luminal/cuda/qgemv_ops.hpp"
#include "luminal/cuda/quant_device.hpp"
#include "luminal/kernels/epilogue_rule.hpp"
#include "luminal/kernels/matmul_rule.hpp"
#include "luminal/kernels/quant_rule.hpp"

namespace luminal::cuda {

bool decode_alternatives();  // gemv.cpp: false when LUMINAL_CUDA_GEMV=0

// The f32-activation form's seed cost grows with its weight: 0.7 a MiB. On the H200 the 8B Q4_0
// decode step took 9.9 ms in this form against 3.5 ms in the integer one (below): 6.4 ms over
// its 3.7 GiB of weights, 1.7 us a MiB, where a kernel's launch in a graph costs 2-3 us. Without
// it the seeds put large projections in this form wherever that saved a kernel (an epilogue, or
// the norm's row kernel writing Q8_1, row.cpp); a SmolLM2 projection adds 0.1-0.4.
double qgemv_f32_form_extra(const EGraph& eg, uint32_t enode) {
  const ENode& n = eg.node(enode);
  if (n.children.size() < 2) return 0;
  const ClassId w = eg.find(n.children[1]);
  const Expr count = numel(eg.shape(w));
  if (!count.is_const() || !is_block(eg.dtype(w))) return 0;
  const double mib =
      static_cast<double>(storage_bytes(eg.dtype(w), count.as_const())) / (1024.0 * 1024.0);
  return 0.7 * mib;
}

/// Whether only linear layers read W: its HLIR readers are Dequantize(W), read only by Muls. A
/// split copy of a weight that something else reads too (a tied embedding's gather) would add
/// its bytes to memory, past the default fold_limit, and the search would drop the candidate.
bool only_matmuls_read(const EGraph& eg, ClassId w) {
  for (ENodeId n : eg.eclass(w).parents) {
    if (eg.is_removed(n) || !eg.node(n).op->is_hlir) continue;
    if (!is_op(eg.node(n).op, OpKind::Dequantize)) return false;
    for (ENodeId r : eg.eclass(eg.class_of(n)).parents)
      if (!eg.is_removed(r) && eg.node(r).op->is_hlir && !is_op(eg.node(r).op, OpKind::Mul))
        return false;
  }
  return true;
}

// None of these is library_replaces: a library call in their place reads the weight widened to
// f32 by a Dequantize at every step, 7x the bytes. (They were until 2026-12-06: the seed that
// prefers library calls then ran every projection of a quantized decode step as Dequantize + an
// f32 cuBLASLt call, a candidate that wrote an 8B q4_0 model's 28 GB of f32 weights each step.)
// (below cuda.Gemv's 0.95: one kernel that replaces the Dequantize's and the GEMV's)
const OpDef kQGemv{.name = "cuda.QGemv", .seed_cost = 0.9, .seed_extra = qgemv_f32_form_extra};
// (below cuda.GemvEpi's 1.5, as above)
const OpDef kQGemvEpi{
    .name = "cuda.QGemvEpi", .seed_cost = 1.4, .seed_extra = qgemv_f32_form_extra};
// The integer form: weights against the activation quantized once (cuda.QuantizeQ8).
// (seed costs: with cuda.QuantizeQ8's 0.5 below the f32 form's 0.9, so the fewest-kernels seed
// takes the integer form, 2.8x faster on an 8B Q4_0 decode step; the search times both. The
// epilogue form costs an Add more (1.4): a residual add in the store measured slower on the H200
// than the add's own kernel; SwiGLU's region costs more than one op and still fuses.)
const OpDef kQGemvQ8{.name = "cuda.QGemvQ8", .seed_cost = 0.35};
const OpDef kQGemvQ8Epi{.name = "cuda.QGemvQ8Epi", .seed_cost = 1.4};
// The integer form over the split layout (cuda.QRepack, folded at load): a little below the plain
// integer form, so the seed takes it where the repacked weight can be folded.
const OpDef kQGemvQ8S{.name = "cuda.QGemvQ8S", .seed_cost = 0.3};
const OpDef kQGemvQ8SEpi{.name = "cuda.QGemvQ8SEpi", .seed_cost = 1.35};
// The paired forms (below two integer GEMVs and a region or an epilogue form).
// (plus then_form_extra, gemv_then.hpp: growing with the weight, children 0 and 1, so the gate's,
// which the up weight equals in size; the seeds take them where the projections are launch-bound,
// not where their bytes bound them)
const OpDef kQGemvQ8Glu{
    .name = "cuda.QGemvQ8Glu", .seed_cost = 0.75, .seed_extra = then_form_extra};
const OpDef kQGemvQ8SGlu{
    .name = "cuda.QGemvQ8SGlu", .seed_cost = 0.7, .seed_extra = then_form_extra};
// An integer GEMV and rope's short product after it (gemv_then.hpp), one kernel (below the GEMV
// and a cuda.Matmul's 1.0, above the GEMV alone; plus then_form_extra).
const OpDef kQGemvQ8Matmul{
    .name = "cuda.QGemvQ8Matmul", .seed_cost = 0.9, .seed_extra = then_form_extra};
const OpDef kQGemvQ8SMatmul{
    .name = "cuda.QGemvQ8SMatmul", .seed_cost = 0.85, .seed_extra = then_form_extra};
namespace {

using Form = QGemvForm;

/// LUMINAL_CUDA_QGEMV: which forms the rules offer: "both" (default), "f32" or "int8".
bool form_offered(Form f) {
  const char* v = std::getenv("LUMINAL_CUDA_QGEMV");
  const std::string s = v != nullptr && *v != 0 ? v : "both";
  if (s != "both" && s != "f32" && s != "int8")
    throw Error("LUMINAL_CUDA_QGEMV=" + s + " is not a form; give both, f32 or int8");
  return s == "both" || s == (f == Form::F32 ? "f32" : "int8");
}

/// `st` as z when it equals z at every index of an axis of length `len` (or nothing).
bool unit_stride(const Expr& st, const Expr& len) {
  if (st == Expr::z() || st == Expr(1) * Expr::z()) return true;
  if (!len.is_const() || len.as_const() > (int64_t{1} << 16)) return false;
  const std::vector<std::string> vars = st.vars();
  if (vars.size() != 1 || vars[0] != "z") return false;
  for (int64_t z = 0; z < len.as_const(); ++z)
    if (st.eval({}, z) != z) return false;
  return true;
}

struct Offer {
  Attrs attrs;
  std::vector<ClassId> children;
};

/// The activation's rows (the product of act_rows but k), or -1 when one of them is dynamic.
int64_t activation_rows(const QuantMatmulParts& p) {
  int64_t rows = 1;
  for (size_t i = 0; i + 1 < p.act_rows.size(); ++i) {
    if (!p.act_rows[i].is_const()) return -1;
    rows *= p.act_rows[i].as_const();
  }
  return rows;
}

/// The parts of a quantized linear layer with an f32 activation of at most 8 constant rows.
std::optional<QuantMatmulParts> decode_parts(const EGraph& eg, const Match& m) {
  if (!decode_alternatives()) return std::nullopt;
  std::optional<QuantMatmulParts> p = quant_matmul_parts(eg, m);
  if (!p || !cuda_block_type(p->wtype) || eg.dtype(p->act) != DType::F32) return std::nullopt;
  if (p->act_rows_view.has_base()) return std::nullopt;  // an activation at an element offset
  const int64_t rows = activation_rows(*p);
  if (rows < 0 || rows > kQGemvMaxRows) return std::nullopt;
  return p;
}

/// LUMINAL_CUDA_QGEMV_SPLIT=0 offers no split-layout form (default: offered).
bool split_offered() { return env_switch_on("LUMINAL_CUDA_QGEMV_SPLIT"); }

/// decode_parts for the split-layout form: a type with a split layout, a static whole weight that
/// only linear layers read, and a split activation (Q8_1) whose rows start 16-byte aligned (one
/// row, or K a multiple of 128).
std::optional<QuantMatmulParts> split_parts(const EGraph& eg, const Match& m) {
  std::optional<QuantMatmulParts> p = decode_parts(eg, m);
  if (!p || !split_layout(p->wtype) || !only_matmuls_read(eg, p->weight)) return std::nullopt;
  for (const Expr& d : eg.shape(p->weight))
    if (!d.is_const()) return std::nullopt;
  const int64_t K = p->act_rows.back().as_const();
  if (cuda_activation_format(p->wtype) == DType::Q8_1 && activation_rows(*p) > 1 &&
      (K / 32 * 36) % 16 != 0)
    return std::nullopt;
  return p;
}

std::optional<Offer> offer(const EGraph& eg, const Match& m) {
  const std::optional<QuantMatmulParts> p = decode_parts(eg, m);
  if (!p) return std::nullopt;
  const std::optional<MatmulParts> mp = matmul_parts(eg, m);
  if (!mp) return std::nullopt;
  const int side = eg.find(mp->children[0]) == eg.find(p->act) ? 0 : 1;
  View xv = mp->attrs.views[static_cast<size_t>(side)];
  Expr& st = xv.strides[static_cast<size_t>(p->axis)];
  if (!unit_stride(st, xv.dims[static_cast<size_t>(p->axis)])) return std::nullopt;
  st = Expr::z();
  Offer o;
  o.attrs.dtype = p->sum.dtype;
  o.attrs.shape = p->sum.shape;
  o.attrs.axis = p->axis;
  o.attrs.views = {xv, p->weight_view};
  o.children = {p->act, p->weight};
  return o;
}

/// On by default (LUMINAL_CUDA_QGEMV_MATMUL=0 offers none): beside a cuda.Matmul whose first
/// operand's class holds a one-row integer GEMV (cuda.QGemvQ8 / cuda.QGemvQ8S) of the matmul's
/// dtype, over a k of 2, 4 or 8 that neither operand reads with unit stride (then_offer), the GEMV
/// and the product in one kernel: rope after the q and k projections of a quantized model.
void apply_qgemv_matmul(const Match& m, EGraph& eg) {
  const std::optional<ThenOffer> o = then_offer(eg, m.node("m"));
  if (!o) return;
  std::vector<std::pair<const OpDef*, ENodeId>> gemvs;  // (the class may grow as we add)
  for (ENodeId g : eg.nodes_of(o->a)) {
    const OpDef* op = eg.node(g).op;
    if (op != &kQGemvQ8 && op != &kQGemvQ8S) continue;
    const Attrs& ga = eg.attrs_of(g);
    if (ga.payload || eg.node(g).children.size() != 2 || ga.views.size() != 2 ||
        ga.dtype != DType::F32)
      continue;
    if (row_axis(ga.views[0], ga.views[1], ga.axis).first != 1) continue;
    gemvs.emplace_back(op == &kQGemvQ8 ? &kQGemvQ8Matmul : &kQGemvQ8SMatmul, g);
  }
  add_then_nodes(eg, *o, gemvs, m.root);
}

}  // namespace

// (qgemv_ops.hpp)
std::pair<int, int> row_axis(const View& xv, const View& wv, int axis) {
  int ra = -1, M = 1;
  for (int d = 0; d < wv.rank(); ++d) {
    if (d == axis || !(wv.strides[d] == Expr(0)) || xv.strides[d] == Expr(0) ||
        !xv.dims[d].is_const())
      continue;
    const int64_t len = xv.dims[d].as_const();
    if (len > M) ra = d, M = static_cast<int>(len);
  }
  return {M, ra};
}

std::vector<Rule> qgemv_rules() {
  Rule r{"cuda.qgemv", matmul_pattern(),
         [](const Match& m, const EGraph& eg) { return offer(eg, m).has_value(); },
         [](const Match& m, EGraph& eg) {
           if (std::optional<Offer> o = offer(eg, m))
             add_merged(eg, &kQGemv, o->attrs, o->children, m.root);
         }};
  // The integer form: QuantizeQ8(x) (shared by the layers reading x through one view) and
  // QGemvQ8(xq, W), x read as contiguous rows of activation blocks.
  Rule q8{"cuda.qgemv-q8", matmul_pattern(),
          [](const Match& m, const EGraph& eg) { return decode_parts(eg, m).has_value(); },
          [](const Match& m, EGraph& eg) {
            const std::optional<QuantMatmulParts> p = decode_parts(eg, m);
            if (!p) return;
            const QuantMatmulAttrs a = quant_matmul_attrs(*p, cuda_activation_format(p->wtype));
            const ClassId xq = eg.add(quantize_q8_op(), a.quantize, {p->act});
            add_merged(eg, &kQGemvQ8, a.matmul, {xq, p->weight}, m.root);
          }};
  // The integer form over the split layout: QGemvQ8S(QuantizeQ8 split (Q8_1) or plain (Q8_K),
  // QRepack(W)), QRepack meant to be folded at load.
  Rule q8s{"cuda.qgemv-q8s", matmul_pattern(),
           [](const Match& m, const EGraph& eg) { return split_parts(eg, m).has_value(); },
           [](const Match& m, EGraph& eg) {
             const std::optional<QuantMatmulParts> p = split_parts(eg, m);
             if (!p) return;
             const DType fmt = cuda_activation_format(p->wtype);
             QuantMatmulAttrs a = quant_matmul_attrs(*p, fmt);
             a.quantize.int_value = fmt == DType::Q8_1 ? 1 : 0;
             const ClassId xq = eg.add(quantize_q8_op(), a.quantize, {p->act});
             const ClassId wr = add_qrepack(eg, p->weight);
             a.matmul.int_value = numel(eg.shape(p->weight)).as_const() / block_size(p->wtype);
             add_merged(eg, &kQGemvQ8S, a.matmul, {xq, wr}, m.root);
           }};
  // (rules, not conditions: the compile cache's key names the rules in force)
  std::vector<Rule> rules;
  if (form_offered(Form::F32)) rules.push_back(r);
  if (form_offered(Form::Q8)) rules.push_back(q8);
  if (form_offered(Form::Q8) && split_offered()) rules.push_back(q8s);
  return rules;
}

std::vector<Rule> qgemv_glu_rules() {
  if (!env_switch_on("LUMINAL_CUDA_QGEMV_GLU")) return {};
  // (the weight is child 1; the products f32)
  return {gemv_pair_rule(
      "cuda.qgemv-glu", cuda_fused_op(), {{&kQGemvQ8, &kQGemvQ8Glu}, {&kQGemvQ8S, &kQGemvQ8SGlu}},
      [](const EGraph& eg, ENodeId e) { return eg.attrs_of(e).dtype == DType::F32 ? 1 : -1; })};
}

std::vector<Rule> qgemv_epilogue_rules() {
  if (!env_switch_on("LUMINAL_CUDA_GEMV_EPILOGUE")) return {};
  return {epilogue_rule(
      "cuda.qgemv-epilogue", cuda_fused_op(),
      {{&kQGemv, &kQGemvEpi}, {&kQGemvQ8, &kQGemvQ8Epi}, {&kQGemvQ8S, &kQGemvQ8SEpi}})};
}

std::vector<Rule> qgemv_matmul_rules() {
  if (!decode_alternatives() || !env_switch_on("LUMINAL_CUDA_QGEMV_MATMUL")) return {};
  return {Rule{"cuda.qgemv-matmul",
               Pattern::any_op([](const OpDef* op) { return op->name == "cuda.Matmul"; }).bind("m"),
               nullptr, apply_qgemv_matmul}};
}

}  // namespace luminal::cuda
