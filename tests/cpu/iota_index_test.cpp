// cpu.GatherIota / cpu.ScatterIota / cpu.ScatterIotaInPlace: Gather and Scatter whose indexes
// are an Iota (slices of non-linear strides, concatenation, padding), against the
// ReferenceRuntime bit for bit, over dims that change between runs of one loaded plan (the
// kernel rebuilds its runs), with duplicates, out-of-range indexes and expressions that are not
// affine along a row.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "luminal/ir/prim.hpp"
#include "ops_test_util.hpp"
#include "support/expect_error.hpp"

namespace luminal {
namespace {

using opstest::kExact;

const Expr kS = Expr::var("s");

// The program preferring the Iota forms (the in-place one where legal).
LlirGraph iota_program(const Graph& g) {
  cpu::CpuBackend cpu(2);
  BuiltSpace b = build_search_space(g, cpu, {});
  return opstest::choose(b, [](const EGraph& eg, ENodeId n) -> double {
    const std::string_view op = eg.node(n).op->name;
    return op == "cpu.ScatterIotaInPlace" ? 3
           : op == "cpu.ScatterIota"      ? 2
           : op == "cpu.GatherIota"       ? 2
                                          : 0;
  });
}

int iota_ops(const LlirGraph& p) {
  return opstest::count_op(p, "cpu.GatherIota") + opstest::count_op(p, "cpu.ScatterIota") +
         opstest::count_op(p, "cpu.ScatterIotaInPlace");
}

std::vector<DynMap> lengths(std::initializer_list<int64_t> ss) {
  std::vector<DynMap> out;
  for (int64_t s : ss)
    out.push_back({{"s", s}});
  return out;
}

// Parts of different sizes along the axis: a fill and a scatter a part (equal parts concatenate
// by selects instead: ConcatSelect below).
TEST(IotaIndex, ConcatenationAlongEachAxis) {
  for (int axis : {0, 1, 2}) {
    for (DType t : {DType::F32, DType::BF16, DType::I64}) {
      Graph g;
      std::vector<Dim> wide{2, kS, 8};
      wide[static_cast<size_t>(axis)] = axis == 1 ? Dim(kS + 2) : Dim(5);
      Tensor a = g.tensor("a", {2, kS, 8}, t);
      Tensor b = g.tensor("b", wide, t);
      Tensor c = g.tensor("c", {2, kS, 8}, t);
      concat({a, (b * 2.0).cast(t), c}, axis).output("y");
      LlirGraph p = iota_program(g);
      EXPECT_GE(iota_ops(p), 2) << p.to_text();
      opstest::check_program(g, p, lengths({3, 1, 7, 0, 5}), kExact,
                             "concat axis " + std::to_string(axis) + " " + std::string(name(t)));
    }
  }
}

// Two to four parts of one size along the axis: selects over the parts broadcast on a new axis,
// one fused elementwise kernel (and no scatter), bit for bit (values of the part not taken
// never mix in: inf and NaN inputs), over dims that change between runs.
TEST(ConcatSelect, EqualPartsBecomeFusedSelects) {
  for (int parts : {2, 3, 4})
    for (int axis : {0, 1, 2})
      for (DType t : {DType::F32, DType::BF16, DType::I64}) {
        Graph g;
        std::vector<Tensor> xs;
        for (int i = 0; i < parts; ++i)
          xs.push_back(g.tensor("x" + std::to_string(i), {2, kS, 8}, t));
        xs[1] = (xs[1] * 2.0).cast(t);
        concat(xs, axis).output("y");
        cpu::CpuBackend cpu(2);
        BuiltSpace b = build_search_space(g, cpu, {});
        const LlirGraph p = to_llir(*b.space, b.space->fewest_kernels_genome());
        const std::string what = std::to_string(parts) + " parts, axis " + std::to_string(axis) +
                                 " " + std::string(name(t));
        for (const auto& [op, n] : p.op_mix())
          EXPECT_EQ(op.find("Scatter"), std::string::npos) << what << p.to_text();
        // The selects with x1 * 2 inlined (a producer read through a broadcast view; four
        // parts reach the alternatives a class keeps first).
        EXPECT_EQ(opstest::count_op(p, "cpu.Fused"), parts < 4 ? 1 : 2) << what << p.to_text();
        EXPECT_NE(p.to_text().find("select"), std::string::npos) << what << p.to_text();
        opstest::check_program(g, p, lengths({3, 1, 7, 0}), kExact, what);
        if (t != DType::F32) continue;
        cpu::CpuBackend run(2);
        auto exe = testing::load_plan(run, p, lengths({3}));
        testing::BufferMap in = opstest::random_inputs(g, {{"s", 3}}, 5, -4, 4);
        for (auto& [label, buf] : in) {  // inf, -inf and NaN in every part
          float* v = reinterpret_cast<float*>(buf.bytes.data());
          v[0] = INFINITY;
          v[1] = -INFINITY;
          v[2] = NAN;
        }
        const testing::BufferMap want = opstest::run_reference(g, in, {{"s", 3}});
        const testing::BufferMap got = testing::run_executable(exe, g, in, {{"s", 3}});
        EXPECT_EQ(got.at("y").bytes, want.at("y").bytes) << what << " with inf and NaN";
      }
}

TEST(IotaIndex, SlicesPadsAndRepeats) {
  Graph g;
  Tensor x = g.tensor("x", {kS, 12});
  x.slice(1, 3, 11, 2).output("strided");  // offset start, step 2 (a view at an offset)
  x.slice(0, 1).output("rows");            // from row 1 on (a view at an offset)
  x.pad({{1, 2}, {0, 3}}, 1.5).output("padded");
  x.repeat({2, 3}).output("repeated");
  // A row and a rope half: parts of different sizes.
  concat({-x.slice(1, 7), x.slice(1, 0, 6)}, 1).output("rotated");
  // A slice of a merged (non-linear) stride stays a gather.
  x.transpose(0, 1).merge_dims(0).slice(0, 2, 20).output("merged");
  LlirGraph p = iota_program(g);
  EXPECT_GE(iota_ops(p), 4) << p.to_text();  // pad, concat (2), the merged slice
  EXPECT_GE(opstest::count_op(p, "cpu.GatherIota"), 1) << p.to_text();
  opstest::check_program(g, p, lengths({4, 1, 9, 2}), kExact, "movement");
}

TEST(IotaIndex, ScatterDuplicatesLastWinsOutOfRangeSkipped) {
  // Indexes z % 5 + 2 for 12 positions: each of 2..6 written two or three times (the last wins);
  // z * 3 - 4 runs out of range at both ends; (z * z) % 7 is not affine along a row. Rows of
  // consecutive indexes (one run each when in range): z % 4 + 4 (z / 8) writes rows 0 and 1 to
  // the same 4 elements, z - 2 starts its first row out of range.
  for (const Expr& e : {Expr::z() % 5 + 2, Expr::z() * 3 - 4, (Expr::z() * Expr::z()) % 7,
                        Expr::z() % 4 + (Expr::z() / 8) * 4, Expr::z() - 2}) {
    Graph g;
    Tensor dest = g.tensor("dest", {kS, 4});
    Tensor src = g.tensor("src", {3, 4});
    prim::scatter(dest * 2.0, g.iota(e, 12).reshape({3, 4}), src).output("y");
    LlirGraph p = iota_program(g);
    EXPECT_EQ(iota_ops(p), 1) << p.to_text();
    opstest::check_program(g, p, lengths({2, 5, 1}), kExact, e.to_string());
  }
}

// A decode step's KV cache write: rows at c - s + i. Where only c changes the kernel moves its
// runs instead of evaluating the expression again; out of range (c = 9, c = 0) it evaluates it
// and skips those rows, and a change of s (the count) rebuilds.
TEST(IotaIndex, CacheWriteAtAMovingRow) {
  const Expr c = Expr::var("c");
  Graph g;
  Tensor dest = g.tensor("dest", {8, 4});
  Tensor src = g.tensor("src", {kS, 4});
  prim::scatter(dest * 2.0, g.iota((c - kS) * 4 + Expr::z(), kS * 4).reshape({kS, 4}), src)
      .output("y");
  LlirGraph p = iota_program(g);
  EXPECT_EQ(opstest::count_op(p, "cpu.ScatterIotaInPlace"), 1) << p.to_text();
  std::vector<DynMap> dyns;
  for (auto [s, cv] : std::vector<std::pair<int64_t, int64_t>>{
           {1, 1}, {1, 2}, {1, 5}, {1, 8}, {1, 9}, {1, 3}, {2, 4}, {2, 6}, {2, 9}, {1, 0}, {1, 7}})
    dyns.push_back({{"s", s}, {"c", cv}});
  opstest::check_program(g, p, dyns, kExact, "cache write");
}

TEST(IotaIndex, InPlaceOnlyWhereDestHasNoOtherReader) {
  for (bool shared : {false, true}) {
    Graph g;
    Tensor x = g.tensor("x", {kS, 6});
    Tensor d = x * 3.0;
    prim::scatter(d, g.iota(Expr::z() * 2 + 1, 6), g.tensor("src", {6})).output("y");
    if (shared) (d + 1.0).output("d1");
    LlirGraph p = iota_program(g);
    EXPECT_EQ(opstest::count_op(p, "cpu.ScatterIotaInPlace"), shared ? 0 : 1) << p.to_text();
    EXPECT_EQ(opstest::count_op(p, "cpu.ScatterIota"), shared ? 1 : 0) << p.to_text();
    opstest::check_program(g, p, lengths({2, 4}), kExact, shared ? "shared" : "in place");
  }
}

// Where the in-place form is legal it dominates the forms that copy dest (cpu.ScatterIota) or
// read an index buffer (cpu.ScatterInPlace): a program preferring those still writes in place.
// Where dest has another reader, the copy stays.
TEST(IotaIndex, InPlaceDominatesTheCopyAndTheIndexBuffer) {
  for (bool shared : {false, true}) {
    Graph g;
    Tensor x = g.tensor("x", {kS, 6});
    Tensor d = x * 3.0;
    prim::scatter(d, g.iota(Expr::z() * 2 + 1, 6), g.tensor("src", {6})).output("y");
    if (shared) (d + 1.0).output("d1");
    cpu::CpuBackend cpu(2);
    BuiltSpace b = build_search_space(g, cpu, {});
    LlirGraph p = opstest::choose(b, [](const EGraph& eg, ENodeId n) -> double {
      const std::string_view op = eg.node(n).op->name;
      return op == "cpu.ScatterIota" || op == "cpu.ScatterInPlace" ? 3 : 0;
    });
    EXPECT_EQ(opstest::count_op(p, "cpu.ScatterIotaInPlace"), shared ? 0 : 1) << p.to_text();
    EXPECT_EQ(opstest::count_op(p, "cpu.ScatterIota"), shared ? 1 : 0) << p.to_text();
    EXPECT_EQ(opstest::count_op(p, "cpu.ScatterInPlace"), 0) << p.to_text();
    opstest::check_program(g, p, lengths({2, 4}), kExact, shared ? "shared" : "in place");
  }
}

TEST(IotaIndex, GatherOutOfRangeIsAnError) {
  Graph g;
  Tensor x = g.tensor("x", {kS});
  prim::gather(g.iota(Expr::z() + 2, 4), x).output("y");
  LlirGraph p = iota_program(g);
  ASSERT_EQ(opstest::count_op(p, "cpu.GatherIota"), 1) << p.to_text();
  opstest::check_program(g, p, lengths({6, 8}), kExact, "in range");
  testing::expect_error([&] { opstest::check_program(g, p, lengths({5}), kExact, "past"); },
                        "Gather: index 5 at position 3 is out of range for data of 5 elements");
}

}  // namespace
}  // namespace luminal
