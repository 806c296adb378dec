#pragma once
// What a quantized dot product may return (docs/quant.md, "Error bound"): the references and the
// error terms of one weight row of block type `wt` against one f32 activation row `x`, which the
// kernel quantizes to activation_format(wt) (core/quantize_ref.hpp) before its integer dot.
//
//   w_j   the dequantised weights (blocks::dequantize, f32)
//   x^_j  the quantized activation, dequantised (q_j * d_b)
//   y     = sum w_j x_j                                   (f64)
//   y_q   = sum w_j x^_j, plus, for Q4_1 / Q5_1, m_b (s_b - d^_b sum q_b) per block: the kernel
//           takes the min term from the activation's stored s (f64)
//
//   |kernel - y_q| <= bound_q() = e_w + e_acc             (rounding only: catches any wrong quant)
//   |kernel - y|   <= bound()   = e_q + e_s + e_w + e_acc (the activation's 8-bit rounding too)
//
//   e_q    activation rounding: sum_j |w_j| e_j, with e_j the largest |x_j - x^_j| the quantizer
//          allows in x_j's block: Q8_0/Q8_1 d (1/2 + 2^-15) + amax 2^-11 + 127 2^-25 (d = amax /
//          127; the rounding of q, of d to f16, of f16 subnormals; 2^-15 covers the f32 steps);
//          Q8_K |d| (1/2 + 2^-15) + 127 2^-149, or amax where d = 0
//   e_s    Q4_1/Q5_1: sum_b |m_b (s_b - d^_b sum q_b)|, the f16 rounding of s (at most about
//          |m_b| amax_b / 32)
//   e_w    2^-22 sum_j |w_j x^_j| for the types whose w_j or x^_j is itself rounded in f32 (a min,
//          or a Q8_K activation): the kernel uses the exact values
//   e_acc  gamma(nb + 6) T, gamma(n) = n 2^-24 / (1 - n 2^-24), nb weight blocks, T the sum of the
//          magnitudes of every float term the kernel accumulates (|d_w q_j d_a a_j| per value and
//          the |min terms|): nb FMAs per lane, d_w * d_a and the int-to-float conversions, the
//          three-level lane sum and the scalar add
//
// Every term is computed from the inputs, so the bound is deterministic and always valid; the
// typical error is far smaller (about d / sqrt(12) * ||w||_2). Non-finite inputs (an Inf or NaN
// activation, a d or s that overflows f16) make y_q or the bound non-finite: the kernel's output
// is then Inf or NaN too.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "luminal/core/blocks.hpp"
#include "luminal/core/dtype.hpp"
#include "luminal/core/quantize_ref.hpp"
#include "luminal/runtime/host_buffer.hpp"

