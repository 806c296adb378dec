// The short-sum rule (see short_sum_rule.hpp).
#include "luminal/compiler/short_sum_rule.hpp"

#include "luminal/compiler/core_rules.hpp"

#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

namespace luminal {

namespace {

// Index i of `axis` of v, the axis dropped: how an element of the sum reads its i-th term.
std::optional<View> term(const View& v, int axis, int64_t i) {
  std::optional<View> s = v.slice(axis, Expr(i), Expr(1));
  if (!s) return std::nullopt;
  return s->squeeze(axis);
}

// 0 + t0 + t1 in the sum's dtype, in the order the reference adds: the leading 0 turns a sum of
// two -0s into +0 as the SumReduce's accumulator does.
ClassId add_terms(EGraph& eg, const Attrs& sum, ClassId t0, const View& v0, ClassId t1,
                  const View& v1) {
  Attrs zero;
  zero.dtype = sum.dtype;
  zero.shape = {};
  const ClassId z = eg.add(hlir_op(OpKind::Constant), zero, {});
  const View bcast{sum.shape, std::vector<Expr>(sum.shape.size(), Expr(0)), Expr(0)};
  Attrs a;
  a.dtype = sum.dtype;
  a.shape = sum.shape;
  a.views = {bcast, v0};
  const ClassId first = eg.add(hlir_op(OpKind::Add), a, {z, t0});
  a.views = {View::contiguous(sum.shape), v1};
  return eg.add(hlir_op(OpKind::Add), a, {first, t1});
}

}  // namespace

RuleSet short_sum_rules() {
  RuleSet rs{"short-sums", {}};
  if (const char* v = std::getenv("LUMINAL_SHORT_SUMS"); v && std::string(v) == "off") return rs;
  rs.rules.push_back(
      Rule{"sum2-adds", Pattern::op(OpKind::SumReduce, {Pattern::var("x")}),
           [](const Match& m, const EGraph& eg) {
             const Attrs& a = eg.attrs_of(m.root_node);
             // Not f64: a program may compute the sum twice, as these adds inlined in a fused
             // kernel and by a matmul kernel (bits apart), and f64 division's exact splits turn
             // that difference into a wrong quotient (ir/division.cpp; f32 and narrower division
             // has no split).
             if (!is_float(a.dtype) || a.dtype == DType::F64 || a.views.size() != 1 ||
                 eg.dtype(m.cls("x")) != a.dtype)
               return false;
             const View& v = a.views[0];
             return a.axis >= 0 && a.axis < v.rank() && v.dims[a.axis] == Expr(2);
           },
           [](const Match& m, EGraph& eg) {
             const Attrs sum = eg.attrs_of(m.root_node);
             const ClassId x = m.cls("x");
             const View& v = sum.views[0];
             std::optional<View> v0 = term(v, sum.axis, 0), v1 = term(v, sum.axis, 1);
             if (!v0 || !v1) return;
             eg.merge(m.root, add_terms(eg, sum, x, *v0, x, *v1));
             // x a Mul read whole: each term is its own Mul of the operands' slices.
             if (!reads_whole(v, eg.shape(x))) return;
             std::vector<ENodeId> muls;
             for (ENodeId n : eg.nodes_of(x))
               if (is_op(eg.node(n).op, OpKind::Mul) && eg.attrs_of(n).dtype == sum.dtype)
                 muls.push_back(n);
             for (ENodeId n : muls) {
               const Attrs mul = eg.attrs_of(n);
               const std::vector<ClassId> kids = eg.node(n).children;
               if (kids.size() != 2 || mul.views.size() != 2) continue;
               ClassId t[2];
               bool ok = true;
               for (int i = 0; i < 2 && ok; ++i) {
                 Attrs ti;
                 ti.dtype = sum.dtype;
                 ti.shape = sum.shape;
                 for (int s = 0; s < 2 && ok; ++s) {
                   std::optional<View> w = term(mul.views[s], sum.axis, i);
                   ok = w.has_value();
                   if (ok) ti.views.push_back(*w);
                 }
                 if (ok) t[i] = eg.add(hlir_op(OpKind::Mul), ti, kids);
               }
               if (!ok) continue;
               const View whole = View::contiguous(sum.shape);
               eg.merge(m.root, add_terms(eg, sum, t[0], whole, t[1], whole));
             }
           }});
  return rs;
}

}  // namespace luminal
