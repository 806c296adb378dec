// Every HLIR primitive on the CPU backend against the ReferenceRuntime: dtypes, strided views
// (permuted, broadcast, repeated, strided, merged), dynamic dims at several values (0 included),
// NaN/Inf, integer wrap and % 0, Gather's range error, Scatter's duplicates and skipped indices,
// and a few Tensor API ops built from them.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "luminal/cpu/cpu_backend.hpp"
#include "luminal/cpu/primitive_util.hpp"
#include "luminal/cpu/strided.hpp"
#include "luminal/ir/prim.hpp"
#include "support/check.hpp"
#include "support/expect_error.hpp"
#include "support/llir_direct.hpp"

namespace luminal {
namespace {

using testing::BufferMap;
using testing::Tol;

// ---------------------------------------------------------------- data

/// n random elements of dtype t; with `specials`, NaN/Inf/zero (floats) or 0/min/max (integers)
/// at fixed positions.
HostBuffer random_buffer(DType t, int64_t n, uint64_t seed, bool specials = true, double lo = -4,
                         double hi = 4) {
  HostBuffer b{t, std::vector<uint8_t>(static_cast<size_t>(n * size_bytes(t)))};
  std::mt19937_64 rng(seed);
  for (int64_t i = 0; i < n; ++i) {
    if (is_float(t)) {
      double v = std::uniform_real_distribution<double>(lo, hi)(rng);
      if (specials) {
        if (i % 7 == 3) v = std::numeric_limits<double>::quiet_NaN();
        if (i % 11 == 5) v = INFINITY;
        if (i % 13 == 6) v = -INFINITY;
        if (i % 17 == 8) v = 0.0;
      }
      store_from_double(t, b.bytes.data(), i, v);
    } else if (t == DType::Bool) {
      store_from_int64(t, b.bytes.data(), i, static_cast<int64_t>(rng() & 1));
    } else {
      int64_t v = static_cast<int64_t>(rng());  // wraps to the dtype: any bit pattern
      if (i % 3 == 0) v = static_cast<int64_t>(rng() % 21) - 10;  // small values too
      if (specials) {
        if (i % 7 == 3) v = 0;
        if (i % 11 == 5) v = t == DType::I64 ? INT64_MAX : static_cast<int64_t>(max_value(t));
        if (i % 13 == 6) v = static_cast<int64_t>(min_value(t));
        if (i % 19 == 9) v = -1;
      }
      store_from_int64(t, b.bytes.data(), i, v);
    }
  }
  return b;
}

/// Random buffers for every input of g at `dyn`.
BufferMap random_inputs(const Graph& g, const DynMap& dyn, uint64_t seed, bool specials = true) {
  BufferMap m;
  for (NodeId id : g.inputs()) {
    const Node& n = g.node(id);
    m[n.label] = random_buffer(n.dtype, numel(n.shape).eval(dyn), seed + static_cast<uint64_t>(id),
                               specials);
  }
  return m;
}

// ---------------------------------------------------------------- comparison

using TolFn = std::function<Tol(DType)>;
Tol default_tol(DType t) { return testing::tol_for(t); }

void expect_same(const HostBuffer& got, const HostBuffer& want, Tol tol, const std::string& what) {
  ASSERT_EQ(name(got.dtype), name(want.dtype)) << what;
  ASSERT_EQ(got.bytes.size(), want.bytes.size()) << what;
  int failures = 0;
  for (int64_t i = 0; i < want.numel() && failures < 5; ++i) {
    bool ok;
    std::string g, w;
    if (is_float(want.dtype)) {
      const double a = load_as_double(got.dtype, got.bytes.data(), i);
      const double b = load_as_double(want.dtype, want.bytes.data(), i);
      if (std::isnan(b))
        ok = std::isnan(a);
      else if (std::isinf(b))
        ok = a == b;
      else
        ok = std::fabs(a - b) <= tol.atol + tol.rtol * std::fabs(b);
      g = std::to_string(a);
      w = std::to_string(b);
    } else {
      const int64_t a = load_as_int64(got.dtype, got.bytes.data(), i);
      const int64_t b = load_as_int64(want.dtype, want.bytes.data(), i);
      ok = a == b;
      g = std::to_string(a);
      w = std::to_string(b);
    }
    if (!ok) {
      ++failures;
      ADD_FAILURE() << what << " [" << i << "]: cpu " << g << ", reference " << w;
    }
  }
}

/// Runs g on the reference and on the CPU backend (one executable for every dyn map) and
/// compares every output.
void check_cpu(const Graph& g, const std::vector<DynMap>& dyns, const std::string& what,
               const TolFn& tol = default_tol, int threads = 3, bool specials = true,
               uint64_t seed = 1) {
  cpu::CpuBackend cpu(threads);
  auto exe = testing::load_plan(cpu, testing::llir_direct(g), dyns);
  for (const DynMap& dyn : dyns) {
    std::string at = what;
    for (const auto& [k, v] : dyn)
      at += " " + k + "=" + std::to_string(v);
    BufferMap in = random_inputs(g, dyn, seed, specials);
    ReferenceRuntime rt(g);
    for (const auto& [label, buf] : in)
      rt.set_bytes(label, buf.bytes.data(), buf.bytes.size());
    rt.execute(dyn);
    BufferMap got = testing::run_executable(exe, g, in, dyn);
    for (NodeId o : g.outputs()) {
      const Node& n = g.node(o);
      HostBuffer want{n.dtype, rt.get_bytes(Tensor(g, o, View::contiguous(n.shape), n.dtype))};
      expect_same(got.at(n.label), want, tol(n.dtype), at + " output " + n.label);
    }
  }
}

// ---------------------------------------------------------------- views

TEST(CpuStrided, AxisTablesThatAreLinearAtTheseDimsCountAsLinear) {
  const Expr z = Expr::z();
  // 64*(z/64) + z%64 is z (attention heads merged back into one axis): the view is the identity.
  const View merged{{Expr(4), Expr(128)}, {128 * z, 64 * (z / 64) + z % 64}};
  const cpu::StridedIndex a(merged, {});
  EXPECT_TRUE(a.is_identity());
  EXPECT_EQ(a.offset_of_flat(300), 300);
  // 8192*(z/64) + z%64 is not linear: a table with the expression's offsets.
  const View heads{{Expr(128)}, {8192 * (z / 64) + z % 64}};
  const cpu::StridedIndex b(heads, {});
  EXPECT_FALSE(b.is_identity());
  EXPECT_EQ(b.offset_of_flat(65), 8193);
  std::vector<int64_t> offsets;
  b.for_range(62, 66, [&](int64_t, int64_t off) { offsets.push_back(off); });
  EXPECT_EQ(offsets, (std::vector<int64_t>{62, 63, 8192, 8193}));
}

TEST(CpuStrided, RunsVisitTheSameOffsetsAsTheElements) {
  // for_runs (fused_eval.cpp's loads) against for_range on views with a linear, a broadcast, a
  // transposed and a table last axis, short and long rows, ranges starting and ending mid-row.
  const Expr z = Expr::z();
  const std::vector<View> views = {
      {{Expr(3), Expr(40)}, {40 * z, z}},                         // contiguous
      {{Expr(3), Expr(40)}, {z, Expr(0)}},                        // broadcast along the row
      {{Expr(3), Expr(40)}, {z, 3 * z}},                          // transposed
      {{Expr(3), Expr(40)}, {Expr(0), z}},                        // the same row three times
      {{Expr(2), Expr(3), Expr(20)}, {70 * z, 20 * z, z + 5}},    // an offset inside each row
      {{Expr(3), Expr(70)}, {70 * z, 8192 * (z / 64) + z % 64}},  // a table
      {{Expr(12), Expr(4)}, {4 * z, 2 * z}},                      // rows too short for runs
      {{Expr(3), Expr(40)}, {40 * z, -1 * z}, Expr(39)},          // a reversed row (base 39)
      {{Expr(3), Expr(40)}, {50 * z, z}, Expr(7)},                // linear, an element offset
  };
  for (const View& v : views) {
    const cpu::StridedIndex ix(v, {});
    for (const auto& [b, e] : std::vector<std::pair<int64_t, int64_t>>{
             {0, ix.numel()}, {7, ix.numel() - 3}, {41, 42}, {5, 5}}) {
      std::vector<int64_t> want, got;
      ix.for_range(b, e, [&](int64_t f, int64_t off) {
        EXPECT_EQ(f, b + static_cast<int64_t>(want.size()));
        want.push_back(off);
      });
      ix.for_runs(b, e, [&](int64_t f, int64_t off, int64_t len, int64_t step) {
        EXPECT_EQ(f, b + static_cast<int64_t>(got.size()));
        EXPECT_GT(len, 0);
        for (int64_t j = 0; j < len; ++j)
          got.push_back(off + step * j);
      });
      EXPECT_EQ(got, want) << v.to_string() << " [" << b << ", " << e << ")";
    }
  }
}

/// How a logical [A, B] operand (B = 6) is read from its stored buffer.
enum class Layout { Contig, Perm, BcastRow, BcastCol, Scalar, Repeat, Strided, Merged };
constexpr Layout kLayouts[] = {Layout::Contig, Layout::Perm,   Layout::BcastRow, Layout::BcastCol,
                               Layout::Scalar, Layout::Repeat, Layout::Strided,  Layout::Merged};
constexpr int64_t kB = 6;

const char* layout_name(Layout l) {
  switch (l) {
    case Layout::Contig: return "contig";
    case Layout::Perm: return "perm";
    case Layout::BcastRow: return "bcast_row";
    case Layout::BcastCol: return "bcast_col";
    case Layout::Scalar: return "scalar";
    case Layout::Repeat: return "repeat";
    case Layout::Strided: return "strided";
    case Layout::Merged: return "merged";
  }
  return "?";
}

/// An input of dtype t read as a [a, kB] tensor through `l`.
Tensor operand(Graph& g, const std::string& label, DType t, Layout l, const Expr& a) {
  auto read = [&](const std::vector<Dim>& stored, const View& v) {
    Tensor x = g.tensor(label, stored, t);
    return Tensor(g, x.id(), v, t);
  };
  switch (l) {
    case Layout::Contig: return g.tensor(label, {a, kB}, t);
    case Layout::Perm: return read({kB, a}, View::contiguous({kB, a}).permute({1, 0}));
    case Layout::BcastRow: return read({kB}, View::contiguous({kB}).expand(0, a));
    case Layout::BcastCol: return read({a}, View::contiguous({a}).expand(1, kB));
    case Layout::Scalar: return read({}, View::contiguous({}).expand(0, kB).expand(0, a));
    case Layout::Repeat: return read({a, kB / 2}, View::contiguous({a, kB / 2}).repeat(1, 2));
    case Layout::Strided: return read({a, 2 * kB}, View::contiguous({a, 2 * kB}).stride_by(1, 2));
    case Layout::Merged:
      return read({2, a, 3}, View::contiguous({2, a, 3}).permute({1, 0, 2}).merge(1));
  }
  return {};
}

const Expr kS = Expr::var("s");
const std::vector<DynMap> kDyns = {{{"s", 3}}, {{"s", 1}}, {{"s", 0}}, {{"s", 17}}, {{"s", 3}}};

const DType kBinaryTypes[] = {DType::F32, DType::F64, DType::F16, DType::BF16, DType::I8,
                              DType::U8,  DType::I16, DType::I32, DType::I64,  DType::Bool};
const DType kUnaryTypes[] = {DType::F32,  DType::F64,  DType::F16,
                             DType::BF16, DType::TF32, DType::F8E4M3};

// ---------------------------------------------------------------- elementwise

TEST(CpuPrimitives, BinaryOpsEveryDtypeAndLayout) {
  for (DType t : kBinaryTypes) {
    for (Layout la : kLayouts) {
      for (Layout lb : {Layout::Contig, Layout::Perm, Layout::BcastRow, Layout::Merged}) {
        Graph g;
        Tensor a = operand(g, "a", t, la, kS);
        Tensor b = operand(g, "b", t, lb, kS);
        prim::binary(OpKind::Add, a, b).output("add");
        prim::binary(OpKind::Mul, a, b).output("mul");
        prim::binary(OpKind::Mod, a, b).output("mod");
        prim::binary(OpKind::LessThan, a, b).output("lt");
        check_cpu(g, kDyns, std::string(name(t)) + " " + layout_name(la) + "/" + layout_name(lb));
      }
    }
  }
}

TEST(CpuPrimitives, IntegerWrapAndModByZero) {
  for (DType t : {DType::I8, DType::U8, DType::I32, DType::I64}) {
    Graph g;
    auto a = g.tensor("a", {8}, t);
    auto b = g.tensor("b", {8}, t);
    prim::binary(OpKind::Add, a, b).output("add");
    prim::binary(OpKind::Mul, a, b).output("mul");
    prim::binary(OpKind::Mod, a, b).output("mod");
    cpu::CpuBackend cpu(1);
    const double mx = t == DType::I64 ? 0x1p62 : max_value(t);
    std::vector<int64_t> av = {
        static_cast<int64_t>(mx),           7, -7, 5, 0, static_cast<int64_t>(mx),
        static_cast<int64_t>(min_value(t)), 9};
    std::vector<int64_t> bv = {1, 0, 3, -3, 0, static_cast<int64_t>(mx), -1, 4};
    for (int64_t& v : av)
      v = testing::wrap_to(t, v);
    for (int64_t& v : bv)
      v = testing::wrap_to(t, v);
    BufferMap in;
    in["a"] = to_host_buffer(av.data(), av.size(), t, "a");
    in["b"] = to_host_buffer(bv.data(), bv.size(), t, "b");
    BufferMap out = testing::run_backend(cpu, g, in);
    auto get = [&](const char* l) { return from_host_buffer<int64_t>(out.at(l), l, "int64_t"); };
    std::vector<int64_t> add = get("add"), mul = get("mul"), mod = get("mod");
    for (size_t i = 0; i < av.size(); ++i) {
      auto wrap_u = [](int64_t x, int64_t y, bool m) {
        uint64_t r = m ? static_cast<uint64_t>(x) * static_cast<uint64_t>(y)
                       : static_cast<uint64_t>(x) + static_cast<uint64_t>(y);
        return static_cast<int64_t>(r);
      };
      EXPECT_EQ(add[i], testing::wrap_to(t, wrap_u(av[i], bv[i], false))) << name(t) << i;
      EXPECT_EQ(mul[i], testing::wrap_to(t, wrap_u(av[i], bv[i], true))) << name(t) << i;
      int64_t m = (bv[i] == 0 || bv[i] == -1) ? 0 : av[i] % bv[i];
      EXPECT_EQ(mod[i], testing::wrap_to(t, m)) << name(t) << i;
    }
    EXPECT_EQ(mod[1], 0);  // 7 % 0
  }
}

TEST(CpuPrimitives, UnaryOpsFloatDtypes) {
  for (DType t : kUnaryTypes) {
    for (Layout l :
         {Layout::Contig, Layout::Perm, Layout::Scalar, Layout::Strided, Layout::Merged}) {
      Graph g;
      Tensor x = operand(g, "x", t, l, kS);
      for (OpKind op : {OpKind::Exp2, OpKind::Log2, OpKind::Sin, OpKind::Recip, OpKind::Sqrt})
        prim::unary(op, x, t).output(std::string(op_name(op)));
      check_cpu(g, kDyns, std::string(name(t)) + " " + layout_name(l));
    }
  }
}

TEST(CpuPrimitives, CastEveryPair) {
  const DType types[] = {DType::F32, DType::F64, DType::F16, DType::BF16, DType::TF32,  DType::I8,
                         DType::U8,  DType::I32, DType::I64, DType::Bool, DType::F8E4M3};
  for (DType from : types) {
    Graph g;
    Tensor x = operand(g, "x", from, Layout::Perm, kS);
    for (DType to : types)
      prim::unary(OpKind::Cast, x, to).output(std::string(name(to)));
    // Large magnitudes: float -> int truncates, saturates at int64, then wraps.
    cpu::CpuBackend cpu(2);
    auto exe = testing::load_plan(cpu, testing::llir_direct(g), kDyns);
    for (const DynMap& dyn : kDyns) {
      BufferMap in = random_inputs(g, dyn, 7);
      if (is_float(from)) in["x"] = random_buffer(from, 6 * dyn.at("s"), 11, true, -5e9, 5e9);
      ReferenceRuntime rt(g);
      rt.set_bytes("x", in["x"].bytes.data(), in["x"].bytes.size());
      rt.execute(dyn);
      BufferMap got = testing::run_executable(exe, g, in, dyn);
      for (NodeId o : g.outputs()) {
        const Node& n = g.node(o);
        HostBuffer want{n.dtype, rt.get_bytes(Tensor(g, o, View::contiguous(n.shape), n.dtype))};
        expect_same(got.at(n.label), want, Tol{0, 0},
                    std::string("cast ") + std::string(name(from)) + " -> " + n.label);
      }
    }
  }
}

TEST(CpuPrimitives, LargeElementwiseRunsInParallel) {
  Graph g;
  Tensor a = operand(g, "a", DType::F32, Layout::Perm, kS);
  Tensor b = operand(g, "b", DType::F32, Layout::Contig, kS);
  Tensor c = g.tensor("c", {kS, kB}, DType::F32);
  prim::binary(OpKind::Add, a, b).output("add");
  prim::binary(OpKind::Mul, c, b).output("mul");  // identity views: the direct path
  prim::unary(OpKind::Exp2, c, DType::F32).output("exp2");
  prim::unary(OpKind::Cast, a, DType::BF16).output("bf16");
  check_cpu(g, {{{"s", 40000}}, {{"s", 5}}}, "large f32", default_tol, 4);
}

TEST(CpuPrimitives, CopiesThroughTransposedViews) {
  // Same-dtype casts are copies; transpose-like views are copied in tiles.
  for (DType t : {DType::F32, DType::F16, DType::I8, DType::F64}) {
    Graph g;
    Tensor x = g.tensor("x", {3, kS, 45}, t);
    prim::unary(OpKind::Cast, x.permute({0, 2, 1}), t).output("p021");
    prim::unary(OpKind::Cast, x.permute({2, 0, 1}), t).output("p201");
    prim::unary(OpKind::Cast, x.permute({1, 2, 0}), t).output("p120");
    prim::unary(OpKind::Cast, x.permute({0, 2, 1}).repeat({1, 1, 2}), t).output("repeat");
    x.permute({2, 1, 0}).output("out_view");  // an Output reading through the view
    check_cpu(
        g, {{{"s", 37}}, {{"s", 8}}, {{"s", 1}}, {{"s", 64}}},
        std::string("transpose ") + std::string(name(t)),
        [](DType) {
          return Tol{0, 0};
        },
        3);
  }
}

// ---------------------------------------------------------------- Constant, Iota

TEST(CpuPrimitives, ConstantsOfEveryDtype) {
  for (DType t : kBinaryTypes) {
    Graph g;
    Tensor x = g.tensor("x", {kS, kB}, t);
    double v = is_float(t) ? -2.75 : (t == DType::Bool ? 1 : -3);
    if (t == DType::U8) v = 200;
    Tensor c = g.constant(v, t);
    prim::binary(OpKind::Add, x,
                 Tensor(g, c.id(), View::contiguous({}).expand(0, kB).expand(0, kS), t))
        .output("y");
    c.output("c");
    check_cpu(g, kDyns, std::string("constant ") + std::string(name(t)));
  }
  Graph g;  // integer constants wrap to the width
  g.constant(300, DType::I8).output("c");
  g.constant(-1, DType::U16).output("d");
  check_cpu(g, {{}}, "wrapped constants");
}

TEST(CpuPrimitives, IotaLinearNonLinearAndDynamic) {
  Graph g;
  const Expr z = Expr::z();
  g.iota(z * 3 - 2, kS).output("linear");
  g.iota(z % 3 + z / 2, kS * 2).output("nonlinear");
  g.iota(z * kS + 1, kS).output("dynamic");
  g.iota(z * 1000000000, kS).output("wraps");  // beyond i32: wraps on store
  check_cpu(g, {{{"s", 5}}, {{"s", 0}}, {{"s", 9}}}, "iota");
  Graph big;
  big.iota(z % 7 + z, kS).output("big");
  check_cpu(big, {{{"s", 100000}}}, "iota big", default_tol, 4);
  // A non-linear iota's table is kept while the dims it uses stay (s changes around it) and
  // rebuilt when one of them changes (t), in one plan run at each dims in turn.
  Graph h;
  const Expr t = Expr::var("t");
  h.iota(z % 5 + z / 3, 40).output("no_dims");
  h.iota(z % t + z / 2, t * 2).output("uses_t");
  h.iota(z * kS + 1, kS).output("linear_s");
  check_cpu(h,
            {{{"s", 5}, {"t", 3}},
             {{"s", 6}, {"t", 3}},
             {{"s", 6}, {"t", 4}},
             {{"s", 2}, {"t", 3}},
             {{"s", 2}, {"t", 3}}},
            "iota tables");
}

// ---------------------------------------------------------------- reductions

Tol sum_tol(DType t, int64_t len) {
  const double eps = testing::compute_eps(t);
  Tol base = testing::tol_for(t);
  return {base.rtol, base.atol + 16 * eps * static_cast<double>(len)};
}

TEST(CpuPrimitives, ReductionsEveryAxisDtypeAndView) {
  const DType types[] = {DType::F32, DType::F64, DType::F16, DType::BF16, DType::I8,
                         DType::U8,  DType::I32, DType::I64, DType::Bool};
  for (DType t : types) {
    for (int layout = 0; layout < 4; ++layout) {
      Graph g;
      // Logical [s, 5, 7].
      Tensor x;
      if (layout == 0) {
        x = g.tensor("x", {kS, 5, 7}, t);
      } else if (layout == 1) {  // permuted
        Tensor s = g.tensor("x", {7, kS, 5}, t);
        x = Tensor(g, s.id(), View::contiguous({7, kS, 5}).permute({1, 2, 0}), t);
      } else if (layout == 2) {  // broadcast along the middle axis
        Tensor s = g.tensor("x", {kS, 7}, t);
        x = Tensor(g, s.id(), View::contiguous({kS, 7}).expand(1, 5), t);
      } else {  // permuted, last axis repeated (a non-linear stride): logical [s, 5, 14]
        Tensor s = g.tensor("x", {5, kS, 7}, t);
        View v = View::contiguous({5, kS, 7}).permute({1, 0, 2}).repeat(2, 2);
        x = Tensor(g, s.id(), v, t);
      }
      for (int axis = 0; axis < 3; ++axis) {
        prim::reduce(OpKind::SumReduce, x, axis).output("sum" + std::to_string(axis));
        prim::reduce(OpKind::MaxReduce, x, axis).output("max" + std::to_string(axis));
      }
      check_cpu(g, kDyns,
                std::string("reduce ") + std::string(name(t)) + " layout " + std::to_string(layout),
                [](DType d) { return sum_tol(d, 17); });
    }
  }
}

TEST(CpuPrimitives, ReductionOverEmptyAxis) {
  for (DType t : {DType::F32, DType::F16, DType::I32, DType::U8, DType::I64}) {
    Graph g;
    Tensor x = g.tensor("x", {4, kS}, t);
    prim::reduce(OpKind::SumReduce, x, 1).output("sum");
    prim::reduce(OpKind::MaxReduce, x, 1).output("max");
    check_cpu(g, {{{"s", 0}}, {{"s", 2}}}, std::string("empty ") + std::string(name(t)));
  }
}

TEST(CpuPrimitives, LargeReductionsEveryLoopOrder) {
  for (DType t : {DType::F32, DType::F64, DType::BF16, DType::I32}) {
    Graph g;
    Tensor x = g.tensor("x", {kS, 256}, t);
    prim::reduce(OpKind::SumReduce, x, 1).output("rows");    // unit-stride axis
    prim::reduce(OpKind::SumReduce, x, 0).output("cols");    // strided axis, blocks of outputs
    prim::reduce(OpKind::MaxReduce, x, 0).output("colmax");  // NaN propagates
    Tensor flat = Tensor(g, x.id(), View::contiguous({kS * 256}), t);
    prim::reduce(OpKind::SumReduce, flat, 0).output("all");  // one output: axis split
    prim::reduce(OpKind::MaxReduce, flat, 0).output("allmax");
    Tensor tr = Tensor(g, x.id(), View::contiguous({kS, 256}).permute({1, 0}), t);
    prim::reduce(OpKind::SumReduce, tr, 1).output("cols_t");  // strided axis through a permute
    check_cpu(
        g, {{{"s", 1024}}, {{"s", 3}}}, std::string("large ") + std::string(name(t)),
        [](DType d) { return sum_tol(d, 1024 * 256); }, 4, t == DType::I32);
  }
}

TEST(CpuPrimitives, MaxReduceOfF32RowsKeepsTheReferencesBits) {
  // The f32 row max runs in vector lanes: a zero max must still carry the first zero's sign (the
  // reference keeps the first element equal to the max), and one NaN anywhere gives NaN.
  const int64_t n = 1000;
  Graph g;
  Tensor x = g.tensor("x", {4, n}, DType::F32);
  prim::reduce(OpKind::MaxReduce, x, 1).output("max");
  std::vector<float> v(static_cast<size_t>(4 * n), -1.0f);
  v[10] = -0.0f;  // row 0: -0 first, then +0
  v[700] = 0.0f;
  v[n + 5] = 0.0f;  // row 1: +0 first, then -0
  v[n + 900] = -0.0f;
  v[2 * n + 999] = std::numeric_limits<float>::quiet_NaN();  // row 2: NaN last
  v[3 * n + 3] = 2.5f;                                       // row 3: an ordinary max
  v[3 * n + 600] = 2.5f;
  for (int threads : {1, 2}) {
    cpu::CpuBackend cpu(threads);
    auto exe = testing::load_plan(cpu, testing::llir_direct(g), {{}});
    BufferMap in;
    in["x"] = to_host_buffer(v.data(), v.size(), DType::F32, "x");
    ReferenceRuntime rt(g);
    rt.set_bytes("x", in["x"].bytes.data(), in["x"].bytes.size());
    rt.execute({});
    BufferMap got = testing::run_executable(exe, g, in, {});
    const NodeId o = g.outputs()[0];
    const std::vector<uint8_t> want =
        rt.get_bytes(Tensor(g, o, View::contiguous(g.node(o).shape), DType::F32));
    ASSERT_EQ(got.at("max").bytes, want) << threads << " threads";
    float m[4];
    std::memcpy(m, want.data(), sizeof m);
    EXPECT_TRUE(m[0] == 0.0f && std::signbit(m[0]));
    EXPECT_TRUE(m[1] == 0.0f && !std::signbit(m[1]));
    EXPECT_TRUE(std::isnan(m[2]));
    EXPECT_EQ(m[3], 2.5f);
  }
}

// ---------------------------------------------------------------- Gather, Scatter

TEST(CpuPrimitives, GatherEveryDtypeAndIndexType) {
  for (DType t : {DType::F32, DType::F64, DType::BF16, DType::I8, DType::I64, DType::Bool}) {
    for (DType it : {DType::I32, DType::I64, DType::U8, DType::I16}) {
      for (bool permuted : {false, true}) {
        Graph g;
        Tensor data = permuted ? operand(g, "data", t, Layout::Perm, kS)
                               : operand(g, "data", t, Layout::Contig, kS);
        Tensor idx = g.tensor("idx", {kS, 4}, it);
        prim::gather(idx, data).output("y");
        cpu::CpuBackend cpu(2);
        auto exe = testing::load_plan(cpu, testing::llir_direct(g), {{{"s", 1}}, {{"s", 9}}});
        for (int64_t s : {1, 4, 9}) {
          DynMap dyn{{"s", s}};
          BufferMap in = random_inputs(g, dyn, 3);
          std::vector<int64_t> iv = testing::random_ints(static_cast<size_t>(4 * s), 0,
                                                         std::min<int64_t>(6 * s - 1, 255), 5);
          in["idx"] = to_host_buffer(iv.data(), iv.size(), it, "idx");
          ReferenceRuntime rt(g);
          for (const auto& [label, buf] : in)
            rt.set_bytes(label, buf.bytes.data(), buf.bytes.size());
          rt.execute(dyn);
          BufferMap got = testing::run_executable(exe, g, in, dyn);
          const Node& n = g.node(g.find("y"));
          HostBuffer want{t, rt.get_bytes(Tensor(g, g.find("y"), View::contiguous(n.shape), t))};
          EXPECT_EQ(got.at("y").bytes, want.bytes)
              << name(t) << " idx " << name(it) << " s=" << s << (permuted ? " perm" : "");
        }
      }
    }
  }
}

TEST(CpuPrimitives, GatherOutOfRangeThrows) {
  Graph g;
  Tensor data = g.tensor("data", {kS, 3});
  Tensor idx = g.tensor("idx", {5}, DType::I32);
  prim::gather(idx, data).output("y");
  cpu::CpuBackend cpu(2);
  auto exe = testing::load_plan(cpu, testing::llir_direct(g), {{{"s", 2}}});
  for (int32_t bad : {6, -1, 1000}) {
    BufferMap in;
    std::vector<float> d(6, 1.0f);
    in["data"] = to_host_buffer(d.data(), d.size(), DType::F32, "data");
    std::vector<int32_t> iv = {0, 5, bad, 2, bad};
    in["idx"] = to_host_buffer(iv.data(), iv.size(), DType::I32, "idx");
    testing::expect_error(
        [&] {
          testing::run_executable(exe, g, in, {{"s", 2}});
        },
        {"Gather", "index " + std::to_string(bad), "position 2", "6 elements"});
  }
  // Large: the error of the first bad position is the one reported, across threads.
  Graph big;
  Tensor bd = big.tensor("data", {10});
  Tensor bi = big.tensor("idx", {200000}, DType::I64);
  prim::gather(bi, bd).output("y");
  std::vector<int64_t> iv(200000, 3);
  iv[150000] = 10;
  iv[170000] = -4;
  BufferMap in;
  std::vector<float> d(10, 2.0f);
  in["data"] = to_host_buffer(d.data(), d.size(), DType::F32, "data");
  in["idx"] = to_host_buffer(iv.data(), iv.size(), DType::I64, "idx");
  cpu::CpuBackend cpu4(4);
  testing::expect_error([&] { testing::run_backend(cpu4, big, in); },
                        {"index 10", "position 150000"});
}

TEST(CpuPrimitives, ScatterDuplicatesAndSkippedIndices) {
  for (DType t : {DType::F32, DType::F16, DType::I64, DType::U8, DType::Bool}) {
    Graph g;
    Tensor dest = operand(g, "dest", t, Layout::Perm, kS);  // [s, 6] through a permute
    Tensor idx = g.tensor("idx", {kS, 3}, DType::I32);
    Tensor src = g.tensor("src", {kS, 3}, t);
    prim::scatter(dest, idx, src).output("y");
    cpu::CpuBackend cpu(2);
    auto exe = testing::load_plan(cpu, testing::llir_direct(g), {{{"s", 1}}, {{"s", 5}}});
    for (int64_t s : {1, 2, 5}) {
      DynMap dyn{{"s", s}};
      BufferMap in = random_inputs(g, dyn, 9, false);
      std::vector<int32_t> iv;
      for (int64_t i = 0; i < 3 * s; ++i) {
        const int32_t choices[] = {
            0, 1, 1, -1, static_cast<int32_t>(6 * s), static_cast<int32_t>(6 * s - 1), 2, 1000};
        iv.push_back(choices[(i * 5 + s) % 8]);
      }
      in["idx"] = to_host_buffer(iv.data(), iv.size(), DType::I32, "idx");
      ReferenceRuntime rt(g);
      for (const auto& [label, buf] : in)
        rt.set_bytes(label, buf.bytes.data(), buf.bytes.size());
      rt.execute(dyn);
      BufferMap got = testing::run_executable(exe, g, in, dyn);
      const Node& n = g.node(g.find("y"));
      HostBuffer want{t, rt.get_bytes(Tensor(g, g.find("y"), View::contiguous(n.shape), t))};
      EXPECT_EQ(got.at("y").bytes, want.bytes) << name(t) << " s=" << s;
    }
  }
}

TEST(CpuPrimitives, LargeScatterLaterWritesWin) {
  Graph g;
  Tensor dest = g.tensor("dest", {1000});
  Tensor idx = g.tensor("idx", {kS}, DType::I64);
  Tensor src = g.tensor("src", {kS});
  prim::scatter(dest, idx, src).output("y");
  DynMap dyn{{"s", 100000}};
  BufferMap in = random_inputs(g, dyn, 4, false);
  std::vector<int64_t> iv = testing::random_ints(100000, -50, 1050, 8);  // duplicates, skips
  in["idx"] = to_host_buffer(iv.data(), iv.size(), DType::I64, "idx");
  ReferenceRuntime rt(g);
  for (const auto& [label, buf] : in)
    rt.set_bytes(label, buf.bytes.data(), buf.bytes.size());
  rt.execute(dyn);
  cpu::CpuBackend cpu(4);
  BufferMap got = testing::run_backend(cpu, g, in, dyn);
  EXPECT_EQ(got.at("y").bytes,
            rt.get_bytes(Tensor(g, g.find("y"), View::contiguous({1000}), DType::F32)));
}

// ---------------------------------------------------------------- Tensor API ops

TEST(CpuPrimitives, HighLevelOpsMatchTheReference) {
  for (DType t : {DType::F32, DType::F16}) {
    Graph g;
    Tensor x = g.tensor("x", {kS, 16}, t);
    Tensor w = g.tensor("w", {16, 8}, t);
    Tensor gamma = g.tensor("gamma", {16}, t);
    Tensor beta = g.tensor("beta", {16}, t);
    Tensor y = g.tensor("y", {kS, 16}, t);
    x.softmax(-1).output("softmax");
    x.matmul(w).output("matmul");
    x.layer_norm(gamma, beta).output("layer_norm");
    (x < y).where(x, y * 2.0).output("where");
    concat({x, y, x.exp()}, 0).output("concat");
    x.sum(0).output("sum0");
    x.mean(-1).output("mean");
    auto tol = [t](DType) {
      const double eps = testing::compute_eps(t);
      Tol base = testing::tol_for(t, 4);
      return Tol{base.rtol + 64 * eps, base.atol + 64 * eps};
    };
    check_cpu(g, {{{"s", 5}}, {{"s", 1}}, {{"s", 33}}}, std::string("nn ") + std::string(name(t)),
              tol, 3, false);
  }
}

TEST(CpuPrimitives, InlineBf16ConversionsMatchDtype) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float a = cpu::f32_from_bf16(static_cast<uint16_t>(h));
    const float b = bf16_bits_to_f32(static_cast<uint16_t>(h));
    ASSERT_EQ(std::memcmp(&a, &b, 4), 0) << "bf16 bits " << h;
  }
  std::mt19937_64 rng(5);
  std::vector<uint32_t> patterns = {0u,          0x80000000u, 0x7F800000u, 0xFF800000u, 0x7F7FFFFFu,
                                    0x7F7F8000u, 0x7FC00001u, 0xFF800001u, 0x00000001u, 0x00008000u,
                                    0x00018000u, 0x3F808000u, 0x3F818000u};
  for (int i = 0; i < 1000000; ++i)
    patterns.push_back(static_cast<uint32_t>(rng()));
  for (uint32_t bits : patterns) {
    float f;
    std::memcpy(&f, &bits, 4);
    ASSERT_EQ(cpu::bf16_from_f32(f), f32_to_bf16_bits(f)) << "f32 bits " << bits;
  }
}

TEST(CpuBackend, ExecutesPrimitivesAndNamesRulesets) {
  cpu::CpuBackend cpu(2);
  EXPECT_EQ(cpu.threads(), 2);
  EXPECT_EQ(cpu.name(), "cpu");
  for (int k = 0; k <= static_cast<int>(OpKind::Output); ++k)
    EXPECT_TRUE(cpu.executes(hlir_op(static_cast<OpKind>(k)))) << op_name(static_cast<OpKind>(k));
  static const OpDef kForeign{"cuda.Something"};
  EXPECT_FALSE(cpu.executes(&kForeign));
  for (const RuleSet& rs : cpu.rulesets())
    EXPECT_FALSE(rs.rules.empty()) << rs.name;
  EXPECT_GE(cpu::CpuBackend(0).threads(), 1);
}

}  // namespace
}  // namespace luminal
