// Splitting a matmul domain's axes into linear strides (see split_axes.hpp).
#include "luminal/kernels/split_axes.hpp"

#include <cstdint>
#include <set>

#include "luminal/kernels/gemm_plan.hpp"

namespace luminal {

namespace {

bool linear(const Expr& s) { return coefficient(s).has_value(); }

// The constants c of every z-dependent (x / c) and (x % c) in e.
void divisors(const Expr& e, std::set<int64_t>* out) {
  if (e.kind() == Expr::Kind::Div || e.kind() == Expr::Kind::Mod) {
    const std::vector<Expr> ch = e.children();
    if (ch[1].is_const() && ch[1].as_const() > 1 && ch[0].has_var("z"))
      out->insert(ch[1].as_const());
  }
  for (const Expr& c : e.children())
    divisors(c, out);
}

// v with `axis` split into [d / g, g], both strides linear; nothing otherwise.
std::optional<View> split_linear(const View& v, int axis, int64_t g) {
  std::optional<View> s = v.split(axis, Expr(g));
  if (!s) return std::nullopt;
  const Facts outer{{"z", Interval{0, INT64_MAX / 4}}};
  const Facts inner{{"z", Interval{0, g - 1}}};
  s->strides[axis] = s->strides[axis].simplify(outer);
  s->strides[axis + 1] = s->strides[axis + 1].simplify(inner);
  if (!linear(s->strides[axis]) || !linear(s->strides[axis + 1])) return std::nullopt;
  return s;
}

}  // namespace

std::optional<SplitDomain> split_for_linear_strides(const View& a, const View& b, int axis) {
  SplitDomain d{a, b, axis};
  bool split = false;
  for (int i = 0; i < d.a.rank(); ++i) {
    if (i == d.axis) continue;
    const bool la = linear(d.a.strides[i]), lb = linear(d.b.strides[i]);
    if (la && lb) continue;
    if (!d.a.dims[i].is_const()) return std::nullopt;
    const int64_t n = d.a.dims[i].as_const();
    std::set<int64_t> gs;
    divisors(d.a.strides[i], &gs);
    divisors(d.b.strides[i], &gs);
    bool done = false;
    for (int64_t g : gs) {
      if (g >= n || n % g != 0) continue;
      std::optional<View> sa = split_linear(d.a, i, g), sb = split_linear(d.b, i, g);
      if (!sa || !sb) continue;
      d.a = *sa;
      d.b = *sb;
      if (d.axis > i) ++d.axis;
      ++i;  // the inner half is linear already
      done = split = true;
      break;
    }
    if (!done) return std::nullopt;
  }
  if (!split) return std::nullopt;
  return d;
}

}  // namespace luminal
