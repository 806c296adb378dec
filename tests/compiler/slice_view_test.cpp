// Slices at a start are views with an element offset (View::base). Each case builds the same
// nested slices twice: as views (Tensor::slice) and in the old form (an Iota + Gather per slice,
// prim::gather_by_map), of a plain, permuted, expanded or merged source. The ReferenceRuntime
// must give the same bytes for both; then every program of the CPU search space (elementwise,
// fused, reductions, BLAS and generic matmuls, copies reading the offset view) must match the
// reference (the equivalence harness).
#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <random>
#include <string>

#include "luminal/cpu/cpu_backend.hpp"
#include "luminal/ir/prim.hpp"
#include "luminal/luminal.hpp"
#include "support/equivalence.hpp"

namespace luminal {
namespace {

using testing::CheckOptions;
using testing::FuzzGraph;
using testing::FuzzInput;
using testing::FuzzOutput;

struct Cut {
  int axis;
  int64_t start;
  std::optional<int64_t> end;
  int64_t step;
};

// The old Tensor::slice of a static axis: a gather from start with step.
Tensor gather_slice(const Tensor& x, const Cut& c) {
  const int a = c.axis;
  const int64_t d = x.dim(a).as_const();
  auto resolve = [&](int64_t e) { return std::max<int64_t>(0, std::min(e < 0 ? d + e : e, d)); };
  const int64_t s = resolve(c.start), e = c.end ? resolve(*c.end) : d;
  const int64_t len = std::max<int64_t>(0, (e - s + c.step - 1) / c.step);
  Shape out = x.shape();
  out[static_cast<size_t>(a)] = len;
  return prim::gather_by_map(x, out, [&](const std::vector<Expr>& i) {
    std::vector<Expr> src = i;
    src[static_cast<size_t>(a)] = Expr(s) + i[static_cast<size_t>(a)] * Expr(c.step);
    return src;
  });
}

Tensor view_slice(const Tensor& x, const Cut& c) {
  return c.end ? x.slice(c.axis, c.start, Dim(*c.end), c.step)
               : x.slice(c.axis, c.start, std::nullopt, c.step);
}

std::string cut_str(const Cut& c) {
  return "slice(" + std::to_string(c.axis) + ", " + std::to_string(c.start) + ", " +
         (c.end ? std::to_string(*c.end) : "-") + ", " + std::to_string(c.step) + ")";
}

FuzzInput input_of(const std::string& label, Shape shape) {
  FuzzInput in;
  in.label = label;
  in.shape = std::move(shape);
  return in;
}

FuzzOutput output_of(const std::string& label, double err) {
  FuzzOutput out;
  out.label = label;
  out.err = err;
  return out;
}

CheckOptions on_cpu() {
  static cpu::CpuBackend cpu(1), cpu2(2);
  CheckOptions o;
  o.backend = &cpu;
  o.backend2 = &cpu2;
  o.label = "1 thread";
  o.label2 = "2 threads";
  o.programs = 12;
  return o;
}

struct Built {
  FuzzGraph fg;
  Tensor view, gather;
  int bases = 0;  // operand views with a nonzero base in the view form
};

// Case `seed`: a random source, 1..3 random cuts, then reads of the result.
Built build_case(uint64_t seed) {
  std::mt19937_64 rng(seed);
  auto pick = [&](int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
  };
  Built b;
  b.fg.name = "slice view case " + std::to_string(seed);
  b.fg.seed = seed;
  Graph& g = b.fg.graph;
  const int rank = static_cast<int>(pick(2, 3));
  std::vector<Dim> dims;
  Shape shape;
  for (int i = 0; i < rank; ++i) {
    const int64_t d = pick(3, 7);
    dims.emplace_back(d);
    shape.emplace_back(d);
  }
  Tensor x = g.tensor("x", dims);
  b.fg.inputs.push_back(input_of("x", shape));
  std::string recipe = "x " + shape_to_string(shape);
  const int source = static_cast<int>(pick(0, 3));
  if (source == 1) {
    x = x.transpose(0, rank - 1);
    recipe += " transposed";
  } else if (source == 2) {
    x = x.expand_dim(1, 3);
    recipe += " expand_dim(1, 3)";
  } else if (source == 3) {
    x = x.transpose(0, 1).merge_dims(0);  // a merged stride: slices there stay gathers
    recipe += " transpose(0, 1).merge_dims(0)";
  }
  Tensor v = x, gth = x;
  const int cuts = static_cast<int>(pick(1, 3));
  for (int k = 0; k < cuts; ++k) {
    Cut c;
    c.axis = static_cast<int>(pick(0, v.rank() - 1));
    const int64_t d = v.dim(c.axis).as_const();
    if (d < 2) continue;
    c.start = pick(-d, d - 1);
    if (pick(0, 2) > 0) c.end = pick(-d + 1, d);
    c.step = pick(1, 3);
    const Tensor nv = view_slice(v, c);
    if (nv.numel().as_const() == 0) continue;
    v = nv;
    gth = gather_slice(gth, c);
    recipe += " ." + cut_str(c);
  }
  b.view = v.output("v");
  b.gather = gth.output("g");
  b.fg.outputs.push_back(output_of("v", 0));
  b.fg.outputs.push_back(output_of("g", 0));
  // Elementwise (fusable), a row reduction and, for rank >= 2, a matmul reading the view.
  (v * 2.0f + 1.0f).exp().output("e");
  b.fg.outputs.push_back(output_of("e", 4));
  v.sum(-1).output("s");
  b.fg.outputs.push_back(output_of("s", 64));
  if (v.rank() >= 2) {
    const int64_t kdim = v.dim(-1).as_const();
    Tensor w = g.tensor("w", {kdim, 3});
    b.fg.inputs.push_back(input_of("w", {Expr(kdim), Expr(3)}));
    Tensor lhs = v.rank() == 2 ? v : v.flatten(0, -2);
    lhs.matmul(w).output("m");
    b.fg.outputs.push_back(output_of("m", 64));
    // ... and the view as the weight side (transposed), a BLAS operand at an offset.
    Tensor a = g.tensor("a", {2, v.dim(-1)});
    b.fg.inputs.push_back(input_of("a", {Expr(2), Expr(kdim)}));
    a.matmul(lhs.transpose(0, 1)).output("t");
    b.fg.outputs.push_back(output_of("t", 64));
  }
  b.fg.recipe = recipe;
  for (const Node& n : g.nodes())
    for (const Operand& o : n.inputs)
      b.bases += o.view.has_base() ? 1 : 0;
  return b;
}

TEST(SliceView, ViewsMatchTheGatherFormOnTheReference) {
  int with_base = 0;
  for (uint64_t seed = 0; seed < 60; ++seed) {
    Built b = build_case(seed);
    with_base += b.bases > 0;
    ReferenceRuntime rt(b.fg.graph);
    std::mt19937_64 rng(seed);
    for (const FuzzInput& in : b.fg.inputs) {
      const int64_t n = numel(in.shape).as_const();
      std::vector<float> data(static_cast<size_t>(n));
      for (float& f : data)
        f = std::uniform_real_distribution<float>(-1, 1)(rng);
      rt.set(in.label, data);
    }
    rt.execute();
    ASSERT_EQ(rt.shape(b.view), rt.shape(b.gather)) << b.fg.recipe;
    EXPECT_EQ(rt.get_bytes(b.view), rt.get_bytes(b.gather)) << b.fg.recipe;
  }
  EXPECT_GT(with_base, 30);  // most cases read through a view at an offset
}

TEST(SliceView, EveryCpuProgramMatchesTheReference) {
  for (uint64_t seed = 0; seed < 24; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    testing::check_graph(build_case(seed).fg, on_cpu());
  }
}

// A start that depends on a dynamic dim: the base is an expression evaluated per run (the last
// two rows of a [s, 6] input, and every other column from 1).
TEST(SliceView, DynamicStart) {
  FuzzGraph fg;
  fg.name = "dynamic start";
  Graph& g = fg.graph;
  g.declare_dim("s", 2, 9);
  Tensor x = g.tensor("x", {"s", 6});
  fg.inputs.push_back(input_of("x", {Expr::var("s"), Expr(6)}));
  Tensor t = x.slice(0, -2).slice(1, 1, std::nullopt, 2);
  EXPECT_TRUE(t.view().has_base());
  EXPECT_EQ(t.id(), x.id());  // a view: no node
  (t * 3.0f).output("y");
  fg.outputs.push_back(output_of("y", 0));
  t.sum(0).output("c");
  fg.outputs.push_back(output_of("c", 8));
  fg.dyn_points = {{{"s", 2}}, {{"s", 5}}, {{"s", 9}}};
  testing::check_graph(fg, on_cpu());

  // The values: rows s-2, s-1 and columns 1, 3, 5, at s = 5.
  ReferenceRuntime rt(g);
  std::vector<float> in(30);
  for (size_t i = 0; i < in.size(); ++i)
    in[i] = static_cast<float>(i);
  rt.set("x", in);
  rt.execute({{"s", 5}});
  EXPECT_EQ(rt.get<float>("y"), (std::vector<float>{57, 63, 69, 75, 81, 87}));
}

}  // namespace
}  // namespace luminal
