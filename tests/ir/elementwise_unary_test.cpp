// Unary elementwise high-level ops (luminal/ir/elementwise_unary.cpp) on the ReferenceRuntime,
// against plain loops over std:: math in double (pow is in elementwise_pow_test.cpp).
//
// Tolerances: |got - want| <= atol + rtol*|want|, where want is the double reference computed from
// the inputs as rounded to the dtype and then rounded to the output dtype. The base bound is
// rtol = atol = 4*eps(dtype). Composite ops add an op-specific term in units of the compute
// epsilon ec (f64 for f64, f32 for every other float dtype, which computes in f32):
//   exp, sigmoid, silu: rtol += |x|*ec      (x*log2(e) is rounded before exp2)
//   cos:                atol += 8*ec        (1 - 2*sin(x/2)^2)
//   tanh:               atol += 8*ec        (2*sigmoid(2x) - 1: absolute, not relative, near 0)
//   erf:                atol += 1.5e-7 + 8*ec           (Abramowitz-Stegun 7.1.26)
//   gelu:               atol += |x|*(1.5e-7 + 8*ec)/2 + 8*ec
//   gelu_tanh:          atol += (|x|+1)*8*ec
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <numbers>

#include "support/check.hpp"
#include "support/expect_error.hpp"
#include "support/run_graph.hpp"

