#include "luminal/ir/prim.hpp"

#include <cmath>

#include "luminal/core/error.hpp"

namespace luminal::prim {

namespace {

std::string desc(const Tensor& t) {
  return std::string(name(t.dtype())) + shape_to_string(t.shape());
}

Tensor make(Graph g, Node n) {
  // Only Dequantize and Output read block-quantized values (Output as the stored bytes).
  if (n.op != OpKind::Dequantize && n.op != OpKind::Output) {
    for (const Operand& o : n.inputs) {
      const Node& src = g.node(o.node);
      if (!is_block(src.dtype)) continue;
      const std::string who = src.label.empty() ? "a tensor" : "'" + src.label + "'";
      throw Error(std::string(op_name(n.op)) + ": " + who + " is " + std::string(name(src.dtype)) +
                  ", a block-quantized type: call .dequantize() on it first (the compiler "
                  "reads the blocks directly where it can)");
    }
  }
  Shape shape = n.shape;
  DType dt = n.dtype;
  NodeId id = g.add_node(std::move(n));
  return Tensor(g, id, View::contiguous(shape), dt);
}

void require_same_graph(const Tensor& a, const Tensor& b, std::string_view op) {
  if (!(a.graph() == b.graph())) {
    throw Error(std::string(op) +
                ": the two tensors belong to different graphs; build them in one Graph");
  }
}

}  // namespace

void require_float(const Tensor& x, std::string_view op) {
  if (!is_float(x.dtype())) {
    throw Error(std::string(op) + " needs a float tensor, got " + desc(x) +
                "; cast it first, e.g. x.cast(DType::F32)");
  }
}

bool computes_in_f32(DType t) {
  return t == DType::F16 || t == DType::BF16 || t == DType::TF32 || t == DType::F8E4M3 ||
         t == DType::F8E5M2;
}

Tensor unary(OpKind op, const Tensor& x, DType out) {
  if (op != OpKind::Cast) require_float(x, op_name(op));
  Node n;
  n.op = op;
  n.dtype = op == OpKind::Cast ? out : x.dtype();
  n.shape = x.shape();
  n.inputs = {{x.id(), x.view()}};
  return make(x.graph(), std::move(n));
}

Tensor binary(OpKind op, const Tensor& a, const Tensor& b) {
  require_same_graph(a, b, op_name(op));
  if (a.dtype() != b.dtype()) {
    throw Error(std::string(op_name(op)) + ": dtypes differ (" + desc(a) + " vs " + desc(b) +
                "); cast one side so both match");
  }
  LUMINAL_ASSERT(a.shape() == b.shape(), "binary primitive on unbroadcast shapes");
  Node n;
  n.op = op;
  n.dtype = op == OpKind::LessThan ? DType::Bool : a.dtype();
  n.shape = a.shape();
  n.inputs = {{a.id(), a.view()}, {b.id(), b.view()}};
  return make(a.graph(), std::move(n));
}

Tensor reduce(OpKind op, const Tensor& x, int axis) {
  int a = normalize_axis(axis, x.rank(), op_name(op));
  Node n;
  n.op = op;
  n.dtype = x.dtype();
  n.axis = a;
  n.shape = x.shape();
  n.shape.erase(n.shape.begin() + a);
  n.inputs = {{x.id(), x.view()}};
  return make(x.graph(), std::move(n));
}

Tensor gather(const Tensor& indexes, const Tensor& data) {
  require_same_graph(indexes, data, "gather");
  if (!is_integer(indexes.dtype())) {
    throw Error("gather: indexes must be an integer tensor, got " + desc(indexes));
  }
  Node n;
  n.op = OpKind::Gather;
  n.dtype = data.dtype();
  n.shape = indexes.shape();
  n.inputs = {{indexes.id(), indexes.view()}, {data.id(), data.view()}};
  return make(data.graph(), std::move(n));
}

Tensor scatter(const Tensor& dest, const Tensor& indexes, const Tensor& src) {
  require_same_graph(dest, indexes, "scatter");
  require_same_graph(dest, src, "scatter");
  if (!is_integer(indexes.dtype())) {
    throw Error("scatter: indexes must be an integer tensor, got " + desc(indexes));
  }
  if (src.dtype() != dest.dtype()) {
    throw Error("scatter: src " + desc(src) + " and dest " + desc(dest) + " have different dtypes");
  }
  if (src.shape() != indexes.shape()) {
    throw Error("scatter: indexes " + desc(indexes) + " and src " + desc(src) +
                " must have the same shape");
  }
  Node n;
  n.op = OpKind::Scatter;
  n.dtype = dest.dtype();
  n.shape = dest.shape();
  n.inputs = {{dest.id(), dest.view()}, {indexes.id(), indexes.view()}, {src.id(), src.view()}};
  return make(dest.graph(), std::move(n));
}

void require_row_view(const View& v, const Shape& shape, DType t, const std::string& what) {
  auto fail = [&](const std::string& why) {
    throw Error(what + " is " + std::string(name(t)) +
                ": views of a block-quantized tensor must keep whole rows (" + why +
                "); dequantize() it first and view the result");
  };
  if (shape.empty() || !shape.back().is_const()) fail("its rows have no fixed length");
  const int64_t row = shape.back().as_const();
  if (v.rank() == 0) fail("a scalar view");
  if (v.has_base()) fail("the view starts at element " + v.base.to_string());
  if (!(v.dims.back() == Expr(row)) || !(v.strides.back() == Expr(1) * Expr::z()))
    fail("the innermost axis of the view is " + v.dims.back().to_string() + " with stride " +
         v.strides.back().to_string() + ", not the row of " + std::to_string(row) +
         " with stride 1");
  // Every other axis must move by whole rows for every index (static dims only).
  for (int i = 0; i + 1 < v.rank(); ++i) {
    if (!v.dims[i].is_const()) fail("axis " + std::to_string(i) + " has a dynamic length");
    const int64_t n = v.dims[i].as_const();
    for (int64_t k = 0; k < n; ++k) {
      const int64_t off = v.strides[i].eval({}, k);
      if (off % row != 0)
        fail("axis " + std::to_string(i) + " index " + std::to_string(k) + " starts at element " +
             std::to_string(off) + ", inside a row of " + std::to_string(row));
    }
  }
}

Tensor dequantize(const Tensor& x, DType out) {
  if (!is_block(x.dtype()))
    throw Error("dequantize: the tensor is " + desc(x) +
                ", not a block-quantized type (q4_0, q4_1, q5_0, q5_1, q8_0, q4_k, q5_k, q6_k)");
  if (!is_float(out))
    throw Error("dequantize: the output dtype " + std::string(name(out)) + " is not a float type");
  const Node& src = x.graph().node(x.id());
  const std::string who =
      src.label.empty() ? "dequantize: the tensor" : "dequantize: '" + src.label + "'";
  require_row_view(x.view(), src.shape, x.dtype(), who);
  Node n;
  n.op = OpKind::Dequantize;
  n.dtype = out;
  n.shape = x.shape();
  n.inputs = {{x.id(), x.view()}};
  return make(x.graph(), std::move(n));
}

Shape broadcast_shape(const Shape& a, const Shape& b, std::string_view op) {
  size_t r = std::max(a.size(), b.size());
  Shape out(r);
  for (size_t i = 0; i < r; ++i) {
    Expr da = i < r - a.size() ? Expr(1) : a[i - (r - a.size())];
    Expr db = i < r - b.size() ? Expr(1) : b[i - (r - b.size())];
    if (da == db || db == Expr(1)) {
      out[i] = da;
    } else if (da == Expr(1)) {
      out[i] = db;
    } else {
      throw Error(std::string(op) + ": shapes " + shape_to_string(a) + " and " +
                  shape_to_string(b) + " cannot be broadcast together (axis " + std::to_string(i) +
                  ": " + da.to_string() + " vs " + db.to_string() + ")");
    }
  }
  return out;
}

std::pair<Tensor, Tensor> broadcast(const Tensor& a, const Tensor& b, std::string_view op) {
  Shape s = broadcast_shape(a.shape(), b.shape(), op);
  std::vector<Dim> dims(s.begin(), s.end());
  return {a.expand(dims), b.expand(dims)};
}

Tensor scalar_for(const Tensor& x, double value, std::string_view op) {
  if (is_integer(x.dtype()) && value != std::trunc(value)) {
    throw Error(std::string(op) + ": scalar " + std::to_string(value) +
                " is not an integer but the tensor is " + desc(x) +
                "; cast the tensor to a float dtype first");
  }
  if (is_integer(x.dtype()) && !in_range(x.dtype(), value)) {
    throw Error(std::string(op) + ": scalar " + std::to_string(static_cast<long double>(value)) +
                " does not fit the tensor's dtype (" + desc(x) +
                "); cast the tensor to a wider dtype first");
  }
  return x.graph().constant(value, x.dtype());
}

Tensor scalar_like(const Tensor& x, double value) {
  std::vector<Dim> dims(x.shape().begin(), x.shape().end());
  return x.graph().constant(value, x.dtype()).expand(dims);
}

Tensor flat_index(Graph g, const Shape& shape) {
  std::vector<Dim> dims(shape.begin(), shape.end());
  return g.iota(Expr::z(), numel(shape)).reshape(dims);
}

}  // namespace luminal::prim

