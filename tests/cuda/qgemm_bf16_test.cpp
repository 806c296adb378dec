// cuda.QGemmBF16 (luminal/cuda/qgemm_bf16.cpp), the prefill linear layer over block weights on
// the bf16 tensor cores, the weight dequantised into shared memory:
//   - CI (no GPU): the rule offers it (and cuda.QGemmBF16S over the split layout) for more than
//     8 activation rows and for a dynamic count, not for 8 or fewer, not for the K types with
//     LUMINAL_CUDA_QGEMM_BF16_K=0, not with LUMINAL_CUDA_QGEMM_BF16=0; the fewest-kernels seed
//     of a dynamic-row layer takes it for a weight of 2^22 values or more, cuda.QGemmQ8 below;
//     NVRTC compiles every type's kernels for sm_90;
//   - GPU: every output within the bound of bf16 operands (each of x and w within 2^-8 of its
//     value, relative; products summed in f32) for q4_0, q4_1, q5_0, q5_1 and q8_0, row counts that
//     are not multiples of 16 or 64, weight rows that are not multiples of 8, k an odd number of
//     32-value units, and a dynamic row count run at two lengths; the split form; and with
//     power-of-two scales and activations exact in bf16 (every product exact) the exact sum to
//     within the accumulation's rounding, which a single wrong weight value fails; the K types
//     (q4_k, q5_k, q6_k). Both forms of the kernel run every GPU check and compile on the host:
//     64 activation rows a block (the default) and the tall 128 (LUMINAL_CUDA_QGEMM_BF16_ROWS=128).
// The library form beside it (LUMINAL_CUDA_QGEMM_LT=1: cuda.DequantizeBF16 writes the weight in
// bf16, cuBLASLt multiplies): CI: offered with the switch for prefill rows wherever the tile
// kernels are, taken by the seed that prefers library calls, its kernels compile; GPU: every type
// within the same bound (the sums in any order), and the exact-operand test.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cuda/cuda_test_util.hpp"
#include "cuda/quant_test_util.hpp"
#include "luminal/compiler/build_space.hpp"
#include "luminal/compiler/fold.hpp"
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

constexpr DType kLegacy[] = {DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1, DType::Q8_0};
constexpr DType kAll[] = {DType::Q4_0, DType::Q4_1, DType::Q5_0, DType::Q5_1,
                          DType::Q8_0, DType::Q4_K, DType::Q5_K, DType::Q6_K};

bool bf16_ops(std::string_view op) { return op == "cuda.QGemmBF16" || op == "cuda.QuantizeQ8"; }
bool bf16_split_ops(std::string_view op) {
  return op == "cuda.QGemmBF16S" || op == "cuda.QuantizeQ8" || op == "cuda.QRepack";
}

using testing::quant_linear_graph;

// The library form's tests need the cuBLASLt rules (a build with cublasLt.h) and, on a GPU, a
// backend with cuBLASLt on.
#if defined(LUMINAL_HAVE_CUBLASLT)
#define LUMINAL_REQUIRE_LT_RULES() \
  do {                             \
  } while (0)
#else
#define LUMINAL_REQUIRE_LT_RULES() GTEST_SKIP() << "built without cuBLASLt"
#endif

/// How check_bf16 (below) runs a layer: cuda.QGemmBF16, cuda.QGemmBF16S, or the weight decoded by
/// cuda.DequantizeBF16 and the product by cuBLASLt (LUMINAL_CUDA_QGEMM_LT=1, qgemm.cpp).
enum class Form { Tiles, Split, Library };
/// cuda.QGemmBF16's two forms: 64 activation rows a block (the default) and the tall 128.
constexpr const char* kRows[] = {"64", "128"};

bool lt_ops(std::string_view op) {
  return op == "cuda.LtMatmul" || op == "cuda.LtMatmulRow" || op == "cuda.DequantizeBF16" ||
         op == "cuda.QuantizeQ8";
}

/// Whether `l` runs its layer as the library form: one cuda.DequantizeBF16 and one cuBLASLt call
/// reading two bf16 operands (not the f32 casts of them), and no tile kernel.
/// `l`'s cuBLASLt calls: all of them, and those reading two bf16 operands.
struct LtCalls {
  int all = 0, bf16 = 0;
};
LtCalls lt_calls(const LlirGraph& l) {
  LtCalls c;
  for (const LlirNode& node : l.nodes) {
    const std::string_view op = node.op->name;
    if (op != "cuda.LtMatmul" && op != "cuda.LtMatmulRow") continue;
    ++c.all;
    if (node.input_dtypes.size() >= 2 && node.input_dtypes[0] == DType::BF16 &&
        node.input_dtypes[1] == DType::BF16)
      ++c.bf16;
  }
  return c;
}

bool library_form(const LlirGraph& l) {
  const LtCalls c = lt_calls(l);
  return c.all == 1 && c.bf16 == 1 && count_op(l, "cuda.DequantizeBF16") == 1 &&
         count_op(l, "cuda.QGemmBF16") + count_op(l, "cuda.QGemmBF16S") +
                 count_op(l, "cuda.QGemmQ8") + count_op(l, "cuda.QGemmQ8S") ==
             0;
}

