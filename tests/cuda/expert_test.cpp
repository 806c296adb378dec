// cuda.ExpertGemv / cuda.ExpertRows (luminal/cuda/expert_gemv.cpp): expert-indexed matmuls read
// in place by expert id.
//   - CI (no GPU): the rule offers cuda.ExpertGemv on nn::expert_linear for a constant count of
//     at most 8 rows (f32, bf16 with its activation read through the cast or not, block types;
//     D in narrower chunks too), cuda.ExpertRows for 9 or a dynamic count, nothing on a plain
//     matmul or with LUMINAL_CUDA_EXPERT=0, the unfused form still beside it; every variant's
//     kernel compiles for sm_90 with NVRTC.
//   - GPU: f32, bf16 and f16 weights against the reference runtime within the bound of
//     expert_gemv.cpp (D 99, 256 and 2048; m = 1, 3, 8 rows, a shared activation or one per
//     choice, experts repeated, split-k widths 1, 8 and the default, and the prefill form at a
//     dynamic count); every block type within cuda.QGemv's f32-form bound and
//     testing::quant_dot_bound; an id outside [0, E) reported; the tiny Qwen3-MoE and Mixtral on
//     CUDA against the CPU (f32 and their Q8_0 GGUFs: logits close, greedy tokens equal; bf16:
//     finite, the difference printed), the decode program running cuda.ExpertGemv and the
//     prefill program cuda.ExpertRows.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "cuda/cuda_test_util.hpp"
#include "cuda/nn_check.hpp"
#include "luminal/core/blocks.hpp"
#include "luminal/cpu/cpu_backend.hpp"
#include "luminal/cuda/nvrtc.hpp"
#include "luminal/luminal.hpp"
#include "luminal/models/causal_lm.hpp"
#include "luminal/nn/linear.hpp"
#include "luminal/nn/moe.hpp"
#include "support/env_scope.hpp"
#include "support/llir_direct.hpp"
#include "support/quant_bound.hpp"
#include "support/tiny_models.hpp"

