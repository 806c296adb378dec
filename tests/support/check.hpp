#pragma once
// Test helpers: run a graph on the ReferenceRuntime and compare with loop references.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "luminal/luminal.hpp"

namespace luminal::testing {

inline constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
inline constexpr double kInf = std::numeric_limits<double>::infinity();
inline constexpr DType kFloatTypes[] = {DType::F32, DType::F64, DType::F16, DType::BF16};

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

/// One value as it is after rounding to dtype t.
inline double round_to(DType t, double v) { return rounded({v}, t)[0]; }

/// Wraps an int64 to dtype t (two's complement), as the runtime stores integers.
inline int64_t wrap_to(DType t, int64_t v) {
  std::vector<uint8_t> buf(8);
  store_from_int64(t, buf.data(), 0, v);
  return load_as_int64(t, buf.data(), 0);
}

/// Epsilon of the precision the op computes in.
inline double compute_eps(DType t) {
  return t == DType::F64 ? epsilon(DType::F64) : epsilon(DType::F32);
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

/// Checks got against want with a per-element tolerance; reports at most a few failures.
inline void expect_within(const std::vector<double>& in, const std::vector<double>& got,
                          const std::vector<double>& want, const std::function<Tol(size_t)>& tol,
                          const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  int failures = 0;
  for (size_t i = 0; i < got.size() && failures < 5; ++i) {
    double a = got[i], b = want[i];
    bool ok;
    if (std::isnan(b))
      ok = std::isnan(a);
    else if (std::isinf(b))
      ok = a == b;
    else {
      Tol t = tol(i);
      ok = std::fabs(a - b) <= t.atol + t.rtol * std::fabs(b);
    }
    if (!ok) {
      ++failures;
      ADD_FAILURE() << what << " [" << i << "] x=" << (i < in.size() ? in[i] : kNaN) << ": got "
                    << a << ", want " << b << " (diff " << std::fabs(a - b) << ")";
    }
  }
}

}  // namespace luminal::testing