TEST(CudaQGemmBF16Rules, OfferedForPrefillRowsOnly) {
  testing::CudaRulesOnly rules;
  for (DType t : kAll)
    for (int64_t m : {1, 8, 9, 40, 0}) {
      auto [l, n] = testing::prefer_ops(quant_linear_graph(t, m, 40, 256), rules, bf16_ops);
      EXPECT_EQ(count_op(l, "cuda.QGemmBF16"), m == 0 || m > 8 ? 1 : 0)
          << name(t) << " m " << m << ": " << l.op_mix_string();
    }
  for (DType t : kLegacy) {
    auto [l, n] = testing::prefer_ops(quant_linear_graph(t, 40, 40, 256), rules, bf16_split_ops);
    EXPECT_EQ(count_op(l, "cuda.QGemmBF16S"), 1) << name(t) << ": " << l.op_mix_string();
  }
  {
    // Not the K types with LUMINAL_CUDA_QGEMM_BF16_K=0.
    testing::EnvScope k_env("LUMINAL_CUDA_QGEMM_BF16_K", "0");
    testing::CudaRulesOnly k_rules;
    for (DType t : {DType::Q4_K, DType::Q5_K, DType::Q6_K}) {
      auto [l, n] = testing::prefer_ops(quant_linear_graph(t, 40, 40, 256), k_rules, bf16_ops);
      EXPECT_EQ(count_op(l, "cuda.QGemmBF16"), 0) << name(t) << ": " << l.op_mix_string();
    }
  }
  testing::EnvScope off_env("LUMINAL_CUDA_QGEMM_BF16", "0");
  testing::CudaRulesOnly off;
  auto [lo, no] = testing::prefer_ops(quant_linear_graph(DType::Q4_0, 40, 40, 256), off, bf16_ops);
  EXPECT_EQ(count_op(lo, "cuda.QGemmBF16"), 0) << lo.op_mix_string();
}

// The seeds take it for a weight of 2^22 values or more (an 8B model's 1024 x 4096 up), and
// cuda.QGemmQ8 below (SmolLM2's 576 x 576 to 1536 x 576: too few 64 x 64 tiles).
TEST(CudaQGemmBF16Rules, TheSeedTakesItForLargeWeights) {
  for (int64_t n : {1024, 4096}) {
    const LlirGraph l = testing::cuda_seed_program(quant_linear_graph(DType::Q4_0, 0, n, 4096));
    EXPECT_EQ(count_op(l, "cuda.QGemmBF16"), 1) << n << ": " << l.op_mix_string();
    EXPECT_EQ(count_op(l, "Dequantize"), 0) << n << ": " << l.op_mix_string();
  }
  for (int64_t n : {576, 1023}) {
    const LlirGraph l = testing::cuda_seed_program(quant_linear_graph(DType::Q4_1, 0, n, 4096));
    EXPECT_EQ(count_op(l, "cuda.QGemmBF16"), 0) << n << ": " << l.op_mix_string();
    EXPECT_EQ(count_op(l, "cuda.QGemmQ8"), 1) << n << ": " << l.op_mix_string();
  }
}

/// One decoder layer's prefill (128 rows at most) over q4_0 (8B-shaped) or q4_1 (SmolLM2-shaped)
/// projections, its seed as a session builds it: load-time folding on (the split-layout forms).
models::LlamaSize one_layer(models::LlamaSize size) {
  size.layers = 1;
  return size;
}

LlirGraph prefill_seed(bool big) {
  const auto cfg = big ? models::llama_config({.layers = 1,
                                               .hidden = 4096,
                                               .ffn = 14336,
                                               .heads = 32,
                                               .kv_heads = 8,
                                               .vocab = 128256})
                       : models::llama_config(one_layer(models::smollm2_135m_size()));
  models::DecoderShape shape{.slots = 256, .max_step = 128, .logits = models::Logits::Last};
  shape.block_weights = models::matrix_block_types(cfg, shape, [&](std::string_view label) {
    const bool outer = label.find("embed") != std::string_view::npos ||
                       label.find("lm_head") != std::string_view::npos;
    return outer ? (big ? DType::Q6_K : DType::Q8_0) : (big ? DType::Q4_0 : DType::Q4_1);
  });
  const Graph g = models::build_decoder(cfg, shape).graph;
  Facts facts = g.dim_facts();
  facts["s"] = {2, 128};
  facts["c"] = {1, 256};
  testing::CudaRulesOnly rules;
  FoldOptions fo;
  fo.on = true;
  BuiltSpace b = build_search_space(g, rules, facts, {}, fo);
  return to_llir(*b.space, b.space->fewest_kernels_genome());
}

// Also after a norm whose row kernel could write the Q8_1 rows itself (cuda.RowQ8): an 8B layer's
// seven GEMMs all in the bf16 form (until session 38 q, k, v, gate and up took cuda.QGemmQ8S for
// that), SmolLM2's all in the integer form; with LUMINAL_CUDA_QGEMM_BF16=0 the 8B's integer too;
// with LUMINAL_CUDA_ROW_BF16=1 the norms write the bf16 rows.
TEST(CudaQGemmBF16Rules, AnEightBLayersPrefillSeedTakesItForEveryProjection) {
  const LlirGraph big = prefill_seed(true);
  std::printf("[qgemm-bf16] 8B q4_0 prefill layer seed: %s\n", big.op_mix_string().c_str());
  EXPECT_EQ(count_op(big, "cuda.QGemmBF16S"), 7) << big.op_mix_string();
  EXPECT_EQ(count_op(big, "cuda.QGemmQ8S") + count_op(big, "cuda.QGemmQ8"), 0)
      << big.op_mix_string();
  const LlirGraph small = prefill_seed(false);
  EXPECT_EQ(count_op(small, "cuda.QGemmBF16S") + count_op(small, "cuda.QGemmBF16"), 0)
      << small.op_mix_string();
  EXPECT_EQ(count_op(small, "cuda.QGemmQ8S"), 7) << small.op_mix_string();
  {
    // With the norms writing bf16 rows themselves (LUMINAL_CUDA_ROW_BF16=1, opt-in): the same
    // GEMMs and two quantize kernels fewer a layer (attention's norm and the FFN's).
    testing::EnvScope row_bf16("LUMINAL_CUDA_ROW_BF16", "1");
    const LlirGraph rows = prefill_seed(true);
    EXPECT_EQ(count_op(rows, "cuda.QGemmBF16S"), 7) << rows.op_mix_string();
    EXPECT_EQ(count_op(rows, "cuda.QuantizeQ8") + 2, count_op(big, "cuda.QuantizeQ8"))
        << rows.op_mix_string();
  }
  testing::EnvScope off("LUMINAL_CUDA_QGEMM_BF16", "0");
  const LlirGraph integer = prefill_seed(true);
  EXPECT_EQ(count_op(integer, "cuda.QGemmQ8S"), 7) << integer.op_mix_string();
}

