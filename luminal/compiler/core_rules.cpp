#include "luminal/compiler/core_rules.hpp"

namespace luminal {

bool reads_whole(const View& v, const Shape& shape) { return v.dims == shape && v.is_contiguous(); }

namespace {

bool is_one(const Attrs& c) {
  return is_float(c.dtype) || c.dtype == DType::Bool ? c.value == 1.0 : c.int_value == 1;
}

}  // namespace

bool widens_exactly(DType from, DType to) {
  if (from == to) return true;
  switch (to) {
    case DType::F64:
      return from == DType::F32 || from == DType::F16 || from == DType::BF16 ||
             from == DType::TF32 || from == DType::F8E4M3 || from == DType::F8E5M2 ||
             from == DType::I32 || from == DType::I16 || from == DType::U16 || from == DType::I8 ||
             from == DType::U8 || from == DType::Bool;
    case DType::F32:
      return from == DType::F16 || from == DType::BF16 || from == DType::TF32 ||
             from == DType::F8E4M3 || from == DType::F8E5M2 || from == DType::I16 ||
             from == DType::U16 || from == DType::I8 || from == DType::U8 || from == DType::Bool;
    case DType::F16:
      return from == DType::F8E4M3 || from == DType::F8E5M2 || from == DType::I8 ||
             from == DType::U8 || from == DType::Bool;
    case DType::BF16:
      return from == DType::F8E4M3 || from == DType::F8E5M2 || from == DType::I8 ||
             from == DType::U8 || from == DType::Bool;
    case DType::I64:
      return from == DType::I32 || from == DType::I16 || from == DType::U16 || from == DType::I8 ||
             from == DType::U8 || from == DType::Bool;
    case DType::I32:
      return from == DType::I16 || from == DType::U16 || from == DType::I8 || from == DType::U8 ||
             from == DType::Bool;
    case DType::I16: return from == DType::I8 || from == DType::U8 || from == DType::Bool;
    default: return false;
  }
}

RuleSet core_rules() {
  RuleSet rs{"core", {}};
  rs.rules.push_back(Rule{"cast-identity", Pattern::op(OpKind::Cast, {Pattern::var("x")}),
                          [](const Match& m, const EGraph& eg) {
                            const Attrs& a = eg.attrs_of(m.root_node);
                            ClassId x = m.cls("x");
                            return a.dtype == eg.dtype(x) && reads_whole(a.views[0], eg.shape(x)) &&
                                   a.shape == eg.shape(x);
                          },
                          [](const Match& m, EGraph& eg) { eg.merge(m.root, m.cls("x")); }});
  rs.rules.push_back(Rule{
      "cast-roundtrip",
      Pattern::op(OpKind::Cast, {Pattern::op(OpKind::Cast, {Pattern::var("x")}).bind("inner")}),
      [](const Match& m, const EGraph& eg) {
        const Attrs& outer = eg.attrs_of(m.root_node);
        const Attrs& inner = eg.attrs_of(m.node("inner"));
        ClassId x = m.cls("x");
        return outer.dtype == eg.dtype(x) && widens_exactly(eg.dtype(x), inner.dtype) &&
               reads_whole(inner.views[0], eg.shape(x)) &&
               reads_whole(outer.views[0], inner.shape) && outer.shape == eg.shape(x);
      },
      [](const Match& m, EGraph& eg) { eg.merge(m.root, m.cls("x")); }});
  for (int side = 0; side < 2; ++side) {
    std::vector<Pattern> kids;
    kids.push_back(side == 0 ? Pattern::var("x") : Pattern::op(OpKind::Constant).bind("one"));
    kids.push_back(side == 0 ? Pattern::op(OpKind::Constant).bind("one") : Pattern::var("x"));
    rs.rules.push_back(
        Rule{side == 0 ? "mul-one" : "one-mul", Pattern::op(OpKind::Mul, std::move(kids)),
             [side](const Match& m, const EGraph& eg) {
               const Attrs& mul = eg.attrs_of(m.root_node);
               ClassId x = m.cls("x");
               return is_one(eg.attrs_of(m.node("one"))) && mul.shape == eg.shape(x) &&
                      reads_whole(mul.views[side], eg.shape(x));
             },
             [](const Match& m, EGraph& eg) { eg.merge(m.root, m.cls("x")); }});
  }
  return rs;
}

}  // namespace luminal
