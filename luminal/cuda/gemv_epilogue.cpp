#include "luminal/cuda/gemv_epilogue.hpp"

#include <memory>
#include <optional>
#include <vector>

#include "luminal/core/error.hpp"
#include "luminal/cuda/prelude.hpp"
#include "luminal/kernels/epilogue_rule.hpp"
#include "luminal/kernels/fused_program.hpp"
#include "luminal/kernels/fusion_detail.hpp"

namespace luminal::cuda {

GemvPrefetch gemv_epilogue_prefetch(const LlirNode& n, const FusedProgram& epi, Codegen& cg,
                                    int rows, const std::string& out_at) {
  std::vector<bool> read(n.attrs.views.size(), false);
  for (const FusedInst& in : epi.insts)
    if (in.op == FusedOpcode::Load && in.a > 0) {
      const size_t c = static_cast<size_t>(in.a) + 1;
      if (c >= n.attrs.views.size())
        throw Error(std::string(n.op->name) + ": the epilogue reads input " + std::to_string(c) +
                    " of a node with " + std::to_string(n.attrs.views.size()));
      read[c] = true;
    }
  GemvPrefetch p;
  std::string loads;
  for (size_t c = 2; c < read.size(); ++c) {
    if (!read[c]) continue;
    const std::string cs = std::to_string(c);
    p.decl +=
        "    S_" + dtype_tag(n.input_dtypes[c]) + " pf" + cs + "[" + std::to_string(rows) + "];\n";
    const std::string off = cg.view_offset(n.attrs.views[c], "fi", "e" + cs, loads);
    loads += "        pf" + cs + "[mi] = in" + cs + "[" + off + "];\n";
  }
  if (!loads.empty())
    p.load = "    if (lane == 0 && part == 0) {\n#pragma unroll\n      for (int mi = 0; mi < " +
             std::to_string(rows) + "; ++mi) {\n        const " + cg.idx() + " fi = " + out_at +
             ";\n" + loads + "      }\n    }\n";
  return p;
}

std::string gemv_store(const LlirNode& n, const FusedProgram* epi, const std::string& at,
                       const std::string& value) {
  if (!epi) return "out[" + at + "] = st_" + dtype_tag(n.attrs.dtype) + "(" + value + ");\n";
  std::string b = "{\n";
  const std::string r = emit_statements(*epi, b, [&](const FusedInst& in, size_t, bool keep) {
    if (in.a == 0)
      return load_fn(in.dtype, keep) + "(st_" + dtype_tag(in.dtype) + "(" + value + "))";
    return load_fn(in.dtype, keep) + "(pf" + std::to_string(in.a + 1) + "[mi])";
  });
  return b + "    out[" + at + "] = st_" + dtype_tag(n.attrs.dtype) + "(" + r + ");\n    }\n";
}

namespace {

/// The paired rule's builder (gemv_pair_rule).
void offer_pair(const Match& m, EGraph& eg, const OpDef* fused,
                const std::vector<std::pair<const OpDef*, const OpDef*>>& forms,
                const WeightChild& weight_child) {
  const ENodeId id = m.node("e");
  const ClassId root = eg.find(m.root);
  const std::optional<fusion_detail::Built> b = epilogue_region(fused, eg, id, 2);
  if (!b || b->children.size() != 2) return;
  const ClassId c0 = eg.find(b->children[0]), c1 = eg.find(b->children[1]);
  if (c0 == c1 || c0 == root || c1 == root) return;
  const Attrs like = eg.attrs_of(id);
  const Shape& shape = eg.shape(c0);
  if (!(eg.shape(c1) == shape) || !(like.shape == shape)) return;
  for (const Expr& d : shape)
    if (!d.is_const()) return;
  const View whole = View::contiguous(shape);
  for (const View& v : b->views)
    if (!(v == whole)) return;
  struct Pair {
    const OpDef* op;
    Attrs attrs;
    std::vector<ClassId> children;
  };
  std::vector<Pair> pairs;
  for (ENodeId e0 : eg.nodes_of(c0)) {
    const ENode n0 = eg.node(e0);
    const OpDef* paired = nullptr;
    for (const auto& [p, e] : forms)
      if (n0.op == p) paired = e;
    const Attrs& a0 = eg.attrs_of(e0);
    if (!paired || a0.payload || !(a0.shape == shape) || a0.views.size() != n0.children.size())
      continue;
    const int weight = weight_child(eg, e0);
    if (weight < 0) continue;
    for (ENodeId e1 : eg.nodes_of(c1)) {
      const ENode n1 = eg.node(e1);
      if (n1.op != n0.op || n1.children.size() != n0.children.size() ||
          !eg.attrs_of(e1).equal_without_label(a0))
        continue;
      // The one child that differs: the weight.
      int wi = -1, differ = 0;
      for (size_t i = 0; i < n0.children.size(); ++i)
        if (eg.find(n0.children[i]) != eg.find(n1.children[i])) wi = static_cast<int>(i), ++differ;
      if (differ != 1 || wi != weight) continue;  // (not two activations of one weight)
      const ClassId w0 = eg.find(n0.children[static_cast<size_t>(wi)]);
      const ClassId w1 = eg.find(n1.children[static_cast<size_t>(wi)]);
      if (eg.dtype(w0) != eg.dtype(w1) || !(eg.shape(w0) == eg.shape(w1))) continue;
      Attrs a = a0;
      a.dtype = like.dtype;
      a.views.push_back(a0.views[static_cast<size_t>(wi)]);
      a.payload = std::make_shared<FusedProgram>(b->program);
      std::vector<ClassId> kids(n0.children.begin(), n0.children.end());
      kids.push_back(w1);
      pairs.push_back(Pair{paired, std::move(a), std::move(kids)});
      break;
    }
  }
  for (Pair& pr : pairs)
    eg.merge(eg.add(pr.op, std::move(pr.attrs), pr.children), root);
}

}  // namespace

Rule gemv_pair_rule(const std::string& name, const OpDef* fused,
                    std::vector<std::pair<const OpDef*, const OpDef*>> forms,
                    WeightChild weight_child) {
  return Rule{name, fusion_detail::region_pattern(fused), nullptr,
              [fused, forms = std::move(forms), weight_child = std::move(weight_child)](
                  const Match& m, EGraph& eg) { offer_pair(m, eg, fused, forms, weight_child); }};
}

std::string gemv_pair_store(const LlirNode& n, const FusedProgram& region, const std::string& at,
                            const std::string& v0, const std::string& v1) {
  std::string b = "{\n";
  const std::string r = emit_statements(region, b, [&](const FusedInst& in, size_t, bool keep) {
    if (in.a != 0 && in.a != 1)
      throw Error(std::string(n.op->name) + ": its region reads more than the two products");
    return load_fn(in.dtype, keep) + "(st_" + dtype_tag(in.dtype) + "(" + (in.a == 0 ? v0 : v1) +
           "))";
  });
  return b + "    out[" + at + "] = st_" + dtype_tag(n.attrs.dtype) + "(" + r + ");\n    }\n";
}

bool weight_prefetch(int64_t weight_bytes) {
  const int mib = env_int("LUMINAL_CUDA_PREFETCH", 4, 0, 1 << 20);
  return mib > 0 && weight_bytes < (int64_t{mib} << 20);
}

}  // namespace luminal::cuda
