#pragma once
// Test helpers for binary elementwise ops: a numpy-broadcasting host reference and a check of an
// op against it on the ReferenceRuntime.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "support/check.hpp"
#include "support/run_graph.hpp"

namespace luminal::testing {

/// numpy broadcasting of two static shapes, and the reference over it.
template <class T, class F>
inline std::vector<T> broadcast_ref(const std::vector<int64_t>& sa, const std::vector<T>& a,
                                    const std::vector<int64_t>& sb, const std::vector<T>& b,
                                    std::vector<int64_t>& out_shape, F&& f) {
  const size_t r = std::max(sa.size(), sb.size());
  auto pad = [r](std::vector<int64_t> s) {
    s.insert(s.begin(), r - s.size(), 1);
    return s;
  };
  std::vector<int64_t> pa = pad(sa), pb = pad(sb);
  out_shape.assign(r, 1);
  for (size_t i = 0; i < r; ++i)
    out_shape[i] = std::max(pa[i], pb[i]);
  int64_t n = 1;
  for (int64_t d : out_shape)
    n *= d;
  std::vector<T> out;
  for (int64_t flat = 0; flat < n; ++flat) {
    int64_t rest = flat, ia = 0, ib = 0, stride_a = 1, stride_b = 1;
    for (size_t k = r; k-- > 0;) {
      int64_t idx = rest % out_shape[k];
      rest /= out_shape[k];
      ia += (pa[k] == 1 ? 0 : idx) * stride_a;
      ib += (pb[k] == 1 ? 0 : idx) * stride_b;
      stride_a *= pa[k];
      stride_b *= pb[k];
    }
    out.push_back(f(a[ia], b[ib]));
  }
  return out;
}

/// Checks op against ref over broadcast shapes; `tol_eps` is the tolerance in units of eps(dtype).
inline void check_binary(DType t, const std::string& what, const BinaryOp& op,
                         const std::function<double(double, double)>& ref,
                         const std::vector<int64_t>& sa, std::vector<double> a,
                         const std::vector<int64_t>& sb, std::vector<double> b, double tol_eps,
                         DType out = DType::F32, bool same_dtype_out = true) {
  if (is_float(t)) {
    a = rounded(a, t);
    b = rounded(b, t);
  }
  BinaryResult r = run_binary(t, sa, a, sb, b, op);
  std::vector<int64_t> shape;
  std::vector<double> want = broadcast_ref(sa, a, sb, b, shape, ref);
  const DType out_t = same_dtype_out ? t : out;
  if (is_float(out_t)) want = rounded(want, out_t);
  EXPECT_EQ(r.shape, shape) << what;
  EXPECT_EQ(r.dtype, out_t) << what;
  const double e = tol_eps * epsilon(out_t);
  expect_close(r.values, want, Tol{e, e}, what + " " + std::string(name(t)));
}

}  // namespace luminal::testing
