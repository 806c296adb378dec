// GemvThenView (see gemv_then.hpp).
#include "luminal/cuda/gemv_then.hpp"

#include <algorithm>

#include "luminal/core/error.hpp"
#include "luminal/core/expr_serial.hpp"
#include "luminal/core/hash.hpp"
#include "luminal/cuda/codegen.hpp"
#include "luminal/cuda/prelude.hpp"
#include "luminal/program/llir.hpp"

namespace luminal::cuda {

std::string GemvThenView::serialize() const { return write_view(a); }

std::shared_ptr<const GemvThenView> GemvThenView::deserialize(std::string_view text) {
  const std::string all(text);
  View v = read_view_prefix(text, "gemv_then payload");
  if (!text.empty()) throw Error("gemv_then payload: text left after the view in '" + all + "'");
  return std::make_shared<const GemvThenView>(std::move(v));
}

size_t GemvThenView::hash() const { return hash_combined(0x47656d76ULL, hash_string(serialize())); }

bool GemvThenView::equals(const Payload& o) const {
  return a == static_cast<const GemvThenView&>(o).a;
}

std::string GemvThenView::to_string() const { return "then_a=" + a.to_string(); }

GemvThen then_of(const LlirNode& n) {
  const auto* a = dynamic_cast<const GemvThenView*>(n.attrs.payload.get());
  if (n.input_dtypes.size() != 3 || n.attrs.views.size() != 3 || !a)
    throw Error(std::string(n.op->name) +
                ": needs the GEMV's two inputs and the product's other operand, and the "
                "product's view of the GEMV's values as its payload; got " +
                std::to_string(n.input_dtypes.size()) + " inputs");
  return GemvThen{a->a, n.attrs.views[2]};
}

ThenTasks then_tasks(const GemvThen& then, std::string_view op) {
  const int kt = then.va.rank() - 1;
  if (kt < 1 || then.vb.rank() != then.va.rank() || !then.va.dims[kt].is_const())
    throw Error(std::string(op) + ": needs a constant product axis, last in both views");
  ThenTasks t;
  t.T = static_cast<int>(then.va.dims[kt].as_const());
  if (t.T != 2 && t.T != 4 && t.T != 8)
    throw Error(std::string(op) + ": the product axis must be 2, 4 or 8 long, got " +
                std::to_string(t.T));
  Shape pd = then.va.dims;  // the product's output as a view over its dims (k at length 1)
  pd[static_cast<size_t>(kt)] = Expr(1);
  const View pout = View::contiguous(pd);
  // Offsets split in two: a task's part (the axes A steps through; bases included) and its
  // outputs' part (the axes only B steps through: nn).
  t.vtask = then.va;
  t.ntask_out = pout;
  t.nb_task = then.vb;
  t.nout = pout;
  t.nb = then.vb;
  t.nb.base = Expr(0);
  for (int d = 0; d < kt; ++d) {
    const size_t u = static_cast<size_t>(d);
    if (then.va.strides[u] == Expr(0)) {
      t.vtask.dims[u] = t.ntask_out.dims[u] = t.nb_task.dims[u] = Expr(1);
      t.NN = t.NN * pd[u];
    } else {
      t.nout.dims[u] = t.nb.dims[u] = Expr(1);
      t.P = t.P * pd[u];
    }
  }
  return t;
}

std::string then_open(Codegen& cg, const GemvThen& then, const ThenTasks& t, int G, int TPB,
                      int R) {
  const std::string& I = cg.idx();
  std::string tb;
  const std::string ta = cg.view_offset(t.vtask, "task", "ta", tb, t.vtask.rank() - 1);
  const std::string Ts = std::to_string(t.T), TPBs = std::to_string(TPB), Gs = std::to_string(G);
  return "  __shared__ float lmn_a[" + std::to_string(TPB * t.T) + "];\n  for (" + I + " tb = (" +
         I + ")blockIdx.x * " + TPBs + "; tb < P; tb += (" + I + ")gridDim.x * " + TPBs +
         ") {\n  for (int r = 0; r < " + std::to_string(R) + "; ++r) {\n    const int it = r * " +
         Gs + " + g, tv = it % " + Ts + ";\n    const " + I + " task = tb + it / " + Ts + ";\n" +
         tb + "    const " + I + " p = " + ta + " + " +
         cg.axis_offset(then.va, then.va.rank() - 1, "tv") + ";\n";
}

std::string gemv_loop_open(Codegen& cg, const GemvThen* then, const ThenTasks& t, int G, int TPB,
                           int R, std::string& body) {
  if (then) {
    body += then_open(cg, *then, t, G, TPB, R);
    return "task < P";
  }
  const std::string& I = cg.idx();
  const std::string Gs = std::to_string(G);
  body += "  for (" + I + " pb = (" + I + ")blockIdx.x * " + Gs + "; pb < P; pb += (" + I +
          ")gridDim.x * " + Gs + ") {\n    const " + I + " p = pb + g;\n";
  return "p < P";
}

std::string then_close(Codegen& cg, const GemvThen& then, const ThenTasks& t, int TPB,
                       const LlirNode& n, size_t b_input) {
  const std::string& I = cg.idx();
  const int kt = then.vb.rank() - 1;
  const std::string nn = cg.c(t.NN);
  std::string b = "  }\n    __syncthreads();\n    for (" + I + " q = threadIdx.x; q < " +
                  std::to_string(TPB) + " * " + nn + "; q += blockDim.x) {\n      const " + I +
                  " task = tb + q / " + nn + ", qi = q % " + nn + ";\n      if (task < P) {\n";
  const std::string ot = cg.view_offset(t.ntask_out, "task", "pt", b, kt);
  const std::string on = cg.view_offset(t.nout, "qi", "pn", b, kt);
  const std::string bt = cg.view_offset(t.nb_task, "task", "qt", b, kt);
  const std::string bn = cg.view_offset(t.nb, "qi", "qn", b, kt);
  const DType dt = n.attrs.dtype;
  const std::string in_b = "in" + std::to_string(b_input);
  b += "      double s = 0.0;\n";
  for (int k = 0; k < t.T; ++k)
    b += "      s = s + (double)rd_" + dtype_tag(dt) + "(lmn_a[(q / " + nn + ") * " +
         std::to_string(t.T) + " + " + std::to_string(k) + "] * " +
         load_fn(n.input_dtypes[b_input], false) + "(" + in_b + "[" + bt + " + " + bn + " + " +
         cg.axis_offset(then.vb, kt, std::to_string(k)) + "]));\n";
  return b + "      out[" + ot + " + " + on + "] = st_" + dtype_tag(dt) +
         "(s);\n      }\n    }\n    __syncthreads();\n  }\n";
}

void add_then_nodes(EGraph& eg, const ThenOffer& o,
                    const std::vector<std::pair<const OpDef*, ENodeId>>& gemvs, ClassId root) {
  for (const auto& [op, g] : gemvs) {
    Attrs at = eg.attrs_of(g);
    at.dtype = o.product.dtype;
    at.shape = o.product.shape;
    at.views.push_back(o.vb);
    at.payload = o.payload;
    std::vector<ClassId> ch{eg.find(eg.node(g).children[0]), eg.find(eg.node(g).children[1]), o.b};
    eg.merge(eg.add(op, at, ch), root);
  }
}

double then_form_extra(const EGraph& eg, uint32_t enode) {
  const ENode& n = eg.node(enode);
  int64_t bytes = 0;
  for (size_t i = 0; i < 2 && i < n.children.size(); ++i) {
    const ClassId c = eg.find(n.children[i]);
    const Expr count = numel(eg.shape(c));
    if (count.is_const())
      bytes = std::max(bytes, static_cast<int64_t>(storage_bytes(eg.dtype(c), count.as_const())));
  }
  return 0.25 * static_cast<double>(bytes) / (1024.0 * 1024.0);
}

View axis_last(View v, int axis) {
  const size_t a = static_cast<size_t>(axis);
  v.dims.push_back(v.dims[a]);
  v.strides.push_back(v.strides[a]);
  v.dims.erase(v.dims.begin() + axis);
  v.strides.erase(v.strides.begin() + axis);
  return v;
}

std::optional<ThenOffer> then_offer(const EGraph& eg, ENodeId m) {
  const ENode& mn = eg.node(m);
  const Attrs& ma = eg.attrs_of(m);
  if (ma.payload || mn.children.size() != 2 || ma.views.size() != 2) return std::nullopt;
  const int ax = ma.axis;
  const View& va = ma.views[0];
  const View& vb = ma.views[1];
  // (rank 2 or more: then_tasks needs an output axis besides the product's)
  if (va.rank() < 2 || ax < 0 || ax >= va.rank() || vb.rank() != va.rank() ||
      !va.dims[ax].is_const())
    return std::nullopt;
  const int64_t T = va.dims[ax].as_const();
  const Expr z = Expr::var("z");
  if ((T != 2 && T != 4 && T != 8) || va.strides[ax] == Expr(0) || va.strides[ax] == z ||
      vb.strides[ax] == z)
    return std::nullopt;
  for (size_t d = 0; d < va.dims.size(); ++d) {
    if (!va.dims[d].is_const()) return std::nullopt;
    for (const std::string& v : va.strides[d].vars())
      if (v != "z") return std::nullopt;
  }
  if (!va.base.is_const()) return std::nullopt;
  const ClassId a = eg.find(mn.children[0]);
  if (eg.dtype(a) != ma.dtype) return std::nullopt;
  return ThenOffer{a, eg.find(mn.children[1]),
                   std::make_shared<const GemvThenView>(axis_last(va, ax)), axis_last(vb, ax), ma};
}

}  // namespace luminal::cuda
