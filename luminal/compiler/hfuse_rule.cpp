// Horizontal fusion of matmuls that share an activation (see hfuse_rule.hpp).
#include "luminal/compiler/hfuse_rule.hpp"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "luminal/core/expr_static.hpp"
#include "luminal/kernels/matmul_rule.hpp"
#include "luminal/program/fold.hpp"

namespace luminal {

namespace {

bool is_static(const View& v) {
  return std::all_of(v.dims.begin(), v.dims.end(), [](const Expr& e) { return e.is_const(); }) &&
         std::all_of(v.strides.begin(), v.strides.end(),
                     [](const Expr& e) { return is_static(e); }) &&
         is_static(v.base);
}

bool all_const(const Shape& s) {
  return std::all_of(s.begin(), s.end(), [](const Expr& e) { return e.is_const(); });
}

// One matmul of a group.
struct Member {
  ClassId cls = 0;  // the matmul's class (SumReduce)
  ClassId x = 0;    // the activation side's class
  int xs = 0;       // which Mul child is x
  View xv;          // x's view over the Mul's dims
  ClassId src = 0;  // the weight input's class
  View wv;          // [n, k] view of the weight over src
  int64_t n = 0, k = 0;
  DType wdt = DType::F32;  // the weight input's dtype
  bool cast = false;       // the Mul reads Cast(weight)
  DType mul_dt = DType::F32;
  int rank = 0;          // of the Mul's dims
  std::string key;       // what members of one group share
  std::string order;     // sort key: the weight's label and view
  bool one_row = false;  // every axis of the output but n is a constant 1
  ClassId wcls = 0;      // the Mul's weight-side class (the weight, or its Cast)
  MatmulParts parts;     // the match as a matmul
};

// A weight Input e-node of class c (persistent, not carried, static shape), if any.
std::optional<ENodeId> weight_input(const EGraph& eg, ClassId c,
                                    const std::set<std::string, std::less<>>& carried) {
  for (ENodeId n : eg.nodes_of(c)) {
    const ENode& e = eg.node(n);
    if (!is_op(e.op, OpKind::Input)) continue;
    const Attrs& a = eg.attrs(e.attr);
    if (a.persist && !carried.count(a.label) && all_const(a.shape) && !is_block(a.dtype)) return n;
  }
  return std::nullopt;
}

// `v` (over a contiguous tensor of shape `s`) composed with `u` (a view of dims `s` over some
// source): a view with v's dims over the source, or nothing unless every axis of v steps along
// one axis of s (stride c*z with c that axis' row-major step, or 0) and v has no base.
std::optional<View> compose(const View& v, const Shape& s, const View& u) {
  if (v.has_base() || u.dims != s || !all_const(s)) return std::nullopt;
  std::vector<int64_t> step(s.size(), 1);
  for (size_t j = s.size(); j-- > 1;)
    step[j - 1] = step[j] * s[j].as_const();
  View out;
  out.dims = v.dims;
  out.base = u.base;
  std::vector<bool> used(s.size(), false);
  for (size_t a = 0; a < v.dims.size(); ++a) {
    const Expr& st = v.strides[a];
    if (st == Expr(0) || v.dims[a] == Expr(1)) {
      out.strides.push_back(Expr(0));
      continue;
    }
    std::optional<std::pair<Expr, Expr>> lin = st.as_linear("z");
    if (!lin || !lin->first.is_const() || lin->second != Expr(0)) return std::nullopt;
    const int64_t c = lin->first.as_const();
    std::optional<size_t> axis;
    for (size_t j = 0; j < s.size() && !axis; ++j)
      if (!used[j] && step[j] == c && s[j].as_const() >= v.dims[a].as_const() &&
          s[j].as_const() > 1)
        axis = j;
    if (!axis) return std::nullopt;
    used[*axis] = true;
    out.strides.push_back(u.strides[*axis]);
  }
  return out;
}

std::optional<Member> analyze(const EGraph& eg, ENodeId sum_id, ENodeId mul_id,
                              const std::set<std::string, std::less<>>& carried) {
  Match m;
  m.root = eg.class_of(sum_id);
  m.root_node = sum_id;
  m.nodes = {{"sum", sum_id}, {"mul", mul_id}};
  std::optional<MatmulParts> p = matmul_parts(eg, m);
  if (!p) return std::nullopt;
  const int rank = p->attrs.views[0].rank();
  if (rank < 2 || p->attrs.axis != rank - 1) return std::nullopt;
  const Shape& out = p->attrs.shape;  // the Mul's dims without k
  if (static_cast<int>(out.size()) != rank - 1) return std::nullopt;
  bool one_row = true;
  for (int i = 0; i + 1 < rank - 1; ++i)
    one_row = one_row && out[i] == Expr(1);
  const Expr n = out[rank - 2], k = p->attrs.views[0].dims[rank - 1];
  if (!n.is_const() || !k.is_const()) return std::nullopt;
  for (int xs = 0; xs < 2; ++xs) {
    const View& xv = p->attrs.views[xs];
    const View& wv = p->attrs.views[1 - xs];
    if (xv.strides[rank - 2] != Expr(0) || n == Expr(1)) continue;
    const ClassId wc = p->children[1 - xs];
    bool shared = true;  // the weight is the same for every row (broadcast on leading axes)
    for (int i = 0; i + 2 < rank; ++i)
      shared = shared && (wv.dims[i] == Expr(1) || wv.strides[i] == Expr(0));
    if (!shared) continue;
    View w2{{wv.dims[rank - 2], wv.dims[rank - 1]},
            {wv.strides[rank - 2], wv.strides[rank - 1]},
            wv.base};
    Member mem;
    if (std::optional<ENodeId> in = weight_input(eg, wc, carried)) {
      if (!is_static(w2)) continue;
      mem.src = wc;
      mem.wv = w2;
      mem.wdt = eg.dtype(wc);
      mem.order = eg.attrs_of(*in).label;
    } else {
      // Cast(weight), the Cast reading the weight through a view of its own shape.
      bool found = false;
      for (ENodeId cn : eg.nodes_of(wc)) {
        const ENode& ce = eg.node(cn);
        if (!is_op(ce.op, OpKind::Cast) || ce.children.size() != 1) continue;
        const ClassId u = eg.find(ce.children[0]);
        std::optional<ENodeId> in = weight_input(eg, u, carried);
        if (!in) continue;
        std::optional<View> cv = compose(w2, eg.shape(wc), eg.attrs(ce.attr).views[0]);
        if (!cv || !is_static(*cv)) continue;
        mem.src = u;
        mem.wv = *cv;
        mem.wdt = eg.dtype(u);
        mem.cast = true;
        mem.order = eg.attrs_of(*in).label;
        found = true;
        break;
      }
      if (!found) continue;
    }
    mem.cls = eg.find(m.root);
    mem.x = p->children[xs];
    mem.xs = xs;
    mem.xv = xv;
    mem.n = n.as_const();
    mem.k = k.as_const();
    mem.mul_dt = eg.attrs_of(mul_id).dtype;
    mem.rank = rank;
    mem.one_row = one_row;
    mem.wcls = wc;
    mem.parts = *p;
    View xkey = xv;
    xkey.dims[rank - 2] = Expr(1);
    mem.key = std::to_string(mem.x) + "|" + std::to_string(xs) + "|" + xkey.to_string() + "|" +
              std::to_string(mem.k) + "|" + std::string(name(mem.wdt)) + "|" +
              std::string(name(eg.dtype(mem.cls))) + "|" + std::string(name(mem.mul_dt)) + "|" +
              (mem.cast ? std::string(name(eg.dtype(wc))) : std::string("-")) + "|" +
              std::to_string(rank);
    mem.order += "|" + mem.wv.to_string();
    return mem;
  }
  return std::nullopt;
}

// The members that read `x0`'s activation like `first` does, ordered by weight label.
std::vector<Member> group_of(const EGraph& eg, const Member& first,
                             const std::set<std::string, std::less<>>& carried) {
  std::map<ClassId, Member> by_class;
  for (ENodeId mul : eg.eclass(first.x).parents) {
    if (eg.is_removed(mul) || !is_op(eg.node(mul).op, OpKind::Mul)) continue;
    for (ENodeId sum : eg.eclass(eg.class_of(mul)).parents) {
      if (eg.is_removed(sum) || !is_op(eg.node(sum).op, OpKind::SumReduce)) continue;
      if (eg.find(eg.node(sum).children[0]) != eg.class_of(mul)) continue;
      std::optional<Member> m = analyze(eg, sum, mul, carried);
      if (!m || m->key != first.key) continue;
      by_class.emplace(m->cls, std::move(*m));
    }
  }
  std::vector<Member> out;
  for (auto& [c, m] : by_class)
    out.push_back(std::move(m));
  std::sort(out.begin(), out.end(), [](const Member& a, const Member& b) {
    return a.order != b.order ? a.order < b.order : a.cls < b.cls;
  });
  if (out.size() > kHfuseMaxMembers) out.resize(kHfuseMaxMembers);
  return out;
}

// Adds the weights of `group` concatenated along n, [N, k] (cast as the members' Mul reads
// them); returns its class.
// `uncast` receives the concatenation before the Cast (a backend's matmul may read it directly:
// a GEMV over 16-bit weights).
ClassId add_concat(EGraph& eg, const std::vector<Member>& group, ClassId* uncast) {
  const Member& f = group[0];
  int64_t total = 0;
  for (const Member& m : group)
    total += m.n;
  const Expr N(total), K(f.k);
  // Wc [N, k]: scatters of each weight's rows into a zero constant.
  Attrs ca;
  ca.dtype = f.wdt;
  ca.shape = {};
  ClassId wc = eg.add(hlir_op(OpKind::Constant), ca, {});
  View dest{{N, K}, {Expr(0), Expr(0)}, Expr(0)};
  int64_t off = 0;
  for (const Member& m : group) {
    Attrs ia;
    ia.dtype = DType::I32;
    ia.shape = {Expr(m.n * f.k)};
    ia.iota_expr = Expr::z() + Expr(off * f.k);
    ia.iota_len = Expr(m.n * f.k);
    const ClassId iota = eg.add(hlir_op(OpKind::Iota), ia, {});
    Attrs sa;
    sa.dtype = f.wdt;
    sa.shape = {N, K};
    sa.views = {dest, View::contiguous({Expr(m.n), K}), m.wv};
    wc = eg.add(hlir_op(OpKind::Scatter), sa, {wc, iota, m.src});
    dest = View::contiguous({N, K});
    off += m.n;
  }
  if (f.cast) {
    Attrs ka;
    ka.dtype = f.mul_dt;
    ka.shape = {N, K};
    ka.views = {View::contiguous({N, K})};
    *uncast = wc;
    wc = eg.add(hlir_op(OpKind::Cast), ka, {wc});
  }
  return wc;
}

// The view of rows o .. o+n of the concatenation [N, k] over a Mul's dims [.., n, k] (broadcast
// along the leading axes).
View concat_rows(const Member& m, int64_t total, int64_t o) {
  View v = View::contiguous({Expr(total), Expr(m.k)});
  v.dims[0] = Expr(m.n);
  v.base = Expr(o * m.k);
  const View& xv = m.parts.attrs.views[m.xs];
  for (int i = m.rank - 3; i >= 0; --i)
    v = v.expand(0, xv.dims[i]);
  return v;
}

// Member m's matmul reading its weight as rows o .. o+n of the concatenation wc, merged into m's
// class (any number of rows: prefill reads the folded concatenation instead of the weights too).
void add_sliced(EGraph& eg, const Member& m, ClassId wc, int64_t total, int64_t o) {
  const View wv = concat_rows(m, total, o);
  const View& xv = m.parts.attrs.views[m.xs];
  Attrs ma;
  ma.dtype = m.mul_dt;
  ma.shape = xv.dims;
  ma.views = m.xs == 0 ? std::vector<View>{xv, wv} : std::vector<View>{wv, xv};
  const ClassId mul =
      eg.add(hlir_op(OpKind::Mul), ma,
             m.xs == 0 ? std::vector<ClassId>{m.x, wc} : std::vector<ClassId>{wc, m.x});
  Attrs ra;
  ra.dtype = eg.dtype(m.cls);
  ra.shape = m.parts.attrs.shape;
  ra.views = {View::contiguous(xv.dims)};
  ra.axis = m.rank - 1;
  eg.merge(eg.add(hlir_op(OpKind::SumReduce), ra, {mul}), m.cls);
}

// Adds the fused matmul of one-row `group` over the concatenation wc; returns its class.
ClassId add_fused(EGraph& eg, const std::vector<Member>& group, ClassId wc) {
  const Member& f = group[0];
  int64_t total = 0;
  for (const Member& m : group)
    total += m.n;
  const Expr N(total), K(f.k);
  // Y = SumReduce(Mul(x, Wc)) over [1.., N, k].
  View wv = View::contiguous({N, K});
  while (wv.rank() < f.rank)
    wv = wv.unsqueeze(0);
  View xv = f.xv;
  xv.dims[f.rank - 2] = N;
  Shape mul_shape = xv.dims;
  Attrs ma;
  ma.dtype = f.mul_dt;
  ma.shape = mul_shape;
  ma.views = f.xs == 0 ? std::vector<View>{xv, wv} : std::vector<View>{wv, xv};
  const ClassId mul =
      eg.add(hlir_op(OpKind::Mul), ma,
             f.xs == 0 ? std::vector<ClassId>{f.x, wc} : std::vector<ClassId>{wc, f.x});
  Attrs ra;
  ra.dtype = eg.dtype(f.cls);
  ra.shape = Shape(mul_shape.begin(), mul_shape.end() - 1);
  ra.views = {View::contiguous(mul_shape)};
  ra.axis = f.rank - 1;
  return eg.add(hlir_op(OpKind::SumReduce), ra, {mul});
}

// Every reader of `c` gets a copy reading `y` at element offset `offset` instead.
void redirect_readers(EGraph& eg, ClassId c, ClassId y, int64_t offset) {
  c = eg.find(c);
  const std::vector<ENodeId> parents = eg.eclass(c).parents;
  for (ENodeId p : parents) {
    if (eg.is_removed(p)) continue;
    const ENode e = eg.node(p);
    if (is_op(e.op, OpKind::Output) || e.op == fold_op()) continue;
    if (!e.op->is_hlir && !e.op->any_view) continue;
    const Attrs& a = eg.attrs(e.attr);
    if (a.views.size() != e.children.size()) continue;
    Attrs na = a;
    std::vector<ClassId> kids = e.children;
    bool hit = false, inplace = false;
    for (size_t i = 0; i < kids.size(); ++i) {
      if (eg.find(kids[i]) != c) continue;
      if (e.op->inplace_input == static_cast<int>(i)) inplace = true;
      kids[i] = y;
      na.views[i].base = na.views[i].base + Expr(offset);
      hit = true;
    }
    if (!hit || inplace) continue;
    const ClassId target = eg.class_of(p);
    const ClassId added = eg.add(e.op, na, std::move(kids));
    eg.merge(added, target);
  }
}

}  // namespace

bool horizontal_fusion_enabled() {
  const char* v = std::getenv("LUMINAL_HFUSE");
  return v != nullptr && std::string(v) == "on";
}

RuleSet horizontal_fusion_rules(std::set<std::string, std::less<>> carried,
                                std::shared_ptr<HfuseLog> log) {
  RuleSet rs{"hfuse", {}};
  if (!horizontal_fusion_enabled()) return rs;
  auto shared = std::make_shared<const std::set<std::string, std::less<>>>(std::move(carried));
  auto apply = [shared, log](const Match& m, EGraph& eg) {
    std::optional<Member> first = analyze(eg, m.node("sum"), m.node("mul"), *shared);
    if (!first) return;
    const std::vector<Member> group = group_of(eg, *first, *shared);
    if (group.size() < 2) return;
    ClassId uncast = 0;
    const ClassId wc = add_concat(eg, group, &uncast);
    uncast = group[0].cast ? uncast : wc;
    int64_t total = 0;
    bool one_row = true;
    for (const Member& mem : group) {
      total += mem.n;
      one_row = one_row && mem.one_row;
    }
    const ClassId y = one_row ? add_fused(eg, group, wc) : 0;
    int64_t off = 0;
    for (const Member& mem : group) {
      add_sliced(eg, mem, wc, total, off);
      if (one_row) redirect_readers(eg, mem.cls, y, off);
      off += mem.n;
      if (log) {
        if (one_row) log->members.push_back(mem.cls);
        log->weights.push_back(mem.wcls);
      }
    }
    if (log) {
      log->concats.push_back(wc);
      log->concats.push_back(uncast);
    }
  };
  rs.rules.push_back(Rule{"hfuse-matmul", matmul_pattern(),
                          [shared](const Match& m, const EGraph& eg) {
                            return analyze(eg, m.node("sum"), m.node("mul"), *shared).has_value();
                          },
                          apply});
  return rs;
}

}  // namespace luminal
