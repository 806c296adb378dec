// The short-sum rule (compiler/short_sum_rule.hpp) on the CPU: a sum over an axis of two taken as
// its adds, fused into one cpu.Fused with the products, gives the reference's bits in f32, bf16
// and f16, signed zeros included (a -0 + -0 sum is +0, as the reference's accumulator gives it):
//   - rope (nn::apply_rope) at positions from 0 (sin 0 makes products of -0 and +0);
//   - a sum of two products whose terms are -0 and -0, and one of x itself (no Mul).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "luminal/nn/rope.hpp"
#include "ops_test_util.hpp"

namespace luminal {
namespace {

// Programs that take the adds (no SumReduce or matmul left), their regions as large as can be.
LlirGraph adds_program(const Graph& g, cpu::CpuBackend& cpu) {
  BuiltSpace b = build_search_space(g, cpu, {});
  return opstest::choose(b, [](const EGraph& eg, ENodeId n) -> double {
    const std::string_view op = eg.node(n).op->name;
    if (op == "SumReduce" || op == "cpu.Matmul" || op == "cpu.BlasMatmul") return -1;
    return opstest::prefer_op("cpu.Fused")(eg, n);
  });
}

HostBuffer values(DType t, const std::vector<double>& v) {
  return to_host_buffer(v.data(), v.size(), t, "x");
}

void expect_reference_bits(const Graph& g, const LlirGraph& p, const testing::BufferMap& in,
                           const DynMap& dyn, const std::string& what) {
  cpu::CpuBackend cpu(2);
  auto exe = testing::load_plan(cpu, p, {dyn});
  testing::BufferMap want = opstest::run_reference(g, in, dyn);
  testing::BufferMap got = testing::run_executable(exe, g, in, dyn);
  for (const auto& [label, buf] : want)
    opstest::expect_same(got.at(label), buf, opstest::kExact, what + " " + label);
}

class ShortSum : public ::testing::TestWithParam<DType> {};

TEST_P(ShortSum, RopeThroughTheAddsIsTheReference) {
  const DType t = GetParam();
  Graph g;
  g.declare_dim("s", 1, 8);
  Tensor x = g.tensor("x", {"s", 3, 16}, t);
  Tensor pos = g.tensor("pos", {"s"}, DType::I32);
  Tensor inv = g.tensor("inv_freq", {8});
  nn::apply_rope(x, pos, inv).output("y");
  cpu::CpuBackend cpu(2);
  LlirGraph p = adds_program(g, cpu);
  EXPECT_EQ(opstest::count_op(p, "SumReduce"), 0) << p.to_text();
  EXPECT_EQ(opstest::count_op(p, "cpu.Matmul"), 0) << p.to_text();
  EXPECT_GE(opstest::count_op(p, "cpu.Fused"), 1) << p.to_text();
  for (int64_t s : {1, 5, 8}) {
    testing::BufferMap in = opstest::random_inputs(g, {{"s", s}}, 3 + s, -4, 4);
    // Signed zeros in every head: position 0 rotates by sin 0 = 0.
    std::vector<double> xv;
    for (int64_t i = 0; i < s * 3 * 16; ++i)
      xv.push_back(i % 5 == 0 ? -0.0 : i % 5 == 1 ? 0.0 : i % 5 == 2 ? -1.25 : 0.5 * (i % 7) - 1);
    in["x"] = values(t, xv);
    std::vector<int32_t> pv;
    for (int64_t i = 0; i < s; ++i)
      pv.push_back(static_cast<int32_t>(i * 3));
    in["pos"] = to_host_buffer(pv.data(), pv.size(), DType::I32, "pos");
    std::vector<float> iv;
    for (int i = 0; i < 8; ++i)
      iv.push_back(std::pow(10000.0f, -static_cast<float>(i) / 8));
    in["inv_freq"] = to_host_buffer(iv.data(), iv.size(), DType::F32, "inv_freq");
    expect_reference_bits(g, p, in, {{"s", s}}, std::string(name(t)) + " s=" + std::to_string(s));
  }
}

TEST_P(ShortSum, NegativeZeroTermsSumToPositiveZero) {
  const DType t = GetParam();
  Graph g;
  Tensor a = g.tensor("a", {3, 2, 4}, t);
  Tensor w = g.tensor("w", {3, 2, 4}, t);
  (a * w).sum(1).output("products");
  a.sum(1).output("plain");
  cpu::CpuBackend cpu(2);
  LlirGraph p = adds_program(g, cpu);
  EXPECT_EQ(opstest::count_op(p, "SumReduce"), 0) << p.to_text();
  // Rows of (a, w): -0 * 1 and -0 * 1 (the sum is +0), -1 * 0 and 0 * -1, 1.5 * 2 and -3 * 1,
  // -0 * -0 and 2 * 0.
  const std::vector<double> av = {-0.0, -1.0, 1.5, -0.0, -0.0, 0.0,  -3.0, 2.0,
                                  -0.0, 0.0,  1.0, -0.0, -0.0, -0.0, 4.0,  -0.0,
                                  1.0,  -2.0, 0.5, 3.0,  -1.0, 2.0,  -0.5, -0.0};
  const std::vector<double> wv = {1.0, 0.0, 2.0, -0.0, 1.0, -1.0, 1.0, 0.0, 1, 1, 1, 1,
                                  1,   1,   1,   1,    1,   1,    1,   1,   1, 1, 1, 1};
  testing::BufferMap in{{"a", values(t, av)}, {"w", values(t, wv)}};
  expect_reference_bits(g, p, in, {}, std::string(name(t)));
  // The reference's answer for the first column is +0 (not -0) in both outputs.
  testing::BufferMap want = opstest::run_reference(g, in, {});
  for (const char* o : {"products", "plain"}) {
    std::vector<double> y = from_host_buffer<double>(want.at(o), o, "double");
    EXPECT_FALSE(std::signbit(y[0])) << o;
    EXPECT_EQ(y[0], 0.0) << o;
  }
}

INSTANTIATE_TEST_SUITE_P(Floats, ShortSum, ::testing::Values(DType::F32, DType::BF16, DType::F16),
                         [](const ::testing::TestParamInfo<DType>& i) {
                           return std::string(name(i.param));
                         });

}  // namespace
}  // namespace luminal