namespace luminal {
namespace {

using testing::compute_eps;
using testing::expect_error_naming;
using testing::expect_within;
using testing::kFloatTypes;
using testing::kInf;
using testing::kNaN;
using testing::random_values;
using testing::round_to;
using testing::rounded;
using testing::run_unary;
using testing::Tol;
using testing::UnaryOp;
using testing::wrap_to;

struct FloatUnaryCase {
  std::string name;
  UnaryOp op;
  std::function<double(double)> ref;
  double lo, hi;
  std::vector<double> specials;
  // Tolerance beyond the base 4*eps(dtype), given x and the compute epsilon.
  std::function<Tol(double x, double ec)> extra = [](double, double) { return Tol{0, 0}; };
};

void check_float_unary(const FloatUnaryCase& c, uint64_t seed) {
  for (DType t : kFloatTypes) {
    std::vector<double> in = random_values(96, c.lo, c.hi, seed);
    in.insert(in.end(), c.specials.begin(), c.specials.end());
    in = rounded(in, t);
    DType out_t;
    std::vector<double> got = run_unary(t, in, c.op, &out_t);
    EXPECT_EQ(out_t, t) << c.name;
    std::vector<double> want;
    for (double v : in)
      want.push_back(round_to(t, c.ref(v)));
    const double e = epsilon(t), ec = compute_eps(t);
    expect_within(
        in, got, want,
        [&](size_t i) {
          Tol x = c.extra(in[i], ec);
          return Tol{4 * e + x.rtol, 4 * e + x.atol};
        },
        c.name + " " + std::string(name(t)));
  }
}

const std::vector<double> kAllSpecials = {kNaN, kInf, -kInf, 0.0, -0.0, 1.0, -1.0};

double gelu_ref(double x) { return 0.5 * x * (1 + std::erf(x / std::numbers::sqrt2)); }
double gelu_tanh_ref(double x) {
  const double k = std::sqrt(2 / std::numbers::pi);
  return 0.5 * x * (1 + std::tanh(k * (x + 0.044715 * x * x * x)));
}

TEST(ElementwiseUnary, SimpleFloatOps) {
  std::vector<FloatUnaryCase> cases = {
      {"neg", [](const Tensor& x) { return x.neg(); }, [](double x) { return -x; }, -100, 100,
       kAllSpecials},
      {"operator-", [](const Tensor& x) { return -x; }, [](double x) { return -x; }, -100, 100,
       kAllSpecials},
      {"abs", [](const Tensor& x) { return x.abs(); }, [](double x) { return std::fabs(x); }, -100,
       100, kAllSpecials},
      {"sign", [](const Tensor& x) { return x.sign(); },
       [](double x) { return std::isnan(x) ? x : (x > 0) - (x < 0); }, -3, 3, kAllSpecials},
      {"relu", [](const Tensor& x) { return x.relu(); },
       [](double x) { return std::isnan(x) ? x : std::max(x, 0.0); }, -10, 10, kAllSpecials},
      {"square", [](const Tensor& x) { return x.square(); }, [](double x) { return x * x; }, -100,
       100, kAllSpecials},
      {"sqrt", [](const Tensor& x) { return x.sqrt(); }, [](double x) { return std::sqrt(x); }, 0,
       1000, kAllSpecials},
      {"rsqrt", [](const Tensor& x) { return x.rsqrt(); },
       [](double x) { return 1 / std::sqrt(x); }, 0.01, 1000, kAllSpecials},
      {"reciprocal", [](const Tensor& x) { return x.reciprocal(); }, [](double x) { return 1 / x; },
       -100, 100, kAllSpecials},
      {"exp2", [](const Tensor& x) { return x.exp2(); }, [](double x) { return std::exp2(x); }, -30,
       30, kAllSpecials},
      {"log2", [](const Tensor& x) { return x.log2(); }, [](double x) { return std::log2(x); }, 0,
       1000, kAllSpecials},
      {"log",
       [](const Tensor& x) { return x.log(); },
       [](double x) { return std::log(x); },
       0,
       1000,
       {kNaN, kInf, -kInf, 0.0, -0.0, 1.0, -1.0, 1e-30, 1e30}},
      {"sin", [](const Tensor& x) { return x.sin(); }, [](double x) { return std::sin(x); }, -10,
       10, kAllSpecials},
  };
  uint64_t seed = 1;
  for (const auto& c : cases)
    check_float_unary(c, seed++);
}

TEST(ElementwiseUnary, CompositeFloatOps) {
  auto rel_x = [](double x, double ec) { return Tol{std::isfinite(x) ? std::fabs(x) * ec : 0, 0}; };
  std::vector<FloatUnaryCase> cases = {
      {"exp",
       [](const Tensor& x) { return x.exp(); },
       [](double x) { return std::exp(x); },
       -20,
       20,
       {kNaN, kInf, -kInf, 0.0, -0.0, 1.0, -1.0, 80.0, -80.0, 700.0, -700.0},
       rel_x},
      {"cos", [](const Tensor& x) { return x.cos(); }, [](double x) { return std::cos(x); }, -10,
       10, kAllSpecials,
       [](double, double ec) {
         return Tol{0, 8 * ec};
       }},
      {"tanh",
       [](const Tensor& x) { return x.tanh(); },
       [](double x) { return std::tanh(x); },
       -10,
       10,
       {kNaN, kInf, -kInf, 0.0, -0.0, 1e-4, -1e-4, 30.0, -30.0, 100.0, -100.0},
       [](double, double ec) {
         return Tol{0, 8 * ec};
       }},
      {"sigmoid",
       [](const Tensor& x) { return x.sigmoid(); },
       [](double x) { return 1 / (1 + std::exp(-x)); },
       -20,
       20,
       {kNaN, kInf, -kInf, 0.0, -0.0, 100.0, -100.0},
       rel_x},
      // silu(-inf) = -inf * 0 is NaN here as in the plain formula and torch; not asserted.
      {"silu",
       [](const Tensor& x) { return x.silu(); },
       [](double x) { return x / (1 + std::exp(-x)); },
       -20,
       20,
       {kNaN, kInf, 0.0, -0.0, 100.0, -100.0},
       rel_x},
      {"swish",
       [](const Tensor& x) { return x.swish(); },
       [](double x) { return x / (1 + std::exp(-x)); },
       -20,
       20,
       {kNaN, kInf, 0.0},
       rel_x},
      {"erf",
       [](const Tensor& x) { return x.erf(); },
       [](double x) { return std::erf(x); },
       -4,
       4,
       {kNaN, kInf, -kInf, 0.0, -0.0, 1e-5, -1e-5, 10.0, -10.0, 1e20, -1e20},
       [](double, double ec) {
         return Tol{0, 1.5e-7 + 8 * ec};
       }},
      {"gelu",
       [](const Tensor& x) { return x.gelu(); },
       gelu_ref,
       -8,
       8,
       {kNaN, kInf, 0.0, -0.0, 50.0, -50.0},
       [](double x, double ec) {
         return Tol{0, std::fabs(x) * (1.5e-7 + 8 * ec) / 2 + 8 * ec};
       }},
      {"gelu_tanh",
       [](const Tensor& x) { return x.gelu_tanh(); },
       gelu_tanh_ref,
       -8,
       8,
       {kNaN, kInf, 0.0, -0.0, 50.0, -50.0, 1e4, -1e4},
       [](double x, double ec) {
         return Tol{0, (std::fabs(x) + 1) * 8 * ec};
       }},
  };
  uint64_t seed = 100;
  for (const auto& c : cases)
    check_float_unary(c, seed++);
}

TEST(ElementwiseUnary, ErfMaxErrorIsAbramowitzStegunBound) {
  // Dense sweep in f64, where the only error is the approximation's own (<= 1.5e-7).
  std::vector<double> in;
  for (int i = -3000; i <= 3000; ++i)
    in.push_back(i * 0.002);
  std::vector<double> got = run_unary(DType::F64, in, [](const Tensor& x) { return x.erf(); });
  double worst = 0;
  for (size_t i = 0; i < in.size(); ++i)
    worst = std::max(worst, std::fabs(got[i] - std::erf(in[i])));
  EXPECT_LE(worst, 1.5e-7);
  EXPECT_GT(worst, 1e-9);  // it is the approximation, not std::erf
}

TEST(ElementwiseUnary, CosOfLargeArgumentsStaysAccurate) {
  // RoPE tables take cos of position * frequency, up to ~1e5; the error must not grow with |x|.
  for (DType t : {DType::F32, DType::F64}) {
    std::vector<double> in = rounded(random_values(200, 0, 1e5, 61), t);
    std::vector<double> got = run_unary(t, in, [](const Tensor& x) { return x.cos(); });
    std::vector<double> want;
    for (double v : in)
      want.push_back(std::cos(v));
    const double e = epsilon(t);
    testing::expect_close(got, want, {4 * e, 12 * e}, "cos large " + std::string(name(t)));
  }
}

TEST(ElementwiseUnary, ExactValuesAtSpecialPoints) {
  for (DType t : kFloatTypes) {
    std::string n(name(t));
    std::vector<double> in = {0.0, -0.0};
    auto zero = [&](const UnaryOp& op) { return run_unary(t, in, op); };
    EXPECT_EQ(zero([](const Tensor& x) { return x.exp(); }), (std::vector<double>{1, 1})) << n;
    EXPECT_EQ(zero([](const Tensor& x) { return x.sigmoid(); }), (std::vector<double>{0.5, 0.5}))
        << n;
    EXPECT_EQ(zero([](const Tensor& x) { return x.tanh(); }), (std::vector<double>{0, 0})) << n;
    EXPECT_EQ(zero([](const Tensor& x) { return x.erf(); }), (std::vector<double>{0, 0})) << n;
    EXPECT_EQ(zero([](const Tensor& x) { return x.gelu(); }), (std::vector<double>{0, 0})) << n;
    EXPECT_EQ(zero([](const Tensor& x) { return x.silu(); }), (std::vector<double>{0, 0})) << n;
    // abs(-0) is +0.
    std::vector<double> a = zero([](const Tensor& x) { return x.abs(); });
    EXPECT_FALSE(std::signbit(a[1])) << n;
    // log(1) = 0, sqrt(4) = 2, reciprocal(4) = 0.25 exactly.
    EXPECT_EQ(run_unary(t, {1.0}, [](const Tensor& x) { return x.log(); }),
              (std::vector<double>{0}))
        << n;
    EXPECT_EQ(run_unary(t, {4.0}, [](const Tensor& x) { return x.sqrt(); }),
              (std::vector<double>{2}))
        << n;
    EXPECT_EQ(run_unary(t, {4.0}, [](const Tensor& x) { return x.rsqrt(); }),
              (std::vector<double>{0.5}))
        << n;
    EXPECT_EQ(run_unary(t, {-4.0}, [](const Tensor& x) { return x.reciprocal(); }),
              (std::vector<double>{-0.25}))
        << n;
  }
}

// ---- integer unary ops ----

TEST(ElementwiseUnary, IntegerNegAbsSignReluSquare) {
  for (DType t : {DType::I8, DType::I32, DType::I64}) {
    const int64_t lo = static_cast<int64_t>(min_value(t)), hi = static_cast<int64_t>(max_value(t));
    std::vector<int64_t> in = testing::random_ints(40, -1000, 1000, 5);
    for (int64_t& v : in)
      v = wrap_to(t, v);
    in.insert(in.end(), {0, 1, -1, lo, hi, lo + 1});
    Graph g;
    auto x = g.tensor("x", {static_cast<int64_t>(in.size())}, t);
    auto neg = x.neg().output("neg");
    auto mneg = (-x).output("mneg");
    auto ab = x.abs().output("abs");
    auto sg = x.sign().output("sign");
    auto re = x.relu().output("relu");
    auto sq = x.square().output("sq");
    ReferenceRuntime rt(g);
    rt.set(x, in);
    rt.execute();
    std::vector<int64_t> wneg, wab, wsg, wre, wsq;
    for (int64_t v : in) {
      uint64_t u = static_cast<uint64_t>(v);
      wneg.push_back(wrap_to(t, static_cast<int64_t>(0 - u)));  // -min wraps to min
      wab.push_back(v < 0 ? wrap_to(t, static_cast<int64_t>(0 - u)) : v);
      wsg.push_back((v > 0) - (v < 0));
      wre.push_back(std::max<int64_t>(v, 0));
      wsq.push_back(wrap_to(t, static_cast<int64_t>(u * u)));
    }
    std::string n(name(t));
    EXPECT_EQ(rt.get<int64_t>(neg), wneg) << n;
    EXPECT_EQ(rt.get<int64_t>(mneg), wneg) << n;
    EXPECT_EQ(rt.get<int64_t>(ab), wab) << n;
    EXPECT_EQ(rt.get<int64_t>(sg), wsg) << n;
    EXPECT_EQ(rt.get<int64_t>(re), wre) << n;
    EXPECT_EQ(rt.get<int64_t>(sq), wsq) << n;
    EXPECT_EQ(neg.dtype(), t);
    EXPECT_EQ(sg.dtype(), t);
  }
}

TEST(ElementwiseUnary, UnsignedAbsSignNegWrap) {
  std::vector<int64_t> in = {0, 1, 7, 128, 255};
  Graph g;
  auto x = g.tensor("x", {5}, DType::U8);
  auto ab = x.abs().output("abs");
  auto sg = x.sign().output("sign");
  auto ng = x.neg().output("neg");
  auto re = x.relu().output("relu");
  ReferenceRuntime rt(g);
  rt.set(x, in);
  rt.execute();
  EXPECT_EQ(rt.get<int64_t>(ab), in);
  EXPECT_EQ(rt.get<int64_t>(sg), (std::vector<int64_t>{0, 1, 1, 1, 1}));
  EXPECT_EQ(rt.get<int64_t>(ng), (std::vector<int64_t>{0, 255, 249, 128, 1}));
  EXPECT_EQ(rt.get<int64_t>(re), in);
}

TEST(ElementwiseUnary, FloatOnlyOpsRejectIntegerAndBool) {
  const std::vector<std::pair<std::string, UnaryOp>> ops = {
      {"exp", [](const Tensor& x) { return x.exp(); }},
      {"exp2", [](const Tensor& x) { return x.exp2(); }},
      {"log", [](const Tensor& x) { return x.log(); }},
      {"log2", [](const Tensor& x) { return x.log2(); }},
      {"sin", [](const Tensor& x) { return x.sin(); }},
      {"cos", [](const Tensor& x) { return x.cos(); }},
      {"tanh", [](const Tensor& x) { return x.tanh(); }},
      {"sigmoid", [](const Tensor& x) { return x.sigmoid(); }},
      {"gelu", [](const Tensor& x) { return x.gelu(); }},
      {"gelu_tanh", [](const Tensor& x) { return x.gelu_tanh(); }},
      {"erf", [](const Tensor& x) { return x.erf(); }},
      {"silu", [](const Tensor& x) { return x.silu(); }},
      {"sqrt", [](const Tensor& x) { return x.sqrt(); }},
      {"rsqrt", [](const Tensor& x) { return x.rsqrt(); }},
      {"reciprocal", [](const Tensor& x) { return x.reciprocal(); }},
  };
  for (DType t : {DType::I32, DType::I64, DType::U8, DType::Bool}) {
    Graph g;
    auto x = g.tensor("x", {3}, t);
    for (const auto& [op_name, op] : ops) {
      SCOPED_TRACE(op_name + " " + std::string(name(t)));
      expect_error_naming([&] { op(x); }, op_name);
    }
  }
}

TEST(ElementwiseUnary, ArithmeticOpsRejectBool) {
  Graph g;
  auto b = g.tensor("b", {3}, DType::Bool);
  expect_error_naming([&] { b.neg(); }, "neg");
  expect_error_naming([&] { -b; }, "neg");
  expect_error_naming([&] { b.abs(); }, "abs");
  expect_error_naming([&] { b.sign(); }, "sign");
  expect_error_naming([&] { b.relu(); }, "relu");
  expect_error_naming([&] { b.pow(2.0); }, "pow");
}

// ---- predicates, logical_not, cast ----

TEST(ElementwiseUnary, IsNanIsInfLogicalNotFloat) {
  std::vector<double> in = {kNaN, kInf, -kInf, 0.0, -0.0, 1.0, -2.5, 65504, 1e-40};
  for (DType t : kFloatTypes) {
    std::vector<double> r = rounded(in, t);
    Graph g;
    auto x = g.tensor("x", {static_cast<int64_t>(r.size())}, t);
    auto n = x.isnan().output("n");
    auto i = x.isinf().output("i");
    auto l = x.logical_not().output("l");
    EXPECT_EQ(n.dtype(), DType::Bool);
    EXPECT_EQ(i.dtype(), DType::Bool);
    EXPECT_EQ(l.dtype(), DType::Bool);
    ReferenceRuntime rt(g);
    rt.set(x, r);
    rt.execute();
    std::vector<int> wn, wi, wl;
    for (double v : r) {
      wn.push_back(std::isnan(v));
      wi.push_back(std::isinf(v));
      wl.push_back(v == 0);  // NaN is truthy
    }
    EXPECT_EQ(rt.get<int>(n), wn) << name(t);
    EXPECT_EQ(rt.get<int>(i), wi) << name(t);
    EXPECT_EQ(rt.get<int>(l), wl) << name(t);
  }
}

TEST(ElementwiseUnary, IsNanIsInfLogicalNotIntegerAndBool) {
  for (DType t : {DType::I8, DType::U8, DType::I32, DType::I64, DType::Bool}) {
    std::vector<int64_t> in =
        t == DType::Bool ? std::vector<int64_t>{0, 1, 1, 0} : std::vector<int64_t>{0, 1, 2, 0};
    if (is_signed(t)) in[2] = -5;
    Graph g;
    auto x = g.tensor("x", {2, 2}, t);
    auto n = x.isnan().output("n");
    auto i = x.isinf().output("i");
    auto l = x.logical_not().output("l");
    ReferenceRuntime rt(g);
    rt.set(x, in);
    rt.execute();
    EXPECT_EQ(rt.get<int>(n), (std::vector<int>{0, 0, 0, 0})) << name(t);
    EXPECT_EQ(rt.get<int>(i), (std::vector<int>{0, 0, 0, 0})) << name(t);
    EXPECT_EQ(rt.get<int>(l), (std::vector<int>{1, 0, 0, 1})) << name(t);
    EXPECT_EQ(rt.shape(n), (std::vector<int64_t>{2, 2}));
  }
}

TEST(ElementwiseUnary, CastFloatToEverything) {
  std::vector<double> in = {1.7,     -2.9,    kNaN,  300.0, 0.0,       -0.0,
                            70000.0, 1.0 / 3, -kInf, 0.5,   16777217.0};
  Graph g;
  auto x = g.tensor("x", {static_cast<int64_t>(in.size())}, DType::F64);
  auto f32 = x.cast(DType::F32).output("f32");
  auto f16 = x.cast(DType::F16).output("f16");
  auto bf = x.cast(DType::BF16).output("bf16");
  auto i32 = x.cast(DType::I32).output("i32");
  auto u8 = x.cast(DType::U8).output("u8");
  auto i8 = x.cast(DType::I8).output("i8");
  auto b = x.cast(DType::Bool).output("b");
  auto same = x.cast(DType::F64);
  EXPECT_EQ(same.id(), x.id());  // a cast to the same dtype adds nothing
  ReferenceRuntime rt(g);
  rt.set(x, in);
  rt.execute();
  testing::expect_close(rt.get<double>(f32), rounded(in, DType::F32), {0, 0}, "f32");
  testing::expect_close(rt.get<double>(f16), rounded(in, DType::F16), {0, 0},
                        "f16");  // 70000 -> inf
  EXPECT_EQ(rt.get<double>(f16)[6], kInf);
  testing::expect_close(rt.get<double>(bf), rounded(in, DType::BF16), {0, 0}, "bf16");
  // Truncation toward zero, NaN -> 0, infinities saturate before the wrap, then wrap to the width.
  std::vector<int64_t> wi32, wu8, wi8;
  for (double v : in) {
    int64_t tr = std::isnan(v)   ? 0
                 : std::isinf(v) ? std::numeric_limits<int64_t>::min()
                                 : static_cast<int64_t>(v);
    wi32.push_back(wrap_to(DType::I32, tr));
    wu8.push_back(wrap_to(DType::U8, tr));
    wi8.push_back(wrap_to(DType::I8, tr));
  }
  EXPECT_EQ(rt.get<int64_t>(i32), wi32);
  EXPECT_EQ(rt.get<int64_t>(u8), wu8);
  EXPECT_EQ(rt.get<int64_t>(i8), wi8);
  EXPECT_EQ(rt.get<int64_t>(u8)[3], 44);                                           // 300 wraps
  EXPECT_EQ(rt.get<int64_t>(u8)[1], 254);                                          // -2 wraps
  EXPECT_EQ(rt.get<int>(b), (std::vector<int>{1, 1, 1, 1, 0, 0, 1, 1, 1, 1, 1}));  // NaN is true
}

TEST(ElementwiseUnary, CastIntegersAndBool) {
  std::vector<int64_t> in = {0, 1, -1, 127, 128, -129, 255, 256, 16777217, (int64_t{1} << 40) + 3};
  Graph g;
  auto x = g.tensor("x", {static_cast<int64_t>(in.size())}, DType::I64);
  auto i8 = x.cast(DType::I8).output("i8");
  auto u8 = x.cast(DType::U8).output("u8");
  auto i32 = x.cast(DType::I32).output("i32");
  auto f32 = x.cast(DType::F32).output("f32");
  auto f64 = x.cast(DType::F64).output("f64");
  auto b = x.cast(DType::Bool).output("b");
  auto back = x.cast(DType::Bool).cast(DType::I32).output("back");
  ReferenceRuntime rt(g);
  rt.set(x, in);
  rt.execute();
  std::vector<int64_t> wi8, wu8, wi32, wb;
  std::vector<double> wf32, wf64;
  for (int64_t v : in) {
    wi8.push_back(wrap_to(DType::I8, v));
    wu8.push_back(wrap_to(DType::U8, v));
    wi32.push_back(wrap_to(DType::I32, v));
    wf32.push_back(static_cast<float>(v));
    wf64.push_back(static_cast<double>(v));
    wb.push_back(v != 0);
  }
  EXPECT_EQ(rt.get<int64_t>(i8), wi8);
  EXPECT_EQ(rt.get<int64_t>(u8), wu8);
  EXPECT_EQ(rt.get<int64_t>(i32), wi32);
  EXPECT_EQ(rt.get<double>(f32), wf32);  // 16777217 rounds to 16777216
  EXPECT_EQ(rt.get<double>(f64), wf64);
  EXPECT_EQ(rt.get<int64_t>(b), wb);
  EXPECT_EQ(rt.get<int64_t>(back), wb);
  // Bool to float is 0/1.
  Graph g2;
  auto bb = g2.tensor("b", {3}, DType::Bool);
  auto bf = bb.cast(DType::BF16).output("bf");
  ReferenceRuntime rt2(g2);
  rt2.set(bb, std::vector<bool>{true, false, true});
  rt2.execute();
  EXPECT_EQ(rt2.get<float>(bf), (std::vector<float>{1, 0, 1}));
}

// ---- views, dynamic dims, low-precision rounding ----

TEST(ElementwiseUnary, ThroughTransposedAndBroadcastViews) {
  Graph g;
  auto x = g.tensor("x", {3, 4});
  auto v = g.tensor("v", {4});
  auto t = x.transpose(0, 1).exp().output("t");     // [4, 3]
  auto b = v.expand({2, 4}).gelu().output("b");     // [2, 4]
  auto s = x.slice(1, 1, 3).sigmoid().output("s");  // [3, 2]
  ReferenceRuntime rt(g);
  std::vector<double> xv = random_values(12, -3, 3, 9), vv = random_values(4, -3, 3, 10);
  xv = rounded(xv, DType::F32);
  vv = rounded(vv, DType::F32);
  rt.set(x, xv);
  rt.set(v, vv);
  rt.execute();
  std::vector<double> wt, wb, ws;
  for (int j = 0; j < 4; ++j)
    for (int i = 0; i < 3; ++i)
      wt.push_back(std::exp(xv[i * 4 + j]));
  for (int r = 0; r < 2; ++r)
    for (int j = 0; j < 4; ++j)
      wb.push_back(gelu_ref(vv[j]));
  for (int i = 0; i < 3; ++i)
    for (int j = 1; j < 3; ++j)
      ws.push_back(1 / (1 + std::exp(-xv[i * 4 + j])));
  const double e = epsilon(DType::F32);
  testing::expect_close(rt.get<double>(t), wt, {8 * e, 8 * e}, "exp transposed");
  testing::expect_close(rt.get<double>(b), wb, {8 * e, 1e-6}, "gelu broadcast");
  testing::expect_close(rt.get<double>(s), ws, {8 * e, 8 * e}, "sigmoid slice");
  EXPECT_EQ(rt.shape(t), (std::vector<int64_t>{4, 3}));
  EXPECT_EQ(rt.shape(b), (std::vector<int64_t>{2, 4}));
}

TEST(ElementwiseUnary, DynamicDimAtSeveralValues) {
  for (DType t : {DType::F32, DType::BF16}) {
    Graph g;
    auto x = g.tensor("x", {"s", 3}, t);
    auto y = x.tanh().output("y");
    auto z = x.abs().sqrt().output("z");
    auto n = x.isnan().output("n");
    ReferenceRuntime rt(g);
    for (int64_t s : {1, 2, 5}) {
      std::vector<double> in = rounded(random_values(s * 3, -4, 4, 20 + s), t);
      in[0] = kNaN;
      rt.set(x, in);
      rt.execute({{"s", s}});
      EXPECT_EQ(rt.shape(y), (std::vector<int64_t>{s, 3}));
      std::vector<double> wy, wz;
      std::vector<int> wn;
      for (double v : in) {
        wy.push_back(round_to(t, std::tanh(v)));
        wz.push_back(round_to(t, std::sqrt(std::fabs(v))));
        wn.push_back(std::isnan(v));
      }
      const double e = epsilon(t), ec = compute_eps(t);
      testing::expect_close(rt.get<double>(y), wy, {4 * e, 4 * e + 8 * ec},
                            "tanh s=" + std::to_string(s));
      testing::expect_close(rt.get<double>(z), wz, {4 * e, 4 * e},
                            "sqrt|x| s=" + std::to_string(s));
      EXPECT_EQ(rt.get<int>(n), wn) << "s=" << s;
    }
  }
}

TEST(ElementwiseUnary, LowPrecisionRoundsOnceFromF32) {
  // Composite ops on f16/bf16 compute in f32 and round once: the result is the f32 result rounded.
  for (DType t : {DType::F16, DType::BF16}) {
    std::vector<double> in = rounded(random_values(64, -6, 6, 77), t);
    Graph g;
    auto x = g.tensor("x", {64}, t);
    auto y = x.gelu().output("y");
    auto xf = g.tensor("xf", {64}, DType::F32);
    auto yf = xf.gelu().output("yf");
    ReferenceRuntime rt(g);
    rt.set(x, in);
    rt.set(xf, in);
    rt.execute();
    EXPECT_EQ(rt.get<double>(y), rounded(rt.get<double>(yf), t)) << name(t);
  }
}

}  // namespace
}  // namespace luminal
