// Stores into a scatter: a matmul kernel that writes its values straight into the destination of
// the cuda.ScatterUnique that reads them, one kernel instead of two. A decode step's KV-cache
// writes are the case it is for: v = x @ Wv^T (cuda.GemvCast) and k after rope (cuda.Matmul,
// the 2-term product sum of nn::apply_rope) go into the caches at row c - 1.
//
// Matched on structure: a cuda.ScatterUnique(dest, idx, src) (gather_scatter.cpp: in place,
// indexes an Iota proved distinct) that reads src whole and in order (a contiguous view of src's
// element count) and its indexes contiguously, where src's class holds a cuda.Gemv,
// cuda.GemvCast, cuda.Matmul, cuda.MatmulCast or quantized GEMV (cuda.QGemv, cuda.QGemvQ8,
// cuda.QGemvQ8S: a GGUF model's v projection into its cache) e-node P of two inputs and no
// payload, of dest's dtype. The new e-node (the op's "...Scatter" form) has
//   children = P's two, then dest and idx;  views = P's two, then the scatter's dest and idx views;
//   dtype, shape = the scatter's (dest's: the output is dest's buffer, in place, input 2);
//   axis = P's,
// and computes P's values, storing value t at dest's flat element idx[t] (none outside dest):
// the scatter's definition, since its indexes are distinct. P's own generator writes the
// kernel; Codegen gives it the two extra parameters and an `out` that redirects each store
// (codegen.hpp: ScatterStore; the prelude's lmn_scatter_out). Before it, as for the scatter, a
// copy of dest into the output runs only when the plan could not alias dest's buffer.
// Same bits as P then the scatter. The search times it against the two kernels (P's value may
// have other readers; then the seeds keep P). LUMINAL_CUDA_SCATTER_STORE=0 offers none.
// P may also be a GEMV with rope's product in its kernel (cuda.GemvMatmul / GemvCastMatmul,
// gemv.cpp; cuda.QGemvQ8Matmul / QGemvQ8SMatmul, qgemv.cpp): three inputs and a payload, the
// destination then input 3. Or P is a cuda.Fused
// (an elementwise region: rope after a projection, a cast) of k inputs, 1 <= k <=
// kFusedMaxChildren: cuda.FusedScatter<k> (one op a k, since the destination is input k), whose
// kernel is the map kernel of the region storing each element into the destination; the region's
// shape is that of its views.
#include <array>
#include <string>
#include <string_view>

#include "luminal/core/error.hpp"
#include "luminal/cuda/cuda_op.hpp"
#include "luminal/cuda/gemv_then.hpp"
#include "luminal/kernels/fused_program.hpp"

