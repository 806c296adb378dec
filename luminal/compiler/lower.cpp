#include "luminal/compiler/lower.hpp"

#include "luminal/egraph/op_def.hpp"

namespace luminal {

namespace {

// Substitutes dims fixed to a single value and simplifies under the facts.
struct Simplifier {
  const Facts& facts;
  std::map<std::string, Expr, std::less<>> fixed;

  explicit Simplifier(const Facts& f) : facts(f) {
    for (const auto& [name, iv] : f)
      if (iv.lo == iv.hi) fixed.emplace(name, Expr(iv.lo));
  }
  Expr operator()(const Expr& e) const {
    Expr x = fixed.empty() ? e : e.substitute(fixed);
    return facts.empty() ? x : x.simplify(facts);
  }
  Shape operator()(const Shape& s) const {
    Shape out;
    out.reserve(s.size());
    for (const Expr& e : s)
      out.push_back((*this)(e));
    return out;
  }
  View operator()(const View& v) const {
    return View{(*this)(v.dims), (*this)(v.strides), (*this)(v.base)};
  }
};

// Whether a declared alternative is offered under these dim ranges (Graph::alternative's
// at_most: its expression's largest value within the bound).
bool applies(const Graph::Alternative& x, const Facts& facts) {
  return !x.at_most || x.at_most->first.bounds(facts).hi <= x.at_most->second;
}

}  // namespace

Attrs attrs_of(const Node& n) {
  Attrs a;
  a.dtype = n.dtype;
  a.shape = n.shape;
  for (const Operand& o : n.inputs)
    a.views.push_back(o.view);
  switch (n.op) {
    case OpKind::Input:
    case OpKind::Output:
      a.label = n.label;
      a.persist = n.persist;
      break;
    case OpKind::Constant:
      a.value = n.value;
      a.int_value = n.int_value;
      break;
    case OpKind::Iota:
      a.iota_expr = n.iota_expr;
      a.iota_len = n.iota_len;
      break;
    case OpKind::SumReduce:
    case OpKind::MaxReduce: a.axis = n.axis; break;
    default: break;
  }
  return a;
}

Lowered lower(const Graph& g, EGraph& eg, const Facts& facts) {
  Simplifier simp(facts);
  Lowered out;
  const std::vector<Node>& nodes = g.nodes();
  out.class_of.assign(nodes.size(), 0);
  // Only nodes an output depends on are lowered.
  std::vector<bool> needed(nodes.size(), false);
  for (NodeId o : g.outputs())
    needed[o] = true;
  // ... and the declared alternatives of a needed node (Graph::alternative), with theirs.
  for (bool grew = true; grew;) {
    for (size_t i = nodes.size(); i-- > 0;)
      if (needed[i])
        for (const Operand& in : nodes[i].inputs)
          needed[in.node] = true;
    grew = false;
    for (const Graph::Alternative& x : g.alternatives())
      if (needed[x.primary] && !needed[x.alt] && applies(x, facts)) grew = needed[x.alt] = true;
  }
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (!needed[i]) continue;
    const Node& n = nodes[i];
    Attrs a = attrs_of(n);
    a.shape = simp(a.shape);
    for (View& v : a.views)
      v = simp(v);
    if (n.op == OpKind::Iota) {
      a.iota_expr = simp(a.iota_expr);
      a.iota_len = simp(a.iota_len);
    }
    std::vector<ClassId> children;
    for (const Operand& o : n.inputs)
      children.push_back(out.class_of[o.node]);
    out.class_of[i] = eg.add(hlir_op(n.op), a, std::move(children));
    if (n.op == OpKind::Output) out.roots.push_back(out.class_of[i]);
  }
  // An alternative computes its primary's values: one class, both forms its e-nodes.
  bool merged = false;
  for (const Graph::Alternative& x : g.alternatives())
    if (needed[x.primary] && applies(x, facts))
      merged = eg.merge(out.class_of[x.primary], out.class_of[x.alt]) || merged;
  if (merged) {
    eg.rebuild();
    for (ClassId& c : out.class_of)
      c = eg.find(c);
    for (ClassId& c : out.roots)
      c = eg.find(c);
  }
  return out;
}

}  // namespace luminal
