// cpu.Matmul (generic strided) and cpu.BlasMatmul (OpenBLAS): the rules (which SumReduce-over-Mul
// matches get which alternative, domination of the SumReduce) and both kernels against the
// ReferenceRuntime: row/column-major operands, batched and broadcast batches, the reduced axis in
// any position, a transposed product, dynamic m and k (0 included), products of one row or one
// column (gemv, threaded), operands whose view is not linear (packed before the gemm). The
// generic kernel matches the reference bit for bit in every dtype; BLAS within
// eps(dtype) * sqrt(k).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "luminal/compiler/lower.hpp"
#include "luminal/cpu/matmul.hpp"
#include "luminal/cpu/quant/isa.hpp"
#include "luminal/ir/prim.hpp"
#include "luminal/kernels/gemm_plan.hpp"
#include "ops_test_util.hpp"
#include "support/expect_error.hpp"

namespace luminal {
namespace {

using opstest::kExact;
using testing::Tol;

const Expr kS = Expr::var("s");

/// BLAS accumulates in the dtype: |err| <= eps * (k + 4 sqrt(k) |want|) for inputs in [-1, 1].
Tol blas_tol(DType t, int64_t k) {
  const double eps = epsilon(t);
  const double kk = static_cast<double>(std::max<int64_t>(k, 1));
  return {4 * eps * std::sqrt(kk), eps * kk};
}

/// A stored [r, c] tensor read as [c, r] (its transpose).
Tensor transposed_input(Graph& g, const std::string& label, Dim r, Dim c, DType t) {
  return g.tensor(label, {r, c}, t).transpose(0, 1);
}

/// The program preferring `op` in every class where it is an option.
LlirGraph program_with(const Graph& g, const std::string& op, const Facts& facts = {}) {
  cpu::CpuBackend cpu(2);
  BuiltSpace b = build_search_space(g, cpu, facts);
  EXPECT_EQ(b.saturation.stop, StopReason::Saturated) << b.saturation.to_string();
  return opstest::choose(b, opstest::prefer_op(op));
}

/// Checks g with the op chosen wherever it can be, expecting `count` nodes of it.
void check_with(const Graph& g, const std::string& op, int count, const std::vector<DynMap>& dyns,
                Tol tol, const std::string& what) {
  LlirGraph p = program_with(g, op);
  EXPECT_EQ(opstest::count_op(p, op), count) << what << "\n" << p.to_text();
  EXPECT_EQ(opstest::count_op(p, "SumReduce"), 0) << what << "\n" << p.to_text();
  opstest::check_program(g, p, dyns, tol, what + " [" + op + "]", 2, 3, -1, 1);
}

// ---------------------------------------------------------------- rules

RuleSet library_rules() {
  cpu::CpuBackend cpu(1);
  for (RuleSet& rs : cpu.rulesets())
    if (rs.name == "cpu.library") return rs;
  ADD_FAILURE() << "no cpu.library ruleset";
  return {};
}

TEST(MatmulRules, BothAlternativesJoinTheSumClassAndDominateIt) {
  Graph g;
  Tensor x = g.tensor("x", {kS, 8});
  Tensor w = g.tensor("w", {8, 5});
  Tensor y = x.matmul(w).output("y");
  EGraph eg;
  Lowered low = lower(g, eg);
  SaturationReport r = run_schedule(eg, Schedule::saturate(library_rules()));
  EXPECT_EQ(r.stop, StopReason::Saturated);
  const ClassId out = eg.find(eg.node(eg.nodes_of(low.roots[0])[0]).children[0]);
  std::vector<std::string> ops;
  ENodeId sum = 0, generic = 0, blas = 0;
  for (ENodeId n : eg.nodes_of(out)) {
    ops.emplace_back(eg.node(n).op->name);
    if (is_op(eg.node(n).op, OpKind::SumReduce)) sum = n;
    if (eg.node(n).op->name == "cpu.Matmul") generic = n;
    if (eg.node(n).op->name == "cpu.BlasMatmul") blas = n;
  }
  ASSERT_EQ(ops, (std::vector<std::string>{"SumReduce", "cpu.Matmul", "cpu.BlasMatmul"}));
  // Children are x and w (not the product); views over [s, 5, 8]; k = axis 2.
  const Attrs& a = eg.attrs_of(generic);
  EXPECT_EQ(eg.find(eg.node(generic).children[0]), eg.find(low.class_of[x.id()]));
  EXPECT_EQ(eg.find(eg.node(generic).children[1]), eg.find(low.class_of[w.id()]));
  EXPECT_EQ(a.axis, 2);
  EXPECT_EQ(a.views[0].dims, (Shape{kS, 5, 8}));
  EXPECT_EQ(a.views[0].strides, (std::vector<Expr>{8 * Expr::z(), Expr(0), Expr::z()}));
  EXPECT_EQ(a.views[1].strides, (std::vector<Expr>{Expr(0), Expr::z(), 5 * Expr::z()}));
  EXPECT_EQ(a.shape, (Shape{kS, 5}));
  bool gen_dom = false, blas_dom = false;
  for (auto [winner, loser] : eg.dominations()) {
    gen_dom |= winner == generic && loser == sum;
    blas_dom |= winner == blas && loser == sum;
  }
  EXPECT_TRUE(gen_dom);
  EXPECT_TRUE(blas_dom);
  (void)y;
}

TEST(MatmulRules, PruningKeepsBothAndDropsTheSum) {
  Graph g;
  g.tensor("x", {kS, 8}).matmul(g.tensor("w", {8, 5})).output("y");
  cpu::CpuBackend cpu(1);
  BuiltSpace b = build_search_space(g, cpu, {});
  EXPECT_GE(b.pruning.dominated, 1u) << b.pruning.to_string();
  EXPECT_EQ(opstest::count_op(opstest::choose(b, opstest::prefer_op("SumReduce")), "SumReduce"), 0);
  EXPECT_EQ(b.space->num_genes(), 1u);
  EXPECT_EQ(b.space->gene_sizes()[0], 2u);
}

TEST(MatmulRules, BlasForFloatProductsInGemmLayouts) {
  auto ops_of = [](const Graph& g) {
    EGraph eg;
    lower(g, eg);
    run_schedule(eg, Schedule::saturate(library_rules()));
    return std::make_pair(
        opstest::live_nodes_of(eg, opstest::cpu_op_named("cpu.Matmul")).size(),
        opstest::live_nodes_of(eg, opstest::cpu_op_named("cpu.BlasMatmul")).size());
  };
  for (DType t : {DType::F32, DType::F64, DType::F16, DType::BF16, DType::I32}) {
    Graph g;
    g.tensor("x", {4, 8}, t).matmul(g.tensor("w", {8, 5}, t)).output("y");
    auto [gen, blas] = ops_of(g);
    EXPECT_EQ(gen, 1u) << name(t);
    // 16-bit matmuls multiply and sum in f32 (their operands are cast up first), so the f32
    // product between the casts is a gemm too.
    EXPECT_EQ(blas, is_float(t) ? 1u : 0u) << name(t);
  }
  // Every other column of a stored [4, 16]: no unit stride along k or m, not a gemm operand.
  Graph g;
  Tensor a = g.tensor("a", {4, 16});
  Tensor strided(g, a.id(), View::contiguous({4, 16}).stride_by(1, 2), DType::F32);
  strided.matmul(g.tensor("w", {8, 5})).output("y");
  auto [gen, blas] = ops_of(g);
  EXPECT_EQ(gen, 1u);
  EXPECT_EQ(blas, 0u);
}

// ---------------------------------------------------------------- numerics: layouts

struct Case {
  std::string name;
  std::function<Tensor(Graph&, DType)> build;  // returns the product
  std::vector<DynMap> dyns;
  int64_t k;
};

std::vector<Case> cases() {
  const std::vector<DynMap> s_vals = {{{"s", 7}}, {{"s", 1}}, {{"s", 0}}, {{"s", 33}}};
  return {
      {"row x row",
       [](Graph& g, DType t) {
         return g.tensor("a", {kS, 12}, t).matmul(g.tensor("b", {12, 9}, t));
       },
       s_vals, 12},
      {"col x row",
       [](Graph& g, DType t) {
         return transposed_input(g, "a", 12, kS, t).matmul(g.tensor("b", {12, 9}, t));
       },
       s_vals, 12},
      {"row x col",
       [](Graph& g, DType t) {
         return g.tensor("a", {kS, 12}, t).matmul(transposed_input(g, "b", 9, 12, t));
       },
       s_vals, 12},
      {"col x col",
       [](Graph& g, DType t) {
         return transposed_input(g, "a", 12, kS, t).matmul(transposed_input(g, "b", 9, 12, t));
       },
       s_vals, 12},
      {"batched",
       [](Graph& g, DType t) {
         return g.tensor("a", {3, kS, 10}, t).matmul(g.tensor("b", {3, 10, 6}, t));
       },
       s_vals, 10},
      {"batch x shared weight",
       [](Graph& g, DType t) {
         return g.tensor("a", {2, kS, 10}, t).matmul(g.tensor("b", {10, 6}, t));
       },
       s_vals, 10},
      {"shared lhs x batch",
       [](Graph& g, DType t) {
         return g.tensor("a", {kS, 10}, t).matmul(g.tensor("b", {4, 10, 6}, t));
       },
       s_vals, 10},
      {"batched transposed rhs (attention scores)",
       [](Graph& g, DType t) {
         Tensor q = g.tensor("q", {2, kS, 8}, t);
         Tensor k = g.tensor("k", {2, kS, 8}, t);
         return q.matmul(k.transpose(1, 2));
       },
       s_vals, 8},
      {"contraction over the dynamic dim",
       [](Graph& g, DType t) {
         return g.tensor("a", {5, kS}, t).matmul(g.tensor("b", {kS, 4}, t));
       },
       s_vals, 33},
      {"vector x matrix",
       [](Graph& g, DType t) {
         return g.tensor("a", {kS}, t).matmul(g.tensor("b", {kS, 7}, t));
       },
       s_vals, 33},
      {"matrix x vector",
       [](Graph& g, DType t) {
         return g.tensor("a", {6, kS}, t).matmul(g.tensor("b", {kS}, t));
       },
       s_vals, 33},
      {"product transposed: mul dims [n, m, k]",
       [](Graph& g, DType t) {
         Tensor a = g.tensor("a", {kS, 11}, t);  // [m, k]
         Tensor b = g.tensor("b", {11, 5}, t);   // [k, n]
         Tensor av(g, a.id(), View::contiguous({kS, 11}).expand(0, 5), t);
         Tensor bv(g, b.id(), View::contiguous({11, 5}).permute({1, 0}).expand(1, kS), t);
         return prim::reduce(OpKind::SumReduce, prim::binary(OpKind::Mul, av, bv), 2);  // [n, m]
       },
       s_vals, 11},
      {"k in the middle: mul dims [m, k, n]",
       [](Graph& g, DType t) {
         Tensor a = g.tensor("a", {kS, 11}, t);
         Tensor b = g.tensor("b", {11, 5}, t);
         Tensor av(g, a.id(), View::contiguous({kS, 11}).expand(2, 5), t);
         Tensor bv(g, b.id(), View::contiguous({11, 5}).expand(0, kS), t);
         return prim::reduce(OpKind::SumReduce, prim::binary(OpKind::Mul, av, bv), 1);  // [m, n]
       },
       s_vals, 11},
  };
}

TEST(MatmulNumerics, GenericMatchesTheReferenceBitForBit) {
  for (DType t : {DType::F32, DType::F64, DType::F16, DType::BF16, DType::I32, DType::I8}) {
    for (const Case& c : cases()) {
      Graph g;
      c.build(g, t).output("y");
      check_with(g, "cpu.Matmul", 1, c.dyns, kExact, std::string(name(t)) + " " + c.name);
    }
  }
}

TEST(MatmulNumerics, BlasMatchesTheReferenceWithinTolerance) {
  for (DType t : {DType::F32, DType::F64}) {
    for (const Case& c : cases()) {
      Graph g;
      c.build(g, t).output("y");
      // At s = 7 every case is a gemm layout: no fallback to the generic kernel.
      const cpu::BlasStats before = cpu::blas_stats();
      opstest::check_program(g, program_with(g, "cpu.BlasMatmul"), {{{"s", 7}}}, blas_tol(t, c.k),
                             c.name, 2, 3, -1, 1);
      const cpu::BlasStats after = cpu::blas_stats();
      EXPECT_GT(after.gemm_calls, before.gemm_calls) << c.name;
      EXPECT_EQ(after.fallbacks, before.fallbacks) << c.name;
      check_with(g, "cpu.BlasMatmul", 1, c.dyns, blas_tol(t, c.k),
                 std::string(name(t)) + " " + c.name);
    }
  }
}

TEST(MatmulNumerics, IntegersWrap) {
  Graph g;
  Tensor a = g.tensor("a", {kS, 6}, DType::I8);
  Tensor b = g.tensor("b", {6, 3}, DType::I8);
  a.matmul(b).output("y");  // products and sums wrap in i8
  Tensor c = g.tensor("c", {kS, 6}, DType::I64);
  Tensor d = g.tensor("d", {6, 3}, DType::I64);
  (c * 40000000000LL).matmul(d * 40000000000LL).output("z");  // products wrap in i64
  LlirGraph prog = program_with(g, "cpu.Matmul");
  EXPECT_EQ(opstest::count_op(prog, "cpu.Matmul"), 2) << prog.to_text();
  opstest::check_program(g, prog, {{{"s", 9}}}, kExact, "i8 and i64", 2, 5, -120, 120);
}

TEST(MatmulNumerics, LargeBatchedF32BothKernels) {
  // Large enough for OpenBLAS threading and for the per-batch OpenMP path.
  Graph g;
  Tensor a = g.tensor("a", {8, kS, 64});
  Tensor b = g.tensor("b", {8, 64, 48});
  a.matmul(b).output("y");
  g.tensor("x", {kS, 96}).matmul(g.tensor("w", {96, 130})).output("z");
  for (const char* op : {"cpu.Matmul", "cpu.BlasMatmul"}) {
    LlirGraph p = program_with(g, op);
    EXPECT_EQ(opstest::count_op(p, op), 2);
    opstest::check_program(g, p, {{{"s", 70}}, {{"s", 5}}}, blas_tol(DType::F32, 96), op, 4, 9, -1,
                           1);
  }
}

// ---------------------------------------------------------------- f32 groups of 8 (AVX2)

/// f32 values +-2^30 and +-2^-30: products are +-2^60 (which cancel), +-1 and +-2^-60, and a
/// sum keeps a product of 1 only where it comes while the big ones have cancelled, so the result
/// depends on the order of the additions.
HostBuffer wide_f32(int64_t n, uint64_t seed) {
  HostBuffer b{DType::F32, std::vector<uint8_t>(static_cast<size_t>(n) * 4)};
  std::mt19937_64 rng(seed);
  for (int64_t i = 0; i < n; ++i) {
    const uint64_t r = rng();
    const float v = std::ldexp((r & 1) ? -1.0f : 1.0f, (r & 2) ? 30 : -30);
    std::memcpy(b.bytes.data() + 4 * i, &v, 4);
  }
  return b;
}

// Decode attention's layouts, where cpu.Matmul runs f32 outputs 8 at a time: scores (both
// operands contiguous along k, outputs stepping by a cache row), values (the probability
// broadcast over the outputs, the cache row contiguous along them), and both operands
// consecutive along the outputs (a rotation). Every k-order of the double sums is the
// reference's, bit for bit, with or without the AVX2 groups (k and the outputs not multiples of
// 8 included).
TEST(MatmulNumerics, F32GroupsOfEightMatchTheReferenceBitForBit) {
  struct F32Case {
    std::string name;
    std::function<Tensor(Graph&)> build;
  };
  const std::vector<F32Case> f32_cases = {
      {"scores q k^T",
       [](Graph& g) {
         Tensor q = g.tensor("q", {3, 2, 67});
         Tensor k = g.tensor("k", {3, kS, 67});
         return q.matmul(k.transpose(1, 2));
       }},
      {"values p v",
       [](Graph& g) {
         Tensor p = g.tensor("p", {3, 2, kS});
         Tensor v = g.tensor("v", {3, kS, 42});
         return p.matmul(v);
       }},
      {"rotation (operands consecutive along the outputs)",
       [](Graph& g) {
         Tensor a = g.tensor("a", {3, kS});
         Tensor b = g.tensor("b", {3, kS});
         Tensor av(g, a.id(), View::contiguous({3, kS}).permute({1, 0}), DType::F32);
         Tensor bv(g, b.id(), View::contiguous({3, kS}).permute({1, 0}), DType::F32);
         return prim::reduce(OpKind::SumReduce, prim::binary(OpKind::Mul, av, bv), 1);
       }},
  };
  for (const F32Case& c : f32_cases) {
    Graph g;
    c.build(g).output("y");
    LlirGraph p = program_with(g, "cpu.Matmul");
    ASSERT_EQ(opstest::count_op(p, "cpu.Matmul"), 1) << c.name << "\n" << p.to_text();
    for (cpu::quant::QuantIsa isa : cpu::quant::available_isas()) {
      cpu::quant::ScopedQuantIsa scoped(isa);
      cpu::CpuBackend cpu(2);
      const std::vector<DynMap> dyns = {{{"s", 203}}, {{"s", 16}}, {{"s", 5}}};
      auto exe = testing::load_plan(cpu, p, dyns);
      for (const DynMap& dyn : dyns) {
        testing::BufferMap in;
        uint64_t seed = 7;
        for (NodeId id : g.inputs())
          in[g.node(id).label] = wide_f32(numel(g.node(id).shape).eval(dyn), seed++);
        const testing::BufferMap want = opstest::run_reference(g, in, dyn);
        const testing::BufferMap got = testing::run_executable(exe, g, in, dyn);
        opstest::expect_same(
            got.at("y"), want.at("y"), kExact,
            c.name + " s=" + std::to_string(dyn.at("s")) + " on " + cpu::quant::isa_name(isa));
      }
    }
  }
}

// ---------------------------------------------------------------- gemv, packed operands

TEST(MatmulNumerics, OneRowOrOneColumnRunsAsGemv) {
  struct GemvCase {
    std::string name;
    std::function<Tensor(Graph&, DType)> build;
    DynMap dyn;
    int64_t k;
    int threads;
  };
  // Decode's x W^T (W stored [out, in]) and x W, W x and W^T x, each large enough for the
  // threaded split (k * outputs >= 2^17) and once small; batched one-row products with at least
  // as many and with fewer batches than threads.
  const std::vector<GemvCase> gemv_cases = {
      {"x W^T (M = 1, W stored [n, k])",
       [](Graph& g, DType t) {
         return g.tensor("x", {kS, 512}, t).matmul(transposed_input(g, "w", 640, 512, t));
       },
       {{"s", 1}},
       512,
       2},
      {"x W (M = 1, W stored [k, n])",
       [](Graph& g, DType t) {
         return g.tensor("x", {kS, 300}, t).matmul(g.tensor("w", {300, 500}, t));
       },
       {{"s", 1}},
       300,
       2},
      {"W x (N = 1)",
       [](Graph& g, DType t) {
         return g.tensor("w", {kS, 400}, t).matmul(g.tensor("x", {400}, t));
       },
       {{"s", 700}},
       400,
       2},
      {"W^T x (N = 1, W stored [k, m])",
       [](Graph& g, DType t) {
         return transposed_input(g, "w", 400, kS, t).matmul(g.tensor("x", {400}, t));
       },
       {{"s", 700}},
       400,
       2},
      {"x W^T, small",
       [](Graph& g, DType t) {
         return g.tensor("x", {kS, 12}, t).matmul(transposed_input(g, "w", 9, 12, t));
       },
       {{"s", 1}},
       12,
       2},
      {"batched one-row products, 3 batches on 2 threads",
       [](Graph& g, DType t) {
         return g.tensor("q", {3, kS, 256}, t).matmul(g.tensor("k", {3, 256, 300}, t));
       },
       {{"s", 1}},
       256,
       2},
      {"batched one-row products, 3 batches on 4 threads",
       [](Graph& g, DType t) {
         return g.tensor("q", {3, kS, 256}, t).matmul(g.tensor("k", {3, 256, 300}, t));
       },
       {{"s", 1}},
       256,
       4},
  };
  for (DType t : {DType::F32, DType::F64}) {
    for (const GemvCase& c : gemv_cases) {
      Graph g;
      c.build(g, t).output("y");
      const std::string what = std::string(name(t)) + " " + c.name;
      LlirGraph p = program_with(g, "cpu.BlasMatmul");
      ASSERT_EQ(opstest::count_op(p, "cpu.BlasMatmul"), 1) << what << "\n" << p.to_text();
      const cpu::BlasStats before = cpu::blas_stats();
      opstest::check_program(g, p, {c.dyn}, blas_tol(t, c.k), what, c.threads, 3, -1, 1);
      const cpu::BlasStats after = cpu::blas_stats();
      EXPECT_GT(after.gemv_calls, before.gemv_calls) << what;
      EXPECT_EQ(after.fallbacks, before.fallbacks) << what;
    }
  }
}

TEST(MatmulNumerics, TwoToFourRowsRunInTheSmallKernel) {
  // Decode's grouped-query attention per KV head: scores [groups, hd] x [hd, c] (both operands
  // contiguous along k) and values [groups, c] x [c, hd] (the second contiguous along n); a
  // transposed first operand; with lengths that leave tails of 8-lane groups. 2 to 4 rows run
  // in small_f32::gemm (AVX2), 5 in BLAS. On 2 threads the 3 products of the first cases are
  // split by columns (matmul_blas.cpp: products that do not share out evenly).
  struct SmallCase {
    std::string name;
    std::function<Tensor(Graph&)> build;
    int64_t k;
  };
  const std::vector<SmallCase> cases = {
      {"scores: q [3, s, 67] x k^T, k stored [3, 50, 67]",
       [](Graph& g) {
         return g.tensor("q", {3, kS, 67}, DType::F32)
             .matmul(g.tensor("k", {3, 50, 67}, DType::F32).transpose(1, 2));
       },
       67},
      {"values: p [3, s, 50] x v [3, 50, 70]",
       [](Graph& g) {
         return g.tensor("p", {3, kS, 50}, DType::F32)
             .matmul(g.tensor("v", {3, 50, 70}, DType::F32));
       },
       50},
      // Three products on two threads are split by columns; 13 columns are fewer than two
      // threads' 8-lane groups, so the pieces are cut at any column (6 and 7 columns).
      {"values: p [3, s, 300] x v [3, 300, 13]",
       [](Graph& g) {
         return g.tensor("p", {3, kS, 300}, DType::F32)
             .matmul(g.tensor("v", {3, 300, 13}, DType::F32));
       },
       300},
      {"a^T [s, 37] (a stored [37, s]) x w [37, 29]",
       [](Graph& g) {
         return transposed_input(g, "a", 37, kS, DType::F32)
             .matmul(g.tensor("w", {37, 29}, DType::F32));
       },
       37},
  };
  for (const SmallCase& c : cases) {
    for (int64_t s : {2, 3, 4, 5}) {
      Graph g;
      c.build(g).output("y");
      const std::string what = c.name + ", s = " + std::to_string(s);
      LlirGraph p = program_with(g, "cpu.BlasMatmul");
      ASSERT_EQ(opstest::count_op(p, "cpu.BlasMatmul"), 1) << what << "\n" << p.to_text();
      const cpu::BlasStats before = cpu::blas_stats();
      opstest::check_program(g, p, {{{"s", s}}}, blas_tol(DType::F32, c.k), what, 2, 3, -1, 1);
      const cpu::BlasStats after = cpu::blas_stats();
      EXPECT_EQ(after.fallbacks, before.fallbacks) << what;
      if (cpu::quant::active() == cpu::quant::QuantIsa::Portable) continue;
      if (s <= 4)
        EXPECT_GT(after.small_calls, before.small_calls) << what;
      else
        EXPECT_EQ(after.small_calls, before.small_calls) << what;
    }
  }
}

/// Attention heads laid out [h, s, d] read as [s, h*d] (o_proj's input): the stride along k is
/// s*d*(z/d) + z%d, not linear in z, then multiplied by a weight stored [n, h*d].
Tensor merged_heads_product(Graph& g, DType t) {
  Tensor heads = g.tensor("o", {4, kS, 16}, t);
  return heads.permute({1, 0, 2}).reshape({kS, 64}).matmul(transposed_input(g, "w", 48, 64, t));
}

TEST(MatmulRules, AnOperandNotLinearInItsIndexIsPackedForBlas) {
  Graph g;
  merged_heads_product(g, DType::F32).output("y");
  EGraph eg;
  lower(g, eg);
  run_schedule(eg, Schedule::saturate(library_rules()));
  EXPECT_EQ(opstest::live_nodes_of(eg, opstest::cpu_op_named("cpu.Matmul")).size(), 1u);
  ASSERT_EQ(opstest::live_nodes_of(eg, opstest::cpu_op_named("cpu.BlasMatmul")).size(), 1u);
  const ENodeId blas = opstest::live_nodes_of(eg, opstest::cpu_op_named("cpu.BlasMatmul"))[0];
  // The view really is not linear along k (else this test would not test packing).
  const Attrs& a = eg.attrs_of(blas);
  EXPECT_FALSE(coefficient(a.views[0].strides[a.axis]).has_value()) << a.to_string();
}

TEST(MatmulNumerics, PackedOperandsMatchTheReference) {
  for (DType t : {DType::F32, DType::F64}) {
    Graph g;
    merged_heads_product(g, t).output("y");
    LlirGraph p = program_with(g, "cpu.BlasMatmul");
    ASSERT_EQ(opstest::count_op(p, "cpu.BlasMatmul"), 1) << p.to_text();
    // s = 7, 33: gathered into the workspace first; s = 1: the view is its own packed copy
    // (offsets equal the flat index), read in place; s = 0: nothing to do.
    for (int64_t s : {7, 33, 1, 0}) {
      const std::string what = std::string(name(t)) + " s=" + std::to_string(s);
      const cpu::BlasStats before = cpu::blas_stats();
      opstest::check_program(g, p, {{{"s", s}}}, blas_tol(t, 64), what, 2, 3, -1, 1);
      const cpu::BlasStats after = cpu::blas_stats();
      EXPECT_EQ(after.fallbacks, before.fallbacks) << what;
      if (s > 1) {
        EXPECT_GT(after.packs, before.packs) << what;
      } else {
        EXPECT_EQ(after.packs, before.packs) << what;
      }
      if (s > 0) {
        EXPECT_GT(after.gemm_calls, before.gemm_calls) << what;
      }
    }
  }
}

/// Grouped-query attention as a frontend writes it: k/v [kv, c, d] repeated to every query head
/// by an expand and a reshape (torch's repeat_interleave), so head h reads kv head h / 3 through
/// a stride c*d*(z/3). Scores q k^T and the output p v.
void repeated_heads(Graph& g, DType t) {
  const int64_t kv = 2, group = 3, d = 16;
  auto repeat = [&](const Tensor& x) {
    return x.reshape({kv, 1, kS, d}).expand({kv, group, kS, d}).reshape({kv * group, kS, d});
  };
  Tensor q = g.tensor("q", {kv * group, 1, d}, t);
  Tensor k = g.tensor("k", {kv, kS, d}, t), v = g.tensor("v", {kv, kS, d}, t);
  Tensor p = g.tensor("p", {kv * group, 1, kS}, t);
  q.matmul(repeat(k).transpose(1, 2)).output("scores");
  p.matmul(repeat(v)).output("out");
}

TEST(MatmulNumerics, RepeatedHeadsRunAsBatchesWithoutPacking) {
  for (DType t : {DType::F32, DType::F64}) {
    Graph g;
    repeated_heads(g, t);
    LlirGraph p = program_with(g, "cpu.BlasMatmul");
    ASSERT_EQ(opstest::count_op(p, "cpu.BlasMatmul"), 2) << p.to_text();
    for (int64_t s : {1, 5, 40}) {
      const std::string what = std::string(name(t)) + " s=" + std::to_string(s);
      const cpu::BlasStats before = cpu::blas_stats();
      opstest::check_program(g, p, {{{"s", s}}}, blas_tol(t, std::max<int64_t>(s, 16)), what, 2, 3,
                             -1, 1);
      const cpu::BlasStats after = cpu::blas_stats();
      // Split into [kv, group] batches: no operand is gathered, nothing falls back.
      EXPECT_EQ(after.packs, before.packs) << what;
      EXPECT_EQ(after.fallbacks, before.fallbacks) << what;
      EXPECT_GT(after.gemm_calls, before.gemm_calls) << what;
    }
  }
}

// ---------------------------------------------------------------- kernels, directly

TEST(MatmulKernels, BlasFallsBackToGenericWhereNoGemmFits) {
  // A[i, k] = a[i + k] (a Hankel view: unit stride on both axes, leading dimension 1 < k).
  const int64_t m = 6, k = 5, n = 4;
  HostBuffer a = opstest::random_buffer(DType::F32, m + k, 11, -1, 1);
  HostBuffer b = opstest::random_buffer(DType::F32, k * n, 12, -1, 1);
  Attrs at;
  at.dtype = DType::F32;
  at.shape = {m, n};
  at.axis = 2;
  at.views = {View{{m, n, k}, {Expr::z(), Expr(0), Expr::z()}},
              View::contiguous({k, n}).permute({1, 0}).expand(0, m)};
  HostBuffer blas = opstest::run_kernel(opstest::cpu_op_named("cpu.BlasMatmul"), at, {&a, &b});
  HostBuffer gen = opstest::run_kernel(opstest::cpu_op_named("cpu.Matmul"), at, {&a, &b});
  opstest::expect_same(blas, gen, kExact, "fallback");
  EXPECT_GE(cpu::blas_stats().fallbacks, 1u);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double want = 0;
      for (int64_t kk = 0; kk < k; ++kk) {
        const float x = static_cast<float>(load_as_double(DType::F32, a.bytes.data(), i + kk));
        const float y = static_cast<float>(load_as_double(DType::F32, b.bytes.data(), kk * n + j));
        want += static_cast<double>(x * y);  // the product rounds to f32, the sum is in double
      }
      EXPECT_EQ(load_as_double(DType::F32, gen.bytes.data(), i * n + j),
                static_cast<double>(static_cast<float>(want)));
    }
}

TEST(MatmulKernels, RejectMalformedNodes) {
  Attrs at;
  at.dtype = DType::F16;
  at.shape = {2, 2};
  at.axis = 2;
  at.views = {View::contiguous({2, 2, 3}), View::contiguous({2, 2, 3})};
  testing::expect_error(
      [&] { opstest::run_kernel(opstest::cpu_op_named("cpu.BlasMatmul"), at, {}); },
      {"cpu.BlasMatmul", "f16"});
  at.axis = 3;
  testing::expect_error([&] { opstest::run_kernel(opstest::cpu_op_named("cpu.Matmul"), at, {}); },
                        {"cpu.Matmul", "axis"});
}

}  // namespace
}  // namespace luminal
