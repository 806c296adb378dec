#pragma once
// Value checks shared by the GPU suites of the nn-level ops (nn_ops_test.cpp, row_ops_test.cpp):
// dtype-rounded inputs as doubles, and comparisons of values with per-element tolerances.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "luminal/core/dtype.hpp"
#include "luminal/runtime/host_buffer.hpp"

namespace luminal::testing::nn_check {

inline constexpr double kE = 0x1p-23;  // f32 epsilon
inline const double kInf = std::numeric_limits<double>::infinity();

/// The bound on a k-term dot product stored in `out` against its sum in double (`sum`, and
/// `abs_sum` the sum of its terms' magnitudes): the output's rounding of the sum plus f32
/// accumulation error growing as sqrt(k).
inline double dot_tolerance(DType out, double sum, double abs_sum, int64_t k) {
  const double rounding = out == DType::BF16 ? 0x1p-7 : out == DType::F16 ? 0x1p-10 : 0x1p-22;
  return rounding * std::fabs(sum) + kE * std::sqrt(static_cast<double>(k)) * abs_sum;
}

inline HostBuffer from_doubles(DType t, const std::vector<double>& v) {
  HostBuffer b{t, std::vector<uint8_t>(v.size() * static_cast<size_t>(size_bytes(t)))};
  for (size_t i = 0; i < v.size(); ++i) {
    if (is_float(t))
      store_from_double(t, b.bytes.data(), static_cast<int64_t>(i), v[i]);
    else
      store_from_int64(t, b.bytes.data(), static_cast<int64_t>(i), static_cast<int64_t>(v[i]));
  }
  return b;
}

inline std::vector<double> to_doubles(DType t, const std::vector<uint8_t>& bytes) {
  std::vector<double> v(bytes.size() / static_cast<size_t>(size_bytes(t)));
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = load_as_double(t, bytes.data(), static_cast<int64_t>(i));
  return v;
}

/// n values uniform in [lo, hi), rounded to t (as doubles: exactly the stored values).
inline std::vector<double> uniform(DType t, int64_t n, uint64_t seed, double lo, double hi) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> d(lo, hi);
  std::vector<double> v(static_cast<size_t>(n));
  for (double& x : v)
    x = d(rng);
  return to_doubles(t, from_doubles(t, v).bytes);
}

/// The f16 subnormal step (its outputs of softmax over long rows reach it); 0 for other dtypes.
inline double floor_abs(DType t) { return t == DType::F16 ? 0x1p-24 : 0.0; }

inline std::string dtype_name(DType t) { return std::string(name(t)); }

/// How `got` differs from `want` (values with their tolerances): NaN must meet NaN, an infinity
/// the same infinity, a finite value |got - want| <= tol (scaled by `scale`).
struct Diff {
  int64_t bad = 0;
  std::string first;
  double worst = 0;  // largest |got - want| / tol over finite wants
};

inline Diff compare_values(const std::vector<double>& got, const std::vector<double>& want,
                           const std::vector<double>& tol, double scale = 1) {
  Diff d;
  if (got.size() != want.size()) {
    d.bad = 1;
    d.first = std::to_string(got.size()) + " values, want " + std::to_string(want.size());
    return d;
  }
  for (size_t i = 0; i < got.size(); ++i) {
    const double g = got[i], w = want[i], t = tol[i] * scale;
    bool ok;
    if (std::isnan(w)) {
      ok = std::isnan(g);
    } else if (std::isinf(w)) {
      ok = g == w;
    } else {
      ok = std::fabs(g - w) <= t;  // false for a NaN
      if (t > 0) d.worst = std::max(d.worst, std::fabs(g - w) / t);
    }
    if (ok) continue;
    if (d.bad++ == 0) {
      char buf[160];
      std::snprintf(buf, sizeof buf, "[%zu] got %.9g want %.9g (diff %.3g, tol %.3g)", i, g, w,
                    std::fabs(g - w), t);
      d.first = buf;
    }
  }
  return d;
}

inline std::string describe(const Diff& d, size_t n) {
  return std::to_string(d.bad) + " of " + std::to_string(n) + " differ, first " + d.first;
}

}  // namespace luminal::testing::nn_check