namespace luminal::prim {

Tensor dim_scalar(Graph g, const Expr& e) {
  if (e.is_const()) return g.constant(static_cast<double>(e.as_const()), DType::I32);
  return g.iota(e, 1).reshape({});
}

std::vector<Expr> row_major_products(const Shape& shape) {
  std::vector<Expr> p(shape.size());
  Expr step = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    p[i] = step;
    step = step * shape[i];
  }
  return p;
}

std::vector<Expr> unflatten_index(const Expr& z, const Shape& shape) {
  std::vector<Expr> p = row_major_products(shape);
  std::vector<Expr> idx(shape.size(), Expr(0));
  if (numel(shape) == Expr(0)) return idx;  // no elements: never evaluated (and avoids z/0)
  for (size_t i = 0; i < shape.size(); ++i) {
    idx[i] = i == 0 ? z / p[i] : (z / p[i]) % shape[i];
  }
  return idx;
}

namespace {

Expr flat_of(const std::vector<Expr>& idx, const Shape& shape) {
  std::vector<Expr> p = row_major_products(shape);
  Expr f = 0;
  for (size_t i = 0; i < idx.size(); ++i)
    f = f + idx[i] * p[i];
  return f;
}

Tensor index_tensor(Graph g, const Shape& over, const Expr& flat_expr) {
  std::vector<Dim> dims(over.begin(), over.end());
  return g.iota(flat_expr, numel(over)).reshape(dims);
}

}  // namespace

Tensor gather_by_map(const Tensor& x, const Shape& out_shape,
                     const std::function<std::vector<Expr>(const std::vector<Expr>&)>& src) {
  std::vector<Expr> out_idx = unflatten_index(Expr::z(), out_shape);
  Expr flat = flat_of(src(out_idx), x.shape());
  return gather(index_tensor(x.graph(), out_shape, flat), x);
}

Tensor scatter_by_map(const Tensor& dest, const Tensor& x,
                      const std::function<std::vector<Expr>(const std::vector<Expr>&)>& dst) {
  std::vector<Expr> in_idx = unflatten_index(Expr::z(), x.shape());
  Expr flat = flat_of(dst(in_idx), dest.shape());
  return scatter(dest, index_tensor(x.graph(), x.shape(), flat), x);
}

}  // namespace luminal::prim
