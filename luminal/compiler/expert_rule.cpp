// Matching of expert-indexed matmuls (see expert_rule.hpp).
#include "luminal/compiler/expert_rule.hpp"

#include "luminal/egraph/op_def.hpp"
#include "luminal/kernels/gemm_plan.hpp"
#include "luminal/kernels/matmul_rule.hpp"

namespace luminal {

namespace {

// A live e-node of op `k` in class c, or nothing.
std::optional<ENodeId> node_in(const EGraph& eg, ClassId c, OpKind k) {
  for (ENodeId n : eg.nodes_of(c))
    if (is_op(eg.node(n).op, k)) return n;
  return std::nullopt;
}

// A constant integer stride coefficient c of c*z (0 for a zero stride), or nothing.
std::optional<int64_t> const_coef(const Expr& stride) {
  if (stride == Expr(0)) return 0;
  std::optional<Expr> c = coefficient(stride);
  if (!c || !c->is_const()) return std::nullopt;
  return c->as_const();
}

bool all_zero(const View& v) {
  for (const Expr& s : v.strides)
    if (!(s == Expr(0))) return false;
  return true;
}

// The row gather of an index class: ids (class and its view over the index shape) and R.
struct RowGather {
  ClassId ids = 0;
  View ids_view;
  int64_t R = 0;
};

std::optional<RowGather> row_gather(const EGraph& eg, ClassId index, const Shape& shape) {
  for (ENodeId add : eg.nodes_of(index)) {
    if (!is_op(eg.node(add).op, OpKind::Add)) continue;
    const Attrs& aa = eg.attrs_of(add);
    if (!aa.views[0].is_contiguous() || !aa.views[1].is_contiguous()) continue;
    for (int side = 0; side < 2; ++side) {
      const ClassId ic = eg.node(add).children[static_cast<size_t>(side)];
      const ClassId mc = eg.node(add).children[static_cast<size_t>(1 - side)];
      const std::optional<ENodeId> iota = node_in(eg, ic, OpKind::Iota);
      if (!iota) continue;
      for (ENodeId mul : eg.nodes_of(mc)) {
        if (!is_op(eg.node(mul).op, OpKind::Mul)) continue;
        const Attrs& ma = eg.attrs_of(mul);
        for (int cs = 0; cs < 2; ++cs) {
          const std::optional<ENodeId> cn =
              node_in(eg, eg.node(mul).children[static_cast<size_t>(cs)], OpKind::Constant);
          if (!cn || !all_zero(ma.views[static_cast<size_t>(cs)])) continue;
          const Attrs& ca = eg.attrs_of(*cn);
          if (!is_integer(ca.dtype) || ca.int_value <= 0) continue;
          const int64_t R = ca.int_value;
          const Attrs& ia = eg.attrs_of(*iota);
          if (!(ia.iota_expr == Expr::z() % Expr(R)) || !(ia.iota_len == numel(shape))) continue;
          // The id must be one per gathered row: trailing axes spanning R read stride 0.
          const View& vi = ma.views[static_cast<size_t>(1 - cs)];
          if (vi.has_base()) continue;  // ids read at an element offset: not matched
          int64_t span = 1;
          int t = vi.rank();
          while (t > 0 && span < R && vi.dims[static_cast<size_t>(t - 1)].is_const()) {
            span *= vi.dims[static_cast<size_t>(t - 1)].as_const();
            --t;
          }
          if (span != R) continue;
          bool ok = t <= 1;
          for (int i = t; i < vi.rank() && ok; ++i)
            ok = vi.strides[static_cast<size_t>(i)] == Expr(0);
          if (!ok) continue;
          RowGather rg;
          rg.ids = eg.node(mul).children[static_cast<size_t>(1 - cs)];
          rg.ids_view = vi;
          rg.ids_view.dims.resize(static_cast<size_t>(t));
          rg.ids_view.strides.resize(static_cast<size_t>(t));
          rg.R = R;
          if (!is_integer(eg.dtype(rg.ids))) continue;
          return rg;
        }
      }
    }
  }
  return std::nullopt;
}

// `outer` (a view of a contiguous value of `shape`) composed with `inner` (how that value reads
// its own input): where every axis of `outer` walks one axis of the value (its stride that
// axis's contiguous stride, the same size) or none (stride 0), the composed stride is inner's.
std::optional<View> compose(const View& outer, const Shape& shape, const View& inner) {
  if (outer.has_base() || inner.has_base()) return std::nullopt;  // element offsets: not matched
  const View c = View::contiguous(shape);
  View v = outer;
  for (int i = 0; i < outer.rank(); ++i) {
    const Expr& s = outer.strides[static_cast<size_t>(i)];
    if (s == Expr(0) || outer.dims[static_cast<size_t>(i)] == Expr(1)) {
      v.strides[static_cast<size_t>(i)] = Expr(0);
      continue;
    }
    int found = -1;
    for (int j = 0; j < c.rank() && found < 0; ++j)
      if (c.strides[static_cast<size_t>(j)] == s &&
          shape[static_cast<size_t>(j)] == outer.dims[static_cast<size_t>(i)])
        found = j;
    if (found < 0) return std::nullopt;
    v.strides[static_cast<size_t>(i)] = inner.strides[static_cast<size_t>(found)];
  }
  return v;
}

// A Gather e-node under the Mul operand class c, and the Mul's view `vb` of c made a view of the
// Gather's output: c holds the Gather, or an f32 Cast of it (16-bit weights, often read
// transposed: the Cast's view is composed in).
std::optional<std::pair<ENodeId, View>> gather_under(const EGraph& eg, ClassId c, const View& vb) {
  if (std::optional<ENodeId> g = node_in(eg, c, OpKind::Gather)) return std::pair{*g, vb};
  for (ENodeId n : eg.nodes_of(c)) {
    if (!is_op(eg.node(n).op, OpKind::Cast)) continue;
    const Attrs& a = eg.attrs_of(n);
    if (a.dtype != DType::F32) continue;
    const std::optional<ENodeId> g = node_in(eg, eg.node(n).children[0], OpKind::Gather);
    if (!g) continue;
    if (std::optional<View> v = compose(vb, a.shape, a.views[0])) return std::pair{*g, *v};
  }
  return std::nullopt;
}

}  // namespace

std::optional<ExpertMatmulParts> expert_matmul_parts(const EGraph& eg, const Match& m) {
  std::optional<MatmulParts> mp = matmul_parts(eg, m);
  if (!mp || mp->attrs.dtype != DType::F32) return std::nullopt;
  for (int wside = 0; wside < 2; ++wside) {
    const auto under = gather_under(eg, mp->children[static_cast<size_t>(wside)],
                                    mp->attrs.views[static_cast<size_t>(wside)]);
    if (!under) continue;
    const std::optional<ENodeId> gn = under->first;
    const View& vb = under->second;  // the Mul's view of the gathered rows
    const Attrs& ga = eg.attrs_of(*gn);
    if (ga.views.size() != 2 || !ga.views[0].is_contiguous() || !ga.views[1].is_contiguous())
      continue;
    const std::optional<RowGather> rg = row_gather(eg, eg.node(*gn).children[0], ga.shape);
    if (!rg) continue;
    const int64_t R = rg->R;
    const std::optional<int64_t> data_n = ga.views[1].numel().try_eval({});
    if (!data_n || *data_n % R != 0) continue;
    const int64_t E = *data_n / R;
    // The data: W itself, or Dequantize(Wq) read through its identity row view.
    ExpertMatmulParts p;
    const ClassId data = eg.node(*gn).children[1];
    p.weight = eg.find(data);
    p.wtype = eg.dtype(data);
    for (ENodeId n : eg.nodes_of(data)) {
      if (!is_op(eg.node(n).op, OpKind::Dequantize)) continue;
      const ClassId wq = eg.node(n).children[0];
      const Attrs& da = eg.attrs_of(n);
      if (!is_block(eg.dtype(wq)) || da.dtype != ga.dtype) continue;
      if (!(da.views[0] == View::contiguous(da.shape))) continue;
      p.weight = eg.find(wq);
      p.wtype = eg.dtype(wq);
      break;
    }
    if (!is_block(p.wtype) && p.wtype != DType::F32 && p.wtype != DType::F16 &&
        p.wtype != DType::BF16)
      continue;
    // The Mul's axes.
    const View& va = mp->attrs.views[static_cast<size_t>(1 - wside)];
    if (va.has_base() || vb.has_base()) continue;  // element offsets: not matched
    const int k = mp->attrs.axis;
    if (!vb.dims[static_cast<size_t>(k)].is_const()) continue;
    const int64_t D = vb.dims[static_cast<size_t>(k)].as_const();
    if (const_coef(vb.strides[static_cast<size_t>(k)]) != std::optional<int64_t>(1)) continue;
    std::optional<int64_t> ids_coef = 0;
    if (rg->ids_view.rank() == 1) ids_coef = const_coef(rg->ids_view.strides[0]);
    if (!ids_coef) continue;
    int n_axis = -1;
    int64_t N = 1, n_stride = D;
    bool ok = true;
    p.ids_rows = View{};
    p.act_rows = View{};
    for (int i = 0; i < vb.rank() && ok; ++i) {
      if (i == k || vb.dims[static_cast<size_t>(i)] == Expr(1)) continue;
      const std::optional<int64_t> cb = const_coef(vb.strides[static_cast<size_t>(i)]);
      if (!cb || *cb <= 0) {
        ok = false;  // a weight axis the activation walks alone (or an odd stride)
      } else if (*cb % R == 0) {
        ok = n_axis < 0;  // rows before the n axis
        p.act_rows.dims.push_back(va.dims[static_cast<size_t>(i)]);
        p.act_rows.strides.push_back(va.strides[static_cast<size_t>(i)]);
        p.ids_rows.dims.push_back(vb.dims[static_cast<size_t>(i)]);
        p.ids_rows.strides.push_back(Expr(*ids_coef * (*cb / R)) * Expr::z());
      } else {
        ok = n_axis < 0 && vb.dims[static_cast<size_t>(i)].is_const() &&
             va.strides[static_cast<size_t>(i)] == Expr(0);
        if (!ok) break;
        n_axis = i;
        N = vb.dims[static_cast<size_t>(i)].as_const();
        n_stride = *cb;
      }
    }
    // The n axis and the contraction stay inside one gathered row (N = 1 without an n axis): a
    // sum that runs across rows (over the ids themselves: R = 1 gathers one element an id) is no
    // expert matmul.
    ok = ok && (N - 1) * n_stride + D <= R;
    // A product of the gathered rows with themselves (x * x under an RMSNorm of embedding rows)
    // is no expert matmul.
    if (!ok || eg.find(mp->children[0]) == eg.find(mp->children[1])) continue;
    p.act = mp->children[static_cast<size_t>(1 - wside)];
    p.act_rows.dims.push_back(Expr(D));
    p.act_rows.strides.push_back(va.strides[static_cast<size_t>(k)]);
    p.ids = eg.find(rg->ids);
    p.weight_view.dims = {Expr(E), Expr(N), Expr(D)};
    p.weight_view.strides = {Expr(R) * Expr::z(), Expr(n_stride) * Expr::z(), Expr::z()};
    p.sum = eg.attrs_of(mp->sum_node);
    p.sum_node = mp->sum_node;
    return p;
  }
  return std::nullopt;
}

}  // namespace luminal
