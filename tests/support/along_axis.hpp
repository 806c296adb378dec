#pragma once
// Test helper: apply a 1-D row reference along one axis of a row-major tensor.
#include <cstdint>
#include <vector>

namespace luminal::testing {

using Row = std::vector<double>;

/// A negative axis counted from the end.
inline int normalize_axis(int axis, size_t rank) {
  return axis < 0 ? axis + static_cast<int>(rank) : axis;
}

/// Applies f to every 1-D row along `axis`; f returns a row of any length m, written along the
/// same axis of an output whose axis has size m.
template <class F>
inline std::vector<double> along_axis(const std::vector<double>& x, const std::vector<int64_t>& d,
                                      int axis, F f) {
  const int a = normalize_axis(axis, d.size());
  int64_t outer = 1, inner = 1;
  for (int i = 0; i < a; ++i)
    outer *= d[i];
  for (size_t i = a + 1; i < d.size(); ++i)
    inner *= d[i];
  const int64_t n = d[a];
  std::vector<double> out;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      Row row(n);
      for (int64_t k = 0; k < n; ++k)
        row[k] = x[(o * n + k) * inner + i];
      Row r = f(row);
      const int64_t m = static_cast<int64_t>(r.size());
      if (out.empty()) out.resize(outer * m * inner);
      for (int64_t k = 0; k < m; ++k)
        out[(o * m + k) * inner + i] = r[k];
    }
  return out;
}

}  // namespace luminal::testing
