// cuda.RowGemv (luminal/cuda/row_prologue.cpp), on unless LUMINAL_CUDA_ROW_PROLOGUE=0: a
// decode GEMV whose activation is a one-row cuda.Row's output (an RMSNorm, a residual add before
// it) computes that row in each block; so does an integer GEMV over GGUF blocks whose activation is
// a cuda.RowQ8's Q8_1 row. On the host: not offered with the switch off; offered for f32, bf16 and
// f16 rows before plain and epilogue GEMVs, its payload through the compile cache's text form; a
// SmolLM2-shaped bf16 decode's seed runs no norm kernel before q/k/v or gate/up, two kernels a
// layer fewer, and its kernels compile for sm_90. On a GPU: the norm then the linear layer as one
// kernel against the row kernel and the GEMV, within a rounding of the row's dtype.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "cpu/ops_test_util.hpp"
#include "cuda/cuda_test_util.hpp"
#include "cuda/folded_decode.hpp"
#include "cuda/model_seeds.hpp"
#include "luminal/core/blocks.hpp"
#include "luminal/cuda/nvrtc.hpp"
#include "luminal/luminal.hpp"
#include "luminal/models/decoder.hpp"
#include "luminal/models/synthetic.hpp"
#include "luminal/nn/linear.hpp"
#include "luminal/program/critical_path.hpp"
#include "support/env_scope.hpp"
#include "support/random_buffer.hpp"

