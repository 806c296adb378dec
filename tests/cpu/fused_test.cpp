// cpu.Fused: the program type, the fusion rules (which regions appear in which classes) and the
// kernel, against the ReferenceRuntime bit for bit: chains of 2-10 ops, broadcast and transposed
// inputs, every dtype (16-bit floats, fp8, integers with wrap, bool), casts between every pair of
// dtypes, dynamic dims (0 and multi-block sizes), random choices of fused / unfused regions, and
// the limits that bound the e-graph.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <iostream>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "luminal/compiler/lower.hpp"
#include "luminal/cpu/cpu_op.hpp"
#include "luminal/cpu/fused.hpp"
#include "luminal/ir/prim.hpp"
#include "ops_test_util.hpp"
#include "support/env_scope.hpp"
#include "support/expect_error.hpp"
#include "support/fused_insts.hpp"
#include "support/rope_graph.hpp"

namespace luminal {
namespace {

using opstest::kExact;

const Expr kS = Expr::var("s");
const std::vector<DynMap> kDyns = {{{"s", 3}}, {{"s", 1}}, {{"s", 0}}, {{"s", 777}}};

RuleSet cpu_ruleset(const std::string& name) {
  cpu::CpuBackend cpu(1);
  for (RuleSet& rs : cpu.rulesets())
    if (rs.name == name) return rs;
  ADD_FAILURE() << "no ruleset " << name;
  return {};
}

/// Saturates g with the CPU rules, prunes, picks the largest fused regions everywhere, checks the
/// program against the reference bit for bit and returns it.
LlirGraph check_fused(const Graph& g, const std::vector<DynMap>& dyns, const std::string& what,
                      int expect_fused = -1, uint64_t seed = 1, double lo = -4, double hi = 4) {
  cpu::CpuBackend cpu(2);
  BuiltSpace b = build_search_space(g, cpu, g.dim_facts());
  EXPECT_EQ(b.saturation.stop, StopReason::Saturated) << what << b.saturation.to_string();
  LlirGraph p = opstest::choose(b, opstest::prefer_op("cpu.Fused"));
  if (expect_fused >= 0) {
    EXPECT_EQ(opstest::count_op(p, "cpu.Fused"), expect_fused) << what << "\n" << p.to_text();
  }
  if (std::getenv("FUSED_VERBOSE")) std::cerr << what << ": " << p.op_mix_string() << "\n";
  opstest::check_program(g, p, dyns, kExact, what, 2, seed, lo, hi);
  return p;
}

using testing::cnst;
using testing::inst;

/// Runs a program directly through the kernel (no graph): children contiguous of `shape`.
HostBuffer run_direct(const FusedProgram& p, DType out, const Shape& shape,
                      const std::vector<View>& views, const std::vector<const HostBuffer*>& in,
                      const DynMap& dyn = {}, int threads = 2) {
  LlirNode n;
  n.op = cpu::fused_op();
  n.attrs.dtype = out;
  n.attrs.shape = shape;
  n.attrs.views = views;
  n.attrs.payload = std::make_shared<FusedProgram>(p);
  const cpu::CpuOp* op = cpu::find_cpu_op(cpu::fused_op());
  EXPECT_NE(op, nullptr);
  auto kernel = op->make(n);
  const int64_t count = numel(shape).eval(dyn);
  HostBuffer o{out, std::vector<uint8_t>(static_cast<size_t>(count * size_bytes(out)))};
  std::vector<const uint8_t*> ptrs;
  for (const HostBuffer* b : in)
    ptrs.push_back(b->bytes.data());
  cpu::KernelContext k{n, dyn, 1, ptrs, o.bytes.data(), threads};
  kernel->run(k);
  return o;
}

/// Values that exercise conversions: signed zeros, halves, ranges of every dtype, NaN, Inf.
HostBuffer special_buffer(DType t, int64_t n, uint64_t seed) {
  static const double kVals[] = {
      0.0,  -0.0,  1.5,   -2.5,     0.1, 300.7,    -129.5,    255.5, 65504,  70000,   1e10, -1e20,
      3e38, 1e-40, 448.0, -57344.0, NAN, INFINITY, -INFINITY, 127.9, -128.9, 32767.5, 4e9,  -3e9};
  HostBuffer b{t, std::vector<uint8_t>(static_cast<size_t>(n * size_bytes(t)))};
  std::mt19937_64 rng(seed);
  for (int64_t i = 0; i < n; ++i) {
    if (is_float(t)) {
      double v = i < 24 ? kVals[i] : std::uniform_real_distribution<double>(-300, 300)(rng);
      store_from_double(t, b.bytes.data(), i, v);
    } else {
      int64_t v = static_cast<int64_t>(rng());
      if (i % 3 == 0) v = static_cast<int64_t>(rng() % 601) - 300;
      store_from_int64(t, b.bytes.data(), i, v);
    }
  }
  return b;
}

// ---------------------------------------------------------------- the program type

TEST(FusedProgram, HashEqualityAndPrinting) {
  FusedProgram a({inst(FusedOpcode::Load, DType::F32, 0), cnst(DType::F32, 2.0),
                  inst(FusedOpcode::Mul, DType::F32, 0, 1)});
  FusedProgram b = a;
  EXPECT_TRUE(a.equals(b));
  EXPECT_EQ(a.hash(), b.hash());
  b.insts[1].value = 3.0;
  EXPECT_FALSE(a.equals(b));
  FusedProgram n1({cnst(DType::F32, NAN)}), n2({cnst(DType::F32, NAN)});
  EXPECT_TRUE(n1.equals(n2));  // constants compare bitwise
  EXPECT_EQ(a.to_string(), "%0=load0:f32 %1=const(2):f32 %2=mul(%0,%1):f32");
  EXPECT_EQ(a.num_children(), 1);
}

TEST(FusedProgram, ValidateNamesTheBadInstruction) {
  FusedProgram fwd(
      {inst(FusedOpcode::Exp2, DType::F32, 1), inst(FusedOpcode::Load, DType::F32, 0)});
  testing::expect_error([&] { fwd.validate(); }, {"%0", "exp2", "later instruction"});
  FusedProgram mixed({inst(FusedOpcode::Load, DType::F32, 0),
                      inst(FusedOpcode::Load, DType::F16, 1),
                      inst(FusedOpcode::Add, DType::F32, 0, 1)});
  testing::expect_error([&] { mixed.validate(); }, {"%2", "add", "different dtypes"});
  FusedProgram lt(
      {inst(FusedOpcode::Load, DType::F32, 0), inst(FusedOpcode::LessThan, DType::F32, 0, 0)});
  testing::expect_error([&] { lt.validate(); }, {"lt", "wrong result dtype"});
  FusedProgram sel(
      {inst(FusedOpcode::Load, DType::F32, 0), inst(FusedOpcode::Select, DType::F32, 0, 0, 0)});
  testing::expect_error([&] { sel.validate(); }, {"select", "bool condition"});
}

// ---------------------------------------------------------------- kernel, directly

TEST(FusedKernel, SelectConstantsAndBroadcastViews) {
  // out[i, j] = x[i, j] < y[j] ? x[i, j] * 2 : y[j] + 2   (y broadcast along rows)
  const int64_t rows = 37, cols = 53;
  FusedProgram p({inst(FusedOpcode::Load, DType::F32, 0), inst(FusedOpcode::Load, DType::F32, 1),
                  inst(FusedOpcode::LessThan, DType::Bool, 0, 1), cnst(DType::F32, 2.0),
                  inst(FusedOpcode::Mul, DType::F32, 0, 3),
                  inst(FusedOpcode::Add, DType::F32, 1, 3),
                  inst(FusedOpcode::Select, DType::F32, 2, 4, 5)});
  p.validate();
  HostBuffer x = opstest::random_buffer(DType::F32, rows * cols, 1);
  HostBuffer y = opstest::random_buffer(DType::F32, cols, 2);
  const Shape shape{rows, cols};
  View vx = View::contiguous(shape);
  View vy = View::contiguous({cols}).expand(0, rows);
  for (int threads : {1, 3}) {
    HostBuffer o = run_direct(p, DType::F32, shape, {vx, vy}, {&x, &y}, {}, threads);
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j) {
        float a = load_as_double(DType::F32, x.bytes.data(), i * cols + j);
        float b = load_as_double(DType::F32, y.bytes.data(), j);
        float want = a < b ? a * 2.0f : b + 2.0f;
        ASSERT_EQ(load_as_double(DType::F32, o.bytes.data(), i * cols + j), want)
            << i << "," << j << " threads " << threads;
      }
  }
}

TEST(FusedKernel, ConstantsRoundToTheirDtype) {
  // 0.1 in bf16, 300 wrapped into i8, a Bool constant from a nonzero value.
  const Shape shape{5};
  HostBuffer x = opstest::random_buffer(DType::BF16, 5, 3);
  FusedProgram pb({inst(FusedOpcode::Load, DType::BF16, 0), cnst(DType::BF16, 0.1),
                   inst(FusedOpcode::Add, DType::BF16, 0, 1)});
  HostBuffer o = run_direct(pb, DType::BF16, shape, {View::contiguous(shape)}, {&x});
  for (int i = 0; i < 5; ++i) {
    float a = load_as_double(DType::BF16, x.bytes.data(), i);
    float c = bf16_bits_to_f32(f32_to_bf16_bits(0.1f));
    EXPECT_EQ(load_as_double(DType::BF16, o.bytes.data(), i),
              bf16_bits_to_f32(f32_to_bf16_bits(a + c)));
  }
  FusedProgram pi(
      {cnst(DType::I8, 0, 300), cnst(DType::I8, 0, 1), inst(FusedOpcode::Add, DType::I8, 0, 1)});
  HostBuffer oi = run_direct(pi, DType::I8, shape, {}, {});
  EXPECT_EQ(load_as_int64(DType::I8, oi.bytes.data(), 4), 45);  // 300 -> 44, + 1
  FusedProgram pbool(
      {cnst(DType::Bool, 0.5), cnst(DType::Bool, 0), inst(FusedOpcode::Add, DType::Bool, 0, 1)});
  HostBuffer ob = run_direct(pbool, DType::Bool, shape, {}, {});
  EXPECT_EQ(load_as_int64(DType::Bool, ob.bytes.data(), 0), 1);
}

TEST(FusedKernel, RejectsMalformedNodes) {
  LlirNode n;
  n.op = cpu::fused_op();
  n.attrs.dtype = DType::F32;
  n.attrs.shape = {4};
  const cpu::CpuOp* op = cpu::find_cpu_op(cpu::fused_op());
  testing::expect_error([&] { op->make(n); }, {"cpu.Fused", "payload"});
  n.attrs.payload = std::make_shared<FusedProgram>(
      std::vector<FusedInst>{inst(FusedOpcode::Load, DType::F32, 0)});
  testing::expect_error([&] { op->make(n); }, {"cpu.Fused", "views"});
  n.attrs.views = {View::contiguous({4})};
  n.attrs.dtype = DType::F16;
  testing::expect_error([&] { op->make(n); }, {"cpu.Fused", "dtype"});
}

// ---------------------------------------------------------------- rules

TEST(FusionRules, ChainBecomesOneRegionInTheOutputClass) {
  Graph g;
  Tensor x = g.tensor("x", {kS, 4});
  Tensor y = prim::unary(OpKind::Sin, prim::unary(OpKind::Exp2, x, DType::F32), DType::F32);
  Tensor out = prim::unary(OpKind::Sqrt, y, DType::F32).output("y");
  EGraph eg;
  Lowered low = lower(g, eg);
  SaturationReport r = run_schedule(eg, Schedule::saturate(cpu_ruleset("cpu.fusion")));
  EXPECT_EQ(r.stop, StopReason::Saturated) << r.to_string();
  (void)out;
  const ENode out_node = eg.node(eg.nodes_of(low.roots[0])[0]);
  const ClassId sqrt_class = eg.find(out_node.children[0]);
  // The class of sqrt holds: Sqrt, sqrt∘sin, sqrt∘sin∘exp2 (the largest reads x directly).
  size_t largest = 0;
  int fused = 0;
  std::string text;
  ClassId reads = 0;
  for (ENodeId n : eg.nodes_of(sqrt_class)) {
    if (eg.node(n).op != cpu::fused_op()) continue;
    ++fused;
    const auto* p = dynamic_cast<const FusedProgram*>(eg.attrs_of(n).payload.get());
    ASSERT_NE(p, nullptr);
    if (p->insts.size() > largest) {
      largest = p->insts.size();
      text = p->to_string();
      reads = eg.find(eg.node(n).children[0]);
    }
  }
  EXPECT_EQ(text, "%0=load0:f32 %1=exp2(%0):f32 %2=sin(%1):f32 %3=sqrt(%2):f32");
  EXPECT_EQ(reads, eg.find(low.class_of[x.id()]));
  EXPECT_EQ(largest, 4u);
  EXPECT_EQ(fused, 2);
}

TEST(FusionRules, SameRegionBuiltTwiceIsOneENode) {
  // a*b + a*b: the two products are one class; every region is canonical, so saturating twice
  // adds nothing and the region count stays small.
  Graph g;
  Tensor a = g.tensor("a", {8});
  Tensor b = g.tensor("b", {8});
  Tensor p = a * b;
  ((p + p) * a).exp2().output("y");
  EGraph eg;
  lower(g, eg);
  RuleSet fusion = cpu_ruleset("cpu.fusion");
  run_schedule(eg, Schedule::saturate(fusion));
  const size_t nodes = eg.num_nodes();
  SaturationReport again = run_schedule(eg, Schedule::saturate(fusion));
  EXPECT_EQ(eg.num_nodes(), nodes);
  EXPECT_EQ(again.stop, StopReason::Saturated);
  EXPECT_LE(opstest::live_nodes_of(eg, cpu::fused_op()).size(), 12u);
}

TEST(FusionRules, ConstantsBecomeImmediates) {
  Graph g;
  Tensor x = g.tensor("x", {kS, 3}, DType::F16);
  ((x * 0.5) + 1.0).output("y");
  LlirGraph p = check_fused(g, kDyns, "f16 constants", 1);
  for (const LlirNode& n : p.nodes)
    if (n.op == cpu::fused_op()) {
      EXPECT_EQ(n.inputs.size(), 1u) << p.to_text();
      EXPECT_NE(n.attrs.payload->to_string().find("const(0.5):f16"), std::string::npos)
          << n.attrs.payload->to_string();
    }
  EXPECT_EQ(opstest::count_op(p, "Constant"), 0) << p.to_text();
}

TEST(FusionRules, NonContiguousReadsStayLoads) {
  // y reads exp2(x) transposed: the transposed read is not fused (its producer is materialised);
  // the contiguous read of the same class is.
  Graph g;
  Tensor x = g.tensor("x", {5, 5});
  Tensor e = x.exp2();
  (e + e.transpose(0, 1)).output("y");
  LlirGraph p = check_fused(g, {{}}, "transposed producer");
  EXPECT_GE(opstest::count_op(p, "cpu.Fused"), 1) << p.to_text();
  EXPECT_EQ(opstest::count_op(p, "Exp2") + opstest::count_op(p, "cpu.Fused"), 2) << p.to_text();
}

TEST(FusionRules, RegionsStayWithinTheLimits) {
  Graph g;
  Tensor x = g.tensor("x", {kS, 8});
  Tensor y = x;
  for (int i = 0; i < 60; ++i)
    y = i % 2 ? y * 0.999 : y + 0.001;
  y.output("y");
  cpu::CpuBackend cpu(2);
  auto t0 = std::chrono::steady_clock::now();
  BuiltSpace b = build_search_space(g, cpu, {});
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(b.saturation.stop, StopReason::Saturated) << b.saturation.to_string();
  EXPECT_LT(secs, 20.0);
  for (ENodeId n : b.eg->nodes_with_op(cpu::fused_op())) {
    const auto* prog = dynamic_cast<const FusedProgram*>(b.eg->attrs_of(n).payload.get());
    EXPECT_LE(prog->insts.size(), static_cast<size_t>(kFusedMaxInsts));
  }
  LlirGraph p = opstest::choose(b, opstest::prefer_op("cpu.Fused"));
  EXPECT_LE(opstest::count_op(p, "cpu.Fused"), 6) << p.op_mix_string();
  opstest::check_program(g, p, kDyns, kExact, "60-op chain");
}

TEST(FusionRules, RulesetSaturatesOnAWideGraph) {
  // 16 inputs combined pairwise in a tree, each level with a unary op: regions are bounded by
  // the child limit and the per-class cap, and saturation stays small.
  Graph g;
  std::vector<Tensor> level;
  for (int i = 0; i < 16; ++i)
    level.push_back(g.tensor("x" + std::to_string(i), {kS, 4}));
  while (level.size() > 1) {
    std::vector<Tensor> next;
    for (size_t i = 0; i + 1 < level.size(); i += 2)
      next.push_back((level[i] * level[i + 1]).sin());
    level = next;
  }
  level[0].output("y");
  cpu::CpuBackend cpu(2);
  BuiltSpace b = build_search_space(g, cpu, {});
  EXPECT_EQ(b.saturation.stop, StopReason::Saturated) << b.saturation.to_string();
  EXPECT_LT(b.eg->num_nodes(), 2000u) << b.saturation.to_string();
  LlirGraph p = opstest::choose(b, opstest::prefer_op("cpu.Fused"));
  for (const LlirNode& n : p.nodes)
    EXPECT_LE(n.inputs.size(), static_cast<size_t>(kFusedMaxChildren));
  opstest::check_program(g, p, kDyns, kExact, "tree of 16");
}

// ---------------------------------------------------------------- numerics against the reference

using ChainOp = std::function<Tensor(const Tensor& x, const Tensor& y, const Tensor& c)>;

// Elementwise steps built only from primitives reachable by fusion (no where / Scatter).
std::vector<std::pair<std::string, ChainOp>> chain_ops() {
  return {
      {"exp2", [](const Tensor& x, const Tensor&, const Tensor&) { return (x * 0.25).exp2(); }},
      {"sin", [](const Tensor& x, const Tensor&, const Tensor&) { return x.sin(); }},
      {"add_y", [](const Tensor& x, const Tensor& y, const Tensor&) { return x + y; }},
      {"mul_col", [](const Tensor& x, const Tensor&, const Tensor& c) { return x * c; }},
      {"sqrt", [](const Tensor& x, const Tensor&, const Tensor&) { return (x * x + 1.0).sqrt(); }},
      {"recip",
       [](const Tensor& x, const Tensor&, const Tensor&) { return (x * x + 0.5).reciprocal(); }},
      {"log2", [](const Tensor& x, const Tensor&, const Tensor&) { return (x * x + 0.25).log2(); }},
      {"sub", [](const Tensor& x, const Tensor& y, const Tensor&) { return x - y * 0.5; }},
      {"fmod", [](const Tensor& x, const Tensor&, const Tensor&) { return x % 1.5; }},
      {"sigmoid", [](const Tensor& x, const Tensor&, const Tensor&) { return x.sigmoid(); }},
  };
}

TEST(FusionRules, GreedyRegionsAreExact) {
  // The greedy region (fusion.cpp; on the CPU only with LUMINAL_FUSION_GREEDY=all): rope in one
  // region besides cos and sin (each read through a broadcast of another shape: kept), four
  // regions without it (x * cos apart), bit-exact. The CUDA rules offer it where a class
  // reaches the limit of 12 regions (tests/cuda/fusion_greedy_test.cpp).
  check_fused(testing::rope_over_a_product(4, 64), {{}}, "rope", 4);
  testing::EnvScope all("LUMINAL_FUSION_GREEDY", "all");
  check_fused(testing::rope_over_a_product(4, 64), {{}}, "rope, greedy", 3);
}

TEST(FusedNumerics, ChainsOf2To10OpsEveryFloatDtype) {
  auto ops = chain_ops();
  for (DType t : {DType::F32, DType::F64, DType::F16, DType::BF16}) {
    for (int len = 2; len <= 10; ++len) {
      Graph g;
      g.declare_dim("s", 0, 4096);
      Tensor x = g.tensor("x", {kS, 6}, t);
      Tensor y = g.tensor("y", {6}, t).expand({kS, 6});      // broadcast row
      Tensor c = g.tensor("c", {kS, 1}, t).expand({kS, 6});  // broadcast column
      Tensor v = x;
      std::string recipe;
      for (int i = 0; i < len; ++i) {
        const auto& [n, op] = ops[(i * 7 + len * 3) % ops.size()];
        v = op(v, y, c);
        recipe += n + " ";
      }
      v.output("out");
      LlirGraph p = check_fused(g, kDyns, std::string(name(t)) + " chain " + recipe, -1, len);
      // f32/f64: one region. f16/bf16 compute in f32 with casts around every op, so their longer
      // chains pass 32 instructions and split into a few regions.
      const int fused = opstest::count_op(p, "cpu.Fused");
      int nodes = 0;
      for (const auto& [op, n] : p.op_mix())
        nodes += n;
      if (t == DType::F32 || t == DType::F64) {
        EXPECT_EQ(fused, 1) << recipe << p.op_mix_string();
        EXPECT_EQ(nodes, 1) << recipe << p.op_mix_string();
      } else {
        EXPECT_GE(fused, 1) << recipe << p.op_mix_string();
        EXPECT_LE(nodes, len <= 6 ? 1 : 6) << recipe << p.op_mix_string();
      }
    }
  }
}

TEST(FusedNumerics, TransposedAndRepeatedInputs) {
  Graph g;
  Tensor x = g.tensor("x", {6, kS});
  Tensor w = g.tensor("w", {kS, 3});
  Tensor xt = x.transpose(0, 1);  // [s, 6]
  Tensor wr = w.repeat({1, 2});   // [s, 6]
  Tensor sq = g.tensor("q", {6, 6});
  ((xt * wr).exp2() + xt).output("a");
  (sq + sq.transpose(0, 1)).sin().output("b");  // one input through two views
  check_fused(g, kDyns, "views", 2);
}

TEST(FusedNumerics, IntegersWrapAndCompare) {
  for (DType t : {DType::I8, DType::U8, DType::I16, DType::U16, DType::I32, DType::I64}) {
    Graph g;
    Tensor a = g.tensor("a", {kS, 5}, t);
    Tensor b = g.tensor("b", {kS, 5}, t);
    Tensor d = g.tensor("d", {5}, t).expand({kS, 5});
    Tensor r = prim::binary(OpKind::Mod, prim::binary(OpKind::Add, a * b, a * a), d);
    r.output("r");
    prim::binary(OpKind::LessThan, r, b).output("lt");
    (prim::binary(OpKind::LessThan, a, b).cast(t) * a + 7.0).output("mask");
    check_fused(g, kDyns, std::string(name(t)) + " int", 3, 3, -200, 200);
  }
}

TEST(FusedNumerics, BoolLogic) {
  Graph g;
  Tensor a = g.tensor("a", {kS, 4}, DType::Bool);
  Tensor b = g.tensor("b", {kS, 4}, DType::Bool);
  Tensor x = g.tensor("x", {kS, 4});
  prim::binary(OpKind::Add, prim::binary(OpKind::Mul, a, b),
               prim::binary(OpKind::LessThan, x, x * 0.5))
      .output("or_and");
  (prim::binary(OpKind::Mul, a, b).cast(DType::F32) * x).output("masked");
  prim::binary(OpKind::LessThan, a.cast(DType::I32), b.cast(DType::I32)).output("lt");
  check_fused(g, kDyns, "bool", 3);
}

TEST(FusedNumerics, CastsBetweenEveryPairOfDtypes) {
  // x + x then a cast: one region (load, add, cast) per pair; specials (NaN, Inf, -0, values
  // beyond the target's range) included.
  int checked = 0;
  for (DType from : kAllDTypes) {
    for (DType to : kAllDTypes) {
      Graph g;
      Tensor x = g.tensor("x", {40}, from);
      prim::unary(OpKind::Cast, prim::binary(OpKind::Add, x, x), to).output("y");
      cpu::CpuBackend cpu(1);
      BuiltSpace b = build_search_space(g, cpu, {});
      LlirGraph p = opstest::choose(b, opstest::prefer_op("cpu.Fused"));
      // (a cast to x's own dtype is x itself: core rules merge it away)
      ASSERT_EQ(opstest::count_op(p, "cpu.Fused"), from == to ? 0 : 1) << p.to_text();
      testing::BufferMap in{{"x", special_buffer(from, 40, 7)}};
      testing::BufferMap want = opstest::run_reference(g, in, {});
      auto exe = testing::load_plan(cpu, p);
      testing::BufferMap got = testing::run_executable(exe, g, in, {});
      opstest::expect_same(got.at("y"), want.at("y"), kExact,
                           std::string(name(from)) + " -> " + std::string(name(to)));
      ++checked;
    }
  }
  EXPECT_EQ(checked, 14 * 14);
}

TEST(FusedNumerics, Fp8AndTf32Arithmetic) {
  for (DType t : {DType::F8E4M3, DType::F8E5M2, DType::TF32}) {
    Graph g;
    Tensor a = g.tensor("a", {kS, 7}, t);
    Tensor b = g.tensor("b", {kS, 7}, t);
    prim::binary(OpKind::Add, prim::binary(OpKind::Mul, a, b), a).output("y");
    prim::unary(OpKind::Sqrt, prim::binary(OpKind::Mul, a, a), t).output("z");
    check_fused(g, kDyns, std::string(name(t)), 2);
  }
}

TEST(FusedNumerics, EveryRandomChoiceMatchesTheReference) {
  // Shared subexpressions, several outputs: any mix of fused and unfused regions is exact.
  Graph g;
  Tensor x = g.tensor("x", {kS, 6}, DType::BF16);
  Tensor y = g.tensor("y", {6}, DType::BF16);
  Tensor e = (x * 0.5).exp2();
  Tensor u = (e + y.expand({kS, 6})) * x;
  Tensor v = (e * e).sin();
  (u + v).output("o1");
  (u.cast(DType::F32) * 3.0).output("o2");
  v.output("o3");
  cpu::CpuBackend cpu(2);
  BuiltSpace b = build_search_space(g, cpu, {});
  ASSERT_GT(b.space->num_genes(), 2u);
  Rng rng(42);
  for (int i = 0; i < 25; ++i) {
    Genome gen = b.space->random_genome(rng);
    LlirGraph p = to_llir(*b.space, gen);
    opstest::check_program(g, p, {{{"s", 5}}, {{"s", 300}}}, kExact,
                           "random genome " + std::to_string(i), 2, static_cast<uint64_t>(i));
  }
}

TEST(FusedNumerics, GreedyRegionsEverywhereMatchTheReference) {
  // LUMINAL_FUSION_GREEDY=all (the greedy region in every class): any mix of the regions of a
  // graph with shared values is exact, and so is the program of the largest ones.
  testing::EnvScope all("LUMINAL_FUSION_GREEDY", "all");
  Graph g;
  Tensor x = g.tensor("x", {kS, 6}, DType::BF16);
  Tensor y = g.tensor("y", {6}, DType::BF16);
  Tensor e = (x * 0.5).exp2();
  Tensor u = (e + y.expand({kS, 6})) * x;
  (u + (e * e).sin()).output("o1");
  (u.cast(DType::F32) * 3.0).output("o2");
  cpu::CpuBackend cpu(2);
  BuiltSpace b = build_search_space(g, cpu, {});
  Rng rng(7);
  for (int i = 0; i < 15; ++i)
    opstest::check_program(g, to_llir(*b.space, b.space->random_genome(rng)),
                           {{{"s", 5}}, {{"s", 300}}}, kExact, "greedy " + std::to_string(i), 2,
                           static_cast<uint64_t>(i));
  check_fused(g, {{{"s", 5}}}, "greedy, largest regions");
}

TEST(FusedNumerics, LargeTensorsManyThreads) {
  Graph g;
  Tensor x = g.tensor("x", {kS, 1000});
  Tensor y = g.tensor("y", {1000});
  ((x + y.expand({kS, 1000})).sin() * x).sqrt().output("o");
  cpu::CpuBackend cpu(4);
  BuiltSpace b = build_search_space(g, cpu, {});
  LlirGraph p = opstest::choose(b, opstest::prefer_op("cpu.Fused"));
  EXPECT_EQ(opstest::count_op(p, "cpu.Fused"), 1);
  opstest::check_program(g, p, {{{"s", 257}}, {{"s", 3}}}, kExact, "large", 4);
}

}  // namespace
}  // namespace luminal

