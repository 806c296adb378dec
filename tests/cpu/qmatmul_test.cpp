// cpu.QMatmul, cpu.QuantizeQ8 and cpu.QGather chosen out of the e-graph and run on the CPU:
//   - a linear layer over each weight block type at several s, against the f64 product of the
//     dequantised weights and the f32 activations, within the bound of the 8-bit activation
//     rounding (sum over blocks of (d/2 + amax 2^-11) * sum |w|, plus accumulation);
//   - weights read through row views (a slice, the rotary permutation) give bitwise what the
//     same rows stored in that order give;
//   - q, k and v reading one activation share one QuantizeQ8;
//   - a tied embedding serves the gather (bitwise the reference) and the LM head from one input.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "luminal/core/blocks.hpp"
#include "luminal/cpu/quant/isa.hpp"
#include "luminal/nn/linear.hpp"
#include "ops_test_util.hpp"

namespace luminal {
namespace {

int64_t row_for(DType t) { return block_size(t) == 256 ? 512 : 96; }

LlirGraph choose_q(const Graph& g, cpu::CpuBackend& cpu) {
  BuiltSpace b = build_search_space(g, cpu, {});
  return opstest::choose(b, [](const EGraph& eg, ENodeId n) -> double {
    const std::string_view op = eg.node(n).op->name;
    return op == "cpu.QMatmul" || op == "cpu.QGather" ? 2 : op == "cpu.QuantizeQ8" ? 1 : 0;
  });
}

// |x|, per 32 (or 256) values, the quantization step bound of Q8 activations.
double act_bound(const std::vector<float>& x, const std::vector<float>& w, int bs) {
  double b = 0, acc = 0;
  for (size_t s = 0; s < x.size(); s += static_cast<size_t>(bs)) {
    double amax = 0, wsum = 0;
    for (int j = 0; j < bs; ++j) {
      amax = std::max(amax, std::fabs(static_cast<double>(x[s + j])));
      wsum += std::fabs(static_cast<double>(w[s + j]));
      acc += std::fabs(static_cast<double>(x[s + j]) * w[s + j]);
    }
    const double d = amax / 127;
    b += (d / 2 + amax * 0x1p-11 + 127 * 0x1p-25) * wsum;
  }
  return b + 1e-5 * acc + 1e-6;
}

// y [M, N] = x [M, K] times w^T (w a block tensor of N rows, as stored in `wbytes`) against the
// f64 product of x and the dequantised w, within act_bound.
void expect_within_bound(DType t, const float* x, const uint8_t* wbytes, const float* y, int64_t M,
                         int64_t N, int64_t K, const std::string& what) {
  std::vector<float> wf(static_cast<size_t>(N * K));
  blocks::dequantize(t, wbytes, wf.data(), N * K);
  const int bs = block_size(blocks::activation_format(t));
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      std::vector<float> xr(x + m * K, x + (m + 1) * K),
          wr(wf.begin() + n * K, wf.begin() + (n + 1) * K);
      double want = 0;
      for (int64_t j = 0; j < K; ++j)
        want += static_cast<double>(xr[static_cast<size_t>(j)]) * wr[static_cast<size_t>(j)];
      EXPECT_NEAR(y[m * N + n], want, act_bound(xr, wr, bs))
          << name(t) << " " << what << " m=" << m << " n=" << n;
    }
}

class QMatmulTest : public ::testing::TestWithParam<DType> {};

TEST_P(QMatmulTest, LinearWithinTheActivationBound) {
  const DType t = GetParam();
  const int64_t K = row_for(t), N = 37;
  Graph g;
  g.declare_dim("s", 1, 9);
  Tensor x = g.tensor("x", {"s", K});
  Tensor w = g.tensor("w", {N, K}, t);
  nn::linear(x, w.dequantize()).output("y");
  cpu::CpuBackend cpu(2);
  LlirGraph p = choose_q(g, cpu);
  ASSERT_EQ(opstest::count_op(p, "cpu.QMatmul"), 1) << p.to_text();
  ASSERT_EQ(opstest::count_op(p, "cpu.QuantizeQ8"), 1) << p.to_text();
  auto exe = testing::load_plan(cpu, p, {{{"s", 1}}, {{"s", 9}}});
  for (int64_t s : {1, 2, 5, 9}) {
    DynMap dyn{{"s", s}};
    testing::BufferMap in = opstest::random_inputs(g, dyn, 7 + s, -2, 2);
    testing::BufferMap got = testing::run_executable(exe, g, in, dyn);
    expect_within_bound(t, reinterpret_cast<const float*>(in.at("x").bytes.data()),
                        in.at("w").bytes.data(),
                        reinterpret_cast<const float*>(got.at("y").bytes.data()), s, N, K,
                        "s=" + std::to_string(s));
  }
}

TEST_P(QMatmulTest, RowViewsReadTheSameRows) {
  const DType t = GetParam();
  const int64_t K = row_for(t), N = 12;
  // y1 reads the even rows of w through a view; y2 reads a copy of them stored contiguously:
  // the same rows through the same kernel, so bitwise equal. y3 reads the first 5 rows.
  Graph g;
  Tensor x = g.tensor("x", {3, K});
  Tensor w = g.tensor("w", {N, K}, t);
  Tensor we = g.tensor("we", {N / 2, K}, t);
  nn::linear(x, w.reshape({N / 2, 2, K}).slice(1, 0, 1).reshape({N / 2, K}).dequantize())
      .output("y1");
  nn::linear(x, we.dequantize()).output("y2");
  nn::linear(x, w.slice(0, 0, 5).dequantize()).output("y3");
  nn::linear(x, w.dequantize()).output("y4");
  cpu::CpuBackend cpu(2);
  LlirGraph p = choose_q(g, cpu);
  ASSERT_EQ(opstest::count_op(p, "cpu.QMatmul"), 4) << p.to_text();
  ASSERT_EQ(opstest::count_op(p, "cpu.QuantizeQ8"), 1) << p.to_text();
  testing::BufferMap in = opstest::random_inputs(g, {}, 3);
  const uint64_t rb = storage_bytes(t, K);
  HostBuffer even{t, std::vector<uint8_t>(rb * (N / 2))};
  for (int r = 0; r < N / 2; ++r)
    std::memcpy(even.bytes.data() + r * rb, in.at("w").bytes.data() + 2 * r * rb, rb);
  in["we"] = even;
  auto exe = testing::load_plan(cpu, p, {{}});
  testing::BufferMap got = testing::run_executable(exe, g, in, {});
  EXPECT_EQ(got.at("y1").bytes, got.at("y2").bytes) << name(t);
  const auto* y3 = reinterpret_cast<const float*>(got.at("y3").bytes.data());
  const auto* y4 = reinterpret_cast<const float*>(got.at("y4").bytes.data());
  for (int m = 0; m < 3; ++m)
    for (int n = 0; n < 5; ++n)
      EXPECT_EQ(y3[m * 5 + n], y4[m * N + n]) << name(t) << " m=" << m << " n=" << n;
}

INSTANTIATE_TEST_SUITE_P(Types, QMatmulTest, ::testing::ValuesIn(kWeightBlockDTypes),
                         [](const auto& info) { return std::string(name(info.param)); });

TEST(QMatmulTest, PrefillPanelsGiveTheBitsOfOneRowAtATime) {
  // 1200 rows: panels (80 rows of Q8_0, 124 of Q5_0 and Q5_K, 148 of Q4_0 and Q4_K, 104 of
  // Q6_K; on the VNNI paths packed for the GEMM (the K types on avx512vnni), else Q4_0 and Q5_0
  // unpacked to Q8_0 once per panel) inside each thread's chunk of 300 with s > 4; every output
  // must be bitwise what the same row gives alone (s = 1, no panels, the type's own dot). Each
  // ISA this machine has, forced in turn.
  const int64_t K = 1536, N = 1200;
  for (cpu::quant::QuantIsa isa : cpu::quant::available_isas())
    for (DType t : {DType::Q8_0, DType::Q5_0, DType::Q4_0, DType::Q4_K, DType::Q5_K, DType::Q6_K}) {
      cpu::quant::ScopedQuantIsa forced(isa);
      SCOPED_TRACE(std::string(name(t)) + " on " + cpu::quant::isa_name(isa));
      Graph g;
      g.declare_dim("s", 1, 9);
      Tensor x = g.tensor("x", {"s", K});
      Tensor w = g.tensor("w", {N, K}, t);
      nn::linear(x, w.dequantize()).output("y");
      cpu::CpuBackend cpu(2);
      LlirGraph p = choose_q(g, cpu);
      ASSERT_EQ(opstest::count_op(p, "cpu.QMatmul"), 1) << p.to_text();
      auto exe = testing::load_plan(cpu, p, {{{"s", 1}}, {{"s", 9}}});
      testing::BufferMap in = opstest::random_inputs(g, {{"s", 9}}, 5, -2, 2);
      const std::vector<uint8_t> all =
          testing::run_executable(exe, g, in, {{"s", 9}}).at("y").bytes;
      const uint64_t row = N * sizeof(float);
      for (int64_t m = 0; m < 9; ++m) {
        testing::BufferMap one = in;
        one["x"].bytes.assign(in.at("x").bytes.begin() + m * K * 4,
                              in.at("x").bytes.begin() + (m + 1) * K * 4);
        const std::vector<uint8_t> got =
            testing::run_executable(exe, g, one, {{"s", 1}}).at("y").bytes;
        ASSERT_EQ(got.size(), row);
        EXPECT_TRUE(std::equal(got.begin(), got.end(), all.begin() + m * row)) << "row " << m;
      }
    }
}

TEST(QMatmulTest, QkvShareOneQuantize) {
  Graph g;
  g.declare_dim("s", 1, 4);
  Tensor x = g.tensor("x", {"s", 64});
  for (const char* n : {"q", "k", "v"})
    nn::linear(x, g.tensor(n, {32, 64}, DType::Q4_1).dequantize()).output(std::string(n) + "_out");
  cpu::CpuBackend cpu(2);
  LlirGraph p = choose_q(g, cpu);
  EXPECT_EQ(opstest::count_op(p, "cpu.QMatmul"), 3) << p.to_text();
  EXPECT_EQ(opstest::count_op(p, "cpu.QuantizeQ8"), 1) << p.to_text();
}

class QGatherTypes : public ::testing::TestWithParam<DType> {};

// Each row of an embedding decodes in one call (QGatherKernel::run_rows); repeated and last ids
// come from random_inputs over [0, 39].
TEST_P(QGatherTypes, TiedEmbeddingGatherIsExactAndServesTheHead) {
  Graph g;
  g.declare_dim("s", 1, 6);
  Tensor table = g.tensor("embed", {40, 256}, GetParam());
  Tensor ids = g.tensor("ids", {"s"}, DType::I32);
  Tensor deq = table.dequantize();
  Tensor h = nn::embedding(deq, ids);
  h.output("rows");
  nn::lm_head(h, deq).output("logits");
  cpu::CpuBackend cpu(2);
  LlirGraph p = choose_q(g, cpu);
  EXPECT_EQ(opstest::count_op(p, "cpu.QGather"), 1) << p.to_text();
  EXPECT_EQ(opstest::count_op(p, "cpu.QMatmul"), 1) << p.to_text();
  EXPECT_EQ(opstest::count_op(p, "Dequantize"), 0) << p.to_text();
  auto exe = testing::load_plan(cpu, p, {{{"s", 1}}, {{"s", 6}}});
  for (int64_t s : {1, 6}) {
    DynMap dyn{{"s", s}};
    testing::BufferMap in = opstest::random_inputs(g, dyn, 11, 0, 39);
    testing::BufferMap want = opstest::run_reference(g, in, dyn);
    testing::BufferMap got = testing::run_executable(exe, g, in, dyn);
    opstest::expect_same(got.at("rows"), want.at("rows"), opstest::kExact, "rows");
    // The head's logits against the f64 product of the gathered rows and the table, within the
    // bound of the rows' 8-bit rounding (their values reach +-16 for Q6_K's random sub-scales).
    expect_within_bound(GetParam(), reinterpret_cast<const float*>(got.at("rows").bytes.data()),
                        in.at("embed").bytes.data(),
                        reinterpret_cast<const float*>(got.at("logits").bytes.data()), s, 40, 256,
                        "logits, s=" + std::to_string(s));
  }
}

INSTANTIATE_TEST_SUITE_P(Blocks, QGatherTypes,
                         ::testing::Values(DType::Q8_0, DType::Q4_1, DType::Q5_0, DType::Q4_K,
                                           DType::Q6_K),
                         [](const ::testing::TestParamInfo<DType>& i) {
                           return std::string(name(i.param));
                         });

}  // namespace
}  // namespace luminal
