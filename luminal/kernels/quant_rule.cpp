// Matching of quantized matmuls and gathers (see quant_rule.hpp).
#include "luminal/kernels/quant_rule.hpp"

#include "luminal/egraph/op_def.hpp"
#include "luminal/kernels/matmul_rule.hpp"

namespace luminal {

namespace {

// A live Dequantize e-node of class c whose input is block-typed, or nothing.
std::optional<ENodeId> dequantize_in(const EGraph& eg, ClassId c) {
  for (ENodeId n : eg.nodes_of(c)) {
    if (eg.is_removed(n) || !is_op(eg.node(n).op, OpKind::Dequantize)) continue;
    const ENode& node = eg.node(n);
    if (node.children.size() != 1 || !is_block(eg.dtype(node.children[0]))) continue;
    return n;
  }
  return std::nullopt;
}

// True when class c holds a persistent Input (a weight).
bool holds_weight(const EGraph& eg, ClassId c) {
  for (ENodeId n : eg.nodes_of(c))
    if (!eg.is_removed(n) && is_op(eg.node(n).op, OpKind::Input) && eg.attrs_of(n).persist)
      return true;
  return false;
}

// A live Cast e-node of class c from a bf16/f16 weight to f32, or nothing. Only weights: a 16-bit
// activation (embedding rows gathered, then cast) would otherwise qualify as the "weight" of
// the next projection, whose real weight would then be widened whole as its "activation".
std::optional<ENodeId> cast16_in(const EGraph& eg, ClassId c) {
  for (ENodeId n : eg.nodes_of(c)) {
    if (eg.is_removed(n) || !is_op(eg.node(n).op, OpKind::Cast)) continue;
    const ENode& node = eg.node(n);
    if (node.children.size() != 1) continue;
    const DType t = eg.dtype(node.children[0]);
    if (t != DType::BF16 && t != DType::F16) continue;
    if (!holds_weight(eg, node.children[0])) continue;
    return n;
  }
  return std::nullopt;
}

bool all_static(const Shape& s) {
  for (const Expr& d : s)
    if (!d.is_const()) return false;
  return true;
}

}  // namespace

void dominate_widened(EGraph& eg, ENodeId q, ClassId dequantized) {
  const ClassId deq = eg.find(dequantized);
  for (ENodeId n : eg.nodes_of(eg.class_of(q))) {
    if (n == q || eg.is_removed(n)) continue;
    for (ClassId child : eg.node(n).children)
      if (eg.find(child) == deq) {
        eg.dominate(q, n);
        break;
      }
  }
}

View rows_view_over(const Shape& dims, const std::vector<int>& m_axes, int axis,
                    const Shape& rows) {
  const View rv = View::contiguous(rows);
  View v;
  v.dims = dims;
  v.strides.assign(dims.size(), Expr(0));
  for (size_t j = 0; j < m_axes.size(); ++j)
    v.strides[static_cast<size_t>(m_axes[j])] = rv.strides[j];
  v.strides[static_cast<size_t>(axis)] = Expr(1) * Expr::z();
  return v;
}

QuantMatmulAttrs quant_matmul_attrs(const QuantMatmulParts& p, DType fmt) {
  QuantMatmulAttrs a;
  a.quantize.dtype = fmt;
  a.quantize.shape = p.act_rows;
  a.quantize.views = {p.act_rows_view};
  a.matmul.dtype = p.sum.dtype;
  a.matmul.shape = p.sum.shape;
  a.matmul.axis = p.axis;
  a.matmul.views = {rows_view_over(p.dims, p.m_axes, p.axis, p.act_rows), p.weight_view};
  return a;
}

namespace {

std::optional<QuantMatmulParts> weight_matmul_parts(
    const EGraph& eg, const Match& m,
    std::optional<ENodeId> (*widened_in)(const EGraph&, ClassId)) {
  std::optional<MatmulParts> mp = matmul_parts(eg, m);
  if (!mp || mp->attrs.dtype != DType::F32) return std::nullopt;
  int wside = -1;
  std::optional<ENodeId> deq;
  for (int side = 0; side < 2 && !deq; ++side)
    if ((deq = widened_in(eg, mp->children[static_cast<size_t>(side)]))) wside = side;
  if (!deq) return std::nullopt;
  const Attrs& da = eg.attrs_of(*deq);
  if (da.dtype != DType::F32) return std::nullopt;
  const View& vd = da.views[0];  // W's row view, over the dequantised shape
  const Shape& sd = da.shape;    // the dequantised shape
  if (!all_static(sd) || sd.empty()) return std::nullopt;
  const int64_t K = sd.back().as_const();
  const View& vb = mp->attrs.views[static_cast<size_t>(wside)];
  const View& va = mp->attrs.views[static_cast<size_t>(1 - wside)];
  const int k = mp->attrs.axis;
  const Expr unit = Expr(1) * Expr::z();
  // Weights read at an element offset (a slice of W) are not matched (yet); the activation's
  // offset goes into the rows the Quantize reads.
  if (vb.has_base() || vd.has_base()) return std::nullopt;
  if (!(vb.dims[static_cast<size_t>(k)] == Expr(K)) ||
      !(vb.strides[static_cast<size_t>(k)] == unit))
    return std::nullopt;

  QuantMatmulParts p;
  p.wtype = eg.dtype(eg.node(*deq).children[0]);
  p.weight = eg.find(eg.node(*deq).children[0]);
  p.act = mp->children[static_cast<size_t>(1 - wside)];
  p.dequantized = mp->children[static_cast<size_t>(wside)];
  p.dims = vb.dims;
  p.axis = k;
  p.sum = eg.attrs_of(mp->sum_node);
  p.sum_node = mp->sum_node;
  // Classify the axes; n axes must be static and start rows.
  std::vector<int> n_axes;
  for (int i = 0; i < vb.rank(); ++i) {
    if (i == k || vb.dims[static_cast<size_t>(i)] == Expr(1)) continue;
    if (vb.strides[static_cast<size_t>(i)] == Expr(0)) {
      p.m_axes.push_back(i);
      continue;
    }
    if (!(va.strides[static_cast<size_t>(i)] == Expr(0))) return std::nullopt;  // batched
    if (!vb.dims[static_cast<size_t>(i)].is_const()) return std::nullopt;
    const int64_t n = vb.dims[static_cast<size_t>(i)].as_const();
    for (int64_t j = 0; j < n; ++j)
      if (vb.strides[static_cast<size_t>(i)].eval({}, j) % K != 0) return std::nullopt;
    n_axes.push_back(i);
  }
  // Compose: a row start o of the dequantised tensor is element
  // sum_i vd.strides[i](z := (o / P_i) % sd[i]) of W (the last axis adds 0 at a row start).
  const bool vd_identity = vd == View::contiguous(sd);
  if (n_axes.size() > 1 && !vd_identity) return std::nullopt;
  p.weight_view.dims = vb.dims;
  p.weight_view.strides.assign(vb.dims.size(), Expr(0));
  p.weight_view.strides[static_cast<size_t>(k)] = unit;
  const View sdv = View::contiguous(sd);
  for (int j : n_axes) {
    const Expr o = vb.strides[static_cast<size_t>(j)];
    if (vd_identity) {
      p.weight_view.strides[static_cast<size_t>(j)] = o;
      continue;
    }
    Expr w(0);
    for (size_t i = 0; i + 1 < sd.size(); ++i) {
      const Expr pi = sdv.strides[i].substitute("z", Expr(1));  // row-major product after i
      w = w + vd.strides[i].substitute("z", (o / pi) % sd[i]);
    }
    p.weight_view.strides[static_cast<size_t>(j)] = w;
  }
  // The activation as rows [m axes..., K].
  for (int i : p.m_axes) {
    p.act_rows.push_back(va.dims[static_cast<size_t>(i)]);
    p.act_rows_view.dims.push_back(va.dims[static_cast<size_t>(i)]);
    p.act_rows_view.strides.push_back(va.strides[static_cast<size_t>(i)]);
  }
  p.act_rows.push_back(Expr(K));
  p.act_rows_view.dims.push_back(Expr(K));
  p.act_rows_view.strides.push_back(va.strides[static_cast<size_t>(k)]);
  p.act_rows_view.base = va.base;
  p.act_view = va;
  return p;
}

}  // namespace

std::optional<QuantMatmulParts> quant_matmul_parts(const EGraph& eg, const Match& m) {
  return weight_matmul_parts(eg, m, dequantize_in);
}

std::optional<QuantMatmulParts> cast16_matmul_parts(const EGraph& eg, const Match& m) {
  return weight_matmul_parts(eg, m, cast16_in);
}

Pattern quant_gather_pattern() {
  return Pattern::op(OpKind::Gather, {Pattern::var("idx"), Pattern::var("data")}).bind("gather");
}

std::optional<QuantGatherParts> quant_gather_parts(const EGraph& eg, const Match& m) {
  const ENodeId g = m.node("gather");
  const ENode& node = eg.node(g);
  const Attrs& ga = eg.attrs_of(g);
  if (node.children.size() != 2 || ga.views.size() != 2) return std::nullopt;
  std::optional<ENodeId> deq = dequantize_in(eg, node.children[1]);
  if (!deq) return std::nullopt;
  const Attrs& da = eg.attrs_of(*deq);
  if (da.dtype != ga.dtype || !all_static(da.shape)) return std::nullopt;
  // The gather's flat index must address the dequantised tensor itself.
  const View& dv = ga.views[1];
  if (!dv.is_contiguous() || !(dv.numel() == numel(da.shape))) return std::nullopt;
  QuantGatherParts p;
  p.indexes = eg.find(node.children[0]);
  p.weight = eg.find(eg.node(*deq).children[0]);
  p.index_view = ga.views[0];
  p.weight_view = da.views[0];
  p.gather = ga;
  p.gather_node = g;
  return p;
}

}  // namespace luminal