// ------------------------------------------------ dequantise to the arena, then cuBLASLt (host)

// Offered with LUMINAL_CUDA_QGEMM_LT=1 for every block type, more than 8 rows or a dynamic count,
// any weight size, wherever the tile kernels are; never without the switch.
TEST(CudaQGemmLtRules, OfferedWithTheSwitchForPrefillRows) {
  LUMINAL_REQUIRE_LT_RULES();
  {
    testing::EnvScope on("LUMINAL_CUDA_QGEMM_LT", "1");
    testing::CudaRulesOnly rules(true);
    for (DType t : kAll)
      for (int64_t m : {1, 8, 9, 40, 0}) {
        const LlirGraph l =
            testing::prefer_ops_16(quant_linear_graph(t, m, 40, 256), rules, lt_ops).first;
        EXPECT_EQ(library_form(l), m == 0 || m > 8)
            << name(t) << " m " << m << ": " << l.op_mix_string();
      }
    // A large weight too (2^27 + 4096 values: a large vocabulary's LM head over every row).
    const LlirGraph big =
        testing::prefer_ops_16(quant_linear_graph(DType::Q4_0, 0, 32769, 4096), rules, lt_ops)
            .first;
    EXPECT_TRUE(library_form(big)) << big.op_mix_string();
  }
  {
    // Not for the K types where the tile kernels are not offered either (LUMINAL_CUDA_QGEMM_K=0).
    testing::EnvScope on("LUMINAL_CUDA_QGEMM_LT", "1"), k_off("LUMINAL_CUDA_QGEMM_K", "0");
    testing::CudaRulesOnly rules(true);
    const LlirGraph l =
        testing::prefer_ops_16(quant_linear_graph(DType::Q4_K, 40, 40, 256), rules, lt_ops).first;
    EXPECT_EQ(count_op(l, "cuda.DequantizeBF16"), 0) << l.op_mix_string();
  }
  testing::CudaRulesOnly off(true);
  const LlirGraph l =
      testing::prefer_ops_16(quant_linear_graph(DType::Q4_0, 40, 40, 256), off, lt_ops).first;
  EXPECT_EQ(count_op(l, "cuda.DequantizeBF16"), 0) << l.op_mix_string();
}

// The fewest-kernels seed keeps the tile kernel; with the switch the seed that prefers library
// calls takes the library form (the tile kernels are library_replaces then), without it not.
TEST(CudaQGemmLtRules, TheSeedPreferringLibraryCallsTakesIt) {
  LUMINAL_REQUIRE_LT_RULES();
  const Graph g = quant_linear_graph(DType::Q4_0, 0, 4096, 4096);
  auto seed = [&](SearchSpace::LibrarySeed mode) {
    testing::CudaRulesOnly rules(true);
    BuiltSpace b = build_search_space(g, rules, g.dim_facts());
    return to_llir(*b.space, b.space->fewest_kernels_genome(mode));
  };
  {
    testing::EnvScope on("LUMINAL_CUDA_QGEMM_LT", "1");
    const LlirGraph prefer = seed(SearchSpace::LibrarySeed::Prefer);
    EXPECT_TRUE(library_form(prefer)) << prefer.to_text();
    const LlirGraph fewest = seed(SearchSpace::LibrarySeed::Use);
    EXPECT_EQ(count_op(fewest, "cuda.QGemmBF16") + count_op(fewest, "cuda.QGemmBF16S"), 1)
        << fewest.op_mix_string();
    EXPECT_EQ(count_op(fewest, "cuda.DequantizeBF16"), 0) << fewest.op_mix_string();
  }
  const LlirGraph prefer_off = seed(SearchSpace::LibrarySeed::Prefer);
  EXPECT_EQ(count_op(prefer_off, "cuda.DequantizeBF16"), 0) << prefer_off.op_mix_string();
}

// A model's prefill: with the switch, the library-preferring seed runs every quantized layer (q, k,
// v, o, gate, up, down of each block) as cuda.DequantizeBF16 and a bf16 cuBLASLt call; the
// fewest-kernels seed none. (The form must survive a whole model's graph, its reshaped heads
// included, for the search to time it.)
TEST(CudaQGemmLtRules, EveryLayerOfAModelsPrefill) {
  LUMINAL_REQUIRE_LT_RULES();
  constexpr int kLayers = 2;
  const auto cfg = models::llama_config(
      {.layers = kLayers, .hidden = 512, .ffn = 1536, .heads = 8, .kv_heads = 2, .vocab = 1000});
  models::DecoderShape shape{.slots = 1024, .max_step = 256, .logits = models::Logits::Last};
  shape.block_weights = models::matrix_block_types(cfg, shape, [](std::string_view label) {
    return label.find("embed") != std::string_view::npos ? DType::Q8_0 : DType::Q4_0;
  });
  const Graph g = models::build_decoder(cfg, shape).graph;
  testing::EnvScope on("LUMINAL_CUDA_QGEMM_LT", "1");
  testing::CudaRulesOnly rules(true);
  BuiltSpace b = build_search_space(g, rules, g.dim_facts());
  const LlirGraph prefer =
      to_llir(*b.space, b.space->fewest_kernels_genome(SearchSpace::LibrarySeed::Prefer));
  std::printf("[qgemm-lt] library-preferring seed, %d layers: %s\n", kLayers,
              prefer.op_mix_string().c_str());
  EXPECT_EQ(count_op(prefer, "cuda.DequantizeBF16"), 7 * kLayers) << prefer.op_mix_string();
  EXPECT_GE(lt_calls(prefer).bf16, 7 * kLayers) << prefer.op_mix_string();
  const LlirGraph fewest = to_llir(*b.space, b.space->fewest_kernels_genome());
  EXPECT_EQ(count_op(fewest, "cuda.DequantizeBF16"), 0) << fewest.op_mix_string();
}

