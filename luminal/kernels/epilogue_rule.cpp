// The epilogue rule (see epilogue_rule.hpp).
#include "luminal/kernels/epilogue_rule.hpp"

#include <memory>

#include "luminal/kernels/fusion_detail.hpp"

namespace luminal {

namespace {

/// Regions of fewer elements, or with more inputs besides the producer's value, get no epilogue.
constexpr int64_t kMinEpilogueCount = 32;
constexpr size_t kMaxEpilogueInputs = 4;

using fusion_detail::Built;
using fusion_detail::canonicalize;
using fusion_detail::region_of;

/// The region's program with child `target` as Load 0 and the other children after it, in order.
FusedProgram with_target_first(const FusedProgram& p, int target) {
  FusedProgram out = p;
  for (FusedInst& in : out.insts)
    if (in.op == FusedOpcode::Load) in.a = in.a == target ? 0 : (in.a < target ? in.a + 1 : in.a);
  return out;
}

void apply(const OpDef* fused, const std::vector<std::pair<const OpDef*, const OpDef*>>& forms,
           const Match& m, EGraph& eg) {
  const ENodeId id = m.node("e");
  const std::optional<Built> b = epilogue_region(fused, eg, id, kFusedMaxChildren);
  if (!b || b->children.empty()) return;
  const Attrs like = eg.attrs_of(id);
  const Expr count = numel(like.shape);
  // Not for a handful of values (a norm's sum of squares and the scalar math after it): an
  // epilogue saves nothing there, and such chains would add an e-node per class.
  // Constant counts only (decode's s = 1 substituted): on the H200 the equivalence fuzz found a
  // wrong row from a GEMV epilogue over a dynamic count (an RMSNorm's sum of squares at s = 7),
  // probably the f64 case above (not re-run on a GPU since); until it is, regions of a dynamic
  // count get none.
  if (!count.is_const() || count.as_const() < kMinEpilogueCount) return;
  if (b->children.size() > kMaxEpilogueInputs + 1) return;
  const ClassId root = eg.find(m.root);
  for (size_t t = 0; t < b->children.size(); ++t) {
    const ClassId c = eg.find(b->children[t]);
    const View& v = b->views[t];
    if (c == root || !v.is_contiguous() || v.numel() != count || numel(eg.shape(c)) != count)
      continue;
    bool once = true;
    for (size_t u = 0; u < b->children.size(); ++u)
      once = once && (u == t || eg.find(b->children[u]) != c);
    if (!once) continue;
    const FusedProgram prog = with_target_first(b->program, static_cast<int>(t));
    // (the e-nodes of c may change as we add: copy the matching ones first)
    std::vector<std::pair<ENodeId, const OpDef*>> producers;
    for (ENodeId n : eg.nodes_of(c))
      for (const auto& [p, e] : forms)
        if (eg.node(n).op == p && !eg.attrs_of(n).payload) producers.emplace_back(n, e);
    for (const auto& [n, e] : producers) {
      const ENode pn = eg.node(n);
      Attrs a = eg.attrs_of(n);
      a.dtype = like.dtype;
      a.shape = like.shape;
      std::vector<ClassId> children(pn.children.begin(), pn.children.end());
      for (size_t u = 0; u < b->children.size(); ++u) {
        if (u == t) continue;
        children.push_back(b->children[u]);
        a.views.push_back(b->views[u]);
      }
      a.payload = std::make_shared<FusedProgram>(prog);
      eg.merge(eg.add(e, a, children), root);
    }
  }
}

}  // namespace

std::optional<fusion_detail::Built> epilogue_region(const OpDef* fused, const EGraph& eg,
                                                    ENodeId id, int max_children) {
  // Of a class's fused e-nodes only the largest region (as the fusion rules extend them) and the
  // leanest: the others would each add an e-node per GEMV they read, for programs that differ
  // little.
  if (eg.node(id).op == fused) {
    const ClassId c = eg.class_of(id);
    if (fusion_detail::largest_fused(fused, eg, c) != id &&
        fusion_detail::leanest_fused(fused, eg, c) != id)
      return std::nullopt;
  }
  std::optional<fusion_detail::SymProgram> region = region_of(fused, eg, id);
  if (!region) return std::nullopt;
  std::optional<Built> b = canonicalize(fused, eg, *region, kFusedMaxInsts, max_children);
  if (!b || b->program.has_row_reduce()) return std::nullopt;
  // Not for a region that computes in f64 from the value (the graph's exact arithmetic: an
  // RMSNorm's correctly rounded 1/sqrt splits its sum of squares as Dekker does, t - (t - a)).
  // That arithmetic needs every reader of the value to see the same bits, and the epilogue
  // computes the value again in P's order while its other readers may take it from another
  // kernel (cuBLASLt, cuda.Matmul): on the H200 such programs gave RMSNorm and LayerNorm rows
  // wrong by up to 3x (row-ops suite; its searched programs were right).
  for (const FusedInst& in : b->program.insts)
    if (in.dtype == DType::F64) return std::nullopt;
  return b;
}

Rule epilogue_rule(const std::string& name, const OpDef* fused,
                   std::vector<std::pair<const OpDef*, const OpDef*>> forms) {
  return Rule{name, fusion_detail::region_pattern(fused), nullptr,
              [fused, forms = std::move(forms)](const Match& m, EGraph& eg) {
                apply(fused, forms, m, eg);
              }};
}

}  // namespace luminal
