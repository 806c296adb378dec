// vec::exp2 (vec_math.hpp): the AVX2 form where the active ISA has it, else exp2_f32 a float at
// a time.
#include "luminal/cpu/vec_math.hpp"

#include <limits>

#include "luminal/core/exp2.hpp"
#include "luminal/cpu/quant/isa.hpp"

namespace luminal::cpu::vec {

void exp2(const float* x, float* y, int64_t n) {
  // (A few elements go one at a time: the same bits, without reading the ISA's setting. Every
  // ISA above portable has AVX2 and FMA.)
  if (n >= 8 && quant::active() != quant::QuantIsa::Portable) {
    if (detail::Exp2Array f = detail::exp2_avx2()) {
      f(x, y, n);
      return;
    }
  }
  for (int64_t i = 0; i < n; ++i)
    y[i] = exp2_f32(x[i]);
}

double sum_f32(const float* p, int64_t n) {
  double s = 0;
#pragma omp simd reduction(+ : s)
  for (int64_t k = 0; k < n; ++k)
    s += static_cast<double>(p[k]);
  return s;
}

double max_f32(const float* p, int64_t n) {
  float m = -std::numeric_limits<float>::infinity();
  int nan = 0;
#pragma omp simd reduction(max : m) reduction(| : nan)
  for (int64_t k = 0; k < n; ++k) {
    const float e = p[k];
    nan |= e != e;
    m = e > m ? e : m;
  }
  if (nan) return std::numeric_limits<double>::quiet_NaN();
  if (m == 0.0f)
    for (int64_t k = 0; k < n; ++k)
      if (p[k] == 0.0f) return static_cast<double>(p[k]);
  return m;
}

}  // namespace luminal::cpu::vec