namespace luminal {
namespace {

using testing::count_op;

struct RowGemvOn : testing::EnvScope {
  RowGemvOn() : EnvScope("LUMINAL_CUDA_ROW_PROLOGUE", "1") {}
};

bool row_gemv_op(std::string_view op) {
  return op.rfind("cuda.RowGemv", 0) == 0 || op.rfind("cuda.RowQGemv", 0) == 0;
}
bool row_qgemv_op(std::string_view op) { return op.rfind("cuda.RowQGemv", 0) == 0; }
bool unfused_ops(std::string_view op) {
  return op == "cuda.Row" || op == "cuda.Gemv" || op == "cuda.GemvCast" || op == "cuda.GemvEpi" ||
         op == "cuda.GemvCastEpi";
}

size_t row_gemvs(const LlirGraph& l) {
  size_t n = 0;
  for (const LlirNode& node : l.nodes)
    n += row_gemv_op(node.op->name) ? 1 : 0;
  return n;
}

/// y = linear(rms_norm(x + r, g), W) in dtype t, m rows of k; with `residual`, y + r after it
/// (the GEMV's epilogue form).
Graph norm_linear(int64_t k, int64_t n, DType t, bool residual) {
  Graph g;
  const Tensor x = g.tensor("x", {Expr(1), Expr(k)}, t);
  const Tensor r = g.tensor("r", {Expr(1), Expr(k)}, t);
  const Tensor h = (x + r).rms_norm(g.tensor("g", {Expr(k)}, t), 1e-5);
  Tensor y = nn::linear(h, g.tensor("w", {Expr(n), Expr(k)}, t));
  if (residual) y = y + g.tensor("s", {Expr(1), Expr(n)}, t);
  y.output("y");
  return g;
}

struct Case {
  DType t;
  int64_t k;
  bool residual;
};

std::vector<Case> cases() {
  std::vector<Case> out;
  for (DType t : {DType::F32, DType::BF16, DType::F16})
    for (int64_t k : {576, 2048})
      for (bool residual : {false, true})
        out.push_back({t, k, residual});
  out.push_back({DType::F32, 100, false});  // (a length that no chunk divides)
  return out;
}

std::string describe(const Case& c) {
  return std::string(name(c.t)) + " k " + std::to_string(c.k) + (c.residual ? " + residual" : "");
}

constexpr int64_t kN = 96;

TEST(CudaRowGemvRules, NotOfferedWithTheSwitchOff) {
  testing::EnvScope off("LUMINAL_CUDA_ROW_PROLOGUE", "0");
  testing::CudaRulesOnly rules;
  EXPECT_EQ(
      testing::prefer_ops(norm_linear(576, kN, DType::BF16, false), rules, row_gemv_op).second, 0);
}

// Each case takes one cuda.RowGemv and no row kernel; its kernels (one warp a row and several)
// compile for sm_90 and carry the row's code.
TEST(CudaRowGemvRules, OfferedForEachDtypeAndCompiles) {
  LUMINAL_REQUIRE_NVRTC();
  const RowGemvOn on;
  testing::CudaRulesOnly rules;
  std::vector<std::string> sources, whats;
  for (const Case& c : cases()) {
    const Graph g = norm_linear(c.k, kN, c.t, c.residual);
    auto [l, hits] = testing::prefer_ops(g, rules, row_gemv_op);
    EXPECT_EQ(row_gemvs(l), 1u) << describe(c) << ": " << l.op_mix_string();
    EXPECT_EQ(count_op(l, "cuda.Row"), 0) << describe(c) << ": " << l.op_mix_string();
    const size_t before = sources.size();
    testing::add_kernels(l, testing::spec_of(g.dim_facts()), sources, whats);
    bool row_in_gemv = false;
    for (size_t i = before; i < sources.size(); ++i)
      row_in_gemv = row_in_gemv || (sources[i].find("lmn_gemv") != std::string::npos &&
                                    sources[i].find("lmn_xrow[") != std::string::npos &&
                                    sources[i].find("rb = 0") != std::string::npos);
    EXPECT_TRUE(row_in_gemv) << describe(c);
    testing::EnvScope w("LUMINAL_CUDA_GEMV_WARPS", "1");
    testing::add_kernels(l, testing::spec_of(g.dim_facts()), sources, whats);
  }
  testing::expect_compiles(sources, whats);
}

// A linear layer of a few outputs (here 4) reads the weight as the operand of several rows and
// the activation as the shared one (gemv_form): no row form there, and what is chosen generates.
TEST(CudaRowGemvRules, NotOfferedWhereTheActivationIsTheSharedOperand) {
  const RowGemvOn on;
  testing::CudaRulesOnly rules;
  for (DType t : {DType::F32, DType::BF16}) {
    const Graph g = norm_linear(576, 4, t, false);
    auto [l, hits] = testing::prefer_ops(g, rules, row_gemv_op);
    EXPECT_EQ(row_gemvs(l), 0u) << name(t) << ": " << l.op_mix_string();
    std::vector<std::string> sources, whats;
    EXPECT_NO_THROW(testing::add_kernels(l, testing::spec_of(g.dim_facts()), sources, whats))
        << name(t) << ": " << l.to_text();
  }
}

// The compile cache stores programs as text: the payload (the GEMV's op and payload, the row's
// program, dtype, shape and view) reads back equal.
TEST(CudaRowGemvRules, ThePayloadReadsBackFromItsText) {
  const RowGemvOn on;
  testing::CudaRulesOnly rules;
  for (bool residual : {false, true}) {
    auto [l, hits] =
        testing::prefer_ops(norm_linear(576, kN, DType::BF16, residual), rules, row_gemv_op);
    ASSERT_EQ(row_gemvs(l), 1u) << l.op_mix_string();
    for (const LlirNode& n : l.nodes) {
      if (!row_gemv_op(n.op->name)) continue;
      const Payload& p = *n.attrs.payload;
      const std::shared_ptr<const Payload> back = rules.read_payload(p.kind(), p.serialize());
      ASSERT_TRUE(back) << p.serialize();
      EXPECT_TRUE(back->equals(p)) << p.serialize() << "\n" << back->serialize();
      EXPECT_EQ(back->hash(), p.hash());
      EXPECT_EQ(back->serialize(), p.serialize());
    }
  }
  for (const char* bad : {"cuda.Row bf16 1 576", "cuda.Gemv bf16 2 1", "cuda.Gemv bf16 1 576 2 1"})
    EXPECT_THROW(rules.read_payload("row_gemv", bad), Error) << bad;
}

// A SmolLM2-shaped bf16 decode, 30 layers: the norms before q/k/v and before gate/up run inside
// those GEMVs (every reader of each takes the form), about two kernels a layer fewer (311 / 245 ->
// 252 / 186 on 2026-12-07; the seed's descent is a local one, so the bound leaves room); a
// 3-layer program's kernels compile for sm_90.
TEST(CudaRowGemvRules, TheSeedRunsNoNormKernelBeforeTheProjections) {
  auto graph = [](int layers) {
    const auto cfg = models::llama_config(
        {.layers = layers, .hidden = 576, .ffn = 1536, .heads = 9, .kv_heads = 3, .vocab = 1000});
    models::DecoderShape shape{.slots = 2048, .max_step = 1};
    shape.dtype = DType::BF16;
    return models::build_decoder(cfg, shape).graph;
  };
  LlirGraph without;
  {
    testing::EnvScope off("LUMINAL_CUDA_ROW_PROLOGUE", "0");
    without = testing::cuda_seed_program(graph(30));
  }
  const RowGemvOn on;
  const LlirGraph l = testing::cuda_seed_program(graph(30));
  std::printf(
      "[row-gemv] SmolLM2 bf16, 30 layers: %zu kernels, %d on the path (%zu, %d without; "
      "%s)\n",
      testing::kernel_count(l), critical_path(l), testing::kernel_count(without),
      critical_path(without), l.op_mix_string().c_str());
  EXPECT_GE(row_gemvs(l), 4u * 30) << l.op_mix_string();
  EXPECT_LE(testing::kernel_count(l) + 45, testing::kernel_count(without)) << l.op_mix_string();
  EXPECT_LE(critical_path(l) + 45, critical_path(without)) << l.op_mix_string();
  if (cuda::nvrtc_available()) {
    const Graph g = graph(3);
    std::vector<std::string> sources, whats;
    testing::add_kernels(testing::cuda_seed_program(g), testing::spec_of(g.dim_facts()), sources,
                         whats);
    testing::expect_compiles(sources, whats);
  }
}

/// y = linear(rms_norm(x, g), dequantize(w)) with f32 x and a block-type weight `t` (the integer
/// GEMV's form: a cuda.RowQ8 row of Q8_1 blocks).
Graph norm_qlinear(int64_t k, int64_t n, DType t) {
  Graph g;
  const Tensor x = g.tensor("x", {Expr(1), Expr(k)});
  const Tensor h = x.rms_norm(g.tensor("g", {Expr(k)}), 1e-5);
  nn::linear(h, g.tensor("w", {Expr(n), Expr(k)}, t).dequantize()).output("y");
  return g;
}

bool unfused_q8_ops(std::string_view op) { return op == "cuda.RowQ8" || op == "cuda.QGemvQ8"; }

/// The program with the integer form around cuda.QGemvQ8 (`split` false: the GGUF blocks as
/// stored) or cuda.QGemvQ8S (true: the split layout, its weight through cuda.QRepack, which load-
/// time folding runs once; the form the decode seeds take, since the folded weight replaces the
/// stored one).
LlirGraph row_qgemv_program(const Graph& g, Backend& be, bool split) {
  return testing::prefer(g, be, [split](const EGraph& eg, ENodeId n) {
    if (!row_qgemv_op(eg.node(n).op->name)) return 0.0;
    const auto& p = eg.attrs_of(n).payload;
    const bool s = p && p->serialize().rfind("cuda.QGemvQ8S ", 0) == 0;
    return s == split ? 1.0 : 0.0;
  });
}

// The integer form: the row's Q8_1 blocks in shared memory, read by cuda.QGemvQ8 or by
// cuda.QGemvQ8S (the row in the plain layout there too: shared memory needs no vector loads).
TEST(CudaRowGemvRules, TheIntegerFormTakesARowQ8AndCompiles) {
  LUMINAL_REQUIRE_NVRTC();
  const RowGemvOn on;
  testing::CudaRulesOnly rules;
  std::vector<std::string> sources, whats;
  for (DType t : {DType::Q4_0, DType::Q4_1, DType::Q8_0})
    for (int64_t k : {576, 2048})
      for (bool split : {false, true}) {
        const Graph g = norm_qlinear(k, kN, t);
        const LlirGraph l = row_qgemv_program(g, rules, split);
        const std::string at =
            std::string(name(t)) + " k " + std::to_string(k) + (split ? " split" : "");
        EXPECT_EQ(row_gemvs(l), 1u) << at << ": " << l.op_mix_string();
        EXPECT_EQ(count_op(l, "cuda.QRepack"), split ? 1 : 0) << at << ": " << l.op_mix_string();
        EXPECT_EQ(count_op(l, "cuda.RowQ8") + count_op(l, "cuda.QuantizeQ8"), 0)
            << at << ": " << l.op_mix_string();
        const size_t before = sources.size();
        testing::add_kernels(l, testing::spec_of(g.dim_facts()), sources, whats);
        bool shared_x = false;
        for (size_t i = before; i < sources.size(); ++i)
          shared_x = shared_x || (sources[i].find("xv[j] = q[w[j]];") != std::string::npos &&
                                  // (not through lmn_x, whose __ldg a batch shares: global only)
                                  sources[i].find("lmn_x<") == std::string::npos &&
                                  sources[i].find("xr = lmn_xrow;") != std::string::npos &&
                                  sources[i].find("lmn_q8_1_") != std::string::npos);
        EXPECT_TRUE(shared_x) << at;
      }
  testing::expect_compiles(sources, whats);
}

// A SmolLM2-shaped q4_1 decode (its real file's types), 30 layers: the norms' cuda.RowQ8 kernels
// run inside the integer GEMVs that read them (q with rope, k with rope into its cache, v into
// its cache, gate and up paired): 285 kernels / 219 on the critical path -> 219 / 154 (host,
// As the search on the device builds it (the real vocabulary, load-time folding offered): the
// seed reads every q4_1 weight in the split layout, folded at load (cuda.QRepack's), so its
// folds add nothing to memory; and the norms run inside the split integer GEMVs that read them.
// Before those took the row (2026-12-07, on an H100), this seed read some weights as stored and
// others folded, passed fold_limit, and the search kept a program with one row kernel fewer, not
// sixty: 286 kernels against 287 (0.600 against 0.597 ms). Now 229 / 160 against 287 / 220.
TEST(CudaRowGemvRules, TheFoldedQ4_1SeedFitsFoldLimitWithNoNormKernel) {
  size_t without = 0;
  {
    testing::EnvScope off("LUMINAL_CUDA_ROW_PROLOGUE", "0");
    const testing::FoldedSpace f(testing::smollm2_q4_1_decode());
    without = testing::kernel_count(to_llir(*f.b.space, f.b.space->fewest_kernels_genome()));
  }
  const RowGemvOn on;
  const testing::FoldedSpace f(testing::smollm2_q4_1_decode());
  const LlirGraph l = to_llir(*f.b.space, f.b.space->fewest_kernels_genome());
  std::printf("[row-gemv] SmolLM2 q4_1 with folds: %zu kernels (%zu without), %d on the path: %s\n",
              testing::kernel_count(l), without, critical_path(l), l.op_mix_string().c_str());
  const FoldExcess e = f.excess(l);
  EXPECT_LE(e.bytes, 0) << l.op_mix_string();
  EXPECT_TRUE(e.kept.empty()) << l.op_mix_string();
  EXPECT_LE(count_op(l, "cuda.RowQ8"), 1) << l.op_mix_string();  // (the final norm's)
  EXPECT_GE(row_gemvs(l), 4u * 30) << l.op_mix_string();
  EXPECT_LE(testing::kernel_count(l) + 2 * 29, without) << l.op_mix_string();
  EXPECT_LE(critical_path(l), 165) << l.op_mix_string();
}

// 2026-12-07). The 3-layer program's kernels compile for sm_90.
TEST(CudaRowGemvRules, TheQ4_1SeedRunsNoNormKernelBeforeTheProjections) {
  LlirGraph without;
  {
    testing::EnvScope off("LUMINAL_CUDA_ROW_PROLOGUE", "0");
    without = testing::smollm2_q4_1_seed(30);
  }
  const RowGemvOn on;
  const LlirGraph l = testing::smollm2_q4_1_seed(30);
  std::printf(
      "[row-gemv] SmolLM2 q4_1, 30 layers: %zu kernels, %d on the path (%zu, %d without; "
      "%s)\n",
      testing::kernel_count(l), critical_path(l), testing::kernel_count(without),
      critical_path(without), l.op_mix_string().c_str());
  EXPECT_GE(row_gemvs(l), 4u * 30) << l.op_mix_string();
  EXPECT_EQ(count_op(l, "cuda.RowQ8"), 0) << l.op_mix_string();
  EXPECT_LE(critical_path(l), 160) << l.op_mix_string();
  EXPECT_LE(critical_path(l) + 2 * 30, critical_path(without)) << l.op_mix_string();
  if (cuda::nvrtc_available()) {
    const Graph g = testing::smollm2_q4_1_graph(3);
    std::vector<std::string> sources, whats;
    testing::add_kernels(testing::cuda_seed_program(g), testing::spec_of(g.dim_facts()), sources,
                         whats);
    testing::expect_compiles(sources, whats);
  }
}

TEST(CudaRowGemv, MatchesTheRowKernelAndTheGemv) {
  LUMINAL_REQUIRE_GPU();
  const RowGemvOn on;
  uint64_t seed = 90;
  for (const Case& c : cases())
    for (const char* warps : {"", "1"}) {
      testing::EnvScope w("LUMINAL_CUDA_GEMV_WARPS", *warps ? warps : nullptr);
      const std::string at = describe(c) + (*warps ? " warps 1" : "");
      const Graph g = norm_linear(c.k, kN, c.t, c.residual);
      auto [fused, a] = testing::prefer_ops(g, testing::gpu(), row_gemv_op);
      auto [plain, b] = testing::prefer_ops(g, testing::gpu(), unfused_ops);
      ASSERT_EQ(row_gemvs(fused), 1u) << at << ": " << fused.op_mix_string();
      ASSERT_EQ(row_gemvs(plain), 0u) << at << ": " << plain.op_mix_string();
      testing::BufferMap in{{"x", testing::random_buffer(c.t, c.k, ++seed, -2, 2)},
                            {"r", testing::random_buffer(c.t, c.k, ++seed, -2, 2)},
                            {"g", testing::random_buffer(c.t, c.k, ++seed, 0.5, 1.5)},
                            {"w", testing::random_buffer(c.t, kN * c.k, ++seed, -1, 1)}};
      if (c.residual) in.emplace("s", testing::random_buffer(c.t, kN, ++seed, -1, 1));
      testing::LoadedPlan pa = testing::load_plan(testing::gpu(), fused);
      testing::LoadedPlan pb = testing::load_plan(testing::gpu(), plain);
      // The row's sum of squares may add in another order (the GEMV's 256 threads, not the row
      // kernel's), in double: its f32 rounding, and so every normed value, is the same unless
      // the two sums straddle a rounding boundary (about 2^-29 a row). The GEMV's sums are the
      // same. So: two ulps of the output's dtype, and an absolute slack of one ulp times sqrt(k)
      // (a few normed values rounding the other way).
      const double ulp = c.t == DType::F32 ? 0x1p-23 : c.t == DType::BF16 ? 0x1p-7 : 0x1p-10;
      const testing::Tol tol{2 * ulp, ulp * std::sqrt(static_cast<double>(c.k))};
      opstest::expect_same(testing::run_plan(pa, in, {}).outputs.at("y"),
                           testing::run_plan(pb, in, {}).outputs.at("y"), tol, at);
    }
}

// The integer form: the same Q8_1 bytes as the RowQ8 kernel's (the row's f32 values the same but
// where its sum of squares rounds the other way: see above), so the same GEMV sums.
TEST(CudaRowGemv, TheIntegerFormMatchesTheRowQ8AndTheGemv) {
  LUMINAL_REQUIRE_GPU();
  const RowGemvOn on;
  uint64_t seed = 120;
  for (DType t : {DType::Q4_0, DType::Q4_1, DType::Q8_0})
    for (int64_t k : {576, 2048})
      for (bool split : {false, true}) {
        const std::string at =
            std::string(name(t)) + " k " + std::to_string(k) + (split ? " split" : "");
        const Graph g = norm_qlinear(k, kN, t);
        const LlirGraph fused = row_qgemv_program(g, testing::gpu(), split);
        ASSERT_EQ(count_op(fused, "cuda.QRepack"), split ? 1 : 0)
            << at << ": " << fused.op_mix_string();
        auto [plain, b] = testing::prefer_ops(g, testing::gpu(), unfused_q8_ops);
        ASSERT_EQ(row_gemvs(fused), 1u) << at << ": " << fused.op_mix_string();
        ASSERT_EQ(count_op(plain, "cuda.RowQ8"), 1) << at << ": " << plain.op_mix_string();
        std::vector<uint8_t> wbytes(static_cast<size_t>(storage_bytes(t, kN * k)));
        blocks::fill_valid_blocks(t, wbytes, ++seed);
        const testing::BufferMap in{{"x", testing::random_buffer(DType::F32, k, ++seed, -2, 2)},
                                    {"g", testing::random_buffer(DType::F32, k, ++seed, 0.5, 1.5)},
                                    {"w", HostBuffer{t, wbytes}}};
        testing::LoadedPlan pa = testing::load_plan(testing::gpu(), fused);
        testing::LoadedPlan pb = testing::load_plan(testing::gpu(), plain);
        opstest::expect_same(testing::run_plan(pa, in, {}).outputs.at("y"),
                             testing::run_plan(pb, in, {}).outputs.at("y"),
                             testing::Tol{1e-6, 1e-4}, at);
      }
}

}  // namespace
}  // namespace luminal
