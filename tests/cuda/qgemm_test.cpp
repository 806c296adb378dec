// cuda.QGemmQ8 (luminal/cuda/qgemm.cpp), the prefill linear layer over GGUF blocks on the int8
// tensor cores:
//   - CI (no GPU): the rule offers it for more than 8 activation rows and for a dynamic count,
//     not for 8 or fewer (the GEMVs' case), not with LUMINAL_CUDA_QGEMM=0 or
//     LUMINAL_CUDA_QGEMV=f32;
//     the fewest-kernels seed of a dynamic-row layer takes it; NVRTC compiles its kernels for
//     sm_90;
//   - the split form (cuda.QGemmQ8S over cuda.QRepack's layout) unless
//     LUMINAL_CUDA_QGEMM_SPLIT=0, taken by the seed where the repack folds; the K types (q4_k,
//     q5_k, q6_k over Q8_K rows) unless LUMINAL_CUDA_QGEMM_K=0, compiled for sm_90;
//   - GPU: every output within testing::quant_dot_bound (the activation's 8-bit rounding, then f32
//     rounding at the kernel's depth) for q4_0, q4_1, q5_0, q5_1 and q8_0, row counts that are
//     not multiples of 16 or 32, weight rows that are not multiples of 8, k not a multiple of 256,
//     and a dynamic row count run at two lengths; the same for the split form and the K types.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <string>
#include <vector>

#include "cuda/cuda_test_util.hpp"
#include "cuda/quant_test_util.hpp"
#include "luminal/compiler/build_space.hpp"
#include "luminal/cuda/nvrtc.hpp"
#include "luminal/luminal.hpp"
#include "luminal/models/decoder.hpp"
#include "luminal/models/synthetic.hpp"
#include "luminal/nn/linear.hpp"
#include "support/env_scope.hpp"
#include "support/llir_direct.hpp"

