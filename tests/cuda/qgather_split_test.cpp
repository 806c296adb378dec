// cuda.QGatherS (dequantize.cpp, LUMINAL_CUDA_QGATHER_SPLIT=1): an embedding's rows gathered
// from its table in the split layout (cuda.QRepack), so a tied embedding and its LM head's
// cuda.QGemvQ8S can share the folded copy.
//   Host (CI): offered only with the switch, for the legacy types (not the K types), over the
//     QRepack of the whole table; every type's kernel compiles for sm_90.
//   GPU: the rows bitwise blocks::dequantize's (as cuda.QGather's), for every legacy type, and
//     an index outside the table writes 0 and reports it.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cuda/cuda_test_util.hpp"
#include "cuda/quant_test_util.hpp"
#include "luminal/luminal.hpp"
#include "luminal/nn/linear.hpp"
#include "support/env_scope.hpp"
#include "support/llir_direct.hpp"

namespace luminal {
namespace {

using testing::decode;
using testing::random_blocks;

const DType kLegacy[] = {DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::Q8_0};
constexpr int64_t kVocab = 41, kHidden = 96, kIds = 7;

Graph embedding_graph(DType t, int64_t hidden = kHidden) {
  Graph g;
  nn::embedding(g.tensor("embed", {kVocab, hidden}, t).dequantize(),
                g.tensor("ids", {Expr(kIds)}, DType::I32))
      .output("rows");
  return g;
}

bool gather_s(std::string_view op) { return op == "cuda.QGatherS" || op == "cuda.QRepack"; }

TEST(CudaQGatherSplitRules, OfferedWithTheSwitchForTheLegacyTypes) {
  for (const char* on : {"1", static_cast<const char*>(nullptr)}) {
    const testing::EnvScope env("LUMINAL_CUDA_QGATHER_SPLIT", on);
    testing::CudaRulesOnly rules;
    std::vector<std::string> sources, whats;
    for (DType t : kLegacy) {
      const Graph g = embedding_graph(t);
      auto [l, hits] = testing::prefer_ops(g, rules, gather_s);
      const std::string mix = l.op_mix_string();
      EXPECT_EQ(testing::count_op(l, "cuda.QGatherS"), on ? 1 : 0) << name(t) << ": " << mix;
      if (!on) continue;
      EXPECT_EQ(testing::count_op(l, "cuda.QRepack"), 1) << name(t) << ": " << mix;
      testing::add_kernels(l, testing::spec_of(g.dim_facts()), sources, whats);
    }
    // Not for a K type (256-value blocks).
    auto [lk, hk] = testing::prefer_ops(embedding_graph(DType::Q6_K, 256), rules, gather_s);
    EXPECT_EQ(testing::count_op(lk, "cuda.QGatherS"), 0) << lk.op_mix_string();
    if (on) {
      LUMINAL_REQUIRE_NVRTC();
      testing::expect_compiles(sources, whats);
    }
  }
}

TEST(CudaQGatherSplit, RowsAreBitExact) {
  LUMINAL_REQUIRE_GPU();
  const testing::EnvScope env("LUMINAL_CUDA_QGATHER_SPLIT", "1");
  for (DType t : kLegacy) {
    const Graph g = embedding_graph(t);
    auto [l, n] = testing::prefer_ops(g, testing::gpu(), gather_s);
    ASSERT_EQ(testing::count_op(l, "cuda.QGatherS"), 1) << name(t) << " " << l.op_mix_string();
    const HostBuffer wb = random_blocks(t, kVocab * kHidden, 51);
    const std::vector<int32_t> ids = {0, 40, 7, 7, 13, 39, 1};
    const std::vector<float> got = testing::run_gather(testing::gpu(), l, wb, ids);
    const std::vector<float> want = decode(wb);
    ASSERT_EQ(got.size(), static_cast<size_t>(kIds * kHidden));
    EXPECT_EQ(testing::gathered_mismatches(got, want, ids, kHidden), 0) << name(t);
  }
}

}  // namespace
}  // namespace luminal