TEST(CudaQGemmLtRules, DequantizeBF16CompilesForSm90) {
  LUMINAL_REQUIRE_LT_RULES();
  LUMINAL_REQUIRE_NVRTC();
  testing::EnvScope on("LUMINAL_CUDA_QGEMM_LT", "1");
  testing::CudaRulesOnly rules(true);
  std::vector<std::string> sources;
  for (DType t : kAll) {
    const Graph g = quant_linear_graph(t, 0, 37, 512);
    const LlirGraph l = testing::prefer_ops_16(g, rules, lt_ops).first;
    ASSERT_TRUE(library_form(l)) << name(t) << " " << l.op_mix_string();
    for (cuda::GeneratedKernel& k : cuda::generate_kernels(l, testing::spec_of(g.dim_facts())))
      sources.push_back(k.source);
  }
  testing::expect_compiles(sources, "a cuda.DequantizeBF16 kernel");
}

/// RMSNorm(x) @ Dequantize(w [n, K])^T over a dynamic row count: the normalised rows as the
/// activation.
Graph norm_linear_graph(DType t, int64_t n, int64_t K) {
  Graph g;
  Tensor x = g.tensor("x", {Expr::var("s"), Expr(K)});
  g.declare_dim("s", 1, 256);
  Tensor h = x.rms_norm(g.tensor("nw", {Expr(K)}), 1e-5);
  nn::linear(h, g.tensor("w", {Expr(n), Expr(K)}, t).dequantize()).output("y");
  return g;
}

bool is_bf16_row(const LlirNode& node) {
  return node.op->name == std::string_view("cuda.Row") && node.attrs.dtype == DType::BF16;
}

// With LUMINAL_CUDA_ROW_BF16=1 the row kernel before the bf16 form writes its rows in bf16
// itself (cuda.row-bf16, row.cpp): the seed has no cuda.QuantizeQ8 there; by default the row
// kernel writes no bf16 rows (it writes f32 for cuda.QuantizeQ8, or the Q8_1 blocks itself as
// cuda.RowQ8 unless LUMINAL_CUDA_ROW_Q8=0).
TEST(CudaQGemmBF16Rules, TheNormBeforeItWritesBf16Rows) {
  const Graph g = norm_linear_graph(DType::Q4_0, 4096, 4096);
  LlirGraph l;
  {
    testing::EnvScope on("LUMINAL_CUDA_ROW_BF16", "1");
    l = testing::cuda_seed_program(g);
  }
  EXPECT_EQ(count_op(l, "cuda.QGemmBF16"), 1) << l.op_mix_string();
  EXPECT_EQ(count_op(l, "cuda.QuantizeQ8"), 0) << l.op_mix_string();
  EXPECT_EQ(std::count_if(l.nodes.begin(), l.nodes.end(), is_bf16_row), 1) << l.op_mix_string();
  LUMINAL_REQUIRE_NVRTC();
  std::vector<std::string> sources;
  for (cuda::GeneratedKernel& k : cuda::generate_kernels(l, testing::spec_of(g.dim_facts())))
    sources.push_back(k.source);
  testing::expect_compiles(sources, "a bf16 row kernel before cuda.QGemmBF16");
  const LlirGraph l2 = testing::cuda_seed_program(g);
  EXPECT_EQ(count_op(l2, "cuda.QuantizeQ8") + count_op(l2, "cuda.RowQ8"), 1) << l2.op_mix_string();
  EXPECT_EQ(std::count_if(l2.nodes.begin(), l2.nodes.end(), is_bf16_row), 0);
}

void expect_kernels_compile(const std::string& rows);

// Both forms (LUMINAL_CUDA_QGEMM_BF16_ROWS 64 and 128) compile for every type, fixed and dynamic
// rows, both layouts.
TEST(CudaQGemmBF16Rules, KernelsCompileForSm90) {
  LUMINAL_REQUIRE_NVRTC();
  for (const char* rows : kRows) {
    testing::EnvScope rows_on("LUMINAL_CUDA_QGEMM_BF16_ROWS", rows);
    expect_kernels_compile(rows);
  }
}

/// Every type's cuda.QGemmBF16 kernel (and the split layout's) at fixed and dynamic rows
/// compiles for sm_90, in the form LUMINAL_CUDA_QGEMM_BF16_ROWS gives (`rows`: its name).
void expect_kernels_compile(const std::string& rows) {
  testing::CudaRulesOnly rules;
  std::vector<std::string> sources;
  for (DType t : kLegacy)
    for (int64_t m : {40, 0}) {
      const Graph g = quant_linear_graph(t, m, 37, 512);
      for (bool split : {false, true}) {
        auto [l, n] = testing::prefer_ops(g, rules, split ? bf16_split_ops : bf16_ops);
        const char* op = split ? "cuda.QGemmBF16S" : "cuda.QGemmBF16";
        ASSERT_EQ(count_op(l, op), 1) << name(t) << " " << l.op_mix_string();
        for (cuda::GeneratedKernel& k : cuda::generate_kernels(l, testing::spec_of(g.dim_facts())))
          sources.push_back(k.source);
      }
    }
  testing::CudaRulesOnly k_rules;
  for (DType t : {DType::Q4_K, DType::Q5_K, DType::Q6_K})
    for (int64_t m : {40, 0}) {
      const Graph g = quant_linear_graph(t, m, 37, 512);
      auto [l, n] = testing::prefer_ops(g, k_rules, bf16_ops);
      ASSERT_EQ(count_op(l, "cuda.QGemmBF16"), 1) << name(t) << " " << l.op_mix_string();
      for (cuda::GeneratedKernel& k : cuda::generate_kernels(l, testing::spec_of(g.dim_facts())))
        sources.push_back(k.source);
    }
  // (the form asked for, and never the other)
  const std::string want =
      rows == "128" ? "LMN_ENTRY(lmn_qgemm_bf16_tall)" : "LMN_ENTRY(lmn_qgemm_bf16)";
  const std::string other =
      rows == "128" ? "LMN_ENTRY(lmn_qgemm_bf16)" : "LMN_ENTRY(lmn_qgemm_bf16_tall)";
  EXPECT_EQ(
      std::count_if(sources.begin(), sources.end(),
                    [&](const std::string& src) { return src.find(want) != std::string::npos; }),
      26)
      << "rows " << rows;
  EXPECT_EQ(
      std::count_if(sources.begin(), sources.end(),
                    [&](const std::string& src) { return src.find(other) != std::string::npos; }),
      0)
      << "rows " << rows;
  testing::expect_compiles(sources, "a cuda.QGemmBF16 kernel of " + rows + " rows");
}

