// cuBLASLt matmuls in the search space (see lt_matmul.hpp): their OpDefs, the rules that add
// them, and their step in a plan (no kernel: the plan resolves an LtSpec and calls cuBLASLt,
// plan_lt.cpp).
#include "luminal/cuda/cublaslt/lt_matmul.hpp"

#include "luminal/core/error.hpp"
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
  for (const OpDef* op : {&kLtCol, &kLtRow})
    eg.merge(eg.add(op, a, children), root);
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
  return {std::move(mm), std::move(cast)};
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
  if (a.views.size() != 2) return std::nullopt;
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
