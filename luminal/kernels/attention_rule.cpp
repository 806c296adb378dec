// The attention rule (see attention_rule.hpp).
#include "luminal/kernels/attention_rule.hpp"

#include <optional>
#include <utility>

#include "luminal/kernels/fused_program.hpp"
#include "luminal/kernels/matmul_rule.hpp"

namespace luminal {

namespace {

bool is_zero(const Expr& e) { return e.is_const() && e.as_const() == 0; }

bool same_dims(const Shape& a, size_t a0, const Shape& b, size_t b0, size_t n) {
  if (a0 + n > a.size() || b0 + n > b.size()) return false;
  for (size_t i = 0; i < n; ++i)
    if (!(a[a0 + i] == b[b0 + i])) return false;
  return true;
}

/// True when `v` (over [rows..., n, L]) reads a tensor of shape d = [rows..., L] row-major:
/// stride 0 along n, the contiguous strides of d elsewhere.
bool reads_rows_broadcast(const View& v, const Shape& d) {
  const size_t q = d.size();
  if (static_cast<size_t>(v.rank()) != q + 1 || v.has_base() || !is_zero(v.strides[q - 1]))
    return false;
  View w;
  for (size_t i = 0; i <= q; ++i) {
    if (i == q - 1) continue;
    w.dims.push_back(v.dims[i]);
    w.strides.push_back(v.strides[i]);
  }
  return w.dims == d && w.is_contiguous();
}

/// The matmul (SumReduce over Mul) e-nodes of class c, as their parts.
std::vector<MatmulParts> matmuls_of(const EGraph& eg, ClassId c) {
  std::vector<MatmulParts> out;
  for (ENodeId s : eg.nodes_of(c)) {
    const ENode& sn = eg.node(s);
    if (eg.is_removed(s) || !sn.op->is_hlir || sn.op->kind != OpKind::SumReduce ||
        sn.children.size() != 1)
      continue;
    for (ENodeId mul : eg.nodes_of(sn.children[0])) {
      const ENode& mn = eg.node(mul);
      if (eg.is_removed(mul) || !mn.op->is_hlir || mn.op->kind != OpKind::Mul) continue;
      Match m;
      m.root = c;
      m.root_node = s;
      m.nodes = {{"sum", s}, {"mul", mul}};
      if (std::optional<MatmulParts> p = matmul_parts(eg, m)) out.push_back(std::move(*p));
    }
  }
  return out;
}

/// The candidate from a row e-node R (of class p, read by M2 through `pview`) and M2's other
/// operand v (through `vview`), or nothing when R does not read scores as the header says.
std::optional<AttentionCandidate> candidate(const EGraph& eg, ENodeId r, const View& pview,
                                            ClassId v, const View& vview, const Attrs& m2) {
  const Attrs& ra = eg.attrs_of(r);
  const auto* prog = dynamic_cast<const FusedProgram*>(ra.payload.get());
  if (!prog || !prog->has_row_reduce()) return std::nullopt;
  const Shape& d = ra.shape;
  const size_t q = d.size();
  if (q < 1 || !reads_rows_broadcast(pview, d)) return std::nullopt;
  // M2 over [rows..., n, L], reducing L
  if (m2.axis != static_cast<int>(q) || !same_dims(vview.dims, 0, d, 0, q - 1) ||
      !(vview.dims[q] == d[q - 1]))
    return std::nullopt;
  const Expr rows = numel(Shape(d.begin(), d.end() - 1));
  if (!rows.is_const() || rows.as_const() < 1 || rows.as_const() > kAttentionMaxRows)
    return std::nullopt;
  const ENode& rn = eg.node(r);
  for (size_t j = 0; j < rn.children.size(); ++j) {
    const ClassId s = eg.find(rn.children[j]);
    const View& sv = ra.views[j];
    if (!(sv.dims == d) || !sv.is_contiguous()) continue;
    bool once = true;
    for (size_t u = 0; u < rn.children.size(); ++u)
      once = once && (u == j || eg.find(rn.children[u]) != s);
    if (!once) continue;
    for (const MatmulParts& m1 : matmuls_of(eg, s)) {
      const Attrs& a1 = m1.attrs;
      const View& v0 = a1.views[0];
      if (a1.axis != static_cast<int>(q) || v0.rank() != static_cast<int>(q) + 1 ||
          !same_dims(v0.dims, 0, d, 0, q) || !v0.dims[q].is_const() || !(a1.shape == d))
        continue;
      // Q: the operand constant along L (a query row); K the other
      int qi = -1;
      for (int i = 0; i < 2 && qi < 0; ++i)
        if (is_zero(a1.views[static_cast<size_t>(i)].strides[q - 1])) qi = i;
      if (qi < 0) continue;
      const size_t ki = static_cast<size_t>(1 - qi);
      AttentionCandidate c;
      c.children.assign(rn.children.begin(), rn.children.end());
      c.children[j] = m1.children[static_cast<size_t>(qi)];
      c.children.push_back(m1.children[ki]);
      c.children.push_back(v);
      c.attrs.dtype = m2.dtype;
      c.attrs.shape = m2.shape;
      c.attrs.views = ra.views;
      c.attrs.views[j] = a1.views[static_cast<size_t>(qi)];
      c.attrs.views.push_back(a1.views[ki]);
      c.attrs.views.push_back(vview);
      c.attrs.axis = static_cast<int>(j);
      c.attrs.payload = ra.payload;
      return c;
    }
  }
  return std::nullopt;
}

}  // namespace

Rule attention_rule(const std::string& name, const OpDef* row, const OpDef* attention,
                    std::function<bool(const EGraph&, AttentionCandidate&)> accept) {
  return Rule{name, matmul_pattern(), nullptr,
              [row, attention, accept = std::move(accept)](const Match& m, EGraph& eg) {
                const std::optional<MatmulParts> p2 = matmul_parts(eg, m);
                if (!p2) return;
                std::vector<AttentionCandidate> found;
                for (size_t pi = 0; pi < 2; ++pi) {
                  const ClassId p = p2->children[pi];
                  for (ENodeId r : eg.nodes_of(p)) {
                    if (eg.is_removed(r) || eg.node(r).op != row) continue;
                    std::optional<AttentionCandidate> c =
                        candidate(eg, r, p2->attrs.views[pi], p2->children[1 - pi],
                                  p2->attrs.views[1 - pi], p2->attrs);
                    if (c && (!accept || accept(eg, *c))) found.push_back(std::move(*c));
                  }
                }
                const ClassId root = eg.find(m.root);
                for (const AttentionCandidate& c : found)
                  eg.merge(eg.add(attention, c.attrs, c.children), root);
              }};
}

}  // namespace luminal
