// GPU suite (skips without a GPU): the equivalence fuzz on the CUDA backend. For the random graphs
// and the model blocks of the compiler tests, many distinct programs of the CUDA search space,
// each loaded and executed on the GPU, must match the ReferenceRuntime at several dims.
//
// The quantized block runs every weight type with s dynamic and with 1 and 5 constant rows; the
// expert graphs put one nn::expert_linear in a random graph; the paired blocks draw the paired
// gate/up GEMVs (opt-in forms, switched on there).
//
// Environment: LUMINAL_CUDA_FUZZ_SEEDS (random graphs, default 32), LUMINAL_FUZZ_PROGRAMS
// (programs per random graph, default 50), LUMINAL_FUZZ_VERBOSE=1 (a line per graph).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>

#include "cuda/cuda_test_util.hpp"
#include "luminal/nn/linear.hpp"
#include "support/env_scope.hpp"
#include "support/model_blocks.hpp"

namespace luminal {
namespace {

using namespace testing;

// exp2f, log2f and sinf are within 2 ulp of glibc's, not bit-identical; sums run in another order.
constexpr double kTolScale = 4;

CheckOptions on_gpu(CheckOptions o) {
  o.backend = &gpu();
  o.label = "cuda";
  o.multithread_every = 0;
  o.tol_scale = kTolScale;
  return o;
}

TEST(CudaFuzz, CatchesWrongPrograms) {
  LUMINAL_REQUIRE_GPU();
  FuzzGraph oracle = sentinel_graph(false);
  FuzzGraph wrong = sentinel_graph(true);
  CheckOptions o = on_gpu({});
  o.programs = 10;
  o.compiled = &wrong.graph;
  CheckResult r = run_check(oracle, o);
  ASSERT_TRUE(r.errors.empty()) << r.errors[0];
  ASSERT_GT(r.programs, 1);
  EXPECT_EQ(r.failures.size(), static_cast<size_t>(r.programs));
  o.compiled = nullptr;
  CheckResult ok = run_check(oracle, o);
  EXPECT_TRUE(ok.errors.empty() && ok.failures.empty())
      << (ok.errors.empty() ? ok.failures[0] : ok.errors[0]);
}

TEST(CudaFuzz, SwiGluMlpF32) {
  LUMINAL_REQUIRE_GPU();
  check_graph(swiglu_block(DType::F32), on_gpu(model_options()));
}
TEST(CudaFuzz, SwiGluMlpF16) {
  LUMINAL_REQUIRE_GPU();
  check_graph(swiglu_block(DType::F16), on_gpu(model_options()));
}
TEST(CudaFuzz, RmsNormProjection) {
  LUMINAL_REQUIRE_GPU();
  check_graph(rmsnorm_block(), on_gpu(model_options()));
}
TEST(CudaFuzz, GqaAttentionKvCache) {
  LUMINAL_REQUIRE_GPU();
  check_graph(attention_block(false), on_gpu(model_options()));
}
TEST(CudaFuzz, GqaAttentionKvCacheRope) {
  LUMINAL_REQUIRE_GPU();
  check_graph(attention_block(true), on_gpu(model_options()));
}

// Quantized weights (model_blocks.hpp's quantized_block): every program (cuda.QGather, Dequantize,
// a folded dequantised copy; with 1 or 5 constant rows cuda.QGemv, cuda.QGemvQ8 and the split
// cuda.QGemvQ8S over cuda.QRepack too; with a dynamic count cuda.QGemmQ8, cuda.QGemmBF16 and,
// with LUMINAL_CUDA_QGEMM_LT=1 set here, cuda.DequantizeBF16 + cuBLASLt, whose programs it
// counts) matches the reference.
class CudaQuantizedBlocks : public ::testing::TestWithParam<DType> {};

TEST_P(CudaQuantizedBlocks, MatchReference) {
  LUMINAL_REQUIRE_GPU();
  for (int64_t rows : {0, 1, 5}) {
    std::optional<EnvScope> lt;
    if (rows == 0) lt.emplace("LUMINAL_CUDA_QGEMM_LT", "1");
    CheckOptions o = on_gpu({});
    o.programs = 12;
    o.fold = rows == 1;
    const FuzzGraph fg = quantized_block(GetParam(), rows);
    CheckResult r = run_check(fg, o);
    for (const std::string& e : r.errors)
      ADD_FAILURE() << fg.name << ": " << e;
    for (size_t i = 0; i < r.failures.size() && i < 2; ++i)
      ADD_FAILURE() << fg.name << ": " << r.failures[i];
    EXPECT_GT(r.programs_using["cuda.QGather"], 0) << fg.name;
    if (rows > 0) {
      const int f32 = r.programs_using["cuda.QGemv"] + r.programs_using["cuda.QGemvEpi"];
      const int int8 = r.programs_using["cuda.QGemvQ8"] + r.programs_using["cuda.QGemvQ8Epi"];
      const int split = r.programs_using["cuda.QGemvQ8S"] + r.programs_using["cuda.QGemvQ8SEpi"];
      std::printf("[fuzz] %s: %d programs with the f32 QGemv, %d with the integer one, %d split\n",
                  fg.name.c_str(), f32, int8, split);
      EXPECT_GT(f32 + int8 + split, 0) << fg.name;
    } else {
      // A dynamic row count: the prefill GEMMs' forms among the programs drawn.
      const int q8 = r.programs_using["cuda.QGemmQ8"] + r.programs_using["cuda.QGemmQ8S"];
      const int bf16 = r.programs_using["cuda.QGemmBF16"] + r.programs_using["cuda.QGemmBF16S"];
      std::printf(
          "[fuzz] %s: %d programs with the int8 prefill GEMM, %d with the bf16 one, %d with the "
          "weight dequantised to bf16 (cuda.DequantizeBF16)\n",
          fg.name.c_str(), q8, bf16, r.programs_using["cuda.DequantizeBF16"]);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Types, CudaQuantizedBlocks, ::testing::ValuesIn(kWeightBlockDTypes),
                         [](const auto& info) { return std::string(name(info.param)); });

/// SiLU(x @ Wg^T) * (x @ Wu^T) @ Wd^T over `rows` constant rows (a decode step's MLP): weights of
/// block type `t` (x f32, the products within the quantized GEMV's bound), or dense of dtype `t`.
FuzzGraph paired_block(DType t, int64_t rows) {
  FuzzGraph fg;
  fg.name = "paired gate/up " + std::string(name(t)) + ", " + std::to_string(rows) + " rows";
  fg.seed = 1200 + static_cast<uint64_t>(t) * 8 + static_cast<uint64_t>(rows);
  const bool q = is_block(t);
  // The down projection's rows run along h: a multiple of the type's block (256 for the K types).
  const int64_t k = 256, h = q ? std::max<int64_t>(64, block_size(t)) : 64;
  const DType xt = q ? DType::F32 : t;
  Tensor x = model_input(fg, "x", {Expr(rows), Expr(k)}, xt, -1, 1);
  auto weight = [&](const std::string& label, int64_t n, int64_t kk) {
    Tensor w = model_input(fg, label, {Expr(n), Expr(kk)}, t, q ? 0 : -0.1, q ? 0 : 0.1).persist();
    return q ? w.dequantize() : w;
  };
  const Tensor gate = nn::linear(x, weight("w_gate", h, k));
  const Tensor up = nn::linear(x, weight("w_up", h, k));
  const Tensor y = nn::linear(gate.silu() * up, weight("w_down", k, h));
  if (!q) {
    fg.outputs.push_back(block_output(y, "y", static_cast<double>(k), t == DType::F32 ? 16 : 4));
    return fg;
  }
  // Each product within the integer GEMV's bound B (as quantized_block's); SiLU(a) * b moves by
  // about (|b| + |a|) B, and the down projection adds its own over h terms: generous, since a
  // wrong program is off by the values themselves.
  const double wmax = generated_block_max(t);
  const double b = 6 * std::sqrt(static_cast<double>(k)) * wmax * (1 + wmax) / 254;
  const double mag = std::sqrt(static_cast<double>(k)) * wmax;
  const double bound = 8 * std::sqrt(static_cast<double>(h)) * wmax * (2 * mag * b + b) + 8 * b;
  y.output("y");
  fg.outputs.push_back(
      FuzzOutput{"y", DType::F32, bound / epsilon(DType::F32), 64 * std::sqrt(double(k))});
  return fg;
}

// The types PairedGemvs draws: their graphs build on any machine (a shape a type refuses throws
// here, not first on a GPU).
constexpr DType kPairedTypes[] = {DType::Q4_0, DType::Q4_1, DType::Q4_K,
                                  DType::Q6_K, DType::F32,  DType::BF16};

TEST(CudaFuzzHost, PairedBlocksBuildForEveryType) {
  for (DType t : kPairedTypes)
    for (int64_t rows : {1, 3}) {
      const FuzzGraph fg = paired_block(t, rows);
      EXPECT_EQ(fg.outputs.size(), 1u) << fg.name;
    }
}

// The paired gate/up GEMVs (cuda.QGemvQ8Glu / QGemvQ8SGlu, cuda.GemvGlu / GemvCastGlu, opt-in)
// among the programs drawn: every program matches the reference, and some take a paired form.
TEST(CudaFuzz, PairedGemvs) {
  LUMINAL_REQUIRE_GPU();
  const EnvScope q("LUMINAL_CUDA_QGEMV_GLU", "1"), d("LUMINAL_CUDA_GEMV_GLU", "1");
  for (DType t : kPairedTypes)
    for (int64_t rows : {1, 3}) {
      const FuzzGraph fg = paired_block(t, rows);
      CheckOptions o = on_gpu({});
      o.programs = 16;
      o.fold = true;
      CheckResult r = run_check(fg, o);
      for (const std::string& e : r.errors)
        ADD_FAILURE() << fg.name << ": " << e;
      for (size_t i = 0; i < r.failures.size() && i < 2; ++i)
        ADD_FAILURE() << fg.name << ": " << r.failures[i];
      const int paired = r.programs_using["cuda.QGemvQ8Glu"] +
                         r.programs_using["cuda.QGemvQ8SGlu"] + r.programs_using["cuda.GemvGlu"] +
                         r.programs_using["cuda.GemvCastGlu"];
      std::printf("[fuzz] %s: %d of %d programs with a paired GEMV\n", fg.name.c_str(), paired,
                  r.programs);
      EXPECT_GT(paired, 0) << fg.name;
    }
}

// Random graphs around one mixture-of-experts matmul (random_expert_graph, as the CPU fuzz):
// every program agrees with the reference, and some run it as cuda.ExpertGemv / ExpertRows.
TEST(CudaFuzz, ExpertGraphs) {
  LUMINAL_REQUIRE_GPU();
  int expert_programs = 0;
  for (uint64_t seed = 0; seed < 12; ++seed) {
    const FuzzGraph fg = random_expert_graph(seed);
    CheckOptions o = on_gpu({});
    o.programs = 20;
    CheckResult r = run_check(fg, o);
    for (const std::string& e : r.errors)
      ADD_FAILURE() << fg.name << ": " << e;
    for (size_t i = 0; i < r.failures.size() && i < 2; ++i)
      ADD_FAILURE() << fg.name << ": " << r.failures[i];
    expert_programs += r.programs_using["cuda.ExpertGemv"] + r.programs_using["cuda.ExpertRows"];
  }
  std::printf("[fuzz] expert graphs: %d programs ran an expert op\n", expert_programs);
  EXPECT_GT(expert_programs, 3) << "too few programs ran cuda.ExpertGemv / cuda.ExpertRows";
}

class CudaRandomGraphs : public ::testing::TestWithParam<int> {};

TEST_P(CudaRandomGraphs, MatchReference) {
  LUMINAL_REQUIRE_GPU();
  FuzzGraph fg = random_graph(static_cast<uint64_t>(GetParam()));
  CheckOptions o = on_gpu({});
  o.programs = env_int("LUMINAL_FUZZ_PROGRAMS", 50);
  check_graph(fg, o);
}

INSTANTIATE_TEST_SUITE_P(Seeds, CudaRandomGraphs,
                         ::testing::Range(0, env_int("LUMINAL_CUDA_FUZZ_SEEDS", 32)));

}  // namespace
}  // namespace luminal