namespace luminal {
namespace {

using testing::count_op;

constexpr DType kTypes[] = {DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::Q8_0};

bool qgemm_ops(std::string_view op) { return op == "cuda.QGemmQ8" || op == "cuda.QuantizeQ8"; }
bool split_ops(std::string_view op) {
  return op == "cuda.QGemmQ8S" || op == "cuda.QuantizeQ8" || op == "cuda.QRepack";
}

constexpr DType kKTypes[] = {DType::Q4_K, DType::Q5_K, DType::Q6_K};

using testing::quant_linear_graph;

TEST(CudaQGemmRules, OfferedForPrefillRowsOnly) {
  testing::CudaRulesOnly rules;
  for (DType t : kTypes)
    for (int64_t m : {1, 8, 9, 40, 0}) {
      auto [l, n] = testing::prefer_ops(quant_linear_graph(t, m, 40, 128), rules, qgemm_ops);
      EXPECT_EQ(count_op(l, "cuda.QGemmQ8"), m == 0 || m > 8 ? 1 : 0)
          << name(t) << " m " << m << ": " << l.op_mix_string();
    }
  {
    testing::EnvScope off_env("LUMINAL_CUDA_QGEMM", "0");
    testing::CudaRulesOnly off;
    auto [lo, no] =
        testing::prefer_ops(quant_linear_graph(DType::Q4_0, 40, 40, 128), off, qgemm_ops);
    EXPECT_EQ(count_op(lo, "cuda.QGemmQ8"), 0) << lo.op_mix_string();
  }
  {
    // Only the f32 forms of the quantized matmuls (the activation never rounded to 8 bits).
    testing::EnvScope f32_env("LUMINAL_CUDA_QGEMV", "f32");
    testing::CudaRulesOnly f32_forms;
    auto [lf, nf] =
        testing::prefer_ops(quant_linear_graph(DType::Q4_0, 40, 40, 128), f32_forms, qgemm_ops);
    EXPECT_EQ(count_op(lf, "cuda.QGemmQ8"), 0) << lf.op_mix_string();
  }
}

// The split form: offered for the types with a split layout unless LUMINAL_CUDA_QGEMM_SPLIT=0;
// with load-time folding the seed takes it over the GGUF-layout form.
TEST(CudaQGemmRules, SplitFormOfferedUnlessSwitchedOff) {
  for (DType t : kTypes) {
    {
      testing::EnvScope off("LUMINAL_CUDA_QGEMM_SPLIT", "0");
      testing::CudaRulesOnly rules;
      auto [l, n] = testing::prefer_ops(quant_linear_graph(t, 40, 40, 128), rules, split_ops);
      EXPECT_EQ(count_op(l, "cuda.QGemmQ8S"), 0) << name(t) << " " << l.op_mix_string();
    }
    testing::CudaRulesOnly split_rules;
    auto [ls, ns] = testing::prefer_ops(quant_linear_graph(t, 40, 40, 128), split_rules, split_ops);
    EXPECT_EQ(count_op(ls, "cuda.QGemmQ8S"), 1) << name(t) << " " << ls.op_mix_string();
    EXPECT_EQ(count_op(ls, "cuda.QRepack"), 1) << name(t) << " " << ls.op_mix_string();
  }
  // With load-time folding the seed reads the repacked weight as a folded input (the bf16
  // forms, which the seeds take over these, left out).
  testing::EnvScope no_bf16("LUMINAL_CUDA_QGEMM_BF16", "0");
  testing::CudaRulesOnly rules;
  Graph g;
  Tensor x = g.tensor("x", {Expr::var("s"), Expr(4096)});
  g.declare_dim("s", 2, 128);
  nn::linear(x, g.tensor("w", {Expr(256), Expr(4096)}, DType::Q4_0).persist().dequantize())
      .output("y");
  FoldOptions fo;
  fo.on = true;
  BuiltSpace b = build_search_space(g, rules, g.dim_facts(), {}, fo);
  const LlirGraph l = to_llir(*b.space, b.space->fewest_kernels_genome());
  EXPECT_EQ(count_op(l, "cuda.QGemmQ8S"), 1) << l.op_mix_string();
  EXPECT_EQ(count_op(l, "cuda.QRepack"), 0) << l.op_mix_string();
  EXPECT_EQ(b.folds.leaves.size(), 1u);
}

// The K types: offered unless LUMINAL_CUDA_QGEMM_K=0 (Q8_K activation rows), and their
// kernels compile for sm_90 (Q6_K's two 16-value scales a unit as two k16 products).
TEST(CudaQGemmRules, KTypesOfferedUnlessSwitchedOffAndCompile) {
  LUMINAL_REQUIRE_NVRTC();
  std::vector<std::string> sources;
  for (DType t : kKTypes) {
    {
      testing::EnvScope off("LUMINAL_CUDA_QGEMM_K", "0");
      testing::CudaRulesOnly rules;
      auto [l, n] = testing::prefer_ops(quant_linear_graph(t, 40, 40, 512), rules, qgemm_ops);
      EXPECT_EQ(count_op(l, "cuda.QGemmQ8"), 0) << name(t) << " " << l.op_mix_string();
    }
    testing::CudaRulesOnly rules;
    for (int64_t m : {40, 0}) {
      const Graph g = quant_linear_graph(t, m, 37, 512);
      auto [l, n] = testing::prefer_ops(g, rules, qgemm_ops);
      ASSERT_EQ(count_op(l, "cuda.QGemmQ8"), 1) << name(t) << " " << l.op_mix_string();
      for (const LlirNode& node : l.nodes) {
        if (node.op->name == std::string_view("cuda.QGemmQ8")) {
          EXPECT_EQ(node.input_dtypes[0], DType::Q8_K) << name(t);
        }
      }
      for (cuda::GeneratedKernel& k : cuda::generate_kernels(l, testing::spec_of(g.dim_facts())))
        sources.push_back(k.source);
    }
  }
  testing::expect_compiles(sources, "a K-type cuda.QGemmQ8 kernel");
}

// (the bf16 form, which the seeds take over this one, left out: qgemm_bf16_test.cpp)
TEST(CudaQGemmRules, TheSeedTakesItForADynamicRowCount) {
  testing::EnvScope no_bf16("LUMINAL_CUDA_QGEMM_BF16", "0");
  const LlirGraph l = testing::cuda_seed_program(quant_linear_graph(DType::Q4_0, 0, 4096, 4096));
  EXPECT_EQ(count_op(l, "cuda.QGemmQ8"), 1) << l.op_mix_string();
  EXPECT_EQ(count_op(l, "cuda.QuantizeQ8"), 1) << l.op_mix_string();
  EXPECT_EQ(count_op(l, "Dequantize"), 0) << l.op_mix_string();
}

// A 2-layer Llama prefill step (s in [2, 128]) with q4_0 projections: the seed reads every
// projection's blocks with cuda.QGemmQ8 (no weight widened to f32 in the step).
TEST(CudaQGemmRules, TheSeedOfAQuantizedPrefillTakesItForEveryProjection) {
  testing::EnvScope no_bf16("LUMINAL_CUDA_QGEMM_BF16", "0");
  const auto cfg = models::llama_config(
      {.layers = 2, .hidden = 576, .ffn = 1536, .heads = 9, .kv_heads = 3, .vocab = 1000});
  models::DecoderShape shape{.slots = 256, .max_step = 128};
  for (int i = 0; i < 2; ++i)
    for (const char* w : {"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj",
                          "self_attn.o_proj", "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj"})
      shape.block_weights["model.layers." + std::to_string(i) + "." + w + ".weight"] = DType::Q4_0;
  Graph g = models::build_decoder(cfg, shape).graph;
  g.declare_dim("s", 2, 128);
  const LlirGraph l = testing::cuda_seed_program(g);
  EXPECT_EQ(count_op(l, "cuda.QGemmQ8"), 14) << l.op_mix_string();
  EXPECT_EQ(count_op(l, "Dequantize"), 0) << l.op_mix_string();
}

TEST(CudaQGemmRules, KernelsCompileForSm90) {
  LUMINAL_REQUIRE_NVRTC();
  testing::CudaRulesOnly rules;
  std::vector<std::string> sources;
  for (DType t : kTypes)
    for (int64_t m : {40, 0}) {
      const Graph g = quant_linear_graph(t, m, 37, 96);
      auto [l, n] = testing::prefer_ops(g, rules, qgemm_ops);
      ASSERT_EQ(count_op(l, "cuda.QGemmQ8"), 1) << name(t) << " " << l.op_mix_string();
      for (cuda::GeneratedKernel& k : cuda::generate_kernels(l, testing::spec_of(g.dim_facts())))
        sources.push_back(k.source);
      testing::CudaRulesOnly split_rules;
      auto [ls, ns] = testing::prefer_ops(g, split_rules, split_ops);
      ASSERT_EQ(count_op(ls, "cuda.QGemmQ8S"), 1) << name(t) << " " << ls.op_mix_string();
      for (cuda::GeneratedKernel& k : cuda::generate_kernels(ls, testing::spec_of(g.dim_facts())))
        sources.push_back(k.source);
    }
  testing::expect_compiles(sources, "a cuda.QGemmQ8 kernel");
}

// ---------------------------------------------------------------- GPU

/// Runs x [m, K] @ W^T (W random blocks of t, n rows) forced to cuda.QGemmQ8 and checks every
/// output within quant_dot_bound at the kernel's depth (two fused multiply-adds a block, then
/// up to 8 slices added); m 0
/// runs the dynamic-row program at each of `lengths`. Returns the outputs checked.
int64_t check_qgemm(DType t, int64_t m, int64_t n, int64_t K, std::vector<int64_t> lengths,
                    uint64_t seed, bool split = false) {
  const Graph g = quant_linear_graph(t, m, n, K);
  const char* op = split ? "cuda.QGemmQ8S" : "cuda.QGemmQ8";
  auto [l, count] = testing::prefer_ops(g, testing::gpu(), split ? split_ops : qgemm_ops);
  const std::string at = std::string(name(t)) + " m " + std::to_string(m) + " n " +
                         std::to_string(n) + " k " + std::to_string(K) + ": ";
  EXPECT_EQ(count_op(l, op), 1) << at << l.op_mix_string();
  if (count_op(l, op) != 1) return 0;
  if (m > 0) lengths = {m};
  std::vector<DynMap> dyns;
  for (int64_t s : lengths)
    dyns.push_back(m > 0 ? DynMap{} : DynMap{{"s", s}});
  testing::LoadedPlan lp = testing::load_plan(testing::gpu(), l, dyns);
  const HostBuffer wb = testing::random_blocks(t, n * K, seed);
  const int64_t row_bytes = static_cast<int64_t>(storage_bytes(t, K));
  const int64_t depth = 2 * (K / 32) + 8;
  int64_t checked = 0;
  for (size_t li = 0; li < lengths.size(); ++li) {
    const int64_t rows = lengths[li];
    const std::vector<float> xs = testing::random_floats(rows * K, seed + 100 + li);
    const std::vector<float> got =
        testing::floats(testing::run_plan(lp, {{"x", testing::f32_buffer(xs)}, {"w", wb}}, dyns[li])
                            .outputs.at("y"));
    EXPECT_EQ(got.size(), static_cast<size_t>(rows * n)) << at;
    if (got.size() != static_cast<size_t>(rows * n)) continue;
    int bad = 0;
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < n; ++j) {
        const testing::QuantDotBound b =
            testing::quant_dot_bound(t, wb.bytes.data() + j * row_bytes, xs.data() + i * K, K);
        const double tol = b.bound_q_at_depth(depth);
        const double y = got[static_cast<size_t>(i * n + j)];
        if (!(std::fabs(y - b.y_q) <= tol)) {
          if (bad < 3)
            ADD_FAILURE() << at << "rows " << rows << " y[" << i << "," << j << "] = " << y
                          << ", want " << b.y_q << " +- " << tol;
          ++bad;
        }
        ++checked;
      }
    EXPECT_EQ(bad, 0) << at << "rows " << rows;
  }
  return checked;
}

TEST(CudaQGemm, EveryTypeWithinTheBound) {
  LUMINAL_REQUIRE_GPU();
  int64_t checked = 0;
  uint64_t seed = 500;
  for (DType t : kTypes)
    for (int64_t K : {96, 576, 4128})
      for (int64_t m : {9, 40, 100})
        checked += check_qgemm(t, m, 37 + 2 * m, K, {}, seed += 10);
  EXPECT_GT(checked, 100000);
}

// The K types: every output within the bound, fixed and dynamic rows.
TEST(CudaQGemm, KTypesWithinTheBound) {
  LUMINAL_REQUIRE_GPU();
  int64_t checked = 0;
  uint64_t seed = 800;
  for (DType t : kKTypes)
    for (int64_t K : {256, 4096}) {
      checked += check_qgemm(t, 40, 117, K, {}, seed += 10);
      checked += check_qgemm(t, 0, 64, K, {9, 100}, seed += 10);
    }
  EXPECT_GT(checked, 30000);
}

// The split form (its QRepack run in the plan): every type, fixed and dynamic rows.
TEST(CudaQGemm, SplitLayoutWithinTheBound) {
  LUMINAL_REQUIRE_GPU();
  int64_t checked = 0;
  uint64_t seed = 700;
  for (DType t : kTypes)
    for (int64_t K : {96, 4128}) {
      checked += check_qgemm(t, 40, 117, K, {}, seed += 10, true);
      checked += check_qgemm(t, 0, 64, K, {9, 100}, seed += 10, true);
    }
  EXPECT_GT(checked, 50000);
}

TEST(CudaQGemm, DynamicRowCountAtTwoLengths) {
  LUMINAL_REQUIRE_GPU();
  int64_t checked = 0;
  for (DType t : {DType::Q4_0, DType::Q4_1})
    checked += check_qgemm(t, 0, 200, 576, {77, 128}, 900);
  EXPECT_EQ(checked, 2 * 200 * (77 + 128));
}

}  // namespace
}  // namespace luminal
