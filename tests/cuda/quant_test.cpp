// The CUDA kernels that read GGUF blocks (luminal/cuda/dequantize.cpp, qgemv.cpp):
//   - CI (no GPU): the rules offer cuda.QGemv for 1 to 8 constant activation rows (not 9, not a
//     dynamic count) and cuda.QGather for an embedding, and NVRTC compiles every type's kernels
//     for sm_90;
//   - GPU: Dequantize of every weight type bitwise equal to blocks::dequantize, through the
//     identity and a row view (even rows), into f32 and bf16; cuda.QGemv against the f64 product
//     of the dequantised weights within the bound documented in qgemv.cpp, for m = 1 to 8, odd
//     row counts, k not a multiple of 256 for the legacy types, each split-k width; cuda.QGather
//     bitwise equal to the reference; the Q8_0 Qwen2 GGUF through the CUDA backend, its weights
//     bound as blocks, against the CPU with the same weights widened to f32 (LUMINAL_QUANT=off):
//     logits close and greedy tokens equal; cuda.QGemvEpi (residual add, SwiGLU) bitwise the
//     QGemv and its region's kernel.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "cuda/cuda_test_util.hpp"
#include "cuda/quant_test_util.hpp"
#include "luminal/compiler/build_space.hpp"
#include "luminal/core/blocks.hpp"
#include "luminal/core/quantize_ref.hpp"
#include "luminal/cpu/cpu_backend.hpp"
#include "luminal/cuda/nvrtc.hpp"
#include "luminal/cuda/quant_device.hpp"
#include "luminal/luminal.hpp"
#include "luminal/models/causal_lm.hpp"
#include "luminal/nn/linear.hpp"
#include "support/llir_direct.hpp"
#include "support/quant_bound.hpp"

