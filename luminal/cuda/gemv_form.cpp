#include "luminal/cuda/gemv_form.hpp"

#include <algorithm>

#include "luminal/cuda/codegen.hpp"
#include "luminal/kernels/split_axes.hpp"

namespace luminal::cuda {

std::optional<GemvForm> gemv_form(const Attrs& a, DType t0, DType t1, const Facts& facts) {
  if (a.views.size() != 2 || !is_float(t0) || !is_float(t1) || t0 == DType::F64 || t1 == DType::F64)
    return std::nullopt;
  const int axis = a.axis;
  const View& v0 = a.views[0];
  const View& v1 = a.views[1];
  if (axis < 0 || axis >= v0.rank() || v0.rank() != v1.rank()) return std::nullopt;
  if (v0.has_base() || v1.has_base()) return std::nullopt;  // element offsets: not matched
  const int vec = 16 / std::max(size_bytes(t0), size_bytes(t1));
  if (vec < 2 || vector_width(v0, axis, t0) < vec || vector_width(v1, axis, t1) < vec)
    return std::nullopt;
  std::optional<GemvForm> best;
  for (int w = 1; w >= 0; --w) {
    const View& vw = a.views[static_cast<size_t>(w)];
    const View& vx = a.views[static_cast<size_t>(1 - w)];
    int64_t product = 1;
    GemvForm f{.shared = w, .vec = vec};
    bool ok = true;
    for (int d = 0; d < vw.rank() && ok; ++d) {
      if (d == axis || !(vw.strides[d] == Expr(0)) || vx.strides[d] == Expr(0) ||
          vw.dims[d] == Expr(1))
        continue;
      const int64_t hi = vw.dims[d].bounds(facts).hi;
      if (hi > kGemvMaxRows) ok = false;
      product *= hi;
      if (vw.dims[d].is_const() && hi > f.rows) {
        f.row_axis = d;
        f.rows = static_cast<int>(hi);
      }
    }
    if (!ok || product > kGemvMaxRows) continue;
    if (!best || f.rows > best->rows) best = f;
  }
  return best;
}

std::optional<Attrs> gemv_domain(const Attrs& a, DType t0, DType t1, const Facts& facts) {
  if (gemv_form(a, t0, t1, facts)) return a;
  if (!env_switch_on("LUMINAL_CUDA_GEMV_SPLIT") || a.views.size() != 2) return std::nullopt;
  const std::optional<SplitDomain> d = split_for_linear_strides(a.views[0], a.views[1], a.axis);
  if (!d) return std::nullopt;
  Attrs s = a;
  s.views = {d->a, d->b};
  s.axis = d->axis;
  if (!gemv_form(s, t0, t1, facts)) return std::nullopt;
  return s;
}

}  // namespace luminal::cuda
