// cpu.ScatterInPlace: the kernel (writes in order into dest's own buffer: duplicates resolve to
// the last write, out-of-range indices are skipped, any index dtype and src view), the rule
// (which Scatters get the alternative) and pruning's legality decisions, end to end against the
// ReferenceRuntime bit for bit.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "luminal/compiler/lower.hpp"
#include "luminal/ir/prim.hpp"
#include "ops_test_util.hpp"
#include "support/expect_error.hpp"

namespace luminal {
namespace {

using opstest::kExact;
using testing::BufferMap;

const Expr kS = Expr::var("s");

const OpDef* inplace_op() { return opstest::cpu_op_named("cpu.ScatterInPlace"); }

RuleSet inplace_rules() {
  cpu::CpuBackend cpu(1);
  for (RuleSet& rs : cpu.rulesets())
    if (rs.name == "cpu.inplace") return rs;
  ADD_FAILURE() << "no cpu.inplace ruleset";
  return {};
}

HostBuffer int_buffer(DType t, const std::vector<int64_t>& v) {
  return to_host_buffer(v.data(), v.size(), t, "idx");
}

// ---------------------------------------------------------------- kernel

/// The attributes the rule gives a Scatter into `n` elements, with the index and src views
/// replaced by the given ones (their dims are the updates' shape).
Attrs scatter_attrs(DType t, int64_t n, DType idx_t, const View& idx_view, const View& src_view) {
  Graph g;
  const std::vector<Dim> dims(idx_view.dims.begin(), idx_view.dims.end());
  prim::scatter(g.tensor("dest", {n}, t), g.tensor("idx", dims, idx_t), g.tensor("src", dims, t))
      .output("y");
  EGraph eg;
  lower(g, eg);
  run_schedule(eg, Schedule::saturate(inplace_rules()));
  auto nodes = opstest::live_nodes_of(eg, inplace_op());
  EXPECT_EQ(nodes.size(), 1u);
  if (nodes.empty()) return {};
  Attrs a = eg.attrs_of(nodes[0]);
  a.views[1] = idx_view;
  a.views[2] = src_view;
  return a;
}

TEST(ScatterInPlaceKernel, DuplicatesLastWinsAndOutOfRangeSkipped) {
  for (DType idx_t : {DType::I32, DType::I64, DType::I16, DType::U8}) {
    const int64_t n = 20;
    std::vector<int64_t> idx = {3, 7, 3, 0, 19, 25, 7, 12, 200, 3};
    if (is_signed(idx_t)) idx[5] = -1;
    const int64_t m = static_cast<int64_t>(idx.size());
    HostBuffer dest = opstest::random_buffer(DType::F16, n, 1);
    HostBuffer src = opstest::random_buffer(DType::F16, m, 2);
    HostBuffer ib = int_buffer(idx_t, idx);
    Attrs a = scatter_attrs(DType::F16, n, idx_t, View::contiguous({m}), View::contiguous({m}));
    // The output buffer is dest's own (the executor hands dest's buffer in place).
    HostBuffer out = opstest::run_kernel(inplace_op(), a, {&dest, &ib, &src}, {}, 2, &dest);
    std::vector<uint8_t> want = dest.bytes;
    for (int64_t i = 0; i < m; ++i) {
      const int64_t j = load_as_int64(idx_t, ib.bytes.data(), i);
      if (j >= 0 && j < n) std::memcpy(want.data() + j * 2, src.bytes.data() + i * 2, 2);
    }
    EXPECT_EQ(out.bytes, want) << name(idx_t);
    // Last duplicate wins: index 3 takes src[9].
    EXPECT_EQ(load_as_double(DType::F16, out.bytes.data(), 3),
              load_as_double(DType::F16, src.bytes.data(), 9));
  }
}

TEST(ScatterInPlaceKernel, StridedSourceAndSeparateOutputBuffer) {
  // src read transposed ([3, 4] stored as [4, 3]); indexes broadcast along a row.
  const int64_t n = 16;
  HostBuffer dest = opstest::random_buffer(DType::I32, n, 3, -50, 50);
  HostBuffer src = opstest::random_buffer(DType::I32, 12, 4, -50, 50);
  HostBuffer ib = int_buffer(DType::I32, {0, 5, 10, 15});
  View src_view = View::contiguous({4, 3}).permute({1, 0});  // [3, 4]
  View idx_view = View::contiguous({4}).expand(0, 3);        // [3, 4]: same 4 indices per row
  Attrs a = scatter_attrs(DType::I32, n, DType::I32, idx_view, src_view);
  // Output buffer distinct from dest: the kernel copies dest first.
  HostBuffer out = opstest::run_kernel(inplace_op(), a, {&dest, &ib, &src});
  std::vector<int64_t> want(n);
  for (int64_t i = 0; i < n; ++i)
    want[i] = load_as_int64(DType::I32, dest.bytes.data(), i);
  for (int64_t r = 0; r < 3; ++r)
    for (int64_t c = 0; c < 4; ++c)
      want[c * 5] = load_as_int64(DType::I32, src.bytes.data(), c * 3 + r);  // src[r, c]
  for (int64_t i = 0; i < n; ++i)
    EXPECT_EQ(load_as_int64(DType::I32, out.bytes.data(), i), want[i]) << i;
}

TEST(ScatterInPlaceKernel, RejectsANodeWithoutItsInputs) {
  Attrs a;
  a.dtype = DType::F32;
  a.shape = {4};
  a.views = {View::contiguous({4}), View::contiguous({2}), View::contiguous({2})};
  testing::expect_error([&] { opstest::run_kernel(inplace_op(), a, {}); },
                        "needs (dest, indexes, src)");
}

// ---------------------------------------------------------------- rules and pruning

TEST(ScatterInPlaceRules, ContiguousDestGetsTheAlternative) {
  Graph g;
  Tensor dest = g.tensor("dest", {kS, 4});
  Tensor idx = g.tensor("idx", {3}, DType::I64);
  Tensor src = g.tensor("src", {3});
  Tensor y = dest.scatter_flat(idx, src).output("y");
  // A broadcast dest (as where() builds) is not contiguous: no in-place alternative.
  Tensor row = g.tensor("row", {4});
  prim::scatter(row.expand({kS, 4}), g.tensor("idx2", {3}, DType::I32), g.tensor("src2", {3}))
      .output("z");
  EGraph eg;
  Lowered low = lower(g, eg);
  run_schedule(eg, Schedule::saturate(inplace_rules()));
  auto nodes = opstest::live_nodes_of(eg, inplace_op());
  ASSERT_EQ(nodes.size(), 1u);
  const ClassId scatter_class = eg.find(eg.node(eg.nodes_of(low.roots[0])[0]).children[0]);
  EXPECT_EQ(eg.class_of(nodes[0]), scatter_class);
  EXPECT_EQ(eg.node(nodes[0]).children.size(), 3u);
  (void)y;
}

TEST(ScatterInPlaceRules, IntermediateDestIsUpdatedInPlace) {
  // dest = x * 2 is read only by the scatter: overwriting it is legal.
  Graph g;
  Tensor x = g.tensor("x", {kS, 5});
  Tensor idx = g.tensor("idx", {6}, DType::I32);
  Tensor src = g.tensor("src", {6});
  ((x * 2.0).scatter_flat(idx, src) + 1.0).output("y");
  cpu::CpuBackend cpu(2);
  BuiltSpace b = build_search_space(g, cpu, {});
  LlirGraph p = opstest::choose(b, opstest::prefer_op("cpu.ScatterInPlace"));
  ASSERT_EQ(opstest::count_op(p, "cpu.ScatterInPlace"), 1) << p.to_text();
  for (int64_t s : {4, 1, 0, 9}) {
    BufferMap in = opstest::random_inputs(g, {{"s", s}}, 7);
    // Duplicates, negatives and indices past the end.
    std::vector<int64_t> iv = {0, 3, 3, -1, s * 5, s * 5 - 1};
    in["idx"] = int_buffer(DType::I32, iv);
    BufferMap want = opstest::run_reference(g, in, {{"s", s}});
    auto exe = testing::load_plan(cpu, p, {{{"s", s}}});
    BufferMap got = testing::run_executable(exe, g, in, {{"s", s}});
    opstest::expect_same(got.at("y"), want.at("y"), kExact, "s=" + std::to_string(s));
  }
}

TEST(ScatterInPlaceRules, DestReadElsewhereIsNotOverwritten) {
  Graph g;
  Tensor x = g.tensor("x", {8});
  Tensor d = x * 2.0;
  d.scatter_flat(g.tensor("idx", {2}, DType::I32), g.tensor("src", {2})).output("y");
  (d + 1.0).output("d1");  // d has a second reader
  cpu::CpuBackend cpu(1);
  BuiltSpace b = build_search_space(g, cpu, {});
  EXPECT_GE(b.pruning.inplace, 1u) << b.pruning.to_string();
  LlirGraph p = opstest::choose(b, opstest::prefer_op("cpu.ScatterInPlace"));
  EXPECT_EQ(opstest::count_op(p, "cpu.ScatterInPlace"), 0) << p.to_text();
}

TEST(ScatterInPlaceRules, CarriedCacheIsUpdatedInItsInputBuffer) {
  // A KV-cache-like update: the output is carried back into the input, so the input's buffer may
  // be written in place; without carry() it may not.
  for (bool carry : {true, false}) {
    Graph g;
    Tensor cache = g.tensor("cache", {6, 4}).persist();
    Tensor idx = g.tensor("idx", {kS, 4}, DType::I32);
    Tensor x = g.tensor("x", {kS, 4});
    Tensor out = cache.scatter_flat(idx, x.sin()).output("cache_out");
    if (carry) g.carry(out, cache);
    cpu::CpuBackend cpu(2);
    BuiltSpace b = build_search_space(g, cpu, {});
    LlirGraph p = opstest::choose(b, opstest::prefer_op("cpu.ScatterInPlace"));
    EXPECT_EQ(opstest::count_op(p, "cpu.ScatterInPlace"), carry ? 1 : 0) << p.to_text();
    BufferMap in = opstest::random_inputs(g, {{"s", 2}}, 3);
    in["idx"] = int_buffer(DType::I32, {4, 5, 6, 7, 20, 21, 22, 100});  // the last one skipped
    BufferMap want = opstest::run_reference(g, in, {{"s", 2}});
    auto exe = testing::load_plan(cpu, p, {{{"s", 2}}});
    testing::PlanRun run = testing::run_plan(exe, in, {{"s", 2}});
    const HostBuffer& got = run.outputs.at("cache_out");
    EXPECT_EQ(run.output_in_input.count("cache_out"), carry ? 1u : 0u);
    opstest::expect_same(got, want.at("cache_out"), kExact, carry ? "carried" : "not carried");
    if (!carry) {
      EXPECT_EQ(run.inputs.at("cache").bytes, in.at("cache").bytes);  // input untouched
    }
  }
}

}  // namespace
}  // namespace luminal
