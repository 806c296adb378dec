// cuBLASLt matmuls in the search space (see lt_matmul.hpp): their OpDefs, the rules that add
// them, and their step in a plan (no kernel: the plan resolves an LtSpec and calls cuBLASLt,
// plan_lt.cpp).
#include "luminal/cuda/cublaslt/lt_matmul.hpp"

#include <algorithm>
#include <map>

#include "luminal/core/error.hpp"
#include "luminal/core/hash.hpp"
#include "luminal/cuda/cuda_op.hpp"
#include "luminal/cuda/matmul_operands.hpp"
#include "luminal/kernels/gemm_plan.hpp"
#include "luminal/kernels/matmul_rule.hpp"

namespace luminal::cuda {

namespace {

const OpDef kLtCol{.name = "cuda.LtMatmul", .library_call = true};
const OpDef kLtRow{.name = "cuda.LtMatmulRow", .library_call = true};

/// Whether cuBLASLt takes a matmul with these attributes and operand dtypes in some family.
bool lt_accepts(const Attrs& a, DType ta, DType tb) {
  return lt_node_gemm(a).has_value() && lt_types(ta, tb, a.dtype, false).has_value();
}

void add_lt_nodes(EGraph& eg, const Attrs& a, const std::vector<ClassId>& children, ClassId root) {
  if (!lt_accepts(a, eg.dtype(children[0]), eg.dtype(children[1]))) return;
  // C and the bias have D's type (a node cast down keeps its f32 C or bias: no such call).
  for (size_t i = 2; i < children.size(); ++i)
    if (eg.dtype(children[i]) != a.dtype) return;
  for (const OpDef* op : {&kLtCol, &kLtRow})
    eg.merge(eg.add(op, a, children), root);
}

/// Add(x, y) where x's class holds a cuBLASLt node (see lt_matmul.hpp, "Epilogues"): the node
/// with y as its C (beta 1) or its bias, in the Add's class.
void add_epilogues(const Match& m, EGraph& eg) {
  const ENode add = eg.node(m.node("add"));  // copies: adding e-nodes moves nothing, but be safe
  const Attrs aa = eg.attrs_of(m.node("add"));
  if (add.children.size() != 2 || aa.views.size() != 2) return;
  const ClassId root = eg.find(m.root);
  for (int xi = 0; xi < 2; ++xi) {
    const ClassId x = eg.find(add.children[static_cast<size_t>(xi)]);
    const ClassId y = eg.find(add.children[static_cast<size_t>(1 - xi)]);
    const View& vx = aa.views[static_cast<size_t>(xi)];
    const View& vy = aa.views[static_cast<size_t>(1 - xi)];
    if (x == root || y == root || !vx.is_contiguous() || eg.dtype(y) != aa.dtype) continue;
    struct Found {
      const OpDef* op;
      Attrs attrs;
      std::vector<ClassId> children;
    };
    std::vector<Found> found;
    for (ENodeId id : eg.nodes_of(x)) {
      const ENode& n = eg.node(id);
      if (!is_lt_op(n.op)) continue;
      const Attrs& a = eg.attrs_of(id);
      if (a.dtype != aa.dtype || !(vx.numel() == numel(a.shape))) continue;
      const LtEpilogue e = lt_epilogue(a);
      std::vector<ClassId> ch;
      for (ClassId c : n.children)
        ch.push_back(eg.find(c));
      if (std::find(ch.begin(), ch.end(), root) != ch.end()) continue;
      // C: y read whole in the output's layout.
      if (!e.accumulate && vy.is_contiguous() && vy.dims == vx.dims) {
        Attrs b = a;
        b.shape = aa.shape;  // (the Add may read the product through a reshape)
        b.payload = std::make_shared<LtEpilogue>(true, e.bias);
        b.views.insert(b.views.begin() + 2, View::contiguous(aa.shape));
        ch.insert(ch.begin() + 2, y);
        found.push_back({n.op, std::move(b), ch});
        ch.erase(ch.begin() + 2);
      }
      // The bias: over the Mul's dims without the reduced axis, along the rows of D.
      if (!e.bias && n.op == &kLtCol) {
        Shape out = a.views[0].dims;
        out.erase(out.begin() + a.axis);
        std::vector<Expr> bs;
        for (const Expr& st : vy.strides)
          if (std::optional<Expr> c = coefficient(st)) bs.push_back(*c);
        if (vx.dims == out && bs.size() == vy.strides.size() && lt_bias_fits(a, bs)) {
          Attrs b = a;
          b.shape = aa.shape;
          b.payload = std::make_shared<LtEpilogue>(e.accumulate, true);
          b.views.push_back(vy);
          ch.push_back(y);
          found.push_back({n.op, std::move(b), ch});
        }
      }
    }
    for (const Found& f : found)
      eg.merge(eg.add(f.op, f.attrs, f.children), root);
  }
}

std::vector<Rule> lt_rules() {
  // Every matmul: on its operands as they are, and on the 16-bit tensors the graph casts up.
  Rule mm{"cuda.cublaslt", matmul_pattern(),
          [](const Match& m, const EGraph& eg) { return matmul_parts(eg, m).has_value(); },
          [](const Match& m, EGraph& eg) {
            std::optional<MatmulParts> p = matmul_parts(eg, m);
            if (!p) return;
            add_lt_nodes(eg, p->attrs, p->children, m.root);
            MatmulParts q = *p;
            bool any = false;
            for (int k = 0; k < 2; ++k)
              if (auto u = uncast(eg, p->children[k], p->attrs.views[k])) {
                q.children[k] = u->first;
                q.attrs.views[k] = u->second;
                any = true;
              }
            if (any) add_lt_nodes(eg, q.attrs, q.children, m.root);
          }};
  // Cast(f32 Lt matmul) to bf16/f16: cuBLASLt stores D in the 16-bit type (rounded once from its
  // f32 accumulator).
  Rule cast = cast_down_rule("cuda.cublaslt-cast", &kLtCol, add_lt_nodes);
  Rule epilogue{"cuda.cublaslt-epilogue", Pattern::op(OpKind::Add).bind("add"), nullptr,
                add_epilogues};
  return {std::move(mm), std::move(cast), std::move(epilogue)};
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
  LtNodeGemm g;
  g.dims = a.views[0].dims;
  g.k = a.axis;
  if (a.views[1].dims != a.views[0].dims || g.k < 0 || g.k >= static_cast<int>(g.dims.size()))
    return std::nullopt;
  for (int v = 0; v < 2; ++v)
    for (const Expr& s : a.views[static_cast<size_t>(v)].strides) {
      std::optional<Expr> c = coefficient(s);
      if (!c) return std::nullopt;
      (v == 0 ? g.sa : g.sb).push_back(*c);
    }
  const std::optional<GemmPlan<Expr>> p = plan_gemm<SymOps>(g.dims, g.sa, g.sb, g.k);
  if (!p || !collapse_batch<SymOps>(*p)) return std::nullopt;
  return g;
}

std::string LtEpilogue::serialize() const {
  return std::string(accumulate ? "c" : "") + (bias ? "b" : "");
}

std::shared_ptr<const LtEpilogue> LtEpilogue::deserialize(std::string_view text) {
  if (text == "c") return std::make_shared<LtEpilogue>(true, false);
  if (text == "b") return std::make_shared<LtEpilogue>(false, true);
  if (text == "cb") return std::make_shared<LtEpilogue>(true, true);
  throw Error("lt_epilogue: cannot read '" + std::string(text) + "' (want c, b or cb)");
}

size_t LtEpilogue::hash() const {
  return hash_combined(0x4c74457069ULL, (accumulate ? 1u : 0u) | (bias ? 2u : 0u));
}

bool LtEpilogue::equals(const Payload& o) const {
  const auto& e = static_cast<const LtEpilogue&>(o);
  return accumulate == e.accumulate && bias == e.bias;
}

std::string LtEpilogue::to_string() const {
  return std::string("epilogue=") + (accumulate ? "+C" : "") + (bias ? "+bias" : "");
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

}  // namespace

bool lt_bias_fits(const Attrs& a, const std::vector<Expr>& bias_strides) {
  const std::optional<LtNodeGemm> g = lt_node_gemm(a);
  if (!g || !bias_fits<SymOps>(g->dims, g->sa, g->sb, g->k, bias_strides)) return false;
  // The plan drops axes of size 1 (and may then merge the axes around them): with each dynamic
  // dim at 1, the bias must still run along D's rows.
  std::vector<std::string> vars;
  for (const std::vector<Expr>* v : {&g->dims, &g->sa, &g->sb, &bias_strides})
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
    if (!bias_fits<SymOps>(sub(g->dims), sub(g->sa), sub(g->sb), g->k, sub(bias_strides)))
      return false;
  }
  return true;
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
