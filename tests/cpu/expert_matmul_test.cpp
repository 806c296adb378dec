// cpu.ExpertMatmul (compiler/expert_rule.hpp, cpu/expert_matmul.cpp) chosen out of the e-graph of
// nn::expert_linear and run on the CPU against the reference: odd sizes, one and several experts
// per token, repeated experts (prefill groups), an activation shared by a token's choices or one
// per choice, a whole MoE block driven by the router, 16-bit weights, block-quantized weights
// (within the 8-bit activation bound), out-of-range ids rejected, and the unfused Gather +
// matmul still offered beside it.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "luminal/core/blocks.hpp"
#include "luminal/nn/moe.hpp"
#include "ops_test_util.hpp"
#include "support/expect_error.hpp"
#include "support/quant_bound.hpp"

namespace luminal {
namespace {

constexpr int64_t E = 5, N = 7, D = 9;

LlirGraph choose_expert(const Graph& g, cpu::CpuBackend& cpu) {
  BuiltSpace b = build_search_space(g, cpu, {});
  return opstest::choose(b, opstest::prefer_op("cpu.ExpertMatmul"));
}

std::vector<DynMap> dims(std::initializer_list<int64_t> ss) {
  std::vector<DynMap> out;
  for (int64_t s : ss)
    out.push_back({{"s", s}});
  return out;
}

struct Case {
  int64_t k;
  bool shared;  // x [s, D] shared by the k choices, else [s, k, D]
};

class ExpertMatmulTest : public ::testing::TestWithParam<Case> {};

TEST_P(ExpertMatmulTest, MatchesTheReference) {
  const Case c = GetParam();
  Graph g;
  g.declare_dim("s", 1, 8);
  Tensor x = c.shared ? g.tensor("x", {"s", D}) : g.tensor("x", {"s", c.k, D});
  Tensor w = g.tensor("w", {E, N, D}).persist();
  Tensor ids = g.tensor("ids", {"s", c.k}, DType::I32);
  nn::expert_linear(x, w, ids).output("y");
  cpu::CpuBackend cpu(2);
  const LlirGraph p = choose_expert(g, cpu);
  ASSERT_EQ(opstest::count_op(p, "cpu.ExpertMatmul"), 1) << p.to_text();
  EXPECT_EQ(opstest::count_op(p, "Gather"), 0) << p.to_text();
  // ids in [0, E): s = 7 with k = 3 puts 21 rows on 5 experts (groups of several rows).
  for (int threads : {1, 2})
    opstest::check_program(g, p, dims({1, 2, 7, 8}), {1e-5, 1e-5},
                           "k=" + std::to_string(c.k) + (c.shared ? " shared" : " per choice"),
                           threads, 3, 0, E - 1);
}

INSTANTIATE_TEST_SUITE_P(Cases, ExpertMatmulTest,
                         ::testing::Values(Case{1, true}, Case{3, true}, Case{1, false},
                                           Case{3, false}),
                         [](const ::testing::TestParamInfo<Case>& i) {
                           return "k" + std::to_string(i.param.k) +
                                  (i.param.shared ? "_shared" : "_per_choice");
                         });

// The whole block as the decoder builds it: router softmax, top-2 of 6, gate and up in one
// expert matmul, SwiGLU, down, the weighted sum; both expert matmuls chosen.
TEST(ExpertMatmul, RouterDrivenMoeBlock) {
  constexpr int64_t experts = 6, hidden = 16, F = 5, K = 2;
  Graph g;
  g.declare_dim("s", 1, 12);
  Tensor h = g.tensor("h", {"s", hidden});
  Tensor router = g.tensor("router", {experts, hidden}).persist();
  Tensor gate_up = g.tensor("gate_up", {experts, 2 * F, hidden}).persist();
  Tensor down = g.tensor("down", {experts, hidden, F}).persist();
  const Tensor probs = h.matmul(router.transpose(0, 1)).softmax(1);
  const nn::TopK top = nn::router_topk(probs, K, true);
  const Tensor gu = nn::expert_linear(h, gate_up, top.ids);
  const Tensor act = gu.slice(2, 0, F).silu() * gu.slice(2, F, 2 * F);
  const Tensor y = nn::expert_linear(act, down, top.ids);
  (y * top.weights.reshape({"s", K, 1}).expand({"s", K, hidden})).sum(1).output("out");
  cpu::CpuBackend cpu(2);
  const LlirGraph p = choose_expert(g, cpu);
  ASSERT_EQ(opstest::count_op(p, "cpu.ExpertMatmul"), 2) << p.to_text();
  opstest::check_program(g, p, dims({1, 5, 12}), {1e-4, 1e-5}, "moe block", 2, 5, -1, 1);
}

TEST(ExpertMatmul, SixteenBitWeights) {
  for (DType t : {DType::BF16, DType::F16}) {
    Graph g;
    g.declare_dim("s", 1, 6);
    Tensor x = g.tensor("x", {"s", D}, t);
    Tensor w = g.tensor("w", {E, N, D}, t).persist();
    Tensor ids = g.tensor("ids", {"s", 2}, DType::I32);
    nn::expert_linear(x, w, ids).output("y");
    cpu::CpuBackend cpu(2);
    const LlirGraph p = choose_expert(g, cpu);
    ASSERT_EQ(opstest::count_op(p, "cpu.ExpertMatmul"), 1) << name(t) << "\n" << p.to_text();
    // The f32 sum rounds once to the dtype: at most one unit of the last place apart.
    opstest::check_program(g, p, dims({1, 6}), {1e-2, 1e-3}, std::string(name(t)), 2, 4, 0, E - 1);
  }
}

// Block-quantized experts: each output within the rounding bound of the product of the stored
// rows and the quantized activation (support/quant_bound.hpp, as cpu.QMatmul's test).
TEST(ExpertMatmul, BlockQuantizedWeights) {
  for (DType t : {DType::Q4_0, DType::Q8_0, DType::Q4_K, DType::Q6_K}) {
    const int64_t Dq = block_size(t) == 256 ? 256 : 64, K = 2;
    Graph g;
    g.declare_dim("s", 1, 8);
    Tensor x = g.tensor("x", {"s", Dq});
    Tensor w = g.tensor("w", {E, N, Dq}, t).persist();
    Tensor ids = g.tensor("ids", {"s", K}, DType::I32);
    nn::expert_linear(x, w.dequantize(), ids).output("y");
    cpu::CpuBackend cpu(2);
    const LlirGraph p = choose_expert(g, cpu);
    ASSERT_EQ(opstest::count_op(p, "cpu.ExpertMatmul"), 1) << name(t) << "\n" << p.to_text();
    EXPECT_EQ(opstest::count_op(p, "Dequantize"), 0) << p.to_text();
    auto exe = testing::load_plan(cpu, p, dims({1, 8}));
    const uint64_t rb = storage_bytes(t, Dq);
    for (int64_t s : {1, 8}) {
      const DynMap dyn{{"s", s}};
      testing::BufferMap in = opstest::random_inputs(g, dyn, 11 + s, -2, 2);
      in["ids"] = testing::random_buffer(DType::I32, s * K, 5 + s, 0, E - 1);
      const testing::BufferMap got = testing::run_executable(exe, g, in, dyn);
      const auto* xs = reinterpret_cast<const float*>(in.at("x").bytes.data());
      const auto* is = reinterpret_cast<const int32_t*>(in.at("ids").bytes.data());
      const auto* ys = reinterpret_cast<const float*>(got.at("y").bytes.data());
      for (int64_t r = 0; r < s * K; ++r)
        for (int64_t n = 0; n < N; ++n) {
          const uint8_t* wr = in.at("w").bytes.data() + (is[r] * N + n) * rb;
          const testing::QuantDotBound q = testing::quant_dot_bound(t, wr, xs + (r / K) * Dq, Dq);
          EXPECT_NEAR(ys[r * N + n], q.y_q, q.bound_q())
              << name(t) << " s=" << s << " row " << r << " n=" << n;
        }
    }
  }
}

// Many tasks on several threads from a plan's first run on (the quantized row pointers are set
// before the tasks start; they once were set by the first task to need them, racing the others).
TEST(ExpertMatmul, FirstRunOnManyThreads) {
  constexpr int64_t Eq = 64, Nq = 256, Dq = 32, K = 2;
  Graph g;
  g.declare_dim("s", 1, 8);
  Tensor x = g.tensor("x", {"s", Dq});
  Tensor w = g.tensor("w", {Eq, Nq, Dq}, DType::Q8_0).persist();
  Tensor ids = g.tensor("ids", {"s", K}, DType::I32);
  nn::expert_linear(x, w.dequantize(), ids).output("y");
  cpu::CpuBackend cpu(4);
  const LlirGraph p = choose_expert(g, cpu);
  ASSERT_EQ(opstest::count_op(p, "cpu.ExpertMatmul"), 1) << p.to_text();
  const DynMap dyn{{"s", 8}};
  testing::BufferMap in = opstest::random_inputs(g, dyn, 2, -2, 2);
  in["ids"] = testing::random_buffer(DType::I32, 8 * K, 9, 0, Eq - 1);
  std::vector<uint8_t> first;
  for (int i = 0; i < 50; ++i) {
    auto exe = testing::load_plan(cpu, p, {dyn});
    const testing::BufferMap got = testing::run_executable(exe, g, in, dyn);
    if (i == 0) first = got.at("y").bytes;
    EXPECT_EQ(got.at("y").bytes, first) << "run " << i;
  }
}

TEST(ExpertMatmul, OutOfRangeIdIsAnError) {
  Graph g;
  Tensor x = g.tensor("x", {2, D});
  Tensor w = g.tensor("w", {E, N, D}).persist();
  Tensor ids = g.tensor("ids", {2, 1}, DType::I32);
  nn::expert_linear(x, w, ids).output("y");
  cpu::CpuBackend cpu(1);
  const LlirGraph p = choose_expert(g, cpu);
  ASSERT_EQ(opstest::count_op(p, "cpu.ExpertMatmul"), 1) << p.to_text();
  auto exe = testing::load_plan(cpu, p, {{}});
  testing::BufferMap in = opstest::random_inputs(g, {}, 1);
  in["ids"] = HostBuffer{DType::I32, std::vector<uint8_t>(8, 0)};
  in["ids"].bytes[4] = static_cast<uint8_t>(E);  // row 1 names expert E
  testing::expect_error([&] { testing::run_executable(exe, g, in, {}); },
                        {"cpu.ExpertMatmul", "expert id 5", "row 1", "5 experts"});
}

// The unfused form (the gathered rows materialised, then a matmul) stays in the space where the
// row count is dynamic (prefill): the search times both.
TEST(ExpertMatmul, UnfusedFormStaysAnAlternative) {
  Graph g;
  g.declare_dim("s", 1, 4);
  Tensor x = g.tensor("x", {"s", D});
  Tensor w = g.tensor("w", {E, N, D}).persist();
  Tensor ids = g.tensor("ids", {"s", 2}, DType::I32);
  nn::expert_linear(x, w, ids).output("y");
  cpu::CpuBackend cpu(2);
  BuiltSpace b = build_search_space(g, cpu, {});
  const LlirGraph p = opstest::choose(b, [](const EGraph& eg, ENodeId n) -> double {
    return eg.node(n).op->name == "cpu.ExpertMatmul" ? -1 : 0;
  });
  EXPECT_EQ(opstest::count_op(p, "cpu.ExpertMatmul"), 0) << p.to_text();
  EXPECT_EQ(opstest::count_op(p, "Gather"), 1) << p.to_text();
  opstest::check_program(g, p, dims({1, 4}), {1e-5, 1e-5}, "unfused", 2, 3, 0, E - 1);
}

// Decode (a static count of a few rows): the kernel reads a subset of what the unfused form reads
// and dominates it, so every program uses it.
TEST(ExpertMatmul, DominatesInDecode) {
  Graph g;
  Tensor x = g.tensor("x", {1, D});
  Tensor w = g.tensor("w", {E, N, D}).persist();
  Tensor ids = g.tensor("ids", {1, 3}, DType::I32);
  nn::expert_linear(x, w, ids).output("y");
  cpu::CpuBackend cpu(2);
  BuiltSpace b = build_search_space(g, cpu, {});
  const LlirGraph p = opstest::choose(b, [](const EGraph& eg, ENodeId n) -> double {
    return eg.node(n).op->name == "cpu.ExpertMatmul" ? -1 : 0;
  });
  EXPECT_EQ(opstest::count_op(p, "cpu.ExpertMatmul"), 1) << p.to_text();
  EXPECT_EQ(opstest::count_op(p, "Gather"), 0) << p.to_text();
}

}  // namespace
}  // namespace luminal