/// The source of `g`'s cuda.QGemmBF16 kernel (either form), or "" when it has none.
std::string gemm_source(const Graph& g) {
  testing::CudaRulesOnly rules;
  auto [l, n] = testing::prefer_ops(g, rules, bf16_ops);
  for (cuda::GeneratedKernel& k : cuda::generate_kernels(l, testing::spec_of(g.dim_facts())))
    if (k.source.find("lmn_qgemm_bf16") != std::string::npos) return k.source;
  return "";
}

/// The cluster size of `g`'s cuda.QGemmBF16 kernel (1: none; 0: no such kernel).
int split_of(const Graph& g) {
  const std::string src = gemm_source(g);
  if (src.empty()) return 0;
  const size_t at = src.find("__cluster_dims__(1, 1, ");
  return at == std::string::npos ? 1 : std::stoi(src.substr(at + 23));
}

/// Whether `g`'s cuda.QGemmBF16 kernel is the tall form.
bool tall_of(const Graph& g) {
  return gemm_source(g).find("LMN_ENTRY(lmn_qgemm_bf16_tall)") != std::string::npos;
}

// Split k: by default two blocks a tile where each part keeps 8 steps of 64 values (else one).
// LUMINAL_CUDA_QGEMM_BF16_SPLIT=0 chooses the most blocks a tile that
// keep the tiles at the bucket's most rows within two blocks an SM (132 SMs), each at least 8
// steps of 64 values; N takes N, halved while a block would get no part. Rows up to 256 (4 tiles of
// 64): an 8B k projection (1024 x 4096) 4, a gate (14336 x 4096) none, a short k (512: 8 steps)
// none; up to 128 rows (a 128-token prefill's bucket) the k projection 8 and q (4096 x 4096) 2.
// Every form compiles for sm_90.
TEST(CudaQGemmBF16Rules, SplitKChoosesItsBlocksAndCompiles) {
  // By default two blocks a tile where each part keeps 8 steps of 64 (k 1024 and more)
  EXPECT_EQ(split_of(quant_linear_graph(DType::Q4_0, 0, 1024, 4096)), 2);
  EXPECT_EQ(split_of(quant_linear_graph(DType::Q4_0, 128, 14336, 4096)), 2);
  EXPECT_EQ(split_of(quant_linear_graph(DType::Q4_0, 0, 1024, 1024)), 2);
  EXPECT_EQ(split_of(quant_linear_graph(DType::Q4_0, 0, 1024, 960)), 1);
  EXPECT_EQ(split_of(quant_linear_graph(DType::Q4_0, 0, 1536, 576)), 1);
  {
    testing::EnvScope on("LUMINAL_CUDA_QGEMM_BF16_SPLIT", "0");
    EXPECT_EQ(split_of(quant_linear_graph(DType::Q4_0, 0, 1024, 4096)), 4);
    EXPECT_EQ(split_of(quant_linear_graph(DType::Q4_0, 0, 14336, 4096)), 1);
    EXPECT_EQ(split_of(quant_linear_graph(DType::Q4_0, 0, 1024, 512)), 1);
    EXPECT_EQ(split_of(quant_linear_graph(DType::Q4_0, 128, 1024, 4096)), 8);
    EXPECT_EQ(split_of(quant_linear_graph(DType::Q4_0, 128, 4096, 4096)), 2);
  }
  {
    // N = 8 where 8 parts would leave a block none (17 steps: 3 a block) takes 4 (5 + 5 + 5 + 2)
    testing::EnvScope eight("LUMINAL_CUDA_QGEMM_BF16_SPLIT", "8");
    EXPECT_EQ(split_of(quant_linear_graph(DType::Q4_0, 0, 64, 1056)), 4);
    EXPECT_EQ(split_of(quant_linear_graph(DType::Q4_0, 0, 64, 2304)), 8);
  }
  {
    // The tall form (128 rows a block) counts steps of 32 values: parts of at least 16 of them.
    testing::EnvScope tall("LUMINAL_CUDA_QGEMM_BF16_ROWS", "128");
    EXPECT_EQ(split_of(quant_linear_graph(DType::Q4_0, 0, 1024, 4096)), 2);
    EXPECT_EQ(split_of(quant_linear_graph(DType::Q4_0, 0, 1024, 960)), 1);
    testing::EnvScope chosen("LUMINAL_CUDA_QGEMM_BF16_SPLIT", "0");
    EXPECT_EQ(split_of(quant_linear_graph(DType::Q4_0, 128, 1024, 4096)), 8);
    EXPECT_EQ(split_of(quant_linear_graph(DType::Q4_0, 128, 4096, 4096)), 4);
  }
  {
    // 0: the tall form where the rows can reach 128 (dynamic rows up to 256, or 128), else the
    // square one
    testing::EnvScope automatic("LUMINAL_CUDA_QGEMM_BF16_ROWS", "0");
    EXPECT_EQ(tall_of(quant_linear_graph(DType::Q4_0, 0, 1024, 4096)), true);
    EXPECT_EQ(tall_of(quant_linear_graph(DType::Q4_0, 128, 1024, 4096)), true);
    EXPECT_EQ(tall_of(quant_linear_graph(DType::Q4_0, 100, 1024, 4096)), false);
  }
  {
    testing::EnvScope bad("LUMINAL_CUDA_QGEMM_BF16_ROWS", "96");
    EXPECT_THROW(split_of(quant_linear_graph(DType::Q4_0, 0, 1024, 4096)), Error);
  }
  {
    testing::EnvScope bad("LUMINAL_CUDA_QGEMM_BF16_SPLIT", "3");
    EXPECT_THROW(split_of(quant_linear_graph(DType::Q4_0, 0, 1024, 4096)), Error);
  }
  LUMINAL_REQUIRE_NVRTC();
  std::vector<std::string> sources;
  for (const char* rows : kRows)
    for (const char* c : {"2", "8"}) {
      testing::EnvScope rows_on("LUMINAL_CUDA_QGEMM_BF16_ROWS", rows);
      testing::EnvScope on("LUMINAL_CUDA_QGEMM_BF16_SPLIT", c);
      testing::CudaRulesOnly rules;
      for (DType t : {DType::Q4_0, DType::Q8_0, DType::Q6_K})
        for (bool split : {false, true}) {
          if (split && t == DType::Q6_K) continue;
          const Graph g = quant_linear_graph(t, 0, 37, 1024);
          auto [l, n] = testing::prefer_ops(g, rules, split ? bf16_split_ops : bf16_ops);
          for (cuda::GeneratedKernel& k :
               cuda::generate_kernels(l, testing::spec_of(g.dim_facts())))
            sources.push_back(k.source);
        }
    }
  testing::expect_compiles(sources, "a split-k cuda.QGemmBF16 kernel");
}

