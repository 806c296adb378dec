// cuda.FusedSum / cuda.FusedMax (luminal/cuda/fused_reduce.cpp): a reduction of an elementwise
// region as one kernel.
//   Without a GPU (NVRTC only): offered for an integer count of comparisons, a float sum over the
//   first axis, a max over the last, and a MoE router's ranks; not for a product's sum (the
//   matmul ops take it), nor where the reduction reads the region through a permutation, nor
//   with LUMINAL_CUDA_FUSED_REDUCE=0; the forced kernels compile for sm_90.
//   On the GPU: the forced programs against the reference runtime (integers exactly, floats
//   within the order of the double additions).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "cuda/cuda_test_util.hpp"
#include "luminal/luminal.hpp"
#include "luminal/nn/moe.hpp"
#include "support/llir_direct.hpp"

namespace luminal {
namespace {

bool is_fused_reduce(std::string_view op) { return op == "cuda.FusedSum" || op == "cuda.FusedMax"; }

struct Case {
  const char* name;
  Graph g;
};

std::vector<Case> cases() {
  std::vector<Case> c;
  {
    Graph g;  // how many of b's values each row of a is below: an i32 count
    Tensor a = g.tensor("a", {6, 40}), b = g.tensor("b", {6, 40});
    a.lt(b).cast(DType::I32).sum(1).output("y");
    c.push_back({"an integer count of comparisons", g});
  }
  {
    Graph g;  // a float sum over the first axis (a thread an output)
    Tensor x = g.tensor("x", {33, 7}), y = g.tensor("y0", {33, 7});
    (x * g.constant(2.0) + y.exp()).sum(0).output("y");
    c.push_back({"a sum over the first axis", g});
  }
  {
    Graph g;  // a max over the last axis (a warp an output)
    Tensor x = g.tensor("x", {5, 300}, DType::BF16);
    (x.abs() + g.constant(1.0, DType::BF16)).max(1).output("y");
    c.push_back({"a bf16 max over the last axis", g});
  }
  return c;
}

TEST(FusedReduceHost, OfferedForRegionsReducedToASmallerShapeAndCompile) {
  LUMINAL_REQUIRE_NVRTC();
  testing::CudaRulesOnly rules;
  std::vector<std::string> sources, whats;
  for (const Case& c : cases()) {
    auto [l, n] = testing::prefer_ops(c.g, rules, is_fused_reduce);
    EXPECT_EQ(n, 1) << c.name << ": " << l.op_mix_string();
    EXPECT_EQ(testing::count_op(l, "cuda.Fused"), 0) << c.name << ": " << l.op_mix_string();
    testing::add_kernels(l, testing::spec_of({}), sources, whats);
  }
  {
    // A MoE router's top-k by ranks: the rank, the ids and the weights each one kernel.
    Graph g;
    nn::router_topk(g.tensor("probs", {1, 128}), 8, true, nn::TopKForm::Ranks).ids.output("ids");
    auto [l, n] = testing::prefer_ops(g, rules, is_fused_reduce);
    EXPECT_GE(n, 2) << l.op_mix_string();
    testing::add_kernels(l, testing::spec_of({}), sources, whats);
  }
  testing::expect_compiles(sources, whats);
}

TEST(FusedReduceHost, NotOfferedForAProductThroughAPermutationOrSwitchedOff) {
  LUMINAL_REQUIRE_NVRTC();
  {
    ::setenv("LUMINAL_CUDA_FUSED_REDUCE", "0", 1);
    testing::CudaRulesOnly off;
    const Graph g = cases()[0].g;
    EXPECT_EQ(testing::prefer_ops(g, off, is_fused_reduce).second, 0);
    ::unsetenv("LUMINAL_CUDA_FUSED_REDUCE");
  }
  testing::CudaRulesOnly rules;
  {
    Graph g;  // a matmul's reduction
    (g.tensor("a", {4, 64}) * g.tensor("b", {4, 64})).sum(1).output("y");
    EXPECT_EQ(testing::prefer_ops(g, rules, is_fused_reduce).second, 0);
  }
  {
    Graph g;  // the region's values read transposed
    (g.tensor("a", {8, 16}).exp() + g.constant(1.0)).transpose(0, 1).sum(1).output("y");
    EXPECT_EQ(testing::prefer_ops(g, rules, is_fused_reduce).second, 0);
  }
}

HostBuffer values(DType t, int64_t count, uint32_t seed) {
  std::vector<double> v(static_cast<size_t>(count));
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = static_cast<double>(static_cast<int>((i * 2654435761u + seed) >> 9 & 0xff) - 128) / 37;
  return to_host_buffer(v.data(), v.size(), t, "values");
}

TEST(CudaFusedReduce, MatchesTheReference) {
  LUMINAL_REQUIRE_GPU();
  for (const Case& c : cases()) {
    auto [l, n] = testing::prefer_ops(c.g, testing::gpu(), is_fused_reduce);
    ASSERT_EQ(n, 1) << c.name << ": " << l.op_mix_string();
    testing::BufferMap in;
    uint32_t seed = 1;
    for (const Node& node : c.g.nodes())
      if (node.op == OpKind::Input)
        in.emplace(node.label, values(node.dtype, numel(node.shape).as_const(), ++seed));
    testing::LoadedPlan lp = testing::load_plan(testing::gpu(), l);
    const HostBuffer got = testing::run_plan(lp, in, {}).outputs.at("y");
    ReferenceRuntime ref(c.g);
    for (const auto& [label, buf] : in)
      ref.set_bytes(label, buf.bytes.data(), buf.bytes.size());
    ref.execute({});
    const Tensor y(c.g, c.g.find("y"), {}, got.dtype);
    const std::vector<double> want = ref.get<double>(y);
    const std::vector<double> have = from_host_buffer<double>(got, "y", "double");
    ASSERT_EQ(have.size(), want.size()) << c.name;
    for (size_t i = 0; i < want.size(); ++i)
      EXPECT_NEAR(have[i], want[i], 1e-6 * (1 + std::abs(want[i]))) << c.name << " element " << i;
  }
}

}  // namespace
}  // namespace luminal
