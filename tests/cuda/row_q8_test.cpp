// cuda.RowQ8 (row.cpp): QuantizeQ8(Row(...)) as one kernel, the row kept in shared memory and
// written as Q8_1 blocks (split where the split-layout GEMV reads them). Without a GPU: the rule
// replaces an RMSNorm's row kernel and the quantize before a quantized linear layer, not a Q8_K
// quantize (the K types) nor a row longer than 8192, and its kernels compile for sm_90 in the
// chunked and element forms. On the GPU: its bytes equal cuda.Row followed by cuda.QuantizeQ8.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "cuda/cuda_test_util.hpp"
#include "cuda/quant_test_util.hpp"
#include "luminal/core/blocks.hpp"
#include "luminal/cuda/nvrtc.hpp"
#include "luminal/luminal.hpp"
#include "luminal/nn/linear.hpp"
#include "support/env_scope.hpp"
#include "support/llir_direct.hpp"

namespace luminal {
namespace {

using testing::count_op;

// cuda.RowQ8 is offered unless LUMINAL_CUDA_ROW_Q8=0 (docs/cuda.md): these tests make sure it is
// on, except where they check the switch.
void row_q8_on() { ::setenv("LUMINAL_CUDA_ROW_Q8", "1", 1); }

/// y = RMSNorm(x, g) @ Dequantize(W)^T: x [m, k] f32 (or bf16 when `bf16`), W [n, k] of type t.
Graph norm_linear(int64_t m, int64_t k, DType t, bool bf16 = false) {
  Graph g;
  Tensor x = g.tensor("x", {Expr(m), Expr(k)}, bf16 ? DType::BF16 : DType::F32);
  Tensor w = g.tensor("g", {Expr(k)}, bf16 ? DType::BF16 : DType::F32);
  Tensor h = x.rms_norm(w, 1e-5);
  if (bf16) h = h.cast(DType::F32);
  nn::linear(h, g.tensor("w", {Expr(40), Expr(k)}, t).dequantize()).output("y");
  return g;
}

std::function<bool(std::string_view)> row_q8_ops(bool split) {
  return [split](std::string_view op) { return op == "cuda.RowQ8" || testing::gemv_op(op, split); };
}

std::function<bool(std::string_view)> unfused_ops(bool split) {
  return [split](std::string_view op) {
    return op == "cuda.Row" || op == "cuda.QuantizeQ8" || testing::gemv_op(op, split);
  };
}

TEST(CudaRowQ8Rules, OnByDefaultAndOffWithZero) {
  testing::CudaRulesOnly rules;
  {
    testing::EnvScope unset("LUMINAL_CUDA_ROW_Q8", nullptr);
    auto [l, n] = testing::prefer_ops(norm_linear(1, 4096, DType::Q4_0), rules, row_q8_ops(false));
    EXPECT_EQ(count_op(l, "cuda.RowQ8"), 1) << l.op_mix_string();
    EXPECT_EQ(count_op(l, "cuda.QuantizeQ8"), 0) << l.op_mix_string();
  }
  testing::EnvScope off("LUMINAL_CUDA_ROW_Q8", "0");
  auto [l, n] = testing::prefer_ops(norm_linear(1, 4096, DType::Q4_0), rules, row_q8_ops(false));
  EXPECT_EQ(count_op(l, "cuda.RowQ8"), 0) << l.op_mix_string();
  // (the quantize alone, or in the kernel of the norm's last multiply: cuda.FusedQ8)
  EXPECT_EQ(count_op(l, "cuda.QuantizeQ8") + count_op(l, "cuda.FusedQ8"), 1) << l.op_mix_string();
}

TEST(CudaRowQ8Rules, ReplacesTheRowAndTheQuantize) {
  row_q8_on();
  testing::CudaRulesOnly rules;
  for (int64_t k : {576, 4096}) {
    auto [l, n] = testing::prefer_ops(norm_linear(1, k, DType::Q4_0), rules, row_q8_ops(false));
    EXPECT_EQ(count_op(l, "cuda.RowQ8"), 1) << k << ": " << l.op_mix_string();
    EXPECT_EQ(count_op(l, "cuda.QuantizeQ8"), 0) << k << ": " << l.op_mix_string();
    EXPECT_EQ(count_op(l, "cuda.Row"), 0) << k << ": " << l.op_mix_string();
  }
  // Q8_K (the K types) and rows past 8192: none.
  {
    auto [l, n] = testing::prefer_ops(norm_linear(1, 512, DType::Q4_K), rules, row_q8_ops(false));
    EXPECT_EQ(count_op(l, "cuda.RowQ8"), 0) << l.op_mix_string();
  }
  {
    auto [l, n] =
        testing::prefer_ops(norm_linear(1, 8192 + 256, DType::Q8_0), rules, row_q8_ops(false));
    EXPECT_EQ(count_op(l, "cuda.RowQ8"), 0) << l.op_mix_string();
  }
}

// Every form compiles: four blocks a warp or one (LUMINAL_CUDA_ROW_Q8_OCT), the norm's weight read
// before the reduction or after it (LUMINAL_CUDA_ROW_PREFETCH); by default both are taken.
TEST(CudaRowQ8Rules, KernelsCompileForSm90) {
  LUMINAL_REQUIRE_NVRTC();
  row_q8_on();
  testing::CudaRulesOnly rules;
  std::vector<std::string> sources;
  for (bool on : {true, false}) {
    const testing::EnvScope o("LUMINAL_CUDA_ROW_Q8_OCT", on ? "1" : "0");
    const testing::EnvScope pf("LUMINAL_CUDA_ROW_PREFETCH", on ? "1" : "0");
    for (bool split : {false, true})
      for (int64_t k : {576, 4096})
        for (bool bf16 : {false, true}) {
          auto [l, n] =
              testing::prefer_ops(norm_linear(1, k, DType::Q8_0, bf16), rules, row_q8_ops(split));
          ASSERT_EQ(count_op(l, "cuda.RowQ8"), 1) << k << " " << l.op_mix_string();
          ASSERT_TRUE(testing::writes_layout(l, "cuda.RowQ8", split)) << k << " " << l.to_text();
          for (cuda::GeneratedKernel& g : cuda::generate_kernels(l, PlanSpec{})) {
            if (g.source.find("lmn_row") == std::string::npos) continue;
            const std::string body = g.source.substr(g.source.find("LMN_ENTRY(lmn_row)"));
            EXPECT_EQ(body.find("lmn_q8_1_oct") != std::string::npos, on) << k << " " << body;
            // The weight (in1) is read before the first reduction's butterfly when prefetched.
            const size_t weight = body.find("in1 + "), shuffle = body.find("__shfl_xor_sync");
            ASSERT_NE(weight, std::string::npos) << body;
            EXPECT_EQ(weight < shuffle, on) << k << " " << body;
            sources.push_back(g.source);
          }
        }
  }
  testing::expect_compiles(sources, "a RowQ8 kernel");
}

std::vector<uint8_t> random_bytes(DType t, int64_t values, uint64_t seed) {
  std::vector<uint8_t> b(static_cast<size_t>(storage_bytes(t, values)));
  blocks::fill_valid_blocks(t, b, seed);
  return b;
}

/// Element i of `b` (f32 or bf16) set to v.
void poke(HostBuffer& b, int64_t i, float v) {
  if (b.dtype == DType::F32) {
    std::memcpy(b.bytes.data() + 4 * i, &v, 4);
  } else {
    uint32_t bits;
    std::memcpy(&bits, &v, 4);
    const uint16_t h = static_cast<uint16_t>(bits >> 16);
    std::memcpy(b.bytes.data() + 2 * i, &h, 2);
  }
}

/// n values uniform in [-2, 2) of dtype t (f32 or bf16, truncated).
HostBuffer floats_of(DType t, int64_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-2, 2);
  HostBuffer b{t, std::vector<uint8_t>(static_cast<size_t>(n) * size_bytes(t))};
  for (int64_t i = 0; i < n; ++i)
    poke(b, i, u(rng));
  return b;
}

// The fused kernel's output (through the GEMV that reads it) has the bits of the Row + QuantizeQ8
// program's: the same f32 row, quantized to the same bytes, whether a warp quantizes one block
// or four at a time (LUMINAL_CUDA_ROW_Q8_OCT) and whether the norm's weight is read before the
// reduction (LUMINAL_CUDA_ROW_PREFETCH). Each input has a block of zeros (the weight's block 2:
// d = 0), a block of subnormals (block 3: 127 / amax overflows), and with three rows an infinity
// in row 1 (its blocks NaN: the non-finite marker).
TEST(CudaRowQ8, SameBitsAsTheRowAndTheQuantize) {
  LUMINAL_REQUIRE_GPU();
  row_q8_on();
  uint64_t seed = 10;
  for (const char* oct : {"1", "0"})
    for (const char* prefetch : {"1", "0"})
      for (bool split : {false, true})
        for (int64_t k : {576, 4096})
          for (int64_t m : {1, 3})
            for (bool bf16 : {false, true}) {
              if (m > 1 && k == 576 && split) continue;  // (rows not 16-byte aligned)
              const testing::EnvScope o("LUMINAL_CUDA_ROW_Q8_OCT", oct);
              const testing::EnvScope pf("LUMINAL_CUDA_ROW_PREFETCH", prefetch);
              const Graph g = norm_linear(m, k, DType::Q8_0, bf16);
              auto [fused, a] = testing::prefer_ops(g, testing::gpu(), row_q8_ops(split));
              auto [plain, b] = testing::prefer_ops(g, testing::gpu(), unfused_ops(split));
              const std::string at = std::string("oct ") + oct + " prefetch " + prefetch +
                                     (split ? " split" : " plain") + " k " + std::to_string(k) +
                                     " m " + std::to_string(m) + (bf16 ? " bf16" : " f32");
              ASSERT_EQ(count_op(fused, "cuda.RowQ8"), 1) << at << " " << fused.op_mix_string();
              ASSERT_TRUE(testing::writes_layout(fused, "cuda.RowQ8", split))
                  << at << " " << fused.to_text();
              ASSERT_EQ(count_op(plain, "cuda.RowQ8"), 0) << at << " " << plain.op_mix_string();
              const DType xt = bf16 ? DType::BF16 : DType::F32;
              HostBuffer wb{DType::Q8_0, random_bytes(DType::Q8_0, 40 * k, ++seed)};
              HostBuffer xb = floats_of(xt, m * k, ++seed), gb = floats_of(xt, k, ++seed);
              for (int64_t i = 64; i < 96; ++i)
                poke(gb, i, 0.0f);
              for (int64_t i = 96; i < 128; ++i)
                poke(gb, i, 1e-39f * static_cast<float>(i - 95));
              if (m > 1) poke(xb, k + 5, std::numeric_limits<float>::infinity());
              const testing::BufferMap in{{"x", xb}, {"g", gb}, {"w", wb}};
              testing::LoadedPlan pa = testing::load_plan(testing::gpu(), fused);
              testing::LoadedPlan pb = testing::load_plan(testing::gpu(), plain);
              EXPECT_EQ(testing::run_plan(pa, in, {}).outputs.at("y").bytes,
                        testing::run_plan(pb, in, {}).outputs.at("y").bytes)
                  << at;
            }
}

}  // namespace
}  // namespace luminal