// ---------------------------------------------------------------- GPU

/// LUMINAL_CUDA_QGEMM_BF16_ROWS as set (the form a check ran), "64" unset.
std::string rows_form() {
  const char* v = std::getenv("LUMINAL_CUDA_QGEMM_BF16_ROWS");
  return v != nullptr && *v != 0 ? v : "64";
}

double gamma(int64_t n) {
  const double u = std::ldexp(1.0, -24);
  return n * u / (1 - n * u);
}

/// x [m, K] @ W^T (W: `wb`, n rows of t) run through cuda.QGemmBF16 (or the split form, or
/// cuda.DequantizeBF16 then a cuBLASLt call: Form::Library), every
/// output checked against the exact sum of x w: within sum |x w| (2^-7 + 2^-15) (bf16 operands)
/// plus gamma(K / 16 + 4) sum |x w| (f32 sums), or with `exact` (operands exact in bf16) the
/// latter alone. m 0 runs the dynamic-row program at each of `lengths`. Returns the outputs
/// checked.
int64_t check_bf16(DType t, int64_t m, int64_t n, int64_t K, std::vector<int64_t> lengths,
                   const HostBuffer& wb, const std::vector<std::vector<float>>& xs, Form form,
                   bool exact) {
  const Graph g = quant_linear_graph(t, m, n, K);
  const bool split = form == Form::Split, lib = form == Form::Library;
  const char* op = lib ? "cuda.DequantizeBF16" : split ? "cuda.QGemmBF16S" : "cuda.QGemmBF16";
  std::optional<testing::EnvScope> lt_on;
  if (lib) {
    if (!testing::gpu().cublaslt()) {
      ADD_FAILURE() << "the library form needs cuBLASLt (LUMINAL_CUDA_CUBLASLT unset, and the "
                       "library loading)";
      return 0;
    }
    lt_on.emplace("LUMINAL_CUDA_QGEMM_LT", "1");
  }
  const LlirGraph l =
      lib ? testing::prefer_ops_16(g, testing::gpu(), lt_ops).first
          : testing::prefer_ops(g, testing::gpu(), split ? bf16_split_ops : bf16_ops).first;
  const std::string at = std::string(name(t)) +
                         (lib     ? " library"
                          : split ? " split"
                                  : "") +
                         " m " + std::to_string(m) + " n " + std::to_string(n) + " k " +
                         std::to_string(K) + " (LUMINAL_CUDA_QGEMM_BF16_ROWS=" + rows_form() +
                         "): ";
  EXPECT_EQ(count_op(l, op), 1) << at << l.op_mix_string();
  if (count_op(l, op) != 1 || (lib && !library_form(l))) {
    ADD_FAILURE() << at << "not the form asked for: " << l.op_mix_string();
    return 0;
  }
  if (m > 0) lengths = {m};
  std::vector<DynMap> dyns;
  for (int64_t s : lengths)
    dyns.push_back(m > 0 ? DynMap{} : DynMap{{"s", s}});
  testing::LoadedPlan lp = testing::load_plan(testing::gpu(), l, dyns);
  const std::vector<float> w = testing::decode(wb);
  const double rel = exact ? 0.0 : std::ldexp(1.0, -7) + std::ldexp(1.0, -15);
  // (cuBLASLt's order of the f32 sums is its own: the sequential depth K bounds any order)
  const double acc = gamma(lib ? K : K / 16 + 4);
  int64_t checked = 0;
  for (size_t li = 0; li < lengths.size(); ++li) {
    const int64_t rows = lengths[li];
    const std::vector<float>& x = xs[li];
    const std::vector<float> got =
        testing::floats(testing::run_plan(lp, {{"x", testing::f32_buffer(x)}, {"w", wb}}, dyns[li])
                            .outputs.at("y"));
    EXPECT_EQ(got.size(), static_cast<size_t>(rows * n)) << at;
    if (got.size() != static_cast<size_t>(rows * n)) continue;
    int bad = 0;
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double y = 0, mag = 0;
        for (int64_t k = 0; k < K; ++k) {
          const double p = static_cast<double>(x[static_cast<size_t>(i * K + k)]) *
                           w[static_cast<size_t>(j * K + k)];
          y += p;
          mag += std::fabs(p);
        }
        const double tol = mag * (rel + acc);
        const double v = got[static_cast<size_t>(i * n + j)];
        if (!(std::fabs(v - y) <= tol)) {
          if (bad < 3)
            ADD_FAILURE() << at << "rows " << rows << " y[" << i << "," << j << "] = " << v
                          << ", want " << y << " +- " << tol;
          ++bad;
        }
        ++checked;
      }
    EXPECT_EQ(bad, 0) << at << "rows " << rows;
  }
  return checked;
}