namespace luminal {
namespace {

using testing::count_op;

using testing::decode;
using testing::f32_buffer;
using testing::floats;
using testing::min_terms;
using testing::random_blocks;
using testing::random_floats;

int64_t row_for(DType t) { return block_size(t) == 256 ? 512 : 96; }

/// Whether cuda.QGemvQ8S serves type t (it has a split layout).
bool split_layout_type(DType t) { return cuda::split_layout(t).has_value(); }

std::string tag(DType t) { return std::string(name(t)); }

// ---------------------------------------------------------------- CI

TEST(CudaQuantRules, QGemvForFewConstantRowsQGatherForEmbeddings) {
  testing::CudaRulesOnly rules;
  for (int64_t m : {1, 5, 8, 9}) {
    Graph g;
    Tensor x = g.tensor("x", {Expr(m), Expr(64)});
    nn::linear(x, g.tensor("w", {Expr(40), Expr(64)}, DType::Q4_0).dequantize()).output("y");
    auto [l, n] =
        testing::prefer_ops(g, rules, [](std::string_view op) { return op == "cuda.QGemv"; });
    EXPECT_EQ(n, m <= 8 ? 1 : 0) << "m " << m << ": " << l.op_mix_string();
  }
  Graph g;
  g.declare_dim("s", 1, 16);
  Tensor x = g.tensor("x", {"s", 64});
  nn::linear(x, g.tensor("w", {Expr(40), Expr(64)}, DType::Q8_0).dequantize()).output("y");
  auto [l, n] =
      testing::prefer_ops(g, rules, [](std::string_view op) { return op == "cuda.QGemv"; });
  EXPECT_EQ(n, 0) << "a dynamic row count: " << l.op_mix_string();
  Graph e;
  e.declare_dim("s", 1, 6);
  nn::embedding(e.tensor("embed", {40, 64}, DType::Q8_0).dequantize(),
                e.tensor("ids", {"s"}, DType::I32))
      .output("rows");
  auto [le, ne] =
      testing::prefer_ops(e, rules, [](std::string_view op) { return op == "cuda.QGather"; });
  EXPECT_EQ(ne, 1) << le.op_mix_string();
  EXPECT_EQ(count_op(le, "Gather"), 0) << le.op_mix_string();
}

// The integer form: cuda.QuantizeQ8 + cuda.QGemvQ8 for the same few constant rows; two layers
// reading one activation share one QuantizeQ8; LUMINAL_CUDA_QGEMV picks the forms offered.
TEST(CudaQuantRules, IntegerFormSharesOneQuantizedActivation) {
  testing::CudaRulesOnly rules;
  auto is_q8 = [](std::string_view op) { return op == "cuda.QGemvQ8" || op == "cuda.QuantizeQ8"; };
  for (int64_t m : {1, 8, 9}) {
    Graph g;
    Tensor x = g.tensor("x", {Expr(m), Expr(512)});
    nn::linear(x, g.tensor("a", {Expr(40), Expr(512)}, DType::Q4_0).dequantize()).output("ya");
    nn::linear(x, g.tensor("b", {Expr(24), Expr(512)}, DType::Q4_0).dequantize()).output("yb");
    nn::linear(x, g.tensor("c", {Expr(24), Expr(512)}, DType::Q4_K).dequantize()).output("yc");
    auto [l, n] = testing::prefer_ops(g, rules, is_q8);
    if (m > 8) {
      EXPECT_EQ(n, 0) << l.op_mix_string();
      continue;
    }
    EXPECT_EQ(count_op(l, "cuda.QGemvQ8"), 3) << l.op_mix_string();
    // one Q8_1 activation for the two Q4_0 layers, one Q8_K for the Q4_K layer
    EXPECT_EQ(count_op(l, "cuda.QuantizeQ8"), 2) << l.op_mix_string();
  }
  ::setenv("LUMINAL_CUDA_QGEMV", "f32", 1);
  {
    Graph g;
    Tensor x = g.tensor("x", {Expr(1), Expr(64)});
    nn::linear(x, g.tensor("w", {Expr(40), Expr(64)}, DType::Q8_0).dequantize()).output("y");
    auto [l, n] = testing::prefer_ops(g, rules, is_q8);
    EXPECT_EQ(n, 0) << "f32 only: " << l.op_mix_string();
  }
  ::setenv("LUMINAL_CUDA_QGEMV", "int8", 1);
  {
    Graph g;
    Tensor x = g.tensor("x", {Expr(1), Expr(64)});
    nn::linear(x, g.tensor("w", {Expr(40), Expr(64)}, DType::Q8_0).dequantize()).output("y");
    auto [l, n] =
        testing::prefer_ops(g, rules, [](std::string_view op) { return op == "cuda.QGemv"; });
    EXPECT_EQ(n, 0) << "int8 only: " << l.op_mix_string();
  }
  ::setenv("LUMINAL_CUDA_QGEMV", "fp4", 1);
  {
    Graph g;
    Tensor x = g.tensor("x", {Expr(1), Expr(64)});
    nn::linear(x, g.tensor("w", {Expr(40), Expr(64)}, DType::Q8_0).dequantize()).output("y");
    EXPECT_THROW(testing::prefer_ops(g, rules, is_q8), Error);
  }
  ::unsetenv("LUMINAL_CUDA_QGEMV");
}

/// The node of `op` in `l` (or null).
const LlirNode* node_of(const LlirGraph& l, std::string_view op) {
  for (const LlirNode& n : l.nodes)
    if (n.op->name == op) return &n;
  return nullptr;
}

// The split-layout form: offered for the types with a split layout (not Q4_K / Q5_K); with
// load-time folding on and a weight of at least fold_min_bytes, the fewest-kernels seed reads it
// through QRepack's Fold leaf (OpDef::fold_preferred), so no QRepack runs a step; with folding off
// the seed keeps the plain integer form (QRepack costs a kernel a step).
TEST(CudaQuantRules, SplitLayoutFormIsSeededThroughItsFold) {
  testing::CudaRulesOnly rules;
  for (DType t : {DType::Q4_0, DType::Q8_0, DType::Q6_K, DType::Q4_K})
    for (bool fold : {true, false}) {
      Graph g;
      Tensor x = g.tensor("x", {Expr(1), Expr(4096)});
      nn::linear(x, g.tensor("w", {Expr(256), Expr(4096)}, t).persist().dequantize()).output("y");
      FoldOptions fo;
      fo.on = fold;
      BuiltSpace b = build_search_space(g, rules, g.dim_facts(), {}, fo);
      const LlirGraph l = to_llir(*b.space, b.space->fewest_kernels_genome());
      const bool has_split = split_layout_type(t);
      const std::string at = tag(t) + (fold ? " folded: " : " unfolded: ") + l.op_mix_string();
      EXPECT_EQ(count_op(l, "cuda.QRepack"), 0) << at;
      EXPECT_EQ(count_op(l, "cuda.QGemvQ8S"), has_split && fold ? 1 : 0) << at;
      EXPECT_EQ(count_op(l, "cuda.QGemvQ8"), has_split && fold ? 0 : 1) << at;
      if (has_split && fold) {
        // it reads a folded input, and its activation in the split layout where it is Q8_1
        const LlirNode* q = node_of(l, "cuda.QuantizeQ8");
        ASSERT_NE(q, nullptr) << at;
        EXPECT_EQ(q->attrs.int_value, t == DType::Q6_K ? 0 : 1) << at;
        EXPECT_EQ(node_of(l, "cuda.QGemvQ8S")->attrs.int_value, 256 * 4096 / block_size(t)) << at;
        EXPECT_EQ(b.folds.leaves.size(), 1u) << at;
      }
    }
  ::setenv("LUMINAL_CUDA_QGEMV_SPLIT", "0", 1);
  {
    Graph g;
    Tensor x = g.tensor("x", {Expr(1), Expr(4096)});
    nn::linear(x, g.tensor("w", {Expr(256), Expr(4096)}, DType::Q4_0).persist().dequantize())
        .output("y");
    auto [l, n] =
        testing::prefer_ops(g, rules, [](std::string_view op) { return op == "cuda.QGemvQ8S"; });
    EXPECT_EQ(n, 0) << "split off: " << l.op_mix_string();
  }
  ::unsetenv("LUMINAL_CUDA_QGEMV_SPLIT");
  // Not for a weight something else reads too (a tied embedding: its split copy would add memory).
  {
    Graph g;
    Tensor table = g.tensor("embed", {Expr(256), Expr(4096)}, DType::Q8_0).persist();
    Tensor h = nn::embedding(table.dequantize(), g.tensor("ids", {Expr(1)}, DType::I32));
    nn::linear(h, table.dequantize()).output("logits");
    auto [l, n] =
        testing::prefer_ops(g, rules, [](std::string_view op) { return op == "cuda.QGemvQ8S"; });
    EXPECT_EQ(n, 0) << "tied: " << l.op_mix_string();
  }
  // Several activation rows: only where each row starts 16-byte aligned (K a multiple of 128).
  for (int64_t K : {576, 4096}) {
    Graph g;
    Tensor x = g.tensor("x", {Expr(3), Expr(K)});
    nn::linear(x, g.tensor("w", {Expr(40), Expr(K)}, DType::Q4_0).dequantize()).output("y");
    auto [l, n] =
        testing::prefer_ops(g, rules, [](std::string_view op) { return op == "cuda.QGemvQ8S"; });
    EXPECT_EQ(n, K % 128 == 0 ? 1 : 0) << K << ": " << l.op_mix_string();
  }
}

TEST(CudaQuantRules, EveryTypesKernelsCompileForSm90) {
  LUMINAL_REQUIRE_NVRTC();
  testing::CudaRulesOnly rules;
  std::vector<std::string> sources;
  for (DType t : kWeightBlockDTypes) {
    const int64_t K = row_for(t);
    for (int64_t m : {1, 3, 8}) {
      Graph g;
      Tensor x = g.tensor("x", {Expr(m), Expr(K)});
      Tensor w = g.tensor("w", {Expr(37), Expr(K)}, t);
      nn::linear(x, w.dequantize()).output("y");
      w.dequantize().output("deq");
      nn::embedding(w.dequantize(), g.tensor("ids", {Expr(m)}, DType::I32)).output("rows");
      auto [l, n] = testing::prefer_ops(g, rules, [](std::string_view op) {
        return op == "cuda.QGemv" || op == "cuda.QGather" || op == "Dequantize";
      });
      ASSERT_EQ(count_op(l, "cuda.QGemv"), 1) << tag(t) << " " << l.op_mix_string();
      ASSERT_EQ(count_op(l, "cuda.QGather"), 1) << tag(t) << " " << l.op_mix_string();
      for (cuda::GeneratedKernel& k : cuda::generate_kernels(l, PlanSpec{}))
        sources.push_back(k.source);
      auto [lq, nq] = testing::prefer_ops(g, rules, [](std::string_view op) {
        return op == "cuda.QGemvQ8" || op == "cuda.QuantizeQ8";
      });
      ASSERT_EQ(count_op(lq, "cuda.QGemvQ8"), 1) << tag(t) << " " << lq.op_mix_string();
      ASSERT_EQ(count_op(lq, "cuda.QuantizeQ8"), 1) << tag(t) << " " << lq.op_mix_string();
      for (cuda::GeneratedKernel& k : cuda::generate_kernels(lq, PlanSpec{}))
        sources.push_back(k.source);
    }
  }
  // The split-layout form (with its QRepack and split QuantizeQ8), every lane count.
  for (DType t : kWeightBlockDTypes) {
    if (!split_layout_type(t)) continue;
    for (const char* lanes : {"1", "2", "4"})
      for (int64_t m : {1, 3, 0}) {
        // (m 0: one row of SmolLM2's k = 576, whose rows are not 16-byte multiples)
        const int64_t K = block_size(t) == 256 ? 512 : m == 0 ? 576 : 128;
        m = std::max<int64_t>(m, 1);
        if (block_size(t) == 256 && *lanes != '2') continue;
        ::setenv("LUMINAL_CUDA_QGEMV_LANES", lanes, 1);
        Graph g;
        Tensor x = g.tensor("x", {Expr(m), Expr(K)});
        nn::linear(x, g.tensor("w", {Expr(37), Expr(K)}, t).dequantize()).output("y");
        auto [l, n] = testing::prefer_ops(g, rules, [](std::string_view op) {
          return op == "cuda.QGemvQ8S" || op == "cuda.QRepack" || op == "cuda.QuantizeQ8";
        });
        EXPECT_EQ(count_op(l, "cuda.QGemvQ8S"), 1) << tag(t) << " " << l.op_mix_string();
        EXPECT_EQ(count_op(l, "cuda.QRepack"), 1) << tag(t) << " " << l.op_mix_string();
        for (cuda::GeneratedKernel& k : cuda::generate_kernels(l, PlanSpec{}))
          sources.push_back(k.source);
        ::unsetenv("LUMINAL_CUDA_QGEMV_LANES");
      }
  }
  // The epilogue forms: a residual add and SwiGLU's SiLU(gate) * up in the QGemv's store.
  for (DType t : {DType::Q4_0, DType::Q5_1, DType::Q4_K, DType::Q6_K})
    for (int which = 0; which < 2; ++which) {
      const int64_t K = row_for(t);
      Graph g;
      Tensor x = g.tensor("x", {Expr(3), Expr(K)});
      Tensor r = g.tensor("r", {Expr(3), Expr(40)});
      const Tensor y = nn::linear(x, g.tensor("w", {Expr(40), Expr(K)}, t).dequantize());
      (which == 0 ? r + y : r.silu() * y).output("y");
      for (const char* op : {"cuda.QGemvEpi", "cuda.QGemvQ8Epi", "cuda.QGemvQ8SEpi"}) {
        // (the split form reads 3 rows of k = 96 only as Q8_1 rows 16-byte aligned: Q6_K here)
        if (std::string_view(op) == "cuda.QGemvQ8SEpi" && t != DType::Q6_K) continue;
        auto [l, n] = testing::prefer_ops(g, rules, [op](std::string_view o) { return o == op; });
        ASSERT_EQ(n, 1) << tag(t) << " " << op << " " << l.op_mix_string();
        for (cuda::GeneratedKernel& k : cuda::generate_kernels(l, PlanSpec{}))
          sources.push_back(k.source);
      }
    }
  testing::expect_compiles(sources, "a quant kernel");
}

// ---------------------------------------------------------------- GPU

std::pair<LlirGraph, int> forced(const Graph& g, std::initializer_list<std::string_view> ops) {
  return testing::prefer_ops(g, testing::gpu(), [&](std::string_view op) {
    for (std::string_view o : ops)
      if (op == o) return true;
    return false;
  });
}

TEST(CudaQuant, DequantizeIsBitExact) {
  LUMINAL_REQUIRE_GPU();
  for (DType t : kWeightBlockDTypes) {
    const int64_t K = row_for(t) * 2, N = 14;
    Graph g;
    Tensor w = g.tensor("w", {N, K}, t);
    w.dequantize().output("all");
    w.reshape({N / 2, 2, K}).slice(1, 0, 1).reshape({N / 2, K}).dequantize().output("even");
    w.dequantize(DType::BF16).output("bf16");
    auto [l, n] = forced(g, {"Dequantize"});
    ASSERT_EQ(n, 3) << tag(t) << " " << l.op_mix_string();
    const HostBuffer wb = random_blocks(t, N * K, 3);
    testing::LoadedPlan lp = testing::load_plan(testing::gpu(), l);
    const testing::PlanRun r = testing::run_plan(lp, {{"w", wb}}, {});
    const std::vector<float> want = decode(wb);
    const std::vector<float> all = floats(r.outputs.at("all"));
    const std::vector<float> even = floats(r.outputs.at("even"));
    ASSERT_EQ(all.size(), want.size());
    int bad = 0;
    for (size_t i = 0; i < want.size(); ++i)
      bad += std::memcmp(&all[i], &want[i], 4) != 0;
    for (int64_t row = 0; row < N / 2; ++row)
      for (int64_t k = 0; k < K; ++k)
        bad += std::memcmp(&even[static_cast<size_t>(row * K + k)],
                           &want[static_cast<size_t>(2 * row * K + k)], 4) != 0;
    const std::vector<uint8_t>& h = r.outputs.at("bf16").bytes;
    for (size_t i = 0; i < want.size(); ++i) {
      uint16_t got;
      std::memcpy(&got, h.data() + 2 * i, 2);
      bad += got != f32_to_bf16_bits(want[i]);
    }
    EXPECT_EQ(bad, 0) << tag(t);
  }
}

/// gamma(n) of the error analysis.
double gamma(double n) { return n * 0x1p-24 / (1 - n * 0x1p-24); }

/// LUMINAL_CUDA_QGEMV_WARPS for a scope ("": unset).
struct WarpsEnv {
  explicit WarpsEnv(const char* w) {
    if (*w) ::setenv("LUMINAL_CUDA_QGEMV_WARPS", w, 1);
  }
  ~WarpsEnv() { ::unsetenv("LUMINAL_CUDA_QGEMV_WARPS"); }
};

/// One GEMV run of gemv_runs: weight type, sizes, the inputs and the kernel's output.
struct GemvRun {
  DType t = DType::Q4_0;
  int64_t m = 0, n = 0, k = 0;
  std::string at;  // the case, for messages
  HostBuffer wb;
  std::vector<float> xs, got;
};

/// x [m, k] @ Dequantize(w [n, k])^T forced to `ops` (ops[0] the GEMV, once) for every weight type
/// (that `serves`, if given), three k each (the legacy types' `legacy_ks`, by default not
/// multiples of 256), m in `ms`, n = 37 + 2m and the
/// split-k widths default, 1 and 8 (those at m 1 and 5): `check` judges each run. Returns the
/// number of runs.
int gemv_runs(std::initializer_list<int64_t> ms, std::initializer_list<std::string_view> ops,
              uint64_t seed, const std::function<void(const GemvRun&)>& check,
              std::vector<int64_t> legacy_ks = {96, 576, 4128},
              const std::function<bool(DType)>& serves = nullptr) {
  int runs = 0;
  for (DType t : kWeightBlockDTypes) {
    if (serves && !serves(t)) continue;
    const bool k_type = block_size(t) == 256;
    const std::vector<int64_t> ks = k_type ? std::vector<int64_t>{256, 1536, 4096} : legacy_ks;
    for (int64_t K : ks)
      for (int64_t m : ms)
        for (const char* warps : {"", "1", "8"}) {
          if (*warps && m != 1 && m != 5) continue;
          GemvRun r;
          r.t = t;
          r.m = m;
          r.n = 37 + 2 * m;
          r.k = K;
          r.at = tag(t) + " m " + std::to_string(m) + " n " + std::to_string(r.n) + " k " +
                 std::to_string(K) + " warps '" + warps + "': ";
          Graph g;
          Tensor x = g.tensor("x", {Expr(m), Expr(K)});
          Tensor w = g.tensor("w", {Expr(r.n), Expr(K)}, t);
          nn::linear(x, w.dequantize()).output("y");
          WarpsEnv env(warps);
          auto [l, n] = forced(g, ops);
          const std::string_view gemv = *ops.begin();
          EXPECT_EQ(count_op(l, gemv), 1) << r.at << l.op_mix_string();
          if (count_op(l, gemv) != 1) continue;
          r.wb = random_blocks(t, r.n * K, ++seed);
          r.xs = random_floats(m * K, ++seed);
          testing::LoadedPlan lp = testing::load_plan(testing::gpu(), l);
          r.got = floats(
              testing::run_plan(lp, {{"x", f32_buffer(r.xs)}, {"w", r.wb}}, {}).outputs.at("y"));
          check(r);
          ++runs;
        }
  }
  return runs;
}

TEST(CudaQuant, QGemvWithinTheBound) {
  LUMINAL_REQUIRE_GPU();
  const int runs = gemv_runs({1, 2, 3, 5, 8}, {"cuda.QGemv"}, 10, [](const GemvRun& r) {
    const std::vector<float> wf = decode(r.wb);
    const std::vector<double> bs = min_terms(r.wb);
    const int64_t K = r.k;
    const double D = 32 + static_cast<double>(K / 32) + 11;
    int bad = 0;
    for (int64_t i = 0; i < r.m; ++i)
      for (int64_t j = 0; j < r.n; ++j) {
        double want = 0, mag = 0, wx = 0;
        for (int64_t k = 0; k < K; ++k) {
          const size_t wi = static_cast<size_t>(j * K + k);
          const double xv = r.xs[static_cast<size_t>(i * K + k)];
          want += wf[wi] * xv;
          mag += (std::fabs(wf[wi]) + 2 * bs[wi]) * std::fabs(xv);
          wx += std::fabs(wf[wi] * xv);
        }
        const double tol = gamma(D) * mag + 0x1p-24 * wx + 1e-30;
        const double g1 = r.got[static_cast<size_t>(i * r.n + j)];
        if (!(std::fabs(g1 - want) <= tol)) {
          if (bad < 3)
            ADD_FAILURE() << r.at << "y[" << i << "," << j << "] = " << g1 << ", want " << want
                          << " +- " << tol;
          ++bad;
        }
      }
    EXPECT_EQ(bad, 0) << r.at;
  });
  EXPECT_GT(runs, 150);
}

TEST(CudaQuant, QGatherIsBitExact) {
  LUMINAL_REQUIRE_GPU();
  for (DType t : kWeightBlockDTypes) {
    const int64_t K = row_for(t), V = 41, S = 7;
    Graph g;
    Tensor table = g.tensor("embed", {V, K}, t);
    nn::embedding(table.dequantize(), g.tensor("ids", {Expr(S)}, DType::I32)).output("rows");
    auto [l, n] = forced(g, {"cuda.QGather"});
    ASSERT_EQ(n, 1) << tag(t) << " " << l.op_mix_string();
    const HostBuffer wb = random_blocks(t, V * K, 50);
    const std::vector<int32_t> ids = {0, 40, 7, 7, 13, 39, 1};
    const std::vector<float> got = testing::run_gather(testing::gpu(), l, wb, ids);
    const std::vector<float> want = decode(wb);
    ASSERT_EQ(got.size(), static_cast<size_t>(S * K));
    EXPECT_EQ(testing::gathered_mismatches(got, want, ids, K), 0) << tag(t);
  }
}

/// LUMINAL_CUDA_QGEMV for a scope.
struct FormEnv {
  explicit FormEnv(const char* f) { ::setenv("LUMINAL_CUDA_QGEMV", f, 1); }
  ~FormEnv() { ::unsetenv("LUMINAL_CUDA_QGEMV"); }
};

// cuda.QuantizeQ8 gives blocks::quantize_reference's bytes: random rows, a zero block, a block
// holding a NaN, a tiny block (127 / amax overflows), ties of largest magnitude (+v and -v: the
// first wins for Q8_K), read through a transposing view.
TEST(CudaQuant, QuantizeQ8IsBitExact) {
  LUMINAL_REQUIRE_GPU();
  for (DType w : {DType::Q4_0, DType::Q4_K}) {
    const DType af = cuda::cuda_activation_format(w);
    const int64_t K = 1024, m = 5;
    std::vector<float> xs = random_floats(m * K, 5 + static_cast<uint64_t>(af));
    for (int64_t k = 0; k < 256; ++k)
      xs[static_cast<size_t>(K + k)] = 0.0f;  // row 1, first 256: zeros
    xs[static_cast<size_t>(2 * K + 300)] = std::nanf("");
    for (int64_t k = 512; k < 768; ++k)
      xs[static_cast<size_t>(2 * K + k)] = 1e-39f * static_cast<float>(k % 3);
    xs[static_cast<size_t>(3 * K + 10)] = 1.5f;
    xs[static_cast<size_t>(3 * K + 20)] = -1.5f;
    // x is stored [K, m]; the graph reads its transpose, so the kernel reads through a view
    std::vector<float> xt(xs.size());
    for (int64_t i = 0; i < m; ++i)
      for (int64_t k = 0; k < K; ++k)
        xt[static_cast<size_t>(k * m + i)] = xs[static_cast<size_t>(i * K + k)];
    Graph g;
    Tensor x = g.tensor("x", {Expr(K), Expr(m)});
    nn::linear(x.permute({1, 0}), g.tensor("w", {Expr(8), Expr(K)}, w).dequantize()).output("y");
    auto [l, n] = forced(g, {"cuda.QGemvQ8", "cuda.QuantizeQ8"});
    ASSERT_EQ(count_op(l, "cuda.QuantizeQ8"), 1) << l.op_mix_string();
    // an extra Output reading the quantized activation
    int q = -1, o = -1;
    for (size_t i = 0; i < l.nodes.size(); ++i) {
      if (l.nodes[i].op->name == "cuda.QuantizeQ8") q = static_cast<int>(i);
      if (l.nodes[i].op == hlir_op(OpKind::Output)) o = static_cast<int>(i);
    }
    ASSERT_GE(q, 0);
    ASSERT_GE(o, 0);
    LlirNode out = l.nodes[static_cast<size_t>(o)];
    out.inputs = {q};
    out.attrs.label = "xq";
    out.attrs.dtype = af;
    out.attrs.shape = l.nodes[static_cast<size_t>(q)].attrs.shape;
    out.attrs.views = {View::contiguous(out.attrs.shape)};
    l.nodes.push_back(out);
    l.fill_input_dtypes();
    testing::LoadedPlan lp = testing::load_plan(testing::gpu(), l);
    const testing::PlanRun r =
        testing::run_plan(lp, {{"x", f32_buffer(xt)}, {"w", random_blocks(w, 8 * K, 9)}}, {});
    std::vector<uint8_t> want(storage_bytes(af, m * K));
    for (int64_t i = 0; i < m; ++i)
      blocks::quantize_reference(af, xs.data() + i * K, want.data() + storage_bytes(af, i * K), K);
    EXPECT_EQ(r.outputs.at("xq").bytes, want) << name(af);
  }
}

// cuda.QGemvQ8 against the f64 dot of the dequantised weights with the dequantised activation,
// within testing::quant_dot_bound's rounding bound at the kernel's accumulation depth, and against
// the f32 activation within the activation's rounding as well.
/// The integer form's check: every output within quant_dot_bound at its lanes' depth.
void check_integer_form(const GemvRun& r) {
  const int64_t row_bytes = static_cast<int64_t>(storage_bytes(r.t, r.k));
  const int64_t depth = 2 * ((r.k / 32 + 7) / 8) + 16;
  int bad = 0;
  for (int64_t i = 0; i < r.m; ++i)
    for (int64_t j = 0; j < r.n; ++j) {
      const testing::QuantDotBound b = testing::quant_dot_bound(
          r.t, r.wb.bytes.data() + j * row_bytes, r.xs.data() + i * r.k, r.k);
      const double tol = b.bound_q_at_depth(depth);
      const double g1 = r.got[static_cast<size_t>(i * r.n + j)];
      if (!(std::fabs(g1 - b.y_q) <= tol) || !(std::fabs(g1 - b.y) <= tol + b.e_q + b.e_s)) {
        if (bad < 3)
          ADD_FAILURE() << r.at << "y[" << i << "," << j << "] = " << g1 << ", want " << b.y_q
                        << " +- " << tol << " (f32 activation: " << b.y << ")";
        ++bad;
      }
    }
  EXPECT_EQ(bad, 0) << r.at;
}

TEST(CudaQuant, QGemvQ8WithinTheBound) {
  LUMINAL_REQUIRE_GPU();
  const int runs =
      gemv_runs({1, 2, 5, 8}, {"cuda.QGemvQ8", "cuda.QuantizeQ8"}, 200, check_integer_form);
  EXPECT_GT(runs, 120);
}

/// LUMINAL_CUDA_QGEMV_LANES for a scope.
struct LanesEnv {
  explicit LanesEnv(const char* l) { ::setenv("LUMINAL_CUDA_QGEMV_LANES", l, 1); }
  ~LanesEnv() { ::unsetenv("LUMINAL_CUDA_QGEMV_LANES"); }
};

// The split-layout form (QRepack run in the plan, the activation split where Q8_1), with 1, 2
// and 4 lanes a unit for the legacy types (K a multiple of 128, where several rows are split),
// and the plain integer form with 1 and 4 lanes (2 is the default, above).
TEST(CudaQuant, QGemvQ8SplitLayoutAndLaneCountsWithinTheBound) {
  LUMINAL_REQUIRE_GPU();
  int runs = 0;
  for (const char* lanes : {"1", "2", "4"}) {
    LanesEnv env(lanes);
    runs += gemv_runs({1, 3, 8}, {"cuda.QGemvQ8S", "cuda.QuantizeQ8", "cuda.QRepack"}, 300,
                      check_integer_form, {128, 640, 4096}, [&](DType t) {
                        return split_layout_type(t) && (block_size(t) == 32 || *lanes == '2');
                      });
    if (*lanes != '2')
      runs += gemv_runs({1, 5}, {"cuda.QGemvQ8", "cuda.QuantizeQ8"}, 400, check_integer_form,
                        {96, 576, 4128}, [](DType t) { return block_size(t) == 32; });
  }
  EXPECT_GT(runs, 150);
}

// A session folds QRepack once at load (the seed reads its Fold leaf): QGemvQ8S then reads the
// folded weight, the GGUF-layout weight is released, and the output is within the bound.
TEST(CudaQuant, SplitLayoutIsFoldedOnceAtLoad) {
  LUMINAL_REQUIRE_GPU();
  uint64_t seed = 500;
  for (DType t : {DType::Q4_0, DType::Q5_1, DType::Q8_0, DType::Q6_K}) {
    const int64_t K = 4096, N = 200;
    Graph g;
    Tensor x = g.tensor("x", {Expr(1), Expr(K)});
    nn::linear(x, g.tensor("w", {Expr(N), Expr(K)}, t).persist().dequantize()).output("y");
    // (the first genome, then the fewest-kernels seed: it reads the fold; the search keeps it,
    // far faster than dequantising every step)
    Session s(g, testing::gpu(), CompileOptions().search_graph_limit(2).verbose(false));
    GemvRun r;
    r.t = t;
    r.m = 1;
    r.n = N;
    r.k = K;
    r.at = tag(t) + " folded: ";
    r.wb = random_blocks(t, N * K, ++seed);
    r.xs = random_floats(K, ++seed);
    s.set_bytes("w", r.wb.bytes.data(), r.wb.bytes.size());
    s.set("x", r.xs);
    s.compile();
    EXPECT_EQ(count_op(s.llir(), "cuda.QGemvQ8S"), 1) << r.at << s.llir().op_mix_string();
    EXPECT_EQ(count_op(s.llir(), "cuda.QRepack"), 0) << r.at << s.llir().op_mix_string();
    s.execute();
    EXPECT_EQ(s.stats().fold_runs, 1u) << r.at << s.fold_report();
    EXPECT_EQ(s.stats().bytes_released, r.wb.bytes.size()) << r.at;
    r.got = s.get<float>("y");
    check_integer_form(r);
    s.execute();
    EXPECT_EQ(s.stats().fold_runs, 1u) << r.at;
    EXPECT_EQ(s.get<float>("y"), r.got) << r.at;
  }
}

// cuda.QGemvEpi: the residual add and SwiGLU's SiLU(gate) * up in the QGemv's store give the bits
// of the QGemv followed by the region's kernel.
TEST(CudaQuant, QGemvEpilogueSameBitsAsTheQGemvAndItsRegion) {
  LUMINAL_REQUIRE_GPU();
  uint64_t seed = 70;
  for (DType t : {DType::Q4_0, DType::Q4_1, DType::Q4_K, DType::Q6_K})
    for (int64_t m : {1, 3})
      for (int which = 0; which < 2; ++which) {
        const int64_t K = row_for(t) * 3, N = 136;
        Graph g;
        Tensor x = g.tensor("x", {Expr(m), Expr(K)});
        Tensor r = g.tensor("r", {Expr(m), Expr(N)});
        const Tensor y = nn::linear(x, g.tensor("w", {Expr(N), Expr(K)}, t).dequantize());
        (which == 0 ? r + y : r.silu() * y).output("y");
        const std::string at =
            tag(t) + " m " + std::to_string(m) + (which ? " swiglu" : " residual");
        const testing::BufferMap in{{"x", f32_buffer(random_floats(m * K, ++seed))},
                                    {"r", f32_buffer(random_floats(m * N, ++seed))},
                                    {"w", random_blocks(t, N * K, ++seed)}};
        for (const std::string_view op : {"cuda.QGemv", "cuda.QGemvQ8", "cuda.QGemvQ8S"}) {
          if (op == "cuda.QGemvQ8S" && (!split_layout_type(t) || (m > 1 && block_size(t) == 32)))
            continue;
          const std::string op_epi = std::string(op) + "Epi";
          auto [fused, epi] = forced(g, {op_epi, "cuda.QuantizeQ8", "cuda.QRepack"});
          ASSERT_EQ(count_op(fused, op_epi), 1) << at << " " << fused.op_mix_string();
          auto [plain, q] = forced(g, {op, "cuda.QuantizeQ8", "cuda.QRepack", "cuda.Fused"});
          ASSERT_EQ(count_op(plain, op), 1) << at << " " << plain.op_mix_string();
          testing::LoadedPlan a = testing::load_plan(testing::gpu(), fused);
          testing::LoadedPlan b = testing::load_plan(testing::gpu(), plain);
          const std::vector<uint8_t> got = testing::run_plan(a, in, {}).outputs.at("y").bytes;
          const std::vector<uint8_t> want = testing::run_plan(b, in, {}).outputs.at("y").bytes;
          EXPECT_EQ(got, want) << at << " " << op;
        }
      }
}

/// LUMINAL_QUANT=off for a scope.
struct QuantOff {
  QuantOff() { ::setenv("LUMINAL_QUANT", "off", 1); }
  ~QuantOff() { ::unsetenv("LUMINAL_QUANT"); }
};

TEST(CudaQuant, Q8GgufModelMatchesTheCpuOnTheSameWeights) {
  LUMINAL_REQUIRE_GPU();
  const std::filesystem::path file =
      std::filesystem::path(LUMINAL_SOURCE_DIR) / "tests/data/gguf/models/qwen2-q8_0.gguf";
  models::DecoderShape shape;
  shape.slots = 64;
  shape.max_step = 16;
  const auto opts = CompileOptions().search_graph_limit(6).verbose(false);
  std::optional<models::CausalLM> gpu_f32;
  {
    FormEnv f32("f32");  // the f32 form: the same sums as the CPU's f32 weights, near to rounding
    gpu_f32.emplace(models::CausalLM::load(file, testing::gpu(), shape, opts));
  }
  models::CausalLM& gpu = *gpu_f32;
  int blocks_bound = 0;
  for (NodeId id : gpu.decoder().graph.inputs())
    blocks_bound += is_block(gpu.decoder().graph.node(id).dtype);
  EXPECT_GT(blocks_bound, 0) << "the GGUF's Q8_0 weights were widened on CUDA";
  cpu::CpuBackend cpu(2);
  std::optional<models::CausalLM> ref;
  {
    QuantOff off;
    ref.emplace(models::CausalLM::load(file, cpu, shape, opts));
  }
  const std::vector<int32_t> ids = {1, 17, 42, 99, 5, 200, 3, 64};
  const std::vector<float> a = ref->forward(ids), b = gpu.forward(ids);
  ASSERT_EQ(a.size(), b.size());
  double worst = 0, largest = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    worst = std::max(worst, static_cast<double>(std::fabs(a[i] - b[i])));
    largest = std::max(largest, static_cast<double>(std::fabs(a[i])));
  }
  EXPECT_LT(worst, 1e-4 * (1 + largest)) << "largest logit difference " << worst;
  ref->reset();
  gpu.reset();
  EXPECT_EQ(gpu.generate_greedy(ids, 16), ref->generate_greedy(ids, 16));
  const LlirGraph& decode_step = gpu.session().llir({{"s", 1}, {"c", 1}});
  std::printf("[quant] qwen2 q8_0 decode on CUDA: %s\n", decode_step.op_mix_string().c_str());
  // The integer form: the activation rounded to 8 bits moves the logits by a little more.
  std::optional<models::CausalLM> gpu8;
  {
    FormEnv int8("int8");
    gpu8.emplace(models::CausalLM::load(file, testing::gpu(), shape, opts));
  }
  ref->reset();
  const std::vector<float> a2 = ref->forward({ids[0]}), c = gpu8->forward({ids[0]});
  ASSERT_EQ(a2.size(), c.size());
  double worst8 = 0, largest8 = 0;
  for (size_t i = 0; i < a2.size(); ++i) {
    worst8 = std::max(worst8, static_cast<double>(std::fabs(a2[i] - c[i])));
    largest8 = std::max(largest8, static_cast<double>(std::fabs(a2[i])));
  }
  std::printf("[quant] qwen2 q8_0 int8 form: largest logit difference %.3g (largest logit %.3g)\n",
              worst8, largest8);
  EXPECT_LT(worst8, 0.03 * (1 + largest8));
  const LlirGraph& step8 = gpu8->session().llir({{"s", 1}, {"c", 1}});
  EXPECT_GT(step8.op_mix()["cuda.QGemvQ8"] + step8.op_mix()["cuda.QGemvQ8Epi"], 0)
      << step8.op_mix_string();
}

}  // namespace
}  // namespace luminal
