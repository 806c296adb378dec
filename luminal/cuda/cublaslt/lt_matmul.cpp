// cuBLASLt matmuls in the search space (see lt_matmul.hpp): their OpDefs, the rules that add
// them, and their step in a plan (no kernel: the plan resolves an LtSpec and calls cuBLASLt,
// plan_lt.cpp).
#include "luminal/cuda/cublaslt/lt_matmul.hpp"

#include <algorithm>
#include <functional>
#include <map>
#include <tuple>

#include "luminal/core/error.hpp"
#include "luminal/core/hash.hpp"
#include "luminal/cuda/cuda_op.hpp"
#include "luminal/cuda/matmul_operands.hpp"
#include "luminal/kernels/fused_program.hpp"
#include "luminal/kernels/gemm_plan.hpp"
#include "luminal/kernels/lib_gemm.hpp"
#include "luminal/kernels/matmul_rule.hpp"
#include "luminal/kernels/split_axes.hpp"

namespace luminal::cuda {

namespace {

const OpDef kLtCol{.name = "cuda.LtMatmul", .library_call = true};
const OpDef kLtRow{.name = "cuda.LtMatmulRow", .library_call = true};

bool is_fp8(DType t) { return t == DType::F8E4M3 || t == DType::F8E5M2; }

/// Whether cuBLASLt takes a matmul with these attributes and operand dtypes in some family.
bool lt_accepts(const Attrs& a, DType ta, DType tb) {
  return lt_node_gemm(a).has_value() && lt_types(ta, tb, a.dtype, false).has_value();
}

void add_lt_nodes(EGraph& eg, const Attrs& a, const std::vector<ClassId>& children, ClassId root) {
  const DType ta = eg.dtype(children[0]), tb = eg.dtype(children[1]);
  if (!lt_accepts(a, ta, tb)) return;
  // C and the bias have D's type (a node cast down keeps its f32 C or bias: no such call); the
  // scale stays f32.
  for (int i : {lt_c_input(a), lt_bias_input(a)})
    if (i >= 0 && eg.dtype(children[static_cast<size_t>(i)]) != a.dtype) return;
  const bool fp8 = is_fp8(ta) || is_fp8(tb);
  if (fp8 && !lt_fp8_fits(a)) return;
  // (FP8 and a bias: the column family only)
  const bool col_only = fp8 || lt_epilogue(a).bias;
  for (const OpDef* op : {&kLtCol, &kLtRow})
    if (!col_only || op == &kLtCol) eg.merge(eg.add(op, a, children), root);
}

/// Whether `vy` reads a bias of Lt node `a`'s product, which `vx` reads whole: both over the
/// product's dims (a fused program's loads keep their producers' dims, and a bias read over a
/// reshape means something else), with strides that run along D's rows (lt_bias_fits).
bool bias_view_fits(const Attrs& a, const View& vx, const View& vy) {
  Shape out = a.views[0].dims;
  out.erase(out.begin() + a.axis);
  if (!(vx.dims == out) || !(vy.dims == out)) return false;
  std::vector<Expr> bs;
  for (const Expr& st : vy.strides)
    if (std::optional<Expr> c = coefficient(st)) bs.push_back(*c);
  return bs.size() == vy.strides.size() && lt_bias_fits(a, bs);
}

/// A cuBLASLt node a rule adds: merged into the rule's root class once the rule has looked at
/// every e-node it reads (adding e-nodes while iterating a class's nodes is not safe).
struct LtFound {
  const OpDef* op;
  Attrs attrs;
  std::vector<ClassId> children;
};

void merge_found(EGraph& eg, const std::vector<LtFound>& found, ClassId root) {
  for (const LtFound& f : found)
    eg.merge(eg.add(f.op, f.attrs, f.children), root);
}

/// n's children (canonical), or nothing when one of them is `root` (the new node would read its
/// own class).
std::optional<std::vector<ClassId>> children_apart_from(const EGraph& eg, const ENode& n,
                                                        ClassId root) {
  std::vector<ClassId> ch;
  for (ClassId c : n.children)
    ch.push_back(eg.find(c));
  if (std::find(ch.begin(), ch.end(), root) != ch.end()) return std::nullopt;
  return ch;
}

/// Whether a node `n` with D of dtype `d` may take a bias epilogue: the column family (the bias
/// runs along D's rows, the output's unit-stride axes there), and not an FP8 product with an f32
/// D (cuBLASLt then reads the bias as bf16, and the rules' bias has D's type).
bool takes_bias(const EGraph& eg, const ENode& n, DType d) {
  return n.op == &kLtCol && !(is_fp8(eg.dtype(n.children[0])) && d == DType::F32);
}

/// Inserts an extra input of a node at index `at` (lt_c_input / lt_bias_input of its payload).
void insert_input(Attrs& b, std::vector<ClassId>& ch, int at, const View& v, ClassId c) {
  b.views.insert(b.views.begin() + at, v);
  ch.insert(ch.begin() + at, c);
}

/// One way to read a binary node's two operands: x, where a cuBLASLt product may stand, and y.
struct Operands {
  ClassId x, y;
  const View& vx;
  const View& vy;
};

/// `node`'s operand `xi` as x and the other as y (read through `attrs`' views), when x is read
/// contiguously, y has dtype `y_dtype`, and neither is `root`'s class.
std::optional<Operands> operands(const EGraph& eg, const ENode& node, const Attrs& attrs, size_t xi,
                                 ClassId root, DType y_dtype) {
  const Operands o{eg.find(node.children[xi]), eg.find(node.children[1 - xi]), attrs.views[xi],
                   attrs.views[1 - xi]};
  if (o.x == root || o.y == root || !o.vx.is_contiguous() || eg.dtype(o.y) != y_dtype)
    return std::nullopt;
  if (o.vy.has_base()) return std::nullopt;  // a C, bias or scale at an element offset: not matched
  return o;
}

/// Add(x, y) where x's class holds a cuBLASLt node (see lt_matmul.hpp, "Epilogues"): the node
/// with y as its C (beta 1) or its bias, in the Add's class.
void add_epilogues(const Match& m, EGraph& eg) {
  const ENode add = eg.node(m.node("add"));  // copies: adding e-nodes moves nothing, but be safe
  const Attrs aa = eg.attrs_of(m.node("add"));
  if (add.children.size() != 2 || aa.views.size() != 2) return;
  const ClassId root = eg.find(m.root);
  for (size_t xi = 0; xi < 2; ++xi) {  // (each order after the merges of the one before)
    const std::optional<Operands> o = operands(eg, add, aa, xi, root, aa.dtype);
    if (!o) continue;
    const auto& [x, y, vx, vy] = *o;
    std::vector<LtFound> found;
    for (ENodeId id : eg.nodes_of(x)) {
      const ENode& n = eg.node(id);
      if (!is_lt_op(n.op)) continue;
      const Attrs& a = eg.attrs_of(id);
      if (a.dtype != aa.dtype || !(vx.numel() == numel(a.shape))) continue;
      const LtEpilogue e = lt_epilogue(a);
      if (e.act != LtActivation::None) continue;  // (added after the activation: not a call)
      const std::optional<std::vector<ClassId>> ch = children_apart_from(eg, n, root);
      if (!ch) continue;
      // C: y read whole in the output's layout.
      if (!e.accumulate && vy.is_contiguous() && vy.dims == vx.dims) {
        LtFound f{n.op, a, *ch};
        f.attrs.shape = aa.shape;  // (the Add may read the product through a reshape)
        f.attrs.payload = std::make_shared<LtEpilogue>(true, e.bias, e.scale);
        insert_input(f.attrs, f.children, lt_c_input(f.attrs), View::contiguous(aa.shape), y);
        found.push_back(std::move(f));
      }
      // The bias: over the Mul's dims without the reduced axis, along the rows of D.
      if (!e.bias && takes_bias(eg, n, a.dtype) && bias_view_fits(a, vx, vy)) {
        LtFound f{n.op, a, *ch};
        f.attrs.shape = aa.shape;
        f.attrs.payload = std::make_shared<LtEpilogue>(e.accumulate, true, e.scale);
        insert_input(f.attrs, f.children, lt_bias_input(f.attrs), vy, y);
        found.push_back(std::move(f));
      }
    }
    merge_found(eg, found, root);
  }
}

/// Mul(x, y) where x's class holds a plain f32 FP8 cuBLASLt product and y is one f32 value read
/// at every index (see lt_matmul.hpp, "FP8"): the node with y as its scale, in the Mul's class.
void add_scale(const Match& m, EGraph& eg) {
  const ENode mul = eg.node(m.node("mul"));
  const Attrs ma = eg.attrs_of(m.node("mul"));
  if (mul.children.size() != 2 || ma.views.size() != 2 || ma.dtype != DType::F32) return;
  const ClassId root = eg.find(m.root);
  for (size_t xi = 0; xi < 2; ++xi) {
    const std::optional<Operands> o = operands(eg, mul, ma, xi, root, DType::F32);
    if (!o) continue;
    const auto& [x, y, vx, vy] = *o;
    if (!std::all_of(vy.strides.begin(), vy.strides.end(),
                     [](const Expr& st) { return st == Expr(0); }))
      continue;
    std::vector<LtFound> found;
    for (ENodeId id : eg.nodes_of(x)) {
      const ENode& n = eg.node(id);
      if (!is_lt_op(n.op) || n.children.size() != 2 || !is_fp8(eg.dtype(n.children[0]))) continue;
      const Attrs& a = eg.attrs_of(id);
      const LtEpilogue e = lt_epilogue(a);
      if (e.accumulate || e.bias || e.scale || e.act != LtActivation::None ||
          a.dtype != DType::F32 || !(vx.numel() == numel(a.shape)))
        continue;
      const std::optional<std::vector<ClassId>> ch = children_apart_from(eg, n, root);
      if (!ch) continue;
      LtFound f{&kLtCol, a, *ch};
      f.attrs.shape = ma.shape;
      f.attrs.payload = std::make_shared<LtEpilogue>(false, false, true);
      insert_input(f.attrs, f.children, lt_scale_input(f.attrs), vy, y);
      found.push_back(std::move(f));
    }
    merge_found(eg, found, root);
  }
}

/// A fused node computing ReLU or the tanh GELU of the whole output of a cuBLASLt node without
/// C or an activation, or of that output plus a bias (see lt_matmul.hpp, "Activations"): the node
/// with that epilogue, in the fused node's class.
void add_activation(const Match& m, EGraph& eg) {
  const ENodeId fid = m.node("act");
  const ENode f = eg.node(fid);
  const Attrs fa = eg.attrs_of(fid);
  const auto* prog = dynamic_cast<const FusedProgram*>(fa.payload.get());
  if (!prog || f.children.size() != fa.views.size() || f.children.empty() || f.children.size() > 2)
    return;
  // (Most fused nodes read no cuBLASLt product: skip their programs.)
  bool reads_lt = false;
  for (ClassId c : f.children)
    for (ENodeId id : eg.nodes_of(c))
      reads_lt = reads_lt || is_lt_op(eg.node(id).op);
  if (!reads_lt) return;
  const bool with_bias = f.children.size() == 2;
  LtActivation act = LtActivation::None;
  if (with_bias) {
    if (std::optional<FusedProgram> one = lt_without_sum(*prog)) act = lt_activation_of(*one);
  } else {
    act = lt_activation_of(*prog);
  }
  if (act == LtActivation::None) return;
  const ClassId root = eg.find(m.root);
  std::vector<LtFound> found, cast_down;  // (cast_down: D cast to 16 bits, added by add_lt_nodes)
  for (int xi = 0; xi < static_cast<int>(f.children.size()); ++xi) {
    const ClassId x = eg.find(f.children[static_cast<size_t>(xi)]);
    const View& vx = fa.views[static_cast<size_t>(xi)];
    if (x == root || !vx.is_contiguous()) continue;
    for (ENodeId id : eg.nodes_of(x)) {
      const ENode& n = eg.node(id);
      if (!is_lt_op(n.op)) continue;
      const Attrs& a = eg.attrs_of(id);
      const LtEpilogue e = lt_epilogue(a);
      if (e.accumulate || e.act != LtActivation::None || !(vx.numel() == numel(a.shape))) continue;
      const std::optional<std::vector<ClassId>> ch = children_apart_from(eg, n, root);
      if (!ch) continue;
      LtFound fd{n.op, a, *ch};
      fd.attrs.shape = fa.shape;
      fd.attrs.dtype = fa.dtype;
      const bool down = a.dtype == DType::F32 && fa.dtype != DType::F32;  // (a cast to 16 bits)
      if (!with_bias) {
        fd.attrs.payload = std::make_shared<LtEpilogue>(false, e.bias, e.scale, act);
        if (a.dtype == fa.dtype) {
          found.push_back(std::move(fd));
        } else if (down && n.op == &kLtCol) {
          cast_down.push_back(std::move(fd));  // act(x) cast down: D in the 16-bit type
        }
        continue;
      }
      // act(x + bias): the bias as in add_epilogues, on a node without one.
      const ClassId y = eg.find(f.children[static_cast<size_t>(1 - xi)]);
      const View& vy = fa.views[static_cast<size_t>(1 - xi)];
      if (e.bias || !takes_bias(eg, n, fa.dtype) || (a.dtype != fa.dtype && !down) || y == root ||
          eg.dtype(y) != fa.dtype || !bias_view_fits(a, vx, vy))
        continue;
      fd.attrs.payload = std::make_shared<LtEpilogue>(false, true, e.scale, act);
      insert_input(fd.attrs, fd.children, lt_bias_input(fd.attrs), vy, y);
      (down ? cast_down : found).push_back(std::move(fd));
    }
  }
  merge_found(eg, found, root);
  for (const LtFound& fd : cast_down)
    add_lt_nodes(eg, fd.attrs, fd.children, root);  // (checks the 16-bit D's types)
}

std::vector<Rule> lt_rules() {
  // Every matmul: on its operands as they are, and on the 16-bit tensors the graph casts up.
  Rule mm = matmul_parts_rule("cuda.cublaslt", [](EGraph& eg, const MatmulParts& p, ClassId root) {
    add_lt_nodes(eg, p.attrs, p.children, root);
    const std::optional<MatmulParts> read16 = uncast_operands(eg, p, /*fp8=*/true);
    const bool any = read16.has_value();
    const MatmulParts q = any ? *read16 : p;
    if (any) add_lt_nodes(eg, q.attrs, q.children, root);
    // Operands cast up from 16 bits that cannot be read in 16 bits as one gemm (their
    // cast's view does not compose with the matmul's, or composes into merged axes of
    // a permuted tensor: attention's output before o_proj): a 16-bit copy of such an
    // operand (laid out as the f32 cast is), so the call reads both operands in 16 bits
    // (tensor cores, half the bytes) instead of both in f32 with the other one (a
    // weight) cast and written out at every execute. One operand copied where that
    // suffices, else both.
    const bool q_fits = any && eg.dtype(q.children[0]) == eg.dtype(q.children[1]) &&
                        lt_node_gemm(q.attrs).has_value();
    if (q_fits || !lt_node_gemm(p.attrs)) return;
    auto with_copies = [&](bool c0, bool c1) {
      MatmulParts r = q;
      std::optional<Copy16> copy[2];
      DType t[2] = {eg.dtype(q.children[0]), eg.dtype(q.children[1])};
      for (int k = 0; k < 2; ++k) {
        if (!(k == 0 ? c0 : c1)) continue;
        copy[k] = copy_in_16_bits(eg, p.children[k]);
        if (!copy[k]) return false;
        t[k] = copy[k]->attrs.dtype;
        r.attrs.views[k] = p.attrs.views[k];
      }
      if (t[0] != t[1] || !lt_node_gemm(r.attrs)) return false;
      for (int k = 0; k < 2; ++k)
        if (copy[k]) r.children[k] = eg.add(hlir_op(OpKind::Cast), copy[k]->attrs, {copy[k]->x});
      add_lt_nodes(eg, r.attrs, r.children, root);
      return true;
    };
    if (!with_copies(true, false) && !with_copies(false, true)) with_copies(true, true);
  });
  // Cast(f32 Lt matmul) to bf16/f16: cuBLASLt stores D in the 16-bit type (rounded once from its
  // f32 accumulator).
  Rule cast = cast_down_rule("cuda.cublaslt-cast", &kLtCol, add_lt_nodes);
  Rule epilogue{"cuda.cublaslt-epilogue", Pattern::op(OpKind::Add).bind("add"), nullptr,
                add_epilogues};
  Rule scale{"cuda.cublaslt-fp8-scale", Pattern::op(OpKind::Mul).bind("mul"), nullptr, add_scale};
  Rule act{"cuda.cublaslt-activation", Pattern::op(cuda_fused_op()).bind("act"), nullptr,
           add_activation};
  return {std::move(mm), std::move(cast), std::move(epilogue), std::move(scale), std::move(act)};
}

/// No kernel: the plan calls cuBLASLt. The cost hints are the matmul's.
KernelGen gen_lt(const LlirNode& n, const GenContext&) {
  if (!lt_node_gemm(n.attrs))
    throw Error(std::string(n.op->name) + ": the views are not one gemm per batch index");
  KernelGen g;
  const Expr count = numel(n.attrs.shape);
  const Expr K = n.attrs.views[0].dims[n.attrs.axis];
  g.bytes = count * size_bytes(n.attrs.dtype);
  g.flops = count * K * 2;
  return g;
}

}  // namespace

std::optional<LtNodeGemm> lt_node_gemm(const Attrs& a) {
  if (a.views.size() < 2) return std::nullopt;  // (C and a bias follow the matmul's two)
  // Operands (and C, bias) read at an element offset: not matched (cuBLASLt gets base pointers).
  for (const View& v : a.views)
    if (v.has_base()) return std::nullopt;
  LtNodeGemm g;
  g.dims = a.views[0].dims;
  g.k = a.axis;
  if (a.views[1].dims != a.views[0].dims || g.k < 0 || g.k >= static_cast<int>(g.dims.size()))
    return std::nullopt;
  View views[2] = {a.views[0], a.views[1]};
  // A plain product (no C, bias or scale, whose views follow the node's axes) over axes whose
  // strides turn linear when split (kernels/split_axes.hpp: grouped-query heads repeated by a
  // reshape, 65536*(z/3)) is planned over the split axes: [kv, group] with the group as rows.
  if (a.views.size() == 2)
    if (std::optional<SplitDomain> d = split_for_linear_strides(views[0], views[1], g.k)) {
      views[0] = d->a;
      views[1] = d->b;
      g.dims = d->a.dims;
      g.k = d->axis;
    }
  for (int v = 0; v < 2; ++v)
    for (const Expr& s : views[v].strides) {
      std::optional<Expr> c = coefficient(s);
      if (!c) return std::nullopt;
      (v == 0 ? g.sa : g.sb).push_back(*c);
    }
  const std::optional<GemmPlan<Expr>> p = plan_gemm<SymOps>(g.dims, g.sa, g.sb, g.k);
  if (!p || !collapse_batch<SymOps>(*p)) return std::nullopt;
  return g;
}

std::string LtEpilogue::serialize() const {
  return std::string(accumulate ? "c" : "") + (bias ? "b" : "") + (scale ? "s" : "") +
         (act == LtActivation::Relu       ? "r"
          : act == LtActivation::GeluTanh ? "g"
                                          : "");
}

std::shared_ptr<const LtEpilogue> LtEpilogue::deserialize(std::string_view text) {
  auto e = std::make_shared<LtEpilogue>(false, false, false);
  std::string_view rest = text;
  for (auto [letter, flag] : {std::pair{'c', &e->accumulate}, {'b', &e->bias}, {'s', &e->scale}})
    if (!rest.empty() && rest.front() == letter) {
      *flag = true;
      rest.remove_prefix(1);
    }
  if (!rest.empty() && (rest.front() == 'r' || rest.front() == 'g')) {
    e->act = rest.front() == 'r' ? LtActivation::Relu : LtActivation::GeluTanh;
    rest.remove_prefix(1);
  }
  if (text.empty() || !rest.empty() || (e->accumulate && e->act != LtActivation::None))
    throw Error("lt_epilogue: cannot read '" + std::string(text) +
                "' (want some of the letters c, b, s in that order, then r or g, never c with r "
                "or g)");
  return e;
}

size_t LtEpilogue::hash() const {
  return hash_combined(0x4c74457069ULL, (accumulate ? 1u : 0u) | (bias ? 2u : 0u) |
                                            (scale ? 4u : 0u) | (static_cast<unsigned>(act) << 3));
}

bool LtEpilogue::equals(const Payload& o) const {
  const auto& e = static_cast<const LtEpilogue&>(o);
  return accumulate == e.accumulate && bias == e.bias && scale == e.scale && act == e.act;
}

std::string LtEpilogue::to_string() const {
  std::string r = std::string("epilogue=") + (scale ? "*scale" : "") + (accumulate ? "+C" : "") +
                  (bias ? "+bias" : "");
  if (act != LtActivation::None)
    r += std::string(r.size() > 9 ? "," : "") + (act == LtActivation::Relu ? "relu" : "gelu_tanh");
  return r;
}

cublasLtEpilogue_t lt_epilogue_kind(const LtEpilogue& e) {
  switch (e.act) {
    case LtActivation::Relu: return e.bias ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_RELU;
    case LtActivation::GeluTanh:
      return e.bias ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_GELU;
    default: return e.bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
  }
}

LtEpilogue lt_epilogue(const Attrs& a) {
  if (const auto* e = dynamic_cast<const LtEpilogue*>(a.payload.get())) return *e;
  return LtEpilogue(false, false);
}

int lt_c_input(const Attrs& a) { return lt_epilogue(a).accumulate ? 2 : -1; }

int lt_bias_input(const Attrs& a) {
  const LtEpilogue e = lt_epilogue(a);
  return e.bias ? (e.accumulate ? 3 : 2) : -1;
}

int lt_scale_input(const Attrs& a) {
  const LtEpilogue e = lt_epilogue(a);
  return e.scale ? 2 + (e.accumulate ? 1 : 0) + (e.bias ? 1 : 0) : -1;
}

namespace {

/// The bias check at one set of dims and strides (symbolic or known).
template <class O>
bool bias_fits(const std::vector<typename O::N>& dims, const std::vector<typename O::N>& sa,
               const std::vector<typename O::N>& sb, int k,
               const std::vector<typename O::N>& bias) {
  using N = typename O::N;
  if (bias.size() + 1 != dims.size()) return false;
  const std::optional<GemmPlan<N>> p = plan_gemm<O>(dims, sa, sb, k);
  if (!p) return false;
  // The output's strides: row-major over the dims without k.
  N c = N(1);
  for (int i = static_cast<int>(dims.size()) - 1; i >= 0; --i) {
    if (i == k) continue;
    const N& b = bias[static_cast<size_t>(i > k ? i - 1 : i)];
    const bool along = std::find(p->n_axes.begin(), p->n_axes.end(), i) != p->n_axes.end();
    if (!O::is_one(dims[static_cast<size_t>(i)]) && !O::eq(b, along ? c : N(0))) return false;
    c = c * dims[static_cast<size_t>(i)];
  }
  return true;
}

/// Whether `check(dims, sa, sb, extra)` holds for g's dims and strides and `extra`, and again with
/// each subset of the dynamic dims at 1: the plan drops axes of size 1 (and may then merge the
/// axes around them), so a layout proven only for the symbolic dims may change at a 1.
using GemmCheck = std::function<bool(const std::vector<Expr>& dims, const std::vector<Expr>& sa,
                                     const std::vector<Expr>& sb, const std::vector<Expr>& extra)>;
bool holds_with_units(const LtNodeGemm& g, const std::vector<Expr>& extra, const GemmCheck& check) {
  if (!check(g.dims, g.sa, g.sb, extra)) return false;
  std::vector<std::string> vars;
  for (const std::vector<Expr>* v : {&g.dims, &g.sa, &g.sb, &extra})
    for (const Expr& e : *v)
      for (const std::string& name : e.vars())
        if (name != "z" && std::find(vars.begin(), vars.end(), name) == vars.end())
          vars.push_back(name);
  if (vars.size() > 4) return false;  // (not worth 2^n plans)
  for (size_t mask = 1; mask < (size_t{1} << vars.size()); ++mask) {
    std::map<std::string, Expr, std::less<>> one;
    for (size_t i = 0; i < vars.size(); ++i)
      if (mask & (size_t{1} << i)) one[vars[i]] = Expr(1);
    auto sub = [&](const std::vector<Expr>& v) {
      std::vector<Expr> out;
      for (const Expr& e : v)
        out.push_back(e.substitute(one));
      return out;
    };
    if (!check(sub(g.dims), sub(g.sa), sub(g.sb), sub(extra))) return false;
  }
  return true;
}

bool divisible_by_16(const Expr& e) { return (e % Expr(16)).simplify({}) == Expr(0); }

}  // namespace

bool lt_bias_fits(const Attrs& a, const std::vector<Expr>& bias_strides) {
  const std::optional<LtNodeGemm> g = lt_node_gemm(a);
  // (A product planned over split axes has one axis more than the bias: no bias epilogue.)
  if (!g || g->dims.size() != bias_strides.size() + 1) return false;
  return holds_with_units(*g, bias_strides,
                          [&](const auto& dims, const auto& sa, const auto& sb, const auto& bias) {
                            return bias_fits<SymOps>(dims, sa, sb, g->k, bias);
                          });
}

bool lt_fp8_fits(const Attrs& a) {
  const std::optional<LtNodeGemm> g = lt_node_gemm(a);
  if (!g) return false;
  return holds_with_units(
      *g, {}, [&](const auto& dims, const auto& sa, const auto& sb, const auto&) {
        const std::optional<GemmPlan<Expr>> p = plan_gemm<SymOps>(dims, sa, sb, g->k);
        if (!p) return false;
        const std::optional<BatchLayout<Expr>> bl = collapse_batch<SymOps>(*p);
        if (!bl) return false;
        const LibGemm<Expr> lg = lib_gemm(*p, *bl, GemmFamily::ColSwapped);
        if (!lg.op_a_t || lg.op_b_t) return false;
        for (const Expr& ld : {lg.a.ld, lg.b.ld, lg.d.ld})
          if (!divisible_by_16(ld)) return false;
        if (lg.count == Expr(1)) return true;
        for (const Expr& st : {lg.stride_a, lg.stride_b, lg.stride_d})
          if (!divisible_by_16(st)) return false;
        return true;
      });
}

bool lt_bias_fits_at(const std::vector<int64_t>& dims, const std::vector<int64_t>& sa,
                     const std::vector<int64_t>& sb, int k, const std::vector<int64_t>& bias) {
  return bias_fits<IntOps>(dims, sa, sb, k, bias);
}

bool is_lt_op(const OpDef* op) { return op == &kLtCol || op == &kLtRow; }

GemmFamily lt_family(const OpDef* op) {
  return op == &kLtRow ? GemmFamily::Row : GemmFamily::ColSwapped;
}

void register_lt_ops(std::vector<const CudaOp*>& ops) {
  static const CudaOp col{&kLtCol, "cuda.cublaslt", lt_rules, gen_lt};
  static const CudaOp row{&kLtRow, "", nullptr, gen_lt};
  ops.push_back(&col);
  ops.push_back(&row);
}

}  // namespace luminal::cuda
