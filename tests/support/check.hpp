#pragma once
// Test helpers: run a graph on the ReferenceRuntime and compare with loop references.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "luminal/luminal.hpp"

namespace luminal::testing {

/// Tolerances per dtype: |a - b| <= atol + rtol * |b|.
struct Tol {
  double rtol, atol;
};
inline Tol tol_for(DType t, double scale = 1.0) {
  double eps = epsilon(t);
  if (!is_float(t)) return {0, 0};
  return {4 * eps * scale, 4 * eps * scale};
}

/// Values as they are after rounding to dtype t (so references see the same inputs).
inline std::vector<double> rounded(const std::vector<double>& v, DType t) {
  std::vector<uint8_t> buf(size_bytes(t));
  std::vector<double> out;
  for (double x : v) {
    store_from_double(t, buf.data(), 0, x);
    out.push_back(load_as_double(t, buf.data(), 0));
  }
  return out;
}

inline std::vector<double> random_values(size_t n, double lo, double hi, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> d(lo, hi);
  std::vector<double> v(n);
  for (double& x : v)
    x = d(rng);
  return v;
}

inline std::vector<int64_t> random_ints(size_t n, int64_t lo, int64_t hi, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_int_distribution<int64_t> d(lo, hi);
  std::vector<int64_t> v(n);
  for (int64_t& x : v)
    x = d(rng);
  return v;
}

/// Asserts element-wise closeness (NaN matches NaN; infinities must match exactly).
inline void expect_close(const std::vector<double>& got, const std::vector<double>& want, Tol tol,
                         const std::string& what = "") {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    double a = got[i], b = want[i];
    if (std::isnan(b)) {
      EXPECT_TRUE(std::isnan(a)) << what << " [" << i << "]: got " << a << ", want NaN";
    } else if (std::isinf(b)) {
      EXPECT_EQ(a, b) << what << " [" << i << "]";
    } else {
      EXPECT_LE(std::fabs(a - b), tol.atol + tol.rtol * std::fabs(b))
          << what << " [" << i << "]: got " << a << ", want " << b;
    }
  }
}

}  // namespace luminal::testing