namespace luminal::testing {

struct QuantDotBound {
  double y = 0, y_q = 0;
  double e_q = 0, e_s = 0, e_w = 0, e_acc = 0;
  double acc_terms = 0;  // T of e_acc (with its 2^-20 margin): e_acc = gamma(nb + 6) acc_terms
  double bound() const { return e_q + e_s + e_w + e_acc; }
  double bound_q() const { return e_w + e_acc; }
  /// bound_q() for a kernel whose sums are `depth` additions deep (e_acc's gamma(nb + 6) for its).
  double bound_q_at_depth(int64_t depth) const;
};

inline double quant_gamma(int64_t n) {
  const double u = std::ldexp(1.0, -24);
  return static_cast<double>(n) * u / (1 - static_cast<double>(n) * u);
}

/// The references and error terms of dot(weight row `w` of type `wt`, activation `x`), k values.
inline QuantDotBound quant_dot_bound(DType wt, const uint8_t* w, const float* x, int64_t k) {
  const DType af = blocks::activation_format(wt);
  const int64_t wbs = block_size(wt), wbb = block_bytes(wt), abs = block_size(af),
                abb = block_bytes(af);
  const int64_t nb = k / wbs;
  const bool legacy_min = wt == DType::Q4_1 || wt == DType::Q5_1;
  const bool k_min = wt == DType::Q4_K || wt == DType::Q5_K;
  const bool rounded = legacy_min || k_min || af == DType::Q8_K;

  std::vector<uint8_t> xq(storage_bytes(af, k));
  blocks::quantize_reference(af, x, xq.data(), k);
  std::vector<float> wf(k), w0(k), xh(k);
  blocks::dequantize(wt, w, wf.data(), k);
  blocks::dequantize(af, xq.data(), xh.data(), k);
  // d * q without the min: the blocks with m (dmin) zeroed decode exactly.
  if (legacy_min || k_min) {
    std::vector<uint8_t> copy(w, w + nb * wbb);
    for (int64_t b = 0; b < nb; ++b)
      copy[b * wbb + 2] = copy[b * wbb + 3] = 0;
    blocks::dequantize(wt, copy.data(), w0.data(), k);
  } else {
    w0 = wf;
  }
  auto f16 = [](const uint8_t* p) {
    uint16_t h;
    std::memcpy(&h, p, 2);
    return static_cast<double>(f16_bits_to_f32(h));
  };

  QuantDotBound r;
  double t = 0, sw = 0;
  for (int64_t a = 0; a < k / abs; ++a) {
    const uint8_t* ab = xq.data() + a * abb;
    double amax = 0;
    for (int64_t j = a * abs; j < (a + 1) * abs; ++j)
      amax = std::fmax(amax, std::fabs(static_cast<double>(x[j])));
    double e;
    if (af == DType::Q8_K) {
      float d;
      std::memcpy(&d, ab, 4);
      e = d == 0 ? amax : std::fabs(d) * (0.5 + std::ldexp(1.0, -15)) + 127 * std::ldexp(1.0, -149);
    } else {
      e = amax / 127 * (0.5 + std::ldexp(1.0, -15)) + amax * std::ldexp(1.0, -11) +
          127 * std::ldexp(1.0, -25);
    }
    for (int64_t j = a * abs; j < (a + 1) * abs; ++j) {
      r.y += static_cast<double>(wf[j]) * x[j];
      r.y_q += static_cast<double>(wf[j]) * xh[j];
      r.e_q += std::fabs(static_cast<double>(wf[j])) * e;
      sw += std::fabs(static_cast<double>(wf[j]) * xh[j]);
      t += std::fabs(static_cast<double>(w0[j]) * xh[j]);
    }
    if (legacy_min) {  // one weight block per activation block
      const int8_t* q = reinterpret_cast<const int8_t*>(ab + 4);
      double sum_q = 0;
      for (int j = 0; j < 32; ++j)
        sum_q += q[j];
      const double m = f16(w + a * wbb + 2), s = f16(ab + 2), dh = f16(ab);
      const double delta = m * (s - dh * sum_q);
      r.y_q += delta;
      r.e_s += std::fabs(delta);
      t += std::fabs(m * s);
    }
    if (k_min) {  // one weight super-block per Q8_K block
      const uint8_t* b = w + a * wbb;
      int sc[8], mn[8];
      blocks::k_scale_min(b + 4, sc, mn);
      int16_t bsums[16];
      std::memcpy(bsums, ab + 260, sizeof bsums);
      float da;
      std::memcpy(&da, ab, 4);
      double msum = 0;
      for (int i = 0; i < 8; ++i)
        msum += mn[i] * std::fabs(static_cast<double>(bsums[2 * i] + bsums[2 * i + 1]));
      t += std::fabs(f16(b + 2) * da) * msum;
    }
  }
  if (rounded) r.e_w = std::ldexp(1.0, -22) * sw;
  r.acc_terms = t * (1 + std::ldexp(1.0, -20));
  r.e_acc = quant_gamma(nb + 6) * r.acc_terms;
  return r;
}

inline double QuantDotBound::bound_q_at_depth(int64_t depth) const {
  return e_w + quant_gamma(depth) * acc_terms;
}

/// |b| of each value: the min term of the types with one (Q4_1/Q5_1: m; Q4_K/Q5_K: dmin mn_i).
inline std::vector<double> min_terms(const HostBuffer& b) {
  std::vector<double> out(static_cast<size_t>(b.numel()), 0.0);
  const DType t = b.dtype;
  const int64_t bb = block_bytes(t), bs = block_size(t);
  for (int64_t k = 0; k * bb < static_cast<int64_t>(b.bytes.size()); ++k) {
    const uint8_t* p = b.bytes.data() + k * bb;
    uint16_t h;
    std::memcpy(&h, p + 2, 2);
    const double m = std::fabs(f16_bits_to_f32(h));
    for (int64_t j = 0; j < bs; ++j) {
      double v = 0;
      if (t == DType::Q4_1 || t == DType::Q5_1) v = m;
      if (t == DType::Q4_K || t == DType::Q5_K) {
        int sc[8], mn[8];
        blocks::k_scale_min(p + 4, sc, mn);
        v = m * mn[j / 32];
      }
      out[static_cast<size_t>(k * bs + j)] = v;
    }
  }
  return out;
}

/// Writes block `p`'s f16 scale `d` (Q6_K: at its end) and, for the types with a min (Q4_1, Q5_1,
/// Q4_K, Q5_K), its f16 min `m` after it: how the tests draw blocks with chosen scales.
inline void set_block_scales(DType t, uint8_t* p, uint16_t d, uint16_t m) {
  if (t == DType::Q6_K) {
    std::memcpy(p + 208, &d, 2);
    return;
  }
  std::memcpy(p, &d, 2);
  if (t == DType::Q4_1 || t == DType::Q5_1 || t == DType::Q4_K || t == DType::Q5_K)
    std::memcpy(p + 2, &m, 2);
}

}  // namespace luminal::testing
