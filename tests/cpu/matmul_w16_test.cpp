// cpu.MatmulW16 (a linear layer over bf16/f16 weights with f32 activations) chosen out of the
// e-graph and run on the CPU:
//   - against the f64 product of the widened weights, for bf16 and f16, k with and without a
//     tail of k % 8 values, 1 to 16 activation rows (past 8: the prefill panels into sgemm);
//   - every ISA this machine has gives the bits of the portable kernel (up to 8 rows);
//   - weights read through row views (every other row, a slice) give bitwise what the same
//     rows stored in that order give;
//   - with a few activation rows the op is the only option left (the widening is dominated);
//     with many, Cast + BlasMatmul stays beside it for the search to time;
//   - only a weight is read as the weight (not a 16-bit activation).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "luminal/core/blocks.hpp"
#include "luminal/cpu/quant/isa.hpp"
#include "luminal/nn/linear.hpp"
#include "ops_test_util.hpp"

namespace luminal {
namespace {

LlirGraph choose_w16(const Graph& g, cpu::CpuBackend& cpu) {
  BuiltSpace b = build_search_space(g, cpu, {});
  return opstest::choose(b, opstest::prefer_op("cpu.MatmulW16"));
}

double widen(DType t, const uint8_t* p, int64_t i) {
  uint16_t h;
  std::memcpy(&h, p + 2 * i, 2);
  const uint32_t bits = t == DType::BF16 ? uint32_t{h} << 16 : blocks::f16_to_f32_bits(h);
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

class MatmulW16Test : public ::testing::TestWithParam<DType> {};

TEST_P(MatmulW16Test, LinearMatchesTheF64Product) {
  const DType t = GetParam();
  // s > 8 runs the prefill path: panels of weight rows widened, then sgemm (K = 1000: 65-row
  // panels, three in each thread's chunk of N = 600).
  for (auto [K, N] : {std::pair<int64_t, int64_t>{96, 37}, {101, 37}, {1000, 600}}) {
    Graph g;
    g.declare_dim("s", 1, 16);
    Tensor x = g.tensor("x", {"s", K});
    Tensor w = g.tensor("w", {N, K}, t).persist();
    nn::linear(x, w.cast(DType::F32)).output("y");
    cpu::CpuBackend cpu(2);
    LlirGraph p = choose_w16(g, cpu);
    ASSERT_EQ(opstest::count_op(p, "cpu.MatmulW16"), 1) << p.to_text();
    ASSERT_EQ(opstest::count_op(p, "Cast"), 0) << p.to_text();
    auto exe = testing::load_plan(cpu, p, {{{"s", 1}}, {{"s", 16}}});
    for (int64_t s : {1, 2, 5, 9, 16}) {
      DynMap dyn{{"s", s}};
      testing::BufferMap in = opstest::random_inputs(g, dyn, 11 + s, -2, 2);
      testing::BufferMap got = testing::run_executable(exe, g, in, dyn);
      const auto* xs = reinterpret_cast<const float*>(in.at("x").bytes.data());
      const uint8_t* ws = in.at("w").bytes.data();
      const auto* ys = reinterpret_cast<const float*>(got.at("y").bytes.data());
      for (int64_t m = 0; m < s; ++m)
        for (int64_t n = 0; n < N; ++n) {
          double want = 0, mag = 0;
          for (int64_t j = 0; j < K; ++j) {
            const double v = static_cast<double>(xs[m * K + j]) * widen(t, ws, n * K + j);
            want += v;
            mag += std::fabs(v);
          }
          // f32 accumulation over k terms: at most about k ulps of the magnitude.
          EXPECT_NEAR(ys[m * N + n], want, 1e-6 * K * mag / 16 + 1e-6)
              << name(t) << " K=" << K << " s=" << s << " m=" << m << " n=" << n;
        }
    }
  }
}

TEST_P(MatmulW16Test, EveryIsaGivesThePortableBits) {
  const DType t = GetParam();
  const int64_t K = 203, N = 29;  // 203 = 25 * 8 + 3: a tail on every row
  Graph g;
  g.declare_dim("s", 1, 6);
  Tensor x = g.tensor("x", {"s", K});
  Tensor w = g.tensor("w", {N, K}, t).persist();
  nn::linear(x, w.cast(DType::F32)).output("y");
  const DynMap dyn{{"s", 6}};
  testing::BufferMap in = opstest::random_inputs(g, dyn, 5, -3, 3);
  std::vector<uint8_t> portable;
  for (cpu::quant::QuantIsa isa : cpu::quant::available_isas()) {
    cpu::quant::ScopedQuantIsa forced(isa);  // the kernel picks its ISA when it is made
    cpu::CpuBackend cpu(2);
    LlirGraph p = choose_w16(g, cpu);
    ASSERT_EQ(opstest::count_op(p, "cpu.MatmulW16"), 1) << p.to_text();
    auto exe = testing::load_plan(cpu, p, {{{"s", 1}}, {{"s", 6}}});
    testing::BufferMap got = testing::run_executable(exe, g, in, dyn);
    if (isa == cpu::quant::QuantIsa::Portable)
      portable = got.at("y").bytes;
    else
      EXPECT_EQ(got.at("y").bytes, portable) << name(t) << " on " << cpu::quant::isa_name(isa);
  }
  ASSERT_FALSE(portable.empty());
}

TEST_P(MatmulW16Test, RowViewsReadTheSameRows) {
  const DType t = GetParam();
  const int64_t K = 40, N = 12;
  // y1 reads the even rows of w through a view; y2 reads a copy of them stored contiguously:
  // bitwise equal. y3 reads the first 5 rows of what y4 reads whole.
  Graph g;
  Tensor x = g.tensor("x", {3, K});
  Tensor w = g.tensor("w", {N, K}, t).persist();
  Tensor we = g.tensor("we", {N / 2, K}, t).persist();
  nn::linear(x, w.reshape({N / 2, 2, K}).slice(1, 0, 1).reshape({N / 2, K}).cast(DType::F32))
      .output("y1");
  nn::linear(x, we.cast(DType::F32)).output("y2");
  nn::linear(x, w.slice(0, 0, 5).cast(DType::F32)).output("y3");
  nn::linear(x, w.cast(DType::F32)).output("y4");
  cpu::CpuBackend cpu(2);
  LlirGraph p = choose_w16(g, cpu);
  ASSERT_EQ(opstest::count_op(p, "cpu.MatmulW16"), 4) << p.to_text();
  testing::BufferMap in = opstest::random_inputs(g, {}, 3);
  std::vector<uint8_t> even(static_cast<size_t>(2 * K * (N / 2)));
  for (int r = 0; r < N / 2; ++r)
    std::memcpy(even.data() + 2 * K * r, in.at("w").bytes.data() + 2 * K * 2 * r,
                static_cast<size_t>(2 * K));
  in["we"] = HostBuffer{t, even};
  auto exe = testing::load_plan(cpu, p, {{}});
  testing::BufferMap got = testing::run_executable(exe, g, in, {});
  EXPECT_EQ(got.at("y1").bytes, got.at("y2").bytes) << name(t);
  const auto* y3 = reinterpret_cast<const float*>(got.at("y3").bytes.data());
  const auto* y4 = reinterpret_cast<const float*>(got.at("y4").bytes.data());
  for (int m = 0; m < 3; ++m)
    for (int n = 0; n < 5; ++n)
      EXPECT_EQ(y3[m * 5 + n], y4[m * N + n]) << name(t) << " m=" << m << " n=" << n;
}

// The ops of the live e-nodes in the pruned e-graph of a linear layer over 16-bit weights with
// `rows` rows.
std::set<std::string> options_of(DType t, int64_t rows) {
  Graph g;
  Tensor x = g.tensor("x", {rows, 64});
  Tensor w = g.tensor("w", {48, 64}, t).persist();
  nn::linear(x, w.cast(DType::F32)).output("y");
  cpu::CpuBackend cpu(2);
  BuiltSpace b = build_search_space(g, cpu, {});
  std::set<std::string> ops;
  const EGraph& eg = b.space->egraph();
  for (ENodeId n = 0; n < eg.num_nodes(); ++n)
    if (!eg.is_removed(n)) ops.insert(std::string(eg.node(n).op->name));
  return ops;
}

TEST_P(MatmulW16Test, AFewRowsReadTheWeightAsStored) {
  const DType t = GetParam();
  const std::set<std::string> decode = options_of(t, 1);
  EXPECT_TRUE(decode.count("cpu.MatmulW16"));
  EXPECT_FALSE(decode.count("cpu.BlasMatmul")) << "a decode step would widen the whole weight";
  const std::set<std::string> prefill = options_of(t, 64);
  EXPECT_TRUE(prefill.count("cpu.MatmulW16"));
  EXPECT_TRUE(prefill.count("cpu.BlasMatmul")) << "the widened weight into sgemm stays";
}

// A 16-bit activation cast to f32 is never read as the weight (the matcher takes the first
// operand holding a 16-bit Cast: without the check the activation was the "weight" and the
// projection's real weight its "activation", widened whole every step).
TEST_P(MatmulW16Test, OnlyAWeightIsReadAsTheWeight) {
  const DType t = GetParam();
  Graph g;
  Tensor x = g.tensor("x", {1, 64}, t);
  Tensor w = g.tensor("w", {48, 64}, t).persist();
  nn::linear(x.cast(DType::F32), w.cast(DType::F32)).output("y");
  cpu::CpuBackend cpu(2);
  BuiltSpace b = build_search_space(g, cpu, {});
  const EGraph& eg = b.space->egraph();
  int found = 0;
  for (ENodeId n = 0; n < eg.num_nodes(); ++n) {
    if (eg.is_removed(n) || eg.node(n).op->name != std::string_view("cpu.MatmulW16")) continue;
    ++found;
    bool weight = false;
    for (ENodeId c : eg.nodes_of(eg.node(n).children[1]))
      weight = weight || (is_op(eg.node(c).op, OpKind::Input) && eg.attrs_of(c).label == "w");
    EXPECT_TRUE(weight) << name(t) << ": a MatmulW16 reads something other than w as its weight";
  }
  EXPECT_EQ(found, 1) << name(t);
}

INSTANTIATE_TEST_SUITE_P(Types, MatmulW16Test, ::testing::Values(DType::BF16, DType::F16),
                         [](const auto& info) { return std::string(name(info.param)); });

}  // namespace
}  // namespace luminal