namespace luminal::cuda {

double qgemv_f32_form_extra(const EGraph& eg, uint32_t enode);  // qgemv.cpp

namespace {

// (seed cost 1: one kernel where P and the scatter cost 0.95-1 + 0.8, so the fewest-kernels
// seeds take it where P's value has no other reader, and not where P would run twice)
const OpDef kGemvScatter{
    .name = "cuda.GemvScatter", .inplace_input = 2, .seed_cost = 1.0, .library_replaces = true};
const OpDef kGemvCastScatter{
    .name = "cuda.GemvCastScatter", .inplace_input = 2, .seed_cost = 1.0, .library_replaces = true};
const OpDef kMatmulScatter{
    .name = "cuda.MatmulScatter", .inplace_input = 2, .seed_cost = 1.0, .library_replaces = true};
const OpDef kMatmulCastScatter{.name = "cuda.MatmulCastScatter",
                               .inplace_input = 2,
                               .seed_cost = 1.0,
                               .library_replaces = true};
// (a GEMV and rope's product after it, gemv.cpp: three inputs, the destination is input 3)
const OpDef kGemvMatmulScatter{.name = "cuda.GemvMatmulScatter",
                               .inplace_input = 3,
                               .seed_cost = 1.0,
                               .library_replaces = true,
                               .seed_extra = then_form_extra};
const OpDef kGemvCastMatmulScatter{.name = "cuda.GemvCastMatmulScatter",
                                   .inplace_input = 3,
                                   .seed_cost = 1.0,
                                   .library_replaces = true,
                                   .seed_extra = then_form_extra};
// The GEMVs over block-quantized weights (qgemv.cpp): the f32-activation form, the integer form
// (activation quantized by cuda.QuantizeQ8) and the integer form over the split layout. (Seed
// costs below their base op's plus the scatter's 0.8, keeping the bases' order: the integer
// forms stay below the f32 form with the quantize's 0.5 added. Not library_replaces, as their
// bases, qgemv.cpp, are not.)
const OpDef kQGemvScatter{.name = "cuda.QGemvScatter",
                          .inplace_input = 2,
                          .seed_cost = 1.0,
                          .seed_extra = qgemv_f32_form_extra};  // (children[1]: the weight)
const OpDef kQGemvQ8Scatter{.name = "cuda.QGemvQ8Scatter", .inplace_input = 2, .seed_cost = 0.45};
const OpDef kQGemvQ8SScatter{.name = "cuda.QGemvQ8SScatter", .inplace_input = 2, .seed_cost = 0.4};
// An integer GEMV and rope's product after it (qgemv.cpp: three inputs, the destination input 3;
// below the base's 0.9 / 0.85 plus the scatter's 0.8, and below the GEMV's scatter form plus the
// product's, 0.45 + 1.0)
const OpDef kQGemvQ8MatmulScatter{.name = "cuda.QGemvQ8MatmulScatter",
                                  .inplace_input = 3,
                                  .seed_cost = 0.95,
                                  .seed_extra = then_form_extra};
const OpDef kQGemvQ8SMatmulScatter{.name = "cuda.QGemvQ8SMatmulScatter",
                                   .inplace_input = 3,
                                   .seed_cost = 0.9,
                                   .seed_extra = then_form_extra};

/// Each scatter form and the op whose values it stores.
struct Form {
  const OpDef* op;
  const char* base;
};
const std::array<Form, 11> kForms{{{&kGemvScatter, "cuda.Gemv"},
                                   {&kGemvCastScatter, "cuda.GemvCast"},
                                   {&kMatmulScatter, "cuda.Matmul"},
                                   {&kMatmulCastScatter, "cuda.MatmulCast"},
                                   {&kGemvMatmulScatter, "cuda.GemvMatmul"},
                                   {&kGemvCastMatmulScatter, "cuda.GemvCastMatmul"},
                                   {&kQGemvScatter, "cuda.QGemv"},
                                   {&kQGemvQ8Scatter, "cuda.QGemvQ8"},
                                   {&kQGemvQ8SScatter, "cuda.QGemvQ8S"},
                                   {&kQGemvQ8MatmulScatter, "cuda.QGemvQ8Matmul"},
                                   {&kQGemvQ8SMatmulScatter, "cuda.QGemvQ8SMatmul"}}};

// The stores of an elementwise region of k inputs (cuda.Fused): cuda.FusedScatter<k>, the
// destination input k. (Constant-initialised: the registry may be built during another unit's
// static initialisation.)
constexpr size_t kFusedForms = 8;
static_assert(kFusedForms == static_cast<size_t>(kFusedMaxChildren));
constexpr OpDef fused_form(std::string_view name, int k) {
  return OpDef{.name = name, .inplace_input = k, .seed_cost = 1.0};
}
constexpr std::array<OpDef, kFusedForms> kFusedScatter{
    fused_form("cuda.FusedScatter1", 1), fused_form("cuda.FusedScatter2", 2),
    fused_form("cuda.FusedScatter3", 3), fused_form("cuda.FusedScatter4", 4),
    fused_form("cuda.FusedScatter5", 5), fused_form("cuda.FusedScatter6", 6),
    fused_form("cuda.FusedScatter7", 7), fused_form("cuda.FusedScatter8", 8)};

/// k when `op` is cuda.FusedScatter<k>, else 0.
size_t fused_form_inputs(const OpDef* op) {
  for (size_t k = 0; k < kFusedForms; ++k)
    if (op == &kFusedScatter[k]) return k + 1;
  return 0;
}

const Form* form_of_base(const OpDef* base) {
  for (const Form& f : kForms)
    if (base->name == std::string_view(f.base)) return &f;
  return nullptr;
}

const CudaOp& base_op(const OpDef* op) {
  if (fused_form_inputs(op) > 0) return *find_cuda_op(cuda_fused_op());
  for (const Form& f : kForms)
    if (f.op == op) {
      const OpDef* def = cuda_registry().named(f.base);
      const CudaOp* c = def ? find_cuda_op(def) : nullptr;
      if (!c) throw Error(std::string(op->name) + ": no op " + f.base + " in the registry");
      return *c;
    }
  throw Error("cuda: " + std::string(op->name) + " is not a store-into-scatter op");
}

bool integer_index(DType t) { return t == DType::I32 || t == DType::I64; }

void apply(const Match& m, EGraph& eg) {
  const ENodeId s = m.node("s");
  const ENode sn = eg.node(s);
  const Attrs sa = eg.attrs_of(s);
  if (sn.children.size() != 3 || sa.views.size() != 3) return;
  const ClassId src = eg.find(sn.children[2]);
  const View& vi = sa.views[1];
  const View& vs = sa.views[2];
  const Expr count = numel(eg.shape(src));
  if (!vs.is_contiguous() || vs.has_base() || !(vs.numel() == count)) return;
  if (!vi.is_contiguous() || vi.has_base() || !(vi.numel() == count)) return;
  if (!integer_index(eg.dtype(sn.children[1])) || eg.dtype(src) != sa.dtype) return;
  struct Offer {
    const OpDef* op;
    Attrs attrs;
    std::vector<ClassId> children;
  };
  std::vector<Offer> offers;  // (the class's e-nodes may change as we add)
  for (ENodeId id : eg.nodes_of(src)) {
    const ENode& pn = eg.node(id);
    const Attrs& pa = eg.attrs_of(id);
    const size_t k = pn.children.size();
    const OpDef* op = nullptr;
    if (pn.op == cuda_fused_op()) {
      // (an elementwise region over its own shape: every view has the region's dims)
      if (k == 0 || k > kFusedForms || pa.views.size() != k || !pa.payload) continue;
      op = &kFusedScatter[k - 1];
    } else {
      const Form* f = form_of_base(pn.op);
      // (two inputs; the GEMV-then-product forms three and a payload, the product's view of A)
      if (!f || (k == 2) == bool(pa.payload) || (k != 2 && k != 3) || pa.views.size() != k)
        continue;
      op = f->op;
    }
    Offer o{op, pa, {}};
    for (ClassId c : pn.children)
      o.children.push_back(eg.find(c));
    o.attrs.dtype = sa.dtype;
    o.attrs.shape = sa.shape;
    o.attrs.views.push_back(sa.views[0]);
    o.attrs.views.push_back(vi);
    o.children.push_back(eg.find(sn.children[0]));
    o.children.push_back(eg.find(sn.children[1]));
    offers.push_back(std::move(o));
  }
  for (Offer& o : offers)
    eg.merge(eg.add(o.op, o.attrs, o.children), m.root);
}

std::vector<Rule> scatter_store_rules() {
  if (!env_switch_on("LUMINAL_CUDA_SCATTER_STORE")) return {};
  return {Rule{"cuda.scatter-store", Pattern::op(scatter_unique_op()).bind("s"), nullptr, apply}};
}

KernelGen gen_scatter_store(const LlirNode& n, const GenContext& ctx) {
  const std::string op(n.op->name);
  // The base op's inputs (two; three for a GEMV and the product after it, whose third view is
  // the product's, k last), then the destination and the indexes.
  const size_t k = n.inputs.size() - 2;
  const size_t fused_k = fused_form_inputs(n.op);
  const bool counts_ok =
      fused_k > 0 ? k == fused_k : (n.inputs.size() >= 4 && n.inputs.size() <= 5);
  if (n.inputs.size() < 3 || !counts_ok || n.input_dtypes.size() != n.inputs.size() ||
      n.attrs.views.size() != k + 2)
    throw Error(op + ": needs the matmul's inputs, the destination and the indexes, got " +
                std::to_string(n.inputs.size()) + " inputs and " +
                std::to_string(n.attrs.views.size()) + " views");
  if (!integer_index(n.input_dtypes[k + 1]))
    throw Error(op + ": the indexes must be i32 or i64, got " +
                std::string(name(n.input_dtypes[k + 1])));
  // The matmul (or region) alone: its inputs, its output's shape (the flat order is the same as
  // the scatter's source, which it reads contiguously).
  LlirNode core = n;
  core.inputs.resize(k);
  core.input_dtypes.resize(k);
  core.attrs.views.resize(k);
  core.attrs.shape.clear();
  if (fused_k > 0) {
    // A region's views have its dims.
    core.attrs.shape = n.attrs.views[0].dims;
  } else {
    // A matmul's: the product's dims without k.
    const int axis = n.attrs.axis;
    const View& v0 = n.attrs.views[0];
    if (axis < 0 || axis >= v0.rank())
      throw Error(op + ": no reduced axis " + std::to_string(axis));
    const View& vp = k == 2 ? v0 : n.attrs.views[2];
    const int pk = k == 2 ? axis : vp.rank() - 1;
    for (int d = 0; d < vp.rank(); ++d)
      if (d != pk) core.attrs.shape.push_back(vp.dims[static_cast<size_t>(d)]);
  }
  if (!(numel(core.attrs.shape) == n.attrs.views[k + 1].numel()))
    throw Error(op + ": the indexes do not match the matmul's outputs one for one");
  const ScatterStore ss{n.input_dtypes[k + 1], numel(n.attrs.shape)};
  GenContext sctx = ctx;
  sctx.scatter_store = &ss;
  KernelGen g = base_op(n.op).generate(core, sctx);
  // The copy of dest into the output, first, skipped where the output is dest's own buffer.
  Codegen cg(n, ctx);
  const std::string& I = cg.idx();
  std::string body;
  const std::string od = cg.view_offset(n.attrs.views[k], "i", "od", body);
  const Expr total = numel(n.attrs.shape);
  const std::string ncode = cg.c(total);
  g.source += "extern \"C\" __global__ void __launch_bounds__(256) LMN_ENTRY(lmn_scatter_copy)(" +
              cg.params(false) + ") {\n" + cg.dims_prologue() + "  const " + I + " n = " + ncode +
              ";\n  for (" + I + " i = (" + I +
              ")blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (" + I +
              ")gridDim.x * blockDim.x) {\n" + body + "    out[i] = in" + std::to_string(k) + "[" +
              od + "];\n  }\n}\n";
  g.launches.insert(g.launches.begin(),
                    Launch{"lmn_scatter_copy",
                           256,
                           {min(ceil_div(total, 256), Expr(int64_t{ctx.sm_count} * 16)), 1, 1},
                           true});
  return g;
}

}  // namespace

void register_scatter_store_ops(std::vector<const CudaOp*>& ops) {
  // One op a form, the first holding the rule that offers them all.
  static const std::array<CudaOp, kForms.size()> forms = [] {
    std::array<CudaOp, kForms.size()> a{};
    for (size_t i = 0; i < kForms.size(); ++i)
      a[i] = i == 0 ? CudaOp{{kForms[i].op, "cuda.inplace", scatter_store_rules}, gen_scatter_store}
                    : CudaOp{{kForms[i].op, "", nullptr}, gen_scatter_store};
    return a;
  }();
  for (const CudaOp& op : forms)
    ops.push_back(&op);
  static const std::array<CudaOp, kFusedForms> fused = [] {
    std::array<CudaOp, kFusedForms> a{};
    for (size_t k = 0; k < kFusedForms; ++k)
      a[k] = CudaOp{{&kFusedScatter[k], "", nullptr}, gen_scatter_store};
    return a;
  }();
  for (const CudaOp& op : fused)
    ops.push_back(&op);
}

}  // namespace luminal::cuda
