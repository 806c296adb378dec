#pragma once
// Logit comparisons of the model parity suites (CPU and CUDA).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace luminal::testing {

/// |got - want| <= atol + rtol * |want| for every element, reporting the worst one.
inline void expect_close(const std::vector<float>& got, const std::vector<float>& want, double atol,
                         double rtol, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  double worst = 0;
  size_t at = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    const double excess = std::fabs(got[i] - want[i]) - (atol + rtol * std::fabs(want[i]));
    if (excess > worst) worst = excess, at = i;
  }
  EXPECT_LE(worst, 0.0) << what << ": element " << at << " is " << got[at] << ", want " << want[at];
}

/// max |a[i] - b[i]| over the elements of `a` (`b` at least as long).
inline double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double worst = 0;
  for (size_t i = 0; i < a.size(); ++i)
    worst = std::max(worst, std::fabs(static_cast<double>(a[i]) - b[i]));
  return worst;
}

/// Row r of row-major [n, vocab] logits.
inline std::vector<float> row(const std::vector<float>& logits, int64_t r, int64_t vocab) {
  return {logits.begin() + r * vocab, logits.begin() + (r + 1) * vocab};
}

}  // namespace luminal::testing
