// cpu.Row (luminal/cpu/row.cpp): the row programs the row rule builds (softmax, log-softmax,
// RMSNorm, layer norm, masked softmax, RMSNorm of a residual sum) run by the CPU's row kernel
// against the ReferenceRuntime, over static, dynamic-row-count and dynamic-length shapes, row
// lengths from 1 to past one block (512) and on 1 and 2 threads, one row of up to 49,152 elements
// in pieces over the threads; a mutated program must fail. The rules are on by default and
// LUMINAL_CPU_ROWS=off leaves them out.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "luminal/compiler/build_space.hpp"
#include "luminal/core/error.hpp"
#include "ops_test_util.hpp"
#include "support/row_graphs.hpp"
#include "support/sanitizer.hpp"

namespace luminal {
namespace {

// The row rules are on by default (LUMINAL_CPU_ROWS=off turns them off); these tests run with the
// default whatever the environment says.
const bool kRowsOn = [] { return unsetenv("LUMINAL_CPU_ROWS") == 0; }();

/// Whether a backend's rules hold cpu.fuse-rows.
bool has_row_rule(const Backend& b) {
  for (const RuleSet& rs : b.rulesets())
    for (const Rule& r : rs.rules)
      if (r.name == "cpu.fuse-rows") return rs.name == "cpu.rows";
  return false;
}

TEST(RowRules, OnByDefaultOffByTheSwitch) {
  ASSERT_TRUE(kRowsOn);
  cpu::CpuBackend cpu(1);
  EXPECT_TRUE(has_row_rule(cpu));
  setenv("LUMINAL_CPU_ROWS", "off", 1);
  EXPECT_FALSE(has_row_rule(cpu));
  setenv("LUMINAL_CPU_ROWS", "on", 1);
  EXPECT_TRUE(has_row_rule(cpu));
  unsetenv("LUMINAL_CPU_ROWS");
}

using Kind = testing::RowKind;
constexpr auto& kKinds = testing::kRowKinds;
std::string kind_name(Kind k) { return testing::row_kind_name(k); }

Graph make_graph(Kind k, DType t, const std::vector<Dim>& shape) {
  return testing::row_graph(k, t, shape, 64, 4608);
}

/// A row sum may round to the neighbour of the reference's (its additions' order differs from
/// the reference's only where another kernel computes it), and cancellation turns that into an
/// absolute error at the row's scale.
testing::Tol tol_of(DType t) {
  return t == DType::F32 ? testing::Tol{2e-5, 2e-5} : testing::Tol{2e-2, 2e-2};
}

struct ShapeCase {
  std::string name;
  std::vector<Dim> lead;
  std::vector<int64_t> s_at;
  bool dynamic_len = false;
};

std::vector<ShapeCase> shape_cases() {
  return {{"[1, L]", {1}, {}},
          {"[3, L]", {3}, {}},
          {"[s, L]", {"s"}, {1, 3, 40, 64}},
          {"[2, 3, L]", {2, 3}, {}},
          {"[s, c]", {"s"}, {3}, true}};
}

class RowKernel : public ::testing::TestWithParam<std::tuple<Kind, DType>> {};

// Under the sanitizers (make test-sanitize: a Debug build, each check about 30 times slower;
// these 14 tests took 400 s of its run) the fewest-kernels program and the one-thread runs, which
// the release run checks, are left out: every length and shape still runs the chosen cpu.Row
// program and a random one on two threads.
constexpr bool kSanitized = testing::kSanitizerBuild;

TEST_P(RowKernel, MatchesTheReference) {
  ASSERT_TRUE(kRowsOn);
  const auto [kind, t] = GetParam();
  cpu::CpuBackend cpu(2);
  int with_row = 0;
  // (1100: whole rows a block past kRowBlock; 4100: rows in kRowBlock pieces, past kWholeRow)
  for (int64_t L :
       {int64_t{1}, int64_t{31}, int64_t{33}, int64_t{600}, int64_t{1100}, int64_t{4100}}) {
    for (const ShapeCase& sc : shape_cases()) {
      std::vector<Dim> dims = sc.lead;
      dims.push_back(sc.dynamic_len ? Dim("c") : Dim(L));
      const Graph g = make_graph(kind, t, dims);
      std::vector<DynMap> dyns;
      for (int64_t s : sc.s_at)
        dyns.push_back({{"s", s}});
      if (dyns.empty()) dyns.emplace_back();
      if (sc.dynamic_len)
        for (DynMap& d : dyns)
          d["c"] = L;
      BuiltSpace b = build_search_space(g, cpu, g.dim_facts());
      Rng rng(static_cast<uint64_t>(L) * 7 + dims.size());
      for (int d = 0; d < 3; ++d) {
        if (kSanitized && d == 1) continue;
        const LlirGraph l = d == 0 ? opstest::choose(b, opstest::prefer_op("cpu.Row"))
                                   : to_llir(*b.space, d == 1 ? b.space->fewest_kernels_genome()
                                                              : b.space->random_genome(rng));
        // (the seed prices bytes and arithmetic: at 4100 elements a row it may take a norm's sum
        // of squares as a matmul)
        if ((d == 0 || (d == 1 && L < 4100)) && L > 1) {
          EXPECT_GE(opstest::count_op(l, "cpu.Row"), 1) << l.to_text();
        }
        with_row += opstest::count_op(l, "cpu.Row") > 0;
        const std::string what = kind_name(kind) + " " + std::string(name(t)) + " " + sc.name +
                                 " L=" + std::to_string(L) + " program " + std::to_string(d);
        for (int threads : {1, 2})
          if (!kSanitized || threads == 2)
            opstest::check_program(g, l, dyns, tol_of(t), what, threads, 3 + L);
      }
    }
  }
  EXPECT_GT(with_row, 20);
}

INSTANTIATE_TEST_SUITE_P(Graphs, RowKernel,
                         ::testing::Combine(::testing::ValuesIn(kKinds),
                                            ::testing::Values(DType::F32, DType::BF16)),
                         [](const auto& info) {
                           return kind_name(std::get<0>(info.param)) + "_" +
                                  std::string(name(std::get<1>(info.param)));
                         });

TEST(RowKernel, OneLongRowInPiecesMatchesTheReference) {
  // Rows fewer than the threads and at least two pieces long (16,384 elements) run in pieces
  // over the pool (a decode step's rows over a vocabulary); one row gives the same bits on one
  // and two threads.
  ASSERT_TRUE(kRowsOn);
  for (const Kind kind : kKinds)
    for (const DType t : {DType::F32, DType::BF16})
      for (const int64_t L : {int64_t{16384 * 2 + 1000}, int64_t{49152}}) {
        const Graph g = make_graph(kind, t, {Dim(1), Dim(L)});
        cpu::CpuBackend cpu(2);
        BuiltSpace b = build_search_space(g, cpu, g.dim_facts());
        const LlirGraph l = opstest::choose(b, opstest::prefer_op("cpu.Row"));
        ASSERT_GE(opstest::count_op(l, "cpu.Row"), 1) << l.to_text();
        const std::string what =
            kind_name(kind) + " " + std::string(name(t)) + " [1, " + std::to_string(L) + "]";
        for (int threads : {1, 2})
          opstest::check_program(g, l, {DynMap{}}, tol_of(t), what, threads, 5);
        const testing::BufferMap in = opstest::random_inputs(g, {}, 9);
        cpu::CpuBackend one(1), two(2);
        auto p1 = testing::load_plan(one, l);
        auto p2 = testing::load_plan(two, l);
        const testing::BufferMap a = testing::run_executable(p1, g, in);
        const testing::BufferMap c = testing::run_executable(p2, g, in);
        for (const auto& [label, buf] : a)
          EXPECT_EQ(buf.bytes, c.at(label).bytes) << what << " output " << label;
      }
}

TEST(RowKernel, OneLongRowsMaximumInPiecesKeepsTheReferencesBits) {
  // The maximum joined over pieces as over one sequence: -0 before +0 (in a later piece) stays
  // -0, +0 before -0 stays +0, a NaN in the last piece wins, a maximum in the first piece and
  // again in the last is that value, all -inf is -inf.
  constexpr int64_t n = 40000, late = n - 2;
  std::vector<std::vector<float>> rows(5, std::vector<float>(n, -1.0f));
  rows[0][3] = -0.0f;
  rows[0][late] = 0.0f;
  rows[1][5] = 0.0f;
  rows[1][late] = -0.0f;
  rows[2][late] = std::numeric_limits<float>::quiet_NaN();
  rows[3][1] = 2.5f;
  rows[3][late] = 2.5f;
  std::fill(rows[4].begin(), rows[4].end(), -std::numeric_limits<float>::infinity());
  Graph g;
  Tensor x = g.tensor("x", {Expr(1), Expr(n)}, DType::F32);
  Tensor w = g.tensor("w", {Expr(1), Expr(n)}, DType::F32);
  (x.max(1, true).expand({Expr(1), Expr(n)}) * w).output("y");
  const std::vector<float> ones(n, 1.0f);
  cpu::CpuBackend cpu(2);
  BuiltSpace b = build_search_space(g, cpu, g.dim_facts());
  const LlirGraph l = opstest::choose(b, opstest::prefer_op("cpu.Row"));
  ASSERT_EQ(opstest::count_op(l, "cpu.Row"), 1) << l.to_text();
  auto lp = testing::load_plan(cpu, l);
  for (size_t r = 0; r < rows.size(); ++r) {
    testing::BufferMap in;
    in["x"] = to_host_buffer(rows[r].data(), rows[r].size(), DType::F32, "x");
    in["w"] = to_host_buffer(ones.data(), ones.size(), DType::F32, "w");
    const testing::BufferMap got = testing::run_executable(lp, g, in);
    float m;
    std::memcpy(&m, got.at("y").bytes.data(), 4);
    switch (r) {
      case 0: EXPECT_TRUE(m == 0.0f && std::signbit(m)); break;
      case 1: EXPECT_TRUE(m == 0.0f && !std::signbit(m)); break;
      case 2: EXPECT_TRUE(std::isnan(m)); break;
      case 3: EXPECT_EQ(m, 2.5f); break;
      default: EXPECT_EQ(m, -std::numeric_limits<float>::infinity()); break;
    }
  }
}

/// The RMSNorm program with every RowSum made a RowMax gives other values: the comparison can
/// fail.
TEST(RowKernelMutation, IsCaught) {
  cpu::CpuBackend cpu(1);
  const Graph g = make_graph(Kind::RmsNorm, DType::F32, {Dim(3), Dim(64)});
  BuiltSpace b = build_search_space(g, cpu, g.dim_facts());
  LlirGraph l = opstest::choose(b, opstest::prefer_op("cpu.Row"));
  bool changed = false;
  for (LlirNode& n : l.nodes) {
    if (n.op->name != "cpu.Row") continue;
    auto p =
        std::make_shared<FusedProgram>(*static_cast<const FusedProgram*>(n.attrs.payload.get()));
    for (FusedInst& i : p->insts)
      if (i.op == FusedOpcode::RowSum) {
        i.op = FusedOpcode::RowMax;
        changed = true;
      }
    n.attrs.payload = p;
  }
  ASSERT_TRUE(changed) << l.to_text();
  testing::BufferMap in = opstest::random_inputs(g, {}, 5);
  testing::BufferMap want = opstest::run_reference(g, in, {});
  auto lp = testing::load_plan(cpu, l);
  testing::BufferMap got = testing::run_executable(lp, g, in);
  int differ = 0;
  for (int64_t i = 0; i < 3 * 64; ++i) {
    const double a = load_as_double(DType::F32, got.at("y").bytes.data(), i);
    const double w = load_as_double(DType::F32, want.at("y").bytes.data(), i);
    differ += std::fabs(a - w) > 1e-3 * (1 + std::fabs(w));
  }
  EXPECT_GT(differ, 100);
}

/// A row's max runs in vector lanes (row.cpp, row_max) and must keep the sequential max's bits:
/// a zero max is the first zero (its sign), one NaN anywhere gives NaN, and a row longer than a
/// block (1024) combines its blocks' maxima in order. y = max(x, row) * w shows the max's sign.
TEST(RowKernel, MaxKeepsTheReferencesBits) {
  for (int64_t n : {int64_t{31}, int64_t{1100}}) {
    Graph g;
    Tensor x = g.tensor("x", {Expr(5), Expr(n)}, DType::F32);
    Tensor w = g.tensor("w", {Expr(5), Expr(n)}, DType::F32);
    (x.max(1, true).expand({Expr(5), Expr(n)}) * w).output("y");
    std::vector<float> v(static_cast<size_t>(5 * n), -1.0f), ones(v.size(), 1.0f);
    const int64_t late = n - 2;  // in the second block of a long row
    v[3] = -0.0f;                // row 0: -0 first, then +0
    v[static_cast<size_t>(late)] = 0.0f;
    v[static_cast<size_t>(n + 5)] = 0.0f;  // row 1: +0 first, then -0
    v[static_cast<size_t>(n + late)] = -0.0f;
    v[static_cast<size_t>(2 * n + late)] = std::numeric_limits<float>::quiet_NaN();  // row 2
    v[static_cast<size_t>(3 * n + 1)] = 2.5f;  // row 3: the max early, again later
    v[static_cast<size_t>(3 * n + late)] = 2.5f;
    for (int64_t i = 0; i < n; ++i)  // row 4: all -inf
      v[static_cast<size_t>(4 * n + i)] = -std::numeric_limits<float>::infinity();
    testing::BufferMap in;
    in["x"] = to_host_buffer(v.data(), v.size(), DType::F32, "x");
    in["w"] = to_host_buffer(ones.data(), ones.size(), DType::F32, "w");
    const testing::BufferMap want = opstest::run_reference(g, in, {});
    for (int threads : {1, 2}) {
      cpu::CpuBackend cpu(threads);
      BuiltSpace b = build_search_space(g, cpu, g.dim_facts());
      const LlirGraph l = opstest::choose(b, opstest::prefer_op("cpu.Row"));
      ASSERT_EQ(opstest::count_op(l, "cpu.Row"), 1) << l.to_text();
      auto lp = testing::load_plan(cpu, l);
      const testing::BufferMap got = testing::run_executable(lp, g, in);
      const std::vector<uint8_t>& gb = got.at("y").bytes;
      const std::vector<uint8_t>& wb = want.at("y").bytes;
      ASSERT_EQ(gb.size(), wb.size());
      for (int64_t r = 0; r < 5; ++r) {
        float a, e;
        std::memcpy(&a, gb.data() + 4 * r * n, 4);
        std::memcpy(&e, wb.data() + 4 * r * n, 4);
        EXPECT_TRUE((std::isnan(a) && std::isnan(e)) || std::memcmp(&a, &e, 4) == 0)
            << "n = " << n << ", row " << r << ": " << a << " vs " << e;
      }
      float m[5];
      for (int64_t r = 0; r < 5; ++r)
        std::memcpy(&m[r], gb.data() + 4 * r * n, 4);
      EXPECT_TRUE(m[0] == 0.0f && std::signbit(m[0])) << n;
      EXPECT_TRUE(m[1] == 0.0f && !std::signbit(m[1])) << n;
      EXPECT_TRUE(std::isnan(m[2])) << n;
      EXPECT_EQ(m[3], 2.5f) << n;
      EXPECT_EQ(m[4], -std::numeric_limits<float>::infinity()) << n;
    }
  }
}

TEST(RowKernelErrors, ProgramWithoutRowReduction) {
  cpu::CpuBackend cpu(1);
  const Graph g = make_graph(Kind::Softmax, DType::F32, {Dim(2), Dim(8)});
  BuiltSpace b = build_search_space(g, cpu, g.dim_facts());
  LlirGraph l = opstest::choose(b, opstest::prefer_op("cpu.Row"));
  for (LlirNode& n : l.nodes)
    if (n.op->name == "cpu.Row") {
      auto p = std::make_shared<FusedProgram>();
      FusedInst load;
      load.op = FusedOpcode::Load;
      load.a = 0;
      p->insts = {load};
      n.attrs.payload = p;
    }
  try {
    testing::load_plan(cpu, l);
    FAIL() << "loaded a row node without a row reduction";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cpu.Row: the program has no row reduction"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace luminal
