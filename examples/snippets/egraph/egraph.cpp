// luminal/egraph/egraph.hpp: e-classes of equivalent values. Adding an e-node that exists returns
// its class; merge() records an equivalence and rebuild() restores congruence.
#include "luminal/egraph/egraph.hpp"
#include "luminal/egraph/op_def.hpp"
#include "snippet.hpp"

using namespace luminal;

int main() {
  EGraph eg;
  Attrs input_attrs;
  input_attrs.shape = {4};
  input_attrs.label = "x";
  ClassId x = eg.add(hlir_op(OpKind::Input), input_attrs, {});
  Attrs exp_attrs;
  exp_attrs.shape = {4};
  exp_attrs.views = {View::contiguous({4})};  // how the e-node reads its child
  ClassId y = eg.add(hlir_op(OpKind::Exp2), exp_attrs, {x});
  expect(eg.add(hlir_op(OpKind::Exp2), exp_attrs, {x}) == y, "hash-consing: the same class");

  // 1 / (1 / y) is y: merge the classes, then rebuild.
  ClassId r = eg.add(hlir_op(OpKind::Recip), exp_attrs, {y});
  ClassId rr = eg.add(hlir_op(OpKind::Recip), exp_attrs, {r});
  eg.merge(rr, y);  // records the equivalence; congruence is restored by rebuild()
  eg.rebuild();
  expect(eg.find(rr) == eg.find(y), "merged classes have one canonical id");
  expect(eg.nodes_of(y).size() == 2, "y's class holds Exp2 and Recip");
}