namespace luminal {
namespace {

using testing::nn_check::compare_values;
using testing::nn_check::describe;
using testing::nn_check::from_doubles;
using testing::nn_check::to_doubles;
using testing::nn_check::uniform;

constexpr int64_t kE = 6;

using testing::count_op;

bool is_expert(std::string_view op) { return op == "cuda.ExpertGemv" || op == "cuda.ExpertRows"; }

/// y = expert_linear(x, w, ids): x [s, D] (shared) or [s, k, D], w [E, N, D] of `wt` (block
/// types dequantized), ids [s, k] I32; s a constant or the dim "s" in [1, 8]. The output is "y".
Graph expert_graph(std::optional<int64_t> s, int64_t k, bool shared, int64_t N, int64_t D, DType wt,
                   DType xt = DType::F32) {
  Graph g;
  const Expr S = s ? Expr(*s) : Expr::var("s");
  if (!s) g.declare_dim("s", 1, 8);
  Tensor x = shared ? g.tensor("x", {S, Expr(D)}, xt) : g.tensor("x", {S, Expr(k), Expr(D)}, xt);
  Tensor w = g.tensor("w", {Expr(kE), Expr(N), Expr(D)}, wt);
  Tensor ids = g.tensor("ids", {S, Expr(k)}, DType::I32);
  nn::expert_linear(x, is_block(wt) ? w.dequantize() : w, ids).output("y");
  return g;
}

/// The program using the expert op, its activation read in `act` (f32: through the cast's value;
/// bf16/f16: the 16-bit tensor itself), and how many expert nodes it has.
std::pair<LlirGraph, int> forced_expert(const Graph& g, Backend& be, DType act) {
  LlirGraph l = testing::prefer(g, be, [&](const EGraph& eg, ENodeId n) {
    const ENode& e = eg.node(n);
    if (!is_expert(e.op->name)) return 0.0;
    return eg.dtype(e.children[0]) == act ? 2.0 : 1.0;
  });
  int n = 0;
  for (const LlirNode& node : l.nodes)
    n += is_expert(node.op->name) && node.input_dtypes[0] == act;
  return {std::move(l), n};
}

// ---------------------------------------------------------------- CI

TEST(CudaExpertRules, ExpertGemvForFewRowsExpertRowsForMoreNothingOnAPlainMatmul) {
  testing::CudaRulesOnly rules;
  for (DType t : {DType::F32, DType::BF16, DType::Q4_0, DType::Q4_K}) {
    const int64_t D = t == DType::Q4_K ? 256 : 64;
    const DType xt = t == DType::BF16 ? DType::BF16 : DType::F32;
    for (int64_t k : {1, 3, 8}) {
      const Graph g = expert_graph(1, k, true, 40, D, t, xt);
      auto [l, n] = testing::prefer_ops(g, rules, is_expert);
      EXPECT_EQ(count_op(l, "cuda.ExpertGemv"), 1)
          << name(t) << " k " << k << " " << l.op_mix_string();
      EXPECT_EQ(count_op(l, "Gather") + count_op(l, "Dequantize"), 0) << l.op_mix_string();
      // The unfused form stays beside it (the search times both).
      const LlirGraph u = testing::prefer(g, rules, [](const EGraph& eg, ENodeId e) {
        return is_expert(eg.node(e).op->name) ? -1.0 : 0.0;
      });
      EXPECT_EQ(count_op(u, "cuda.ExpertGemv"), 0) << u.op_mix_string();
      EXPECT_EQ(count_op(u, "Gather") + count_op(u, "cuda.QGather"), 1) << u.op_mix_string();
    }
    // 9 rows, and a dynamic count: the prefill form.
    for (std::optional<int64_t> s : {std::optional<int64_t>(3), std::optional<int64_t>()}) {
      const Graph g = expert_graph(s, 3, false, 40, D, t, xt);
      auto [l, n] = testing::prefer_ops(g, rules, is_expert);
      EXPECT_EQ(count_op(l, "cuda.ExpertRows"), 1) << name(t) << " " << l.op_mix_string();
      EXPECT_EQ(count_op(l, "cuda.ExpertGemv"), 0) << l.op_mix_string();
    }
  }
  // bf16: the activation read as the cast's f32 value, or as the bf16 tensor (no cast kernel).
  const Graph g16 = expert_graph(1, 2, true, 40, 64, DType::BF16, DType::BF16);
  for (DType act : {DType::F32, DType::BF16}) {
    auto [l, n] = forced_expert(g16, rules, act);
    EXPECT_EQ(n, 1) << name(act) << " activation: " << l.op_mix_string();
  }
  // D not a multiple of the 16-byte chunk (narrower loads, down to one value) fires too.
  for (int64_t D : {9, 12, 100}) {
    auto [l, n] = testing::prefer_ops(expert_graph(1, 2, true, 7, D, DType::BF16, DType::BF16),
                                      rules, is_expert);
    EXPECT_EQ(n, 1) << "D " << D << ": " << l.op_mix_string();
  }
  // A plain linear layer, and a weight that is no gather of expert rows: none.
  Graph p;
  Tensor x = p.tensor("x", {1, 64});
  nn::linear(x, p.tensor("w", {40, 64})).output("y");
  nn::linear(x, p.tensor("q", {40, 64}, DType::Q4_0).dequantize()).output("z");
  auto [lp, np] = testing::prefer_ops(p, rules, is_expert);
  EXPECT_EQ(np, 0) << lp.op_mix_string();
  // LUMINAL_CUDA_EXPERT=0 offers none.
  ::setenv("LUMINAL_CUDA_EXPERT", "0", 1);
  auto [lo, no] =
      testing::prefer_ops(expert_graph(1, 2, true, 40, 64, DType::F32), rules, is_expert);
  ::unsetenv("LUMINAL_CUDA_EXPERT");
  EXPECT_EQ(no, 0) << lo.op_mix_string();
}

/// LUMINAL_CUDA_EXPERT_WARPS for a scope ("": unset).
struct WarpsEnv {
  explicit WarpsEnv(const char* w) {
    if (*w) ::setenv("LUMINAL_CUDA_EXPERT_WARPS", w, 1);
  }
  ~WarpsEnv() { ::unsetenv("LUMINAL_CUDA_EXPERT_WARPS"); }
};

TEST(CudaExpertRules, EveryVariantCompilesForSm90) {
  LUMINAL_REQUIRE_NVRTC();
  testing::CudaRulesOnly rules;
  std::vector<std::string> sources;
  auto add = [&](const Graph& g, DType act, const std::string& at) {
    auto [l, n] = forced_expert(g, rules, act);
    ASSERT_EQ(n, 1) << at << " " << l.op_mix_string();
    PlanSpec spec;
    spec.facts = g.dim_facts();
    for (const auto& [dim, range] : spec.facts)
      spec.dim_names.push_back(dim);
    for (cuda::GeneratedKernel& k : cuda::generate_kernels(l, spec))
      sources.push_back(k.source);
  };
  for (DType t : {DType::F32, DType::F16, DType::BF16})
    for (const char* warps : {"", "1", "8"}) {
      WarpsEnv env(warps);
      const DType xt = t == DType::F32 ? DType::F32 : t;
      add(expert_graph(1, 3, true, 40, 1024, t, xt), DType::F32, std::string(name(t)) + " f32 x");
      add(expert_graph(1, 8, false, 40, 1024, t, xt), xt, std::string(name(t)) + " own x");
      add(expert_graph(std::nullopt, 2, true, 40, 1024, t, xt), xt, std::string(name(t)) + " rows");
      add(expert_graph(1, 3, false, 40, 99, t, xt), xt, std::string(name(t)) + " D 99");
      add(expert_graph(1, 3, true, 40, 100, t, xt), xt, std::string(name(t)) + " D 100");
    }
  for (DType t : kWeightBlockDTypes) {
    const int64_t D = block_size(t) == 256 ? 512 : 96;
    add(expert_graph(1, 3, true, 40, D, t), DType::F32, std::string(name(t)));
    add(expert_graph(std::nullopt, 2, false, 40, D, t), DType::F32, std::string(name(t)) + " rows");
    WarpsEnv env("4");
    add(expert_graph(1, 1, true, 40, D, t), DType::F32, std::string(name(t)) + " W 4");
  }
  testing::expect_compiles(sources, "an expert kernel");
}

bool is_expert_cast(std::string_view op) {
  return op == "cuda.ExpertGemvCast" || op == "cuda.ExpertRowsCast";
}

/// The program storing the expert matmul cast down, its activation read in its own 16 bits (no
/// cast kernel anywhere), and how many such nodes it has.
std::pair<LlirGraph, int> forced_cast_form(const Graph& g, Backend& be, DType t) {
  LlirGraph l = testing::prefer(g, be, [&](const EGraph& eg, ENodeId n) {
    const ENode& e = eg.node(n);
    if (!is_expert_cast(e.op->name)) return 0.0;
    return eg.dtype(e.children[0]) == t ? 2.0 : 1.0;
  });
  int n = 0;
  for (const LlirNode& node : l.nodes)
    n += is_expert_cast(node.op->name);
  return {std::move(l), n};
}

TEST(CudaExpertRules, TheCastDownAfterTheExpertMatmulIsItsStore) {
  LUMINAL_REQUIRE_NVRTC();
  testing::CudaRulesOnly rules;
  std::vector<std::string> sources;
  for (DType t : {DType::BF16, DType::F16})
    for (bool rows : {false, true}) {
      const std::string at = std::string(name(t)) + (rows ? " rows" : " gemv") + ": ";
      const Graph g =
          expert_graph(rows ? std::nullopt : std::optional<int64_t>(1), 3, true, 40, 256, t, t);
      auto [l, n] = forced_cast_form(g, rules, t);
      EXPECT_EQ(n, 1) << at << l.op_mix_string();
      EXPECT_EQ(count_op(l, rows ? "cuda.ExpertRowsCast" : "cuda.ExpertGemvCast"), 1)
          << at << l.op_mix_string();
      EXPECT_EQ(count_op(l, "Cast"), 0) << at << l.op_mix_string();
      for (cuda::GeneratedKernel& k : cuda::generate_kernels(l, testing::spec_of(g.dim_facts())))
        sources.push_back(k.source);
    }
  // An f32 result has no cast to take.
  auto [l32, n32] =
      testing::prefer_ops(expert_graph(1, 3, true, 40, 256, DType::F32), rules, is_expert_cast);
  EXPECT_EQ(n32, 0) << l32.op_mix_string();
  testing::expect_compiles(sources, "an expert kernel storing bf16/f16");
}

// ---------------------------------------------------------------- GPU

/// Expert ids for `rows` rows in [0, kE), each expert more than once when rows > 1.
HostBuffer expert_ids(int64_t rows, uint64_t seed) {
  std::vector<int32_t> v(static_cast<size_t>(rows));
  for (int64_t i = 0; i < rows; ++i)
    v[static_cast<size_t>(i)] = static_cast<int32_t>((i * 5 + static_cast<int64_t>(seed)) % kE);
  if (rows > 1) v[1] = v[0];  // a repeat within the first token's choices
  HostBuffer b{DType::I32, std::vector<uint8_t>(v.size() * 4)};
  std::memcpy(b.bytes.data(), v.data(), b.bytes.size());
  return b;
}

double gamma(double n) { return n * 0x1p-24 / (1 - n * 0x1p-24); }

struct FloatCase {
  std::optional<int64_t> s;  // nothing: the dim s, run at 5
  int64_t k;
  bool shared;
};

TEST(CudaExpert, FloatWeightsMatchTheReference) {
  LUMINAL_REQUIRE_GPU();
  const FloatCase cases[] = {{1, 1, true},
                             {1, 3, true},
                             {1, 8, false},
                             {1, 8, true},
                             {std::nullopt, 2, true},
                             {std::nullopt, 3, false}};
  const int64_t N = 72;
  uint64_t seed = 1;
  int runs = 0;
  for (DType t : {DType::F32, DType::BF16, DType::F16})
    for (int64_t D : {99, 256, 2048})
      for (const FloatCase& c : cases)
        for (const char* warps : {"", "1", "8"})
          for (int form = 0; form < 2; ++form) {
            // 16-bit weights: the activation read in 16 bits (form 0) or as the cast's f32 value
            // (form 1, the default width only); f32 weights: one form.
            const DType act = form == 0 ? t : DType::F32;
            if (form == 1 && (t == DType::F32 || *warps)) continue;
            const int64_t s = c.s.value_or(5), m = s * c.k;
            const std::string at = std::string(name(t)) + " D " + std::to_string(D) + " s " +
                                   std::to_string(s) + (c.s ? "" : " (dynamic)") + " k " +
                                   std::to_string(c.k) + (c.shared ? " shared" : " own") +
                                   " warps '" + warps + "' x " + std::string(name(act)) + ": ";
            const Graph g = expert_graph(c.s, c.k, c.shared, N, D, t, t);
            WarpsEnv env(warps);
            auto [l, n] = forced_expert(g, testing::gpu(), act);
            ASSERT_EQ(n, 1) << at << l.op_mix_string();
            EXPECT_EQ(count_op(l, c.s && m <= 8 ? "cuda.ExpertGemv" : "cuda.ExpertRows"), 1) << at;
            const int64_t xn = c.shared ? s * D : m * D;
            const std::vector<double> xs = uniform(t, xn, ++seed, -1, 1);
            const std::vector<double> ws = uniform(t, kE * N * D, ++seed, -1, 1);
            const testing::BufferMap in{{"x", from_doubles(t, xs)},
                                        {"w", from_doubles(t, ws)},
                                        {"ids", expert_ids(m, seed)}};
            const DynMap dyn = c.s ? DynMap{} : DynMap{{"s", s}};
            testing::LoadedPlan lp = testing::load_plan(
                testing::gpu(), l,
                c.s ? std::vector<DynMap>{{}} : std::vector<DynMap>{{{"s", 1}}, {{"s", 8}}});
            const std::vector<double> got =
                to_doubles(t, testing::run_plan(lp, in, dyn).outputs.at("y").bytes);
            ReferenceRuntime ref(g);
            for (const auto& [label, buf] : in)
              ref.set_bytes(label, buf.bytes.data(), buf.bytes.size());
            ref.execute(dyn);
            const std::vector<double> want =
                to_doubles(t, ref.get_bytes(Tensor(g, g.find("y"), {}, t)));
            ASSERT_EQ(got.size(), want.size()) << at;
            // Kernel: gamma(lane depth + shuffles + warps) sum |w x|; the reference: each product
            // rounded to f32, the sum rounded once; a 16-bit output: one unit of its last place.
            const auto* ids = reinterpret_cast<const int32_t*>(in.at("ids").bytes.data());
            const double depth = static_cast<double>(D) / 32 + 8 + 8;
            const double ulp = t == DType::BF16 ? 0x1p-7 : t == DType::F16 ? 0x1p-10 : 0.0;
            std::vector<double> tol(want.size());
            for (int64_t r = 0; r < m; ++r)
              for (int64_t j = 0; j < N; ++j) {
                const int64_t xrow = c.shared ? r / c.k : r;
                double a = 0;
                for (int64_t d = 0; d < D; ++d)
                  a += std::fabs(xs[static_cast<size_t>(xrow * D + d)] *
                                 ws[static_cast<size_t>((ids[r] * N + j) * D + d)]);
                const size_t o = static_cast<size_t>(r * N + j);
                tol[o] = (gamma(depth) + 0x1p-23) * a + (ulp + 0x1p-23) * std::fabs(want[o]);
              }
            const auto d = compare_values(got, want, tol);
            EXPECT_EQ(d.bad, 0) << at << describe(d, got.size());
            ++runs;
          }
  EXPECT_GT(runs, 100);
}

/// Valid blocks of `t` with random quants and f16 scales and mins (quant_test.cpp's draw).
HostBuffer random_blocks(DType t, int64_t values, uint64_t seed) {
  HostBuffer b{t, std::vector<uint8_t>(storage_bytes(t, values))};
  blocks::fill_valid_blocks(t, b.bytes, seed);
  std::mt19937_64 rng(seed * 7 + 1);
  std::uniform_real_distribution<float> ex(-12, -4);
  auto scale = [&] {
    float v = std::exp2(ex(rng));
    return f32_to_f16_bits(rng() & 1 ? -v : v);
  };
  for (size_t o = 0; o < b.bytes.size(); o += static_cast<size_t>(block_bytes(t))) {
    uint8_t* p = b.bytes.data() + o;
    const uint16_t d = scale(), mn = scale();
    testing::set_block_scales(t, p, d, mn);
  }
  return b;
}

using testing::min_terms;

TEST(CudaExpert, BlockWeightsWithinTheBound) {
  LUMINAL_REQUIRE_GPU();
  const int64_t N = 40;
  uint64_t seed = 100;
  int runs = 0;
  for (DType t : kWeightBlockDTypes) {
    const bool kt = block_size(t) == 256;
    for (int64_t D : kt ? std::vector<int64_t>{256, 1536} : std::vector<int64_t>{96, 576})
      for (int64_t k : {1, 3, 8})
        for (const char* warps : {"", "1", "8"}) {
          if (*warps && k != 3) continue;
          const std::string at = std::string(name(t)) + " D " + std::to_string(D) + " k " +
                                 std::to_string(k) + " warps '" + warps + "': ";
          const Graph g = expert_graph(1, k, true, N, D, t);
          WarpsEnv env(warps);
          auto [l, n] = forced_expert(g, testing::gpu(), DType::F32);
          ASSERT_EQ(count_op(l, "cuda.ExpertGemv"), 1) << at << l.op_mix_string();
          const HostBuffer wb = random_blocks(t, kE * N * D, ++seed);
          std::vector<float> xs(static_cast<size_t>(D));
          std::mt19937_64 rng(++seed);
          std::uniform_real_distribution<float> u(-1, 1);
          for (float& v : xs)
            v = u(rng);
          HostBuffer xb{DType::F32, std::vector<uint8_t>(xs.size() * 4)};
          std::memcpy(xb.bytes.data(), xs.data(), xb.bytes.size());
          const HostBuffer ib = expert_ids(k, seed);
          testing::LoadedPlan lp = testing::load_plan(testing::gpu(), l);
          const HostBuffer yb =
              testing::run_plan(lp, {{"x", xb}, {"w", wb}, {"ids", ib}}, {}).outputs.at("y");
          std::vector<float> got(yb.bytes.size() / 4);
          std::memcpy(got.data(), yb.bytes.data(), yb.bytes.size());
          std::vector<float> wf(static_cast<size_t>(kE * N * D));
          blocks::dequantize(t, wb.bytes.data(), wf.data(), kE * N * D);
          const std::vector<double> bs = min_terms(wb);
          const auto* ids = reinterpret_cast<const int32_t*>(ib.bytes.data());
          const uint64_t row_bytes = storage_bytes(t, D);
          const double depth = 32 + static_cast<double>(D / 32) + 11;
          int bad = 0;
          for (int64_t r = 0; r < k; ++r)
            for (int64_t j = 0; j < N; ++j) {
              const int64_t row = ids[r] * N + j;
              double want = 0, mag = 0, wx = 0;
              for (int64_t d = 0; d < D; ++d) {
                const size_t wi = static_cast<size_t>(row * D + d);
                const double xv = xs[static_cast<size_t>(d)];
                want += wf[wi] * xv;
                mag += (std::fabs(wf[wi]) + 2 * bs[wi]) * std::fabs(xv);
                wx += std::fabs(wf[wi] * xv);
              }
              const double tol = gamma(depth) * mag + 0x1p-24 * wx + 1e-30;
              const testing::QuantDotBound qb = testing::quant_dot_bound(
                  t, wb.bytes.data() + static_cast<uint64_t>(row) * row_bytes, xs.data(), D);
              const double y = got[static_cast<size_t>(r * N + j)];
              if (!(std::fabs(y - want) <= tol) || !(std::fabs(y - qb.y) <= qb.bound())) {
                if (bad < 3)
                  ADD_FAILURE() << at << "y[" << r << "," << j << "] = " << y << ", want " << want
                                << " +- " << tol << " (quant_dot_bound " << qb.bound() << ")";
                ++bad;
              }
            }
          EXPECT_EQ(bad, 0) << at;
          ++runs;
        }
  }
  EXPECT_EQ(runs, 8 * 2 * 5);
}

TEST(CudaExpert, TheCastFormStoresTheSameBitsAsTheCastAfterIt) {
  LUMINAL_REQUIRE_GPU();
  uint64_t seed = 71;
  for (DType t : {DType::BF16, DType::F16})
    for (bool rows : {false, true}) {
      const std::string at = std::string(name(t)) + (rows ? " rows" : " gemv") + ": ";
      const std::optional<int64_t> s = rows ? std::nullopt : std::optional<int64_t>(1);
      const Graph g = expert_graph(s, 3, true, 40, 1024, t, t);
      auto [lc, nc] = forced_cast_form(g, testing::gpu(), t);
      ASSERT_EQ(nc, 1) << at << lc.op_mix_string();
      auto [lp, np] = forced_expert(g, testing::gpu(), t);
      ASSERT_EQ(np, 1) << at << lp.op_mix_string();
      ASSERT_EQ(count_op(lp, "Cast"), 1) << at << lp.op_mix_string();
      const int64_t sv = s.value_or(5);
      const testing::BufferMap in{{"x", from_doubles(t, uniform(t, sv * 1024, ++seed, -1, 1))},
                                  {"w", from_doubles(t, uniform(t, kE * 40 * 1024, ++seed, -1, 1))},
                                  {"ids", expert_ids(sv * 3, seed)}};
      const DynMap dyn = s ? DynMap{} : DynMap{{"s", sv}};
      const std::vector<DynMap> buckets = s ? std::vector<DynMap>{{}} : std::vector<DynMap>{dyn};
      testing::LoadedPlan pc = testing::load_plan(testing::gpu(), lc, buckets);
      testing::LoadedPlan pp = testing::load_plan(testing::gpu(), lp, buckets);
      const std::vector<uint8_t> a = testing::run_plan(pc, in, dyn).outputs.at("y").bytes;
      const std::vector<uint8_t> b = testing::run_plan(pp, in, dyn).outputs.at("y").bytes;
      EXPECT_EQ(a, b) << at << "the cast form's bits differ from the matmul then the Cast";
    }
}

TEST(CudaExpert, OutOfRangeIdIsReported) {
  LUMINAL_REQUIRE_GPU();
  const Graph g = expert_graph(1, 2, true, 40, 64, DType::F32);
  auto [l, n] = forced_expert(g, testing::gpu(), DType::F32);
  ASSERT_EQ(n, 1) << l.op_mix_string();
  testing::LoadedPlan lp = testing::load_plan(testing::gpu(), l);
  HostBuffer ids = expert_ids(2, 0);
  const int32_t e = static_cast<int32_t>(kE);
  std::memcpy(ids.bytes.data() + 4, &e, 4);
  const testing::BufferMap in{
      {"x", from_doubles(DType::F32, uniform(DType::F32, 64, 1, -1, 1))},
      {"w", from_doubles(DType::F32, uniform(DType::F32, kE * 40 * 64, 2, -1, 1))},
      {"ids", ids}};
  try {
    testing::run_plan(lp, in, {});
    ADD_FAILURE() << "an expert id of " << kE << " ran without an error";
  } catch (const Error& err) {
    EXPECT_NE(std::string(err.what()).find("expert id outside"), std::string::npos) << err.what();
  }
  // The word is cleared: a good run afterwards succeeds.
  EXPECT_NO_THROW(
      testing::run_plan(lp, {{"x", in.at("x")}, {"w", in.at("w")}, {"ids", expert_ids(2, 0)}}, {}));
}

// ---------------------------------------------------------------- models

using testing::EnvScope;

/// max |a - b| and max |b|.
std::pair<double, double> differences(const std::vector<float>& a, const std::vector<float>& b) {
  double worst = 0, largest = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    worst = std::max(worst, static_cast<double>(std::fabs(a[i] - b[i])));
    largest = std::max(largest, static_cast<double>(std::fabs(b[i])));
  }
  return {worst, largest};
}

/// The expert nodes of a program reading weights of `wt`.
int expert_nodes(const LlirGraph& l, std::string_view op, DType wt) {
  int n = 0;
  for (const LlirNode& node : l.nodes)
    n += node.op->name == op && node.input_dtypes.at(2) == wt;
  return n;
}

// The tiny Qwen3-MoE and Mixtral (tests/data/models; 4 experts, 2 a token) on CUDA against the
// CPU backend. The search is limited to the fewest-kernels seed (search_graph_limit 1), so the
// programs are what the seed prefers: cuda.ExpertGemv in decode, cuda.ExpertRows in prefill, for
// every expert matmul (2 a layer). f32: logits within 1e-4 relative, greedy tokens equal. The
// Q8_0 GGUFs: the experts read as stored blocks on CUDA (cuda.QGemv's f32 form for the other
// layers: LUMINAL_CUDA_QGEMV=f32), against the CPU with the same weights widened
// (LUMINAL_QUANT=off): the same sums up to f32 rounding. bf16: both backends in bf16, the
// programs' expert ops checked, the logits' difference printed (see check).
class CudaExpertModels : public ::testing::TestWithParam<std::string> {};

TEST_P(CudaExpertModels, OnCudaAsOnTheCpu) {
  LUMINAL_REQUIRE_GPU();
  const std::string name = GetParam();
  const std::filesystem::path dir = testing::tiny_models_dir() / name;
  const std::filesystem::path gguf = std::filesystem::path(LUMINAL_SOURCE_DIR) / "tests" / "data" /
                                     "gguf" / "models" / (name + "-q8_0.gguf");
  const auto opts = CompileOptions().search_graph_limit(1).verbose(false);
  cpu::CpuBackend cpu(2);
  const std::vector<int32_t> ids = {1, 17, 42, 99, 5, 200, 3, 64};
  // tol > 0: logits within tol (1 + the largest) and greedy tokens equal. tol = 0 (bf16): the
  // logits finite and their difference printed, not bounded: a router's top-k flips where two
  // bf16 probabilities differ by an ulp that the two backends' roundings move.
  auto check = [&](models::CausalLM& gpu, models::CausalLM& ref, double tol, DType wt,
                   const std::string& at) {
    const int layers = static_cast<int>(gpu.decoder().config.num_hidden_layers);
    const LlirGraph& decode = gpu.session().llir({{"s", 1}, {"c", 1}});
    const LlirGraph& prefill = gpu.session().llir({{"s", 8}, {"c", 8}});
    EXPECT_EQ(expert_nodes(decode, "cuda.ExpertGemv", wt), 2 * layers)
        << at << " decode: " << decode.op_mix_string();
    EXPECT_EQ(expert_nodes(prefill, "cuda.ExpertRows", wt), 2 * layers)
        << at << " prefill: " << prefill.op_mix_string();
    std::printf("[expert] %s decode on CUDA: %s\n", at.c_str(), decode.op_mix_string().c_str());
    const std::vector<float> a = gpu.forward(ids), b = gpu.forward({7});
    const std::vector<float> ra = ref.forward(ids), rb = ref.forward({7});
    for (const std::vector<float>* v : {&a, &b})
      EXPECT_TRUE(std::all_of(v->begin(), v->end(), [](float x) { return std::isfinite(x); }))
          << at;
    const auto [worst, largest] = differences(a, ra);
    const auto [w1, l1] = differences(b, rb);
    std::printf(
        "[expert] %s: largest logit difference to the CPU %.3g in prefill (largest logit "
        "%.3g), %.3g in decode\n",
        at.c_str(), worst, largest, w1);
    if (tol == 0) return;
    EXPECT_LE(worst, tol * (1 + largest)) << at << " prefill logits (largest " << largest << ")";
    EXPECT_LE(w1, tol * (1 + l1)) << at << " decode logits (largest " << l1 << ")";
    gpu.reset();
    ref.reset();
    EXPECT_EQ(gpu.generate_greedy(ids, 16), ref.generate_greedy(ids, 16)) << at;
  };
  models::DecoderShape shape;
  shape.slots = 64;
  shape.max_step = 16;
  {
    auto gpu = models::CausalLM::load(dir, testing::gpu(), shape, opts);
    auto ref = models::CausalLM::load(dir, cpu, shape, opts);
    check(gpu, ref, 1e-4, DType::F32, name + " f32");
  }
  {
    models::DecoderShape s16 = shape;
    s16.dtype = DType::BF16;
    auto gpu = models::CausalLM::load(dir, testing::gpu(), s16, opts);
    auto ref = models::CausalLM::load(dir, cpu, s16, opts);
    check(gpu, ref, 0, DType::BF16, name + " bf16");
  }
  {
    std::optional<models::CausalLM> gpu, ref;
    {
      EnvScope f32("LUMINAL_CUDA_QGEMV", "f32");
      gpu.emplace(models::CausalLM::load(gguf, testing::gpu(), shape, opts));
    }
    {
      EnvScope off("LUMINAL_QUANT", "off");
      ref.emplace(models::CausalLM::load(gguf, cpu, shape, opts));
    }
    check(*gpu, *ref, 1e-4, DType::Q8_0, name + " q8_0 gguf");
  }
}

INSTANTIATE_TEST_SUITE_P(Families, CudaExpertModels, ::testing::Values("qwen3-moe", "mixtral"),
                         testing::family_case_name);

}  // namespace
}  // namespace luminal