std::vector<std::vector<float>> activations(const std::vector<int64_t>& rows, int64_t K,
                                            uint64_t seed) {
  std::vector<std::vector<float>> xs;
  for (int64_t r : rows)
    xs.push_back(testing::random_floats(r * K, seed++));
  return xs;
}

TEST(CudaQGemmBF16, EveryTypeWithinTheBound) {
  LUMINAL_REQUIRE_GPU();
  int64_t checked = 0;
  uint64_t seed = 900;
  for (const char* rows : kRows) {
    testing::EnvScope rows_on("LUMINAL_CUDA_QGEMM_BF16_ROWS", rows);
    for (DType t : kLegacy) {
      for (int64_t K : {96, 4128})
        for (int64_t m : {9, 100}) {
          const int64_t n = 37 + 2 * m;
          const HostBuffer wb = testing::random_blocks(t, n * K, seed += 10);
          checked +=
              check_bf16(t, m, n, K, {}, wb, activations({m}, K, seed + 1), Form::Tiles, false);
        }
    }
  }
  EXPECT_GT(checked, 100000);
}

// The library form (cuda.DequantizeBF16 + cuBLASLt, opt-in) for every type, fixed and dynamic
// rows, within the same bound but for the sums' order.
TEST(CudaQGemmLt, EveryTypeWithinTheBound) {
  LUMINAL_REQUIRE_GPU();
  LUMINAL_REQUIRE_LT_RULES();
  if (!testing::gpu().cublaslt()) GTEST_SKIP() << "cuBLASLt is off on this GPU backend";
  int64_t checked = 0;
  uint64_t seed = 5900;
  for (DType t : kAll) {
    const int64_t K = block_size(t) == 256 ? 512 : 96;
    const HostBuffer wb = testing::random_blocks(t, 75 * K, seed += 10);
    checked +=
        check_bf16(t, 40, 75, K, {}, wb, activations({40}, K, seed + 1), Form::Library, false);
    checked += check_bf16(t, 0, 75, K, {9, 100}, wb, activations({9, 100}, K, seed + 2),
                          Form::Library, false);
  }
  EXPECT_GT(checked, 80000);
}

// The K types: fixed and dynamic rows, Q6_K's halves scaled apart.
TEST(CudaQGemmBF16, KTypesWithinTheBound) {
  LUMINAL_REQUIRE_GPU();
  int64_t checked = 0;
  uint64_t seed = 3900;
  for (const char* rows : kRows) {
    testing::EnvScope rows_on("LUMINAL_CUDA_QGEMM_BF16_ROWS", rows);
    for (DType t : {DType::Q4_K, DType::Q5_K, DType::Q6_K})
      for (int64_t K : {256, 4096}) {
        const HostBuffer wb = testing::random_blocks(t, 117 * K, seed += 10);
        checked +=
            check_bf16(t, 40, 117, K, {}, wb, activations({40}, K, seed + 1), Form::Tiles, false);
        const HostBuffer wd = testing::random_blocks(t, 64 * K, seed += 10);
        checked += check_bf16(t, 0, 64, K, {9, 100}, wd, activations({9, 100}, K, seed + 1),
                              Form::Tiles, false);
      }
  }
  EXPECT_GT(checked, 30000);
}

// Dynamic rows (77, 128 and 200: parts of a tile, one, and more than one in either form) and the
// split layout, fixed rows too.
TEST(CudaQGemmBF16, DynamicRowsAndTheSplitForm) {
  LUMINAL_REQUIRE_GPU();
  int64_t checked = 0;
  uint64_t seed = 1900;
  for (const char* rows : kRows) {
    testing::EnvScope rows_on("LUMINAL_CUDA_QGEMM_BF16_ROWS", rows);
    for (DType t : kLegacy)
      for (Form form : {Form::Tiles, Form::Split}) {
        const int64_t K = 576;
        const HostBuffer wb = testing::random_blocks(t, 64 * K, seed += 10);
        checked += check_bf16(t, 0, 64, K, {77, 128, 200}, wb,
                              activations({77, 128, 200}, K, seed + 1), form, false);
        checked += check_bf16(t, 40, 64, K, {}, wb, activations({40}, K, seed + 2), form, false);
      }
  }
  EXPECT_GT(checked, 50000);
}

