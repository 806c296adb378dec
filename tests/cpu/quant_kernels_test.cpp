// The quantized dot-product kernels (cpu/quant/): every weight type on every ISA this machine has
// (the others skip, saying so), on the same seeded inputs:
//   - the activation quantizers bitwise against core/quantize_ref (known vectors, ties, zero
//     blocks, NaN and Inf, tiny and huge magnitudes, random blocks);
//   - dot tiles against the quantized-activation reference within the rounding bound (a wrong
//     nibble, scale or min shows at once) and against the f64 dot with the unquantized activation
//     within the documented bound (tests/support/quant_bound.hpp);
//   - byte equality of every ISA's quantizer and dot outputs with the portable kernels', and of
//     the prefill GEMM (VNNI paths: Q4_0, Q5_0, Q8_0) with the dot tiles;
//   - the ISA choice: detection, LUMINAL_CPU_ISA, ScopedQuantIsa, and its errors.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "luminal/core/blocks.hpp"
#include "luminal/core/quantize_ref.hpp"
#include "luminal/cpu/quant/isa.hpp"
#include "luminal/cpu/quant/quant_index.hpp"
#include "support/env_scope.hpp"
#include "support/expect_error.hpp"
#include "support/quant_bound.hpp"

namespace luminal {
namespace {

using cpu::quant::QuantIsa;
using cpu::quant::QuantKernels;

const QuantKernels* kernels_or_null(QuantIsa isa) {
  return cpu::quant::isa_available(isa) ? &cpu::quant::kernels_for(isa) : nullptr;
}

#define SKIP_ABSENT(isa)                    \
  if (!cpu::quant::isa_available(isa))      \
  GTEST_SKIP() << cpu::quant::isa_name(isa) \
               << " is not available on this machine (has: " << available_names() << ")"

std::string available_names() {
  std::string s;
  for (QuantIsa i : cpu::quant::available_isas())
    s += (s.empty() ? "" : ", ") + std::string(cpu::quant::isa_name(i));
  return s;
}

bool same_float(float a, float b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
  return std::memcmp(&a, &b, 4) == 0;
}

uint16_t f16_bits(const uint8_t* p) {
  uint16_t h;
  std::memcpy(&h, p, 2);
  return h;
}

// ---------------------------------------------------------------------------------------------
// The reference quantizers on known vectors.

TEST(QuantizeRef, Q8_0KnownVectorAndTies) {
  // amax 127: id = 1 exactly, so q = rne(x): ties go to even.
  std::vector<float> x(32, 0.0f);
  x[0] = 127;
  x[1] = 0.5f, x[2] = 1.5f, x[3] = 2.5f, x[4] = -0.5f, x[5] = -2.5f, x[6] = -3.5f, x[7] = 3.49f;
  std::vector<uint8_t> q(34);
  blocks::quantize_q8_0(x.data(), q.data(), 32);
  EXPECT_EQ(f16_bits(q.data()), 0x3C00);  // d = 1
  const int8_t* qs = reinterpret_cast<const int8_t*>(q.data() + 2);
  const int want[8] = {127, 0, 2, 2, 0, -2, -4, 3};
  for (int j = 0; j < 8; ++j)
    EXPECT_EQ(qs[j], want[j]) << j;

  std::vector<uint8_t> q1(36);
  blocks::quantize_q8_1(x.data(), q1.data(), 32);
  EXPECT_EQ(f16_bits(q1.data()), 0x3C00);
  EXPECT_EQ(f16_bits(q1.data() + 2), f32_to_f16_bits(127.0f + 0 + 2 + 2 + 0 - 2 - 4 + 3));
  EXPECT_EQ(std::memcmp(q1.data() + 4, q.data() + 2, 32), 0);
}

TEST(QuantizeRef, Q8_KKnownVectorFirstLargestMagnitude) {
  std::vector<float> x(256, 0.0f);
  x[3] = 127;  // the first value of largest magnitude: iscale = -1
  x[9] = -127;
  x[10] = 0.5f, x[11] = 1.5f, x[12] = -2.5f, x[20] = 100;
  std::vector<uint8_t> q(292);
  blocks::quantize_q8_k(x.data(), q.data(), 256);
  blocks::Q8_K b;
  std::memcpy(&b, q.data(), sizeof b);
  EXPECT_EQ(b.d, -1.0f);
  EXPECT_EQ(b.qs[3], -127);
  EXPECT_EQ(b.qs[9], 127);
  EXPECT_EQ(b.qs[10], 0);
  EXPECT_EQ(b.qs[11], -2);
  EXPECT_EQ(b.qs[12], 2);
  EXPECT_EQ(b.qs[20], -100);
  EXPECT_EQ(b.bsums[0], -127 + 127 + 0 - 2 + 2);
  EXPECT_EQ(b.bsums[1], -100);
  x[3] = -127, x[9] = 127;  // now the negative one comes first: iscale = +1
  blocks::quantize_q8_k(x.data(), q.data(), 256);
  std::memcpy(&b, q.data(), sizeof b);
  EXPECT_EQ(b.d, 1.0f);
  EXPECT_EQ(b.qs[3], -127);
  EXPECT_EQ(b.qs[20], 100);
}

TEST(QuantizeRef, EdgeBlocks) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  for (DType f : {DType::Q8_0, DType::Q8_1, DType::Q8_K}) {
    const int bs = block_size(f);
    std::vector<uint8_t> q(block_bytes(f));
    auto d_of = [&]() -> float {
      if (f == DType::Q8_K) {
        float d;
        std::memcpy(&d, q.data(), 4);
        return d;
      }
      return f16_bits_to_f32(f16_bits(q.data()));
    };
    auto all_zero_from = [&](int offset) {
      for (size_t i = offset; i < q.size(); ++i)
        if (q[i] != 0) return false;
      return true;
    };
    const int q_offset = f == DType::Q8_K ? 4 : f == DType::Q8_1 ? 4 : 2;
    std::vector<float> x(bs, 0.0f);
    blocks::quantize_reference(f, x.data(), q.data(), bs);
    EXPECT_EQ(d_of(), 0.0f) << name(f);
    EXPECT_TRUE(all_zero_from(0)) << name(f);
    for (float bad : {nan, inf, -inf}) {
      x.assign(bs, 1.0f);
      x[bs - 1] = bad;
      blocks::quantize_reference(f, x.data(), q.data(), bs);
      EXPECT_TRUE(std::isnan(d_of())) << name(f);
      if (f == DType::Q8_1) {
        EXPECT_EQ(f16_bits(q.data() + 2), 0x7E00);
      }
      EXPECT_TRUE(all_zero_from(q_offset)) << name(f);
    }
    // 127 / amax overflows: zeros, d = 0.
    x.assign(bs, 1e-38f);
    x[1] = -2e-38f;
    blocks::quantize_reference(f, x.data(), q.data(), bs);
    EXPECT_EQ(d_of(), 0.0f) << name(f);
    EXPECT_TRUE(all_zero_from(0)) << name(f);
    // Tiny but finite id: the quants survive; Q8_0's f16 d underflows to 0, Q8_K's f32 d does not.
    x.assign(bs, 1e-30f);
    blocks::quantize_reference(f, x.data(), q.data(), bs);
    EXPECT_EQ(static_cast<int8_t>(q[q_offset]), f == DType::Q8_K ? -127 : 127) << name(f);
    if (f == DType::Q8_K) {
      EXPECT_NEAR(d_of(), -1e-30f / 127, 1e-36f);
    } else {
      EXPECT_EQ(d_of(), 0.0f);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Activation rows that exercise the quantizers: random values at block scales from 1e-30 to 1e30,
// ties, zeros, subnormals, NaN and Inf.

std::vector<float> quantizer_inputs(int64_t k, int block, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  std::uniform_real_distribution<double> e(-30, 30);
  std::vector<float> x(k);
  for (int64_t b = 0; b < k / block; ++b) {
    float* p = x.data() + b * block;
    const float scale = static_cast<float>(std::pow(10.0, e(rng)));
    for (int j = 0; j < block; ++j)
      p[j] = u(rng) * scale;
    switch (b % 9) {
      case 0: break;
      case 1:
        for (int j = 0; j < block; ++j)
          p[j] = 0;
        break;
      case 2:  // ties at id = 1
        p[0] = 127;
        for (int j = 1; j < block; ++j)
          p[j] = static_cast<float>(static_cast<int>(rng() % 254) - 127) + 0.5f;
        break;
      case 3: p[block / 2] = std::numeric_limits<float>::quiet_NaN(); break;
      case 4: p[1] = -std::numeric_limits<float>::infinity(); break;
      case 5:
        for (int j = 0; j < block; ++j)
          p[j] = u(rng) * 1e-39f;  // subnormal
        break;
      case 6:
        p[3] = -0.0f;
        p[5] = -p[7];  // equal magnitudes, opposite signs
        break;
      case 7:
        for (int j = 0; j < block; ++j)
          p[j] = u(rng);
        break;
      case 8:
        for (int j = 0; j < block; ++j)
          p[j] = u(rng) * 3e38f;
        break;
    }
  }
  return x;
}

class QuantizerIsa : public ::testing::TestWithParam<QuantIsa> {};

TEST_P(QuantizerIsa, BitwiseAsReference) {
  SKIP_ABSENT(GetParam());
  const QuantKernels& kern = cpu::quant::kernels_for(GetParam());
  for (DType f : {DType::Q8_0, DType::Q8_1, DType::Q8_K}) {
    const int bs = block_size(f);
    for (uint64_t seed = 0; seed < 8; ++seed) {
      const int64_t k = static_cast<int64_t>(bs) * 45;
      const std::vector<float> x = quantizer_inputs(k, bs, seed * 31 + bs);
      std::vector<uint8_t> want(storage_bytes(f, k)), got(want.size(), 0xAB);
      blocks::quantize_reference(f, x.data(), want.data(), k);
      kern.quantize[cpu::quant::act_index(f)](x.data(), got.data(), k);
      for (int64_t b = 0; b < k / bs; ++b) {
        const size_t o = static_cast<size_t>(b * block_bytes(f));
        EXPECT_EQ(std::memcmp(want.data() + o, got.data() + o, block_bytes(f)), 0)
            << name(f) << " on " << kern.isa << ": block " << b << " (seed " << seed << ")";
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Isa, QuantizerIsa, ::testing::ValuesIn(cpu::quant::kAllQuantIsas),
                         [](const auto& info) { return cpu::quant::isa_name(info.param); });

// ---------------------------------------------------------------------------------------------
// Dot tiles.

enum class Data {
  kValid,          // fill_valid_blocks weights, activations in [-1, 1]
  kZeroBlocks,     // every third weight block all zero bytes, every fifth activation block zero
  kExtremeScales,  // weight d (and m, dmin) of 65504 and f16 subnormals; Q8_0 quants of -128
  kActScales,      // activation blocks at scales from 1e-30 to 1e30 (to 1e3 for Q8_0 / Q8_1)
  kActNaN,         // one activation row holds a NaN, one an Inf, one a block at 1e30
};
const Data kAllData[] = {Data::kValid, Data::kZeroBlocks, Data::kExtremeScales, Data::kActScales,
                         Data::kActNaN};
const char* data_name(Data d) {
  switch (d) {
    case Data::kValid: return "valid";
    case Data::kZeroBlocks: return "zero-blocks";
    case Data::kExtremeScales: return "extreme-scales";
    case Data::kActScales: return "activation-scales";
    case Data::kActNaN: return "activation-nan";
  }
  return "?";
}

// Byte offsets of a block's f16 scale fields (d first).
std::vector<int> scale_fields(DType t) {
  switch (t) {
    case DType::Q4_1:
    case DType::Q5_1:
    case DType::Q4_K:
    case DType::Q5_K: return {0, 2};
    case DType::Q6_K: return {208};
    default: return {0};
  }
}

std::vector<uint8_t> make_weights(DType t, int rows, int64_t k, Data data, uint64_t seed) {
  const int64_t nb = k / block_size(t), bb = block_bytes(t);
  std::vector<uint8_t> w(static_cast<size_t>(rows * nb * bb));
  blocks::fill_valid_blocks(t, w, seed);
  std::mt19937_64 rng(seed ^ 0x5eed);
  for (int64_t b = 0; b < rows * nb; ++b) {
    uint8_t* p = w.data() + b * bb;
    if (data == Data::kZeroBlocks && b % 3 == 1) std::memset(p, 0, bb);
    if (data == Data::kExtremeScales) {
      static const uint16_t kScales[] = {0x7BFF, 0xFBFF, 0x0001, 0x8001, 0x03FF, 0x3C00};
      for (int off : scale_fields(t)) {
        const uint16_t h = kScales[rng() % 6];
        std::memcpy(p + off, &h, 2);
      }
      if (t == DType::Q8_0)
        for (int j = 0; j < 32; j += 3)
          p[2 + j] = 0x80;  // -128: |w| = 128 in the sign trick
    }
  }
  return w;
}

// Q8_0 and Q8_1 keep d (and s) in f16: blocks beyond about 1e3 overflow s (1e7 overflow d), and
// the dot products reading them are Inf or NaN, as in ggml. kActNaN has such a block; kActScales
// keeps them finite. Q8_K's f32 d takes the whole range.
std::vector<float> make_activations(int m, int64_t k, int block, Data data, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  std::uniform_real_distribution<double> e(-30, block == 256 ? 30 : 3);
  std::vector<float> x(static_cast<size_t>(m * k));
  for (float& v : x)
    v = u(rng);
  for (int64_t b = 0; b < m * k / block; ++b) {
    float* p = x.data() + b * block;
    if (data == Data::kZeroBlocks && b % 5 == 2)
      for (int j = 0; j < block; ++j)
        p[j] = 0;
    if (data == Data::kActScales) {
      const float s = static_cast<float>(std::pow(10.0, e(rng)));
      for (int j = 0; j < block; ++j)
        p[j] *= s;
    }
  }
  if (data == Data::kActNaN) {
    x[static_cast<size_t>(k / 2)] = std::numeric_limits<float>::quiet_NaN();
    if (m > 2) x[static_cast<size_t>(2 * k + 1)] = std::numeric_limits<float>::infinity();
    if (m > 3)
      for (int j = 0; j < block; ++j)
        x[static_cast<size_t>(3 * k + j)] *= 1e30f;
  }
  return x;
}

struct DotCase {
  DType t;
  int64_t k;
  int rows, m;
  Data data;
};

std::string describe(const DotCase& c, const char* isa) {
  return std::string(name(c.t)) + " k=" + std::to_string(c.k) + " rows=" + std::to_string(c.rows) +
         " m=" + std::to_string(c.m) + " " + data_name(c.data) + " on " + isa;
}

// Runs the tile kernel over a rows x m problem two ways: in one call (output rows x m, row-major)
// and in 4 x 4 tiles writing a column-major output; both must agree bitwise. Returns row-major.
std::vector<float> run_dot(const QuantKernels& kern, const DotCase& c,
                           const std::vector<uint8_t>& w, const std::vector<uint8_t>& xq) {
  const int64_t nb = c.k / block_size(c.t), bb = block_bytes(c.t);
  const DType af = blocks::activation_format(c.t);
  const int64_t xs = static_cast<int64_t>(storage_bytes(af, c.k));
  std::vector<const uint8_t*> rows(c.rows);
  for (int r = 0; r < c.rows; ++r)
    rows[r] = w.data() + r * nb * bb;
  const cpu::quant::DotRowsFn dot = kern.dot[cpu::quant::weight_index(c.t)];
  std::vector<float> out(static_cast<size_t>(c.rows * c.m), -7.0f);
  dot(nb, rows.data(), c.rows, xq.data(), xs, c.m, out.data(), c.m, 1);
  std::vector<float> cm(out.size(), -7.0f);
  for (int r0 = 0; r0 < c.rows; r0 += 4)
    for (int i0 = 0; i0 < c.m; i0 += 4)
      dot(nb, rows.data() + r0, std::min(4, c.rows - r0), xq.data() + i0 * xs, xs,
          std::min(4, c.m - i0), cm.data() + r0 + static_cast<int64_t>(i0) * c.rows, 1, c.rows);
  for (int r = 0; r < c.rows; ++r)
    for (int i = 0; i < c.m; ++i)
      EXPECT_TRUE(same_float(out[r * c.m + i], cm[r + i * c.rows]))
          << describe(c, kern.isa) << ": tiled call differs at row " << r << ", activation " << i;
  // The prefill GEMM where the ISA has one for the type: bitwise the tiles, written column-major
  // as cpu.QMatmul writes it; its output is returned, so the bounds check it too.
  if (const cpu::quant::GemmFn gemm = kern.gemm[cpu::quant::weight_index(c.t)]) {
    std::vector<uint8_t> scratch(
        static_cast<size_t>(kern.gemm_scratch[cpu::quant::weight_index(c.t)](nb, c.rows, c.m)));
    std::vector<float> g(out.size(), -7.0f);
    gemm(nb, rows.data(), c.rows, xq.data(), xs, c.m, g.data(), 1, c.rows, scratch.data());
    std::vector<float> rm(out.size());
    for (int r = 0; r < c.rows; ++r)
      for (int i = 0; i < c.m; ++i) {
        rm[r * c.m + i] = g[r + i * c.rows];
        EXPECT_TRUE(same_float(rm[r * c.m + i], out[r * c.m + i]))
            << describe(c, kern.isa) << ": the GEMM differs at row " << r << ", activation " << i
            << ": " << rm[r * c.m + i] << " but the dot gives " << out[r * c.m + i];
      }
    return rm;
  }
  return out;
}

class DotIsa : public ::testing::TestWithParam<std::tuple<DType, QuantIsa>> {};

TEST_P(DotIsa, WithinBoundsAndBitwiseAsPortable) {
  const auto [t, isa] = GetParam();
  SKIP_ABSENT(isa);
  const QuantKernels& kern = cpu::quant::kernels_for(isa);
  const QuantKernels& portable = cpu::quant::kernels_for(QuantIsa::Portable);
  const bool k_type = block_size(t) == 256;
  const std::vector<int64_t> ks =
      k_type ? std::vector<int64_t>{256, 1536, 4096} : std::vector<int64_t>{32, 96, 576, 1536};
  const DType af = blocks::activation_format(t);
  int checked = 0, nonfinite = 0;
  double worst_q = 0, worst = 0;  // largest error / bound seen
  for (Data data : kAllData)
    for (int64_t k : ks)
      for (int rows : {1, 3, 4, 7, 9, 64})
        for (int m : {1, 2, 3, 4, 5, 11}) {
          if (k == 4096 && rows == 64 && m > 2) continue;  // keeps the suite quick
          if (rows == 9 && m > 2 && k > 576) continue;
          if (m == 11 && (rows == 64 || k > 576)) continue;
          const DotCase c{t, k, rows, m, data};
          const uint64_t seed = static_cast<uint64_t>(k * 1000003 + rows * 101 + m * 7) +
                                static_cast<uint64_t>(data) * 17 + static_cast<uint64_t>(t);
          const std::vector<uint8_t> w = make_weights(t, rows, k, data, seed);
          const std::vector<float> x = make_activations(m, k, block_size(af), data, seed + 1);
          const int64_t xs = static_cast<int64_t>(storage_bytes(af, k));
          std::vector<uint8_t> xq(static_cast<size_t>(xs * m)), xq_ref(xq.size());
          for (int i = 0; i < m; ++i) {
            kern.quantize[cpu::quant::act_index(af)](x.data() + i * k, xq.data() + i * xs, k);
            blocks::quantize_reference(af, x.data() + i * k, xq_ref.data() + i * xs, k);
          }
          ASSERT_EQ(xq, xq_ref) << describe(c, kern.isa) << ": quantized activations differ";
          const std::vector<float> got = run_dot(kern, c, w, xq);
          const std::vector<float> base =
              isa == QuantIsa::Portable ? got : run_dot(portable, c, w, xq);
          const int64_t row_bytes = static_cast<int64_t>(storage_bytes(t, k));
          for (int r = 0; r < rows; ++r)
            for (int i = 0; i < m; ++i) {
              const float v = got[r * m + i];
              ASSERT_TRUE(same_float(v, base[r * m + i]))
                  << describe(c, kern.isa) << ": row " << r << ", activation " << i << ": " << v
                  << " but portable gives " << base[r * m + i];
              const testing::QuantDotBound b =
                  testing::quant_dot_bound(t, w.data() + r * row_bytes, x.data() + i * k, k);
              ++checked;
              if (!std::isfinite(b.y_q) || !std::isfinite(b.bound())) {
                ++nonfinite;
                EXPECT_FALSE(std::isfinite(v))
                    << describe(c, kern.isa) << ": row " << r << ", activation " << i
                    << ": the reference is not finite (y_q " << b.y_q << "), the kernel gives "
                    << v;
                continue;
              }
              const double err_q = std::fabs(v - b.y_q), err = std::fabs(v - b.y);
              ASSERT_LE(err_q, b.bound_q())
                  << describe(c, kern.isa) << ": row " << r << ", activation " << i << ": kernel "
                  << v << ", quantized-activation reference " << b.y_q;
              ASSERT_LE(err, b.bound())
                  << describe(c, kern.isa) << ": row " << r << ", activation " << i << ": kernel "
                  << v << ", f64 reference " << b.y << " (e_q " << b.e_q << ", e_s " << b.e_s
                  << ", e_acc " << b.e_acc << ")";
              if (b.bound_q() > 0) worst_q = std::max(worst_q, err_q / b.bound_q());
              if (b.bound() > 0) worst = std::max(worst, err / b.bound());
            }
        }
  EXPECT_GT(nonfinite, 0);  // the NaN / Inf rows were exercised
  std::printf(
      "%s on %s: %d outputs (%d non-finite), worst error / bound: %.3g (quantized "
      "activation), %.3g (f64)\n",
      std::string(name(t)).c_str(), kern.isa, checked, nonfinite, worst_q, worst);
}

INSTANTIATE_TEST_SUITE_P(TypesIsas, DotIsa,
                         ::testing::Combine(::testing::ValuesIn(kWeightBlockDTypes),
                                            ::testing::ValuesIn(cpu::quant::kAllQuantIsas)),
                         [](const auto& info) {
                           return std::string(name(std::get<0>(info.param))) + "_" +
                                  cpu::quant::isa_name(std::get<1>(info.param));
                         });

// The prefill GEMMs at prefill sizes: many activation groups with a tail (m = 19), odd weight
// rows over several L1 sub-panels, bitwise the dot tiles (run_dot) and the portable kernels.
TEST(QuantDot, GemmPrefillShapesBitwise) {
  const QuantKernels& portable = cpu::quant::kernels_for(QuantIsa::Portable);
  int checked = 0;
  for (QuantIsa isa : cpu::quant::available_isas()) {
    const QuantKernels& kern = cpu::quant::kernels_for(isa);
    for (DType t : kWeightBlockDTypes) {
      if (kern.gemm[cpu::quant::weight_index(t)] == nullptr) continue;
      const int64_t k = block_size(t) == 256 ? 1536 : 576;
      for (Data data : {Data::kValid, Data::kZeroBlocks, Data::kExtremeScales}) {
        const DotCase c{t, k, 37, 19, data};
        const DType af = blocks::activation_format(t);
        const std::vector<uint8_t> w = make_weights(t, c.rows, k, data, 77);
        const std::vector<float> x = make_activations(c.m, k, block_size(af), data, 78);
        const int64_t xs = static_cast<int64_t>(storage_bytes(af, k));
        std::vector<uint8_t> xq(static_cast<size_t>(xs * c.m));
        for (int i = 0; i < c.m; ++i)
          blocks::quantize_reference(af, x.data() + i * k, xq.data() + i * xs, k);
        const std::vector<float> got = run_dot(kern, c, w, xq);
        const std::vector<float> want = run_dot(portable, c, w, xq);
        for (size_t j = 0; j < got.size(); ++j) {
          ASSERT_TRUE(same_float(got[j], want[j]))
              << describe(c, kern.isa) << ": output " << j << ": " << got[j]
              << " but portable gives " << want[j];
          ++checked;
        }
      }
    }
  }
  std::printf("%d GEMM outputs checked\n", checked);
}

// A weight of all -128 quants against activations of all +-127: the largest int16 pair of the
// sign trick (128 * 127 * 2 = 32512) must not saturate on any path.
TEST(QuantDot, Q8_0SaturationCorner) {
  std::vector<uint8_t> w(34, 0x80);
  const uint16_t one = 0x3C00;
  std::memcpy(w.data(), &one, 2);
  std::vector<float> x(32, 127.0f);
  for (int j = 0; j < 32; j += 2)
    x[j] = -127.0f;
  x[5] = 127.0f;
  std::vector<uint8_t> xq(34);
  blocks::quantize_q8_0(x.data(), xq.data(), 32);
  int64_t want = 0;
  for (int j = 0; j < 32; ++j)
    want += -128 * static_cast<int64_t>(static_cast<int8_t>(xq[2 + j]));
  for (QuantIsa isa : cpu::quant::available_isas()) {
    const QuantKernels& k = cpu::quant::kernels_for(isa);
    const uint8_t* rows[1] = {w.data()};
    float out = 0;
    k.dot[cpu::quant::kQ8_0](1, rows, 1, xq.data(), 34, 1, &out, 1, 1);
    EXPECT_EQ(out, static_cast<float>(want)) << k.isa;
  }
}

// Q4_0 and Q5_0 rows repacked to Q8_0 (prefill panels): the same bytes on every ISA, and the Q8_0
// dot of them bitwise the type's own dot (odd row and activation counts, zero and extreme-scale
// blocks); no repack for the other types.
TEST(QuantDot, RepackToQ8_0) {
  const int rows = 7, m = 5;
  const int64_t k = 576, nb = k / 32;
  const QuantKernels& portable = cpu::quant::kernels_for(QuantIsa::Portable);
  for (DType t : {DType::Q4_0, DType::Q5_0})
    for (Data data : {Data::kValid, Data::kZeroBlocks, Data::kExtremeScales}) {
      SCOPED_TRACE(std::string(name(t)) + " data " + std::to_string(static_cast<int>(data)));
      const std::vector<uint8_t> w = make_weights(t, rows, k, data, 11);
      std::vector<const uint8_t*> w_rows(rows);
      for (int r = 0; r < rows; ++r)
        w_rows[static_cast<size_t>(r)] = w.data() + r * nb * block_bytes(t);
      const std::vector<float> x = make_activations(m, k, 32, Data::kValid, 12);
      std::vector<uint8_t> xq(static_cast<size_t>(m * nb * 34));
      for (int i = 0; i < m; ++i)
        blocks::quantize_q8_0(x.data() + i * k, xq.data() + i * nb * 34, k);
      std::vector<uint8_t> want(static_cast<size_t>(rows * nb * 34));
      portable.to_q8_0[cpu::quant::weight_index(t)](w_rows.data(), rows, nb, want.data());
      for (QuantIsa isa : cpu::quant::available_isas()) {
        const QuantKernels& kern = cpu::quant::kernels_for(isa);
        std::vector<uint8_t> q8(want.size());
        kern.to_q8_0[cpu::quant::weight_index(t)](w_rows.data(), rows, nb, q8.data());
        EXPECT_EQ(q8, want) << kern.isa;
        std::vector<const uint8_t*> q8_rows(rows);
        for (int r = 0; r < rows; ++r)
          q8_rows[static_cast<size_t>(r)] = q8.data() + r * nb * 34;
        std::vector<float> own(rows * m), repacked(rows * m);
        kern.dot[cpu::quant::weight_index(t)](nb, w_rows.data(), rows, xq.data(), nb * 34, m,
                                              own.data(), 1, rows);
        kern.dot[cpu::quant::kQ8_0](nb, q8_rows.data(), rows, xq.data(), nb * 34, m,
                                    repacked.data(), 1, rows);
        for (size_t j = 0; j < own.size(); ++j)
          EXPECT_TRUE(same_float(repacked[j], own[j]))
              << kern.isa << " output " << j << ": " << repacked[j] << " vs " << own[j];
      }
    }
  for (QuantIsa isa : cpu::quant::available_isas())
    for (DType t : kWeightBlockDTypes)
      if (t != DType::Q4_0 && t != DType::Q5_0) {
        EXPECT_EQ(cpu::quant::kernels_for(isa).to_q8_0[cpu::quant::weight_index(t)], nullptr)
            << name(t);
      }
}

// The prefill GEMM exists for the Q8_0-format weights on the VNNI paths, for the K types on
// avx512vnni, and for every type on avx2 (DotIsa checks its values), each with its scratch size;
// the others fall back to the dot tiles.
TEST(QuantDot, GemmTable) {
  for (QuantIsa isa : cpu::quant::kAllQuantIsas) {
    const QuantKernels* k = kernels_or_null(isa);
    if (k == nullptr) continue;
    const bool vnni = isa == QuantIsa::Avx512Vnni || isa == QuantIsa::AvxVnni;
    for (DType t : kWeightBlockDTypes) {
      const bool q8 = t == DType::Q4_0 || t == DType::Q5_0 || t == DType::Q8_0;
      const bool kt = t == DType::Q4_K || t == DType::Q5_K || t == DType::Q6_K;
      const int wi = cpu::quant::weight_index(t);
      EXPECT_EQ(k->gemm[wi] != nullptr,
                (vnni && q8) || (isa == QuantIsa::Avx512Vnni && kt) || isa == QuantIsa::Avx2)
          << k->isa << " " << name(t);
      EXPECT_EQ(k->gemm_scratch[wi] != nullptr, k->gemm[wi] != nullptr) << k->isa << " " << name(t);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// The ISA choice.

struct EnvIsa : testing::EnvScope {  // LUMINAL_CPU_ISA for a scope (null: unset)
  explicit EnvIsa(const char* v) : EnvScope("LUMINAL_CPU_ISA", v) {}
};

TEST(QuantIsaChoice, DetectAndNames) {
  const std::vector<QuantIsa> av = cpu::quant::available_isas();
  ASSERT_FALSE(av.empty());
  EXPECT_EQ(av.front(), QuantIsa::Portable);
  EXPECT_EQ(av.back(), cpu::quant::detect());
  std::printf("available quantized-kernel ISAs: %s (detected: %s)\n", available_names().c_str(),
              cpu::quant::isa_name(cpu::quant::detect()));
  for (QuantIsa i : cpu::quant::kAllQuantIsas) {
    const QuantKernels* k = kernels_or_null(i);
    if (k == nullptr) continue;
    EXPECT_STREQ(k->isa, cpu::quant::isa_name(i));
    for (auto q : k->quantize)
      EXPECT_NE(q, nullptr);
    for (auto d : k->dot)
      EXPECT_NE(d, nullptr);
  }
#if defined(__x86_64__)
  EXPECT_TRUE(cpu::quant::isa_available(QuantIsa::Avx2) ||
              !__builtin_cpu_supports("avx2"));  // AVX2 machines get AVX2
#endif
}

TEST(QuantIsaChoice, EnvironmentAndScopedOverride) {
  {
    EnvIsa env(nullptr);
    EXPECT_EQ(cpu::quant::active(), cpu::quant::detect());
  }
  {
    EnvIsa env("portable");
    EXPECT_EQ(cpu::quant::active(), QuantIsa::Portable);
    EXPECT_STREQ(cpu::quant::active_kernels().isa, "portable");
    {
      cpu::quant::ScopedQuantIsa scoped(cpu::quant::detect());
      EXPECT_EQ(cpu::quant::active(), cpu::quant::detect());  // the override wins
    }
    EXPECT_EQ(cpu::quant::active(), QuantIsa::Portable);
  }
  {
    EnvIsa env("sse9");
    testing::expect_error([] { cpu::quant::active(); },
                          {"LUMINAL_CPU_ISA=sse9", "portable, avx2, avxvnni, avx512vnni"});
  }
  for (QuantIsa i : cpu::quant::kAllQuantIsas) {
    if (cpu::quant::isa_available(i)) continue;
    EnvIsa env(cpu::quant::isa_name(i));
    testing::expect_error([] { cpu::quant::active(); },
                          {std::string("LUMINAL_CPU_ISA=") + cpu::quant::isa_name(i), "portable"});
    testing::expect_error([i] { cpu::quant::ScopedQuantIsa s(i); }, cpu::quant::isa_name(i));
  }
}

TEST(QuantIsaChoice, Indices) {
  const DType weights[] = {DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1,
                           DType::Q8_0, DType::Q4_K, DType::Q5_K, DType::Q6_K};
  for (int i = 0; i < 8; ++i)
    EXPECT_EQ(cpu::quant::weight_index(weights[i]), i);
  EXPECT_EQ(cpu::quant::act_index(DType::Q8_0), cpu::quant::kA8_0);
  EXPECT_EQ(cpu::quant::act_index(DType::Q8_1), cpu::quant::kA8_1);
  EXPECT_EQ(cpu::quant::act_index(DType::Q8_K), cpu::quant::kA8_K);
}

}  // namespace
}  // namespace luminal