namespace luminal {
namespace {

// ---------------------------------------------------------------- where() as a select

TEST(FusedWhere, WhereReluMaximumFuseIntoOneRegion) {
  for (DType t : {DType::F32, DType::BF16, DType::F16, DType::I32}) {
    Graph g;
    Tensor x = g.tensor("x", {kS, 6}, t);
    Tensor y = g.tensor("y", {6}, t);
    Tensor c = g.tensor("c", {kS, 6}, t);
    ((x * 2.0).relu() + 1.0).output("relu");
    (x.maximum(y) * c).output("max");           // y broadcast
    c.lt(x).where(x * 3.0, y).output("where");  // branches of different views
    x.masked_fill(c.lt(0.0), 5.0).output("masked");
    LlirGraph p = check_fused(g, kDyns, std::string("where ") + std::string(name(t)), 4, 1,
                              is_float(t) ? -4 : -40, is_float(t) ? 4 : 40);
    EXPECT_EQ(opstest::count_op(p, "Scatter"), 0) << p.to_text();
    EXPECT_EQ(opstest::count_op(p, "Iota"), 0) << p.to_text();
  }
}

TEST(FusedWhere, NaNAndInfNeverLeakFromTheUnselectedBranch) {
  Graph g;
  Tensor x = g.tensor("x", {24});
  Tensor y = g.tensor("y", {24});
  x.maximum(y).output("max");
  x.minimum(y).output("min");
  x.lt(0.0).where(y.reciprocal(), x.sqrt()).output("w");
  x.abs().output("abs");
  cpu::CpuBackend cpu(2);
  BuiltSpace b = build_search_space(g, cpu, {});
  LlirGraph p = opstest::choose(b, opstest::prefer_op("cpu.Fused"));
  EXPECT_EQ(opstest::count_op(p, "Scatter"), 0) << p.to_text();
  testing::BufferMap in{{"x", special_buffer(DType::F32, 24, 1)},
                        {"y", special_buffer(DType::F32, 24, 2)}};
  // Shift y so that NaN/Inf meet finite values of x.
  std::rotate(in["y"].bytes.begin(), in["y"].bytes.begin() + 12, in["y"].bytes.end());
  testing::BufferMap want = opstest::run_reference(g, in, {});
  auto exe = testing::load_plan(cpu, p);
  testing::BufferMap got = testing::run_executable(exe, g, in, {});
  for (const auto& [label, buf] : want)
    opstest::expect_same(got.at(label), buf, kExact, label);
}

TEST(FusedWhere, RandomChoicesWithSelectsMatchTheReference) {
  Graph g;
  Tensor x = g.tensor("x", {kS, 5});
  Tensor h = (x * 1.5).relu();
  (h.maximum(x * -1.0) + h).output("o1");
  h.lt(1.0).where(h, x.exp()).output("o2");
  cpu::CpuBackend cpu(2);
  BuiltSpace b = build_search_space(g, cpu, {});
  Rng rng(7);
  for (int i = 0; i < 20; ++i) {
    LlirGraph p = to_llir(*b.space, b.space->random_genome(rng));
    opstest::check_program(g, p, {{{"s", 3}}, {{"s", 130}}}, kExact, "genome " + std::to_string(i),
                           2, static_cast<uint64_t>(i));
  }
}

}  // namespace
}  // namespace luminal