// Split k over a cluster's blocks (LUMINAL_CUDA_QGEMM_BF16_SPLIT): 2 and 4 blocks a tile at k of
// 33 units (the square form's 17 steps of 64 values: parts of 9 + 8 and 5 + 5 + 5 + 2; the tall
// form's 33 of 32: 17 + 16 and 9 + 9 + 9 + 6), 8 at 57 units (29 steps: 7 parts of 4 and one of
// 1; tall 57: 7 of 8 and one of 1), 71 weight rows (an odd last pair of outputs), fixed and
// dynamic rows, both layouts and a K type, within the bound, in both forms.
TEST(CudaQGemmBF16, SplitKWithinTheBound) {
  LUMINAL_REQUIRE_GPU();
  int64_t checked = 0;
  uint64_t seed = 6900;
  for (const char* rows : kRows) {
    testing::EnvScope rows_on("LUMINAL_CUDA_QGEMM_BF16_ROWS", rows);
    const std::pair<const char*, int64_t> kSplits[] = {{"2", 1056}, {"4", 1056}, {"8", 1824}};
    for (const auto& [c, K] : kSplits) {
      testing::EnvScope on("LUMINAL_CUDA_QGEMM_BF16_SPLIT", c);
      for (DType t : {DType::Q4_0, DType::Q4_1, DType::Q8_0})
        for (Form form : {Form::Tiles, Form::Split}) {
          const HostBuffer wb = testing::random_blocks(t, 71 * K, seed += 10);
          checked += check_bf16(t, 0, 71, K, {77, 128}, wb, activations({77, 128}, K, seed + 1),
                                form, false);
          checked += check_bf16(t, 40, 71, K, {}, wb, activations({40}, K, seed + 2), form, false);
        }
      const HostBuffer wk = testing::random_blocks(DType::Q6_K, 71 * 2048, seed += 10);
      checked += check_bf16(DType::Q6_K, 100, 71, 2048, {}, wk, activations({100}, 2048, seed + 1),
                            Form::Tiles, false);
    }
  }
  EXPECT_GT(checked, 200000);
}

// The norm's row kernel writing bf16 rows gives the bits of the row kernel then cuda.QuantizeQ8
// in bf16 (both round to nearest even), so the two programs' outputs are equal bit for bit.
TEST(CudaQGemmBF16, Bf16RowsFromTheNormEqualTheSeparateRounding) {
  LUMINAL_REQUIRE_GPU();
  const int64_t K = 576, n = 80;
  const Graph g = norm_linear_graph(DType::Q4_1, n, K);
  auto fused = [](std::string_view op) { return op == "cuda.QGemmBF16" || op == "cuda.Row"; };
  auto apart = [](std::string_view op) {
    return op == "cuda.QGemmBF16" || op == "cuda.QuantizeQ8" || op == "cuda.Row";
  };
  LlirGraph lf;
  {
    testing::EnvScope on("LUMINAL_CUDA_ROW_BF16", "1");
    lf = testing::prefer_ops(g, testing::gpu(), fused).first;
  }
  ASSERT_EQ(std::count_if(lf.nodes.begin(), lf.nodes.end(), is_bf16_row), 1) << lf.op_mix_string();
  const LlirGraph la = testing::prefer_ops(g, testing::gpu(), apart).first;
  ASSERT_EQ(count_op(la, "cuda.QuantizeQ8"), 1) << la.op_mix_string();
  const HostBuffer wb = testing::random_blocks(DType::Q4_1, n * K, 4100);
  std::vector<float> nw = testing::random_floats(K, 4101);
  for (float& v : nw)
    v += 1.5f;
  for (const char* tile_rows : kRows)
    for (int64_t rows : {37, 128}) {
      testing::EnvScope rows_on("LUMINAL_CUDA_QGEMM_BF16_ROWS", tile_rows);
      const std::vector<float> x = testing::random_floats(rows * K, 4102 + rows);
      std::vector<std::vector<float>> outs;
      for (const LlirGraph* l : {static_cast<const LlirGraph*>(&lf), &la}) {
        testing::LoadedPlan lp = testing::load_plan(testing::gpu(), *l, {DynMap{{"s", rows}}});
        outs.push_back(testing::floats(
            testing::run_plan(
                lp, {{"x", testing::f32_buffer(x)}, {"nw", testing::f32_buffer(nw)}, {"w", wb}},
                DynMap{{"s", rows}})
                .outputs.at("y")));
      }
      ASSERT_EQ(outs[0].size(), static_cast<size_t>(rows * n));
      EXPECT_EQ(outs[0], outs[1]) << "rows " << rows << " in the form of " << tile_rows;
    }
}

// Scales (and mins) powers of two and activations of 8 significant bits: every x and w exact in
// bf16 and every product exact in f32, so the output differs from the exact sum by the f32
// accumulation alone, and one wrong weight value (a product of at least 2^-12 of the sum's
// magnitude here) would not hide in it.
TEST(CudaQGemmBF16, ExactOperandsGiveTheSumToTheAccumulationsRounding) {
  LUMINAL_REQUIRE_GPU();
#if defined(LUMINAL_HAVE_CUBLASLT)
  const bool lt = testing::gpu().cublaslt();  // (the library form's run too)
#else
  const bool lt = false;
#endif
  int64_t checked = 0;
  uint64_t seed = 2900;
  for (const char* rows : kRows)
    for (const char* c : {"1", "4"})  // (k split over a cluster's 4 blocks too)
      for (DType t : {DType::Q4_0, DType::Q4_1, DType::Q8_0})
        for (Form form : {Form::Tiles, Form::Split, Form::Library}) {
          if (form == Form::Library && (!lt || c[0] != '1' || rows[0] != '6')) continue;
          testing::EnvScope rows_on("LUMINAL_CUDA_QGEMM_BF16_ROWS", rows);
          testing::EnvScope split_k("LUMINAL_CUDA_QGEMM_BF16_SPLIT", c);
          const int64_t K = 1056, n = 80, m = 70;
          HostBuffer wb = testing::random_blocks(t, n * K, seed += 10);
          const int64_t bb = block_bytes(t);
          for (size_t o = 0; o < wb.bytes.size(); o += static_cast<size_t>(bb))
            testing::set_block_scales(
                t, wb.bytes.data() + o,
                f32_to_f16_bits(std::ldexp(1.0f, -5 - static_cast<int>(o / bb % 3))),
                f32_to_f16_bits(-0.25f));
          std::vector<float> x = testing::random_floats(m * K, seed + 1);
          for (float& v : x)
            v = std::round(v * 128.0f) / 128.0f;  // 8 significant bits at most
          checked += check_bf16(t, m, n, K, {}, wb, {x}, form, true);
        }
  EXPECT_GT(checked, lt ? 70000 : 60000);
}

}  // namespace
}  // namespace luminal
