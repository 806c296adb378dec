// Every primitive op on the ReferenceRuntime against plain loops, over dtypes.
#include <gtest/gtest.h>

#include <cmath>

#include "luminal/ir/prim.hpp"
#include "support/check.hpp"

namespace luminal {
namespace {

using testing::expect_close;
using testing::kFloatTypes;
using testing::random_values;
using testing::round_to;
using testing::rounded;

const DType kIntTypes[] = {DType::I8, DType::U8, DType::I16, DType::U16, DType::I32, DType::I64};

std::vector<double> as_doubles(ReferenceRuntime& rt, const Tensor& t) { return rt.get<double>(t); }

TEST(Primitive, UnaryFloatOpsAllFloatTypes) {
  for (DType t : kFloatTypes) {
    Graph g;
    auto x = g.tensor("x", {7}, t);
    auto e = prim::unary(OpKind::Exp2, x, t).output("exp2");
    auto l = prim::unary(OpKind::Log2, x, t).output("log2");
    auto s = prim::unary(OpKind::Sin, x, t).output("sin");
    auto r = prim::unary(OpKind::Recip, x, t).output("recip");
    auto q = prim::unary(OpKind::Sqrt, x, t).output("sqrt");
    std::vector<double> in = rounded({0.5, 1.0, 2.5, 3.0, 0.0, -1.5, 8.0}, t);
    ReferenceRuntime rt(g);
    rt.set(x, in);
    rt.execute();
    std::vector<double> we, wl, ws, wr, wq;
    for (double v : in) {
      bool f64 = t == DType::F64;
      auto f = [&](double d) {
        return round_to(t, f64 ? d : static_cast<double>(static_cast<float>(d)));
      };
      we.push_back(f(f64 ? std::exp2(v) : std::exp2(static_cast<float>(v))));
      wl.push_back(f(f64 ? std::log2(v) : std::log2(static_cast<float>(v))));
      ws.push_back(f(f64 ? std::sin(v) : std::sin(static_cast<float>(v))));
      wr.push_back(f(f64 ? 1.0 / v : 1.0f / static_cast<float>(v)));
      wq.push_back(f(f64 ? std::sqrt(v) : std::sqrt(static_cast<float>(v))));
    }
    testing::Tol exact{0, 0};
    std::string n(name(t));
    expect_close(as_doubles(rt, e), we, exact, "exp2 " + n);
    expect_close(as_doubles(rt, l), wl, exact, "log2 " + n);  // includes -inf and NaN
    expect_close(as_doubles(rt, s), ws, exact, "sin " + n);
    expect_close(as_doubles(rt, r), wr, exact, "recip " + n);  // includes +inf
    expect_close(as_doubles(rt, q), wq, exact, "sqrt " + n);   // includes NaN
  }
}

TEST(Primitive, UnaryNaNAndInf) {
  Graph g;
  auto x = g.tensor("x", {4});
  auto e = prim::unary(OpKind::Exp2, x, DType::F32).output("e");
  auto r = prim::unary(OpKind::Recip, x, DType::F32).output("r");
  ReferenceRuntime rt(g);
  rt.set(x, std::vector<float>{NAN, INFINITY, -INFINITY, -0.0f});
  rt.execute();
  expect_close(as_doubles(rt, e), {NAN, INFINITY, 0, 1}, {0, 0});
  expect_close(as_doubles(rt, r), {NAN, 0, -0.0, -INFINITY}, {0, 0});
}

TEST(Primitive, FloatOpsRejectIntegers) {
  Graph g;
  auto x = g.tensor("x", {2}, DType::I32);
  EXPECT_THROW(prim::unary(OpKind::Sqrt, x, DType::I32), Error);
}

TEST(Primitive, BinaryFloat) {
  for (DType t : kFloatTypes) {
    Graph g;
    auto a = g.tensor("a", {2, 3}, t);
    auto b = g.tensor("b", {2, 3}, t);
    auto add = prim::binary(OpKind::Add, a, b).output("add");
    auto mul = prim::binary(OpKind::Mul, a, b).output("mul");
    auto mod = prim::binary(OpKind::Mod, a, b).output("mod");
    auto lt = prim::binary(OpKind::LessThan, a, b).output("lt");
    std::vector<double> av = rounded({1.5, -7.25, 3, NAN, INFINITY, 5}, t);
    std::vector<double> bv = rounded({2.5, 2, 3, 1, 1, -2}, t);
    ReferenceRuntime rt(g);
    rt.set(a, av);
    rt.set(b, bv);
    rt.execute();
    std::vector<double> wadd, wmul, wmod, wlt;
    for (size_t i = 0; i < av.size(); ++i) {
      wadd.push_back(round_to(t, av[i] + bv[i]));
      wmul.push_back(round_to(t, av[i] * bv[i]));
      wmod.push_back(round_to(t, std::fmod(av[i], bv[i])));
      wlt.push_back(av[i] < bv[i] ? 1 : 0);
    }
    std::string n(name(t));
    expect_close(as_doubles(rt, add), wadd, {0, 0}, "add " + n);
    expect_close(as_doubles(rt, mul), wmul, {0, 0}, "mul " + n);
    expect_close(as_doubles(rt, mod), wmod, {0, 0}, "mod " + n);  // -7.25 fmod 2 = -1.25
    expect_close(as_doubles(rt, lt), wlt, {0, 0}, "lt " + n);     // NaN < 1 is false
    EXPECT_EQ(g.node(lt.id()).dtype, DType::Bool);
  }
}

TEST(Primitive, BinaryIntegersWrapAndTruncatedMod) {
  for (DType t : kIntTypes) {
    Graph g;
    auto a = g.tensor("a", {6}, t);
    auto b = g.tensor("b", {6}, t);
    auto add = prim::binary(OpKind::Add, a, b).output("add");
    auto mul = prim::binary(OpKind::Mul, a, b).output("mul");
    auto mod = prim::binary(OpKind::Mod, a, b).output("mod");
    auto lt = prim::binary(OpKind::LessThan, a, b).output("lt");
    const bool sgn = is_signed(t);
    const int64_t big = static_cast<int64_t>(max_value(t));
    std::vector<int64_t> av = {7, sgn ? -7 : 9, big, 5, sgn ? -8 : 8, 0};
    std::vector<int64_t> bv = {3, 3, 1, 0, sgn ? -3 : 3, 4};
    ReferenceRuntime rt(g);
    rt.set(a, av);
    rt.set(b, bv);
    rt.execute();
    auto wrap = [&](int64_t v) {
      std::vector<uint8_t> buf(8);
      store_from_int64(t, buf.data(), 0, v);
      return load_as_int64(t, buf.data(), 0);
    };
    std::vector<int64_t> wadd, wmul, wmod, wlt;
    for (size_t i = 0; i < av.size(); ++i) {
      wadd.push_back(
          wrap(static_cast<int64_t>(static_cast<uint64_t>(av[i]) + static_cast<uint64_t>(bv[i]))));
      wmul.push_back(
          wrap(static_cast<int64_t>(static_cast<uint64_t>(av[i]) * static_cast<uint64_t>(bv[i]))));
      wmod.push_back(bv[i] == 0 ? 0 : av[i] % bv[i]);
      wlt.push_back(av[i] < bv[i]);
    }
    std::string n(name(t));
    EXPECT_EQ(rt.get<int64_t>(add), wadd) << n;  // big + 1 wraps
    EXPECT_EQ(rt.get<int64_t>(mul), wmul) << n;
    EXPECT_EQ(rt.get<int64_t>(mod), wmod) << n;  // -7 % 3 == -1, x % 0 == 0
    EXPECT_EQ(rt.get<int64_t>(lt), wlt) << n;
  }
}

TEST(Primitive, BoolAddIsOrMulIsAnd) {
  Graph g;
  auto a = g.tensor("a", {4}, DType::Bool);
  auto b = g.tensor("b", {4}, DType::Bool);
  auto o = prim::binary(OpKind::Add, a, b).output("or");
  auto n = prim::binary(OpKind::Mul, a, b).output("and");
  auto l = prim::binary(OpKind::LessThan, a, b).output("lt");
  ReferenceRuntime rt(g);
  rt.set(a, std::vector<bool>{false, false, true, true});
  rt.set(b, std::vector<bool>{false, true, false, true});
  rt.execute();
  EXPECT_EQ(rt.get<int>(o), (std::vector<int>{0, 1, 1, 1}));
  EXPECT_EQ(rt.get<int>(n), (std::vector<int>{0, 0, 0, 1}));
  EXPECT_EQ(rt.get<int>(l), (std::vector<int>{0, 1, 0, 0}));
}

TEST(Primitive, CastBetweenDtypes) {
  Graph g;
  auto x = g.tensor("x", {6}, DType::F32);
  auto i = x.cast(DType::I32).output("i");
  auto u = x.cast(DType::U8).output("u");
  auto h = x.cast(DType::F16).output("h");
  auto b = x.cast(DType::Bool).output("b");
  auto f8 = x.cast(DType::F8E4M3).output("f8");
  ReferenceRuntime rt(g);
  rt.set(x, std::vector<float>{1.7f, -2.9f, NAN, 300.0f, 0.0f, 1000.0f});
  rt.execute();
  EXPECT_EQ(rt.get<int64_t>(i), (std::vector<int64_t>{1, -2, 0, 300, 0, 1000}));
  EXPECT_EQ(rt.get<int64_t>(u),
            (std::vector<int64_t>{1, 254, 0, 44, 0, 232}));  // truncate, then wrap
  expect_close(rt.get<double>(h), {1.7001953125, -2.900390625, NAN, 300, 0, 1000}, {0, 0});
  EXPECT_EQ(rt.get<int>(b), (std::vector<int>{1, 1, 1, 1, 0, 1}));
  expect_close(rt.get<double>(f8), {1.75, -3, NAN, 288, 0, 448}, {0, 0});  // saturates
}

TEST(Primitive, SumAndMaxReduceOverEachAxis) {
  for (DType t : {DType::F32, DType::F64, DType::BF16, DType::I32, DType::I64}) {
    Graph g;
    auto x = g.tensor("x", {2, 3, 4}, t);
    std::vector<Tensor> sums, maxs;
    for (int a = 0; a < 3; ++a) {
      sums.push_back(prim::reduce(OpKind::SumReduce, x, a).output("sum" + std::to_string(a)));
      maxs.push_back(prim::reduce(OpKind::MaxReduce, x, a).output("max" + std::to_string(a)));
    }
    std::vector<int64_t> vi = testing::random_ints(24, -50, 50, 7);
    std::vector<double> v(vi.begin(), vi.end());
    ReferenceRuntime rt(g);
    rt.set(x, vi);
    rt.execute();
    const int dims[3] = {2, 3, 4};
    for (int a = 0; a < 3; ++a) {
      std::vector<double> ws, wm;
      for (int i = 0; i < 2; ++i)
        for (int j = 0; j < 3; ++j)
          for (int k = 0; k < 4; ++k) {
            int idx[3] = {i, j, k};
            if (idx[a] != 0) continue;
            double s = 0, m = -1e9;
            for (int r = 0; r < dims[a]; ++r) {
              idx[a] = r;
              double e = v[idx[0] * 12 + idx[1] * 4 + idx[2]];
              s += e;
              m = std::max(m, e);
            }
            ws.push_back(s);
            wm.push_back(m);
          }
      expect_close(rt.get<double>(sums[a]), ws, {0, 0}, "sum axis " + std::to_string(a));
      expect_close(rt.get<double>(maxs[a]), wm, {0, 0}, "max axis " + std::to_string(a));
    }
  }
}

TEST(Primitive, MaxReducePropagatesNaNAndEmptyIsMinusInf) {
  Graph g;
  auto x = g.tensor("x", {2, 3});
  auto m = prim::reduce(OpKind::MaxReduce, x, 1).output("m");
  auto e = g.tensor("e", {2, 0});
  auto me = prim::reduce(OpKind::MaxReduce, e, 1).output("me");
  auto se = prim::reduce(OpKind::SumReduce, e, 1).output("se");
  ReferenceRuntime rt(g);
  rt.set(x, std::vector<float>{1, NAN, 3, -INFINITY, 2, INFINITY});
  rt.set(e, std::vector<float>{});
  rt.execute();
  expect_close(rt.get<double>(m), {NAN, INFINITY}, {0, 0});
  expect_close(rt.get<double>(me), {-INFINITY, -INFINITY}, {0, 0});
  expect_close(rt.get<double>(se), {0, 0}, {0, 0});
}

TEST(Primitive, ReduceThroughStridedView) {
  Graph g;
  auto x = g.tensor("x", {2, 3});
  auto s = prim::reduce(OpKind::SumReduce, x.transpose(0, 1), 1).output("s");  // sums of columns
  ReferenceRuntime rt(g);
  rt.set(x, std::vector<float>{1, 2, 3, 10, 20, 30});
  rt.execute();
  EXPECT_EQ(rt.get<float>(s), (std::vector<float>{11, 22, 33}));
}

TEST(Primitive, ConstantAndIota) {
  Graph g;
  auto c = g.constant(2.5).expand({3}).output("c");
  auto ci = g.constant(-7, DType::I64).output("ci");
  auto io = g.iota(Expr::z() * 3 + Expr::var("s"), "s").output("io");
  ReferenceRuntime rt(g);
  rt.execute({{"s", 4}});
  EXPECT_EQ(rt.get<float>(c), (std::vector<float>{2.5, 2.5, 2.5}));
  EXPECT_EQ(rt.get<int64_t>(ci), (std::vector<int64_t>{-7}));
  EXPECT_EQ(rt.get<int>(io), (std::vector<int>{4, 7, 10, 13}));
  EXPECT_EQ(rt.shape(io), (std::vector<int64_t>{4}));
}

TEST(Primitive, GatherFlatIndexIntoView) {
  Graph g;
  auto data = g.tensor("data", {2, 3});
  auto idx = g.tensor("idx", {2, 2}, DType::I32);
  auto out = data.transpose(0, 1).gather_flat(idx).output("out");  // view [3, 2]
  ReferenceRuntime rt(g);
  rt.set(data, std::vector<float>{0, 1, 2, 10, 11, 12});
  rt.set(idx, std::vector<int>{0, 1, 5, 2});
  rt.execute();
  // transposed flat order: 0 10 1 11 2 12
  EXPECT_EQ(rt.get<float>(out), (std::vector<float>{0, 10, 12, 1}));
  EXPECT_EQ(rt.shape(out), (std::vector<int64_t>{2, 2}));
  rt.set(idx, std::vector<int>{0, 1, 6, 2});
  EXPECT_THROW(rt.execute(), Error);
}

TEST(Primitive, ScatterCopiesDestAndSkipsOutOfRange) {
  for (DType t : {DType::F32, DType::BF16, DType::I64, DType::Bool}) {
    Graph g;
    auto dest = g.tensor("dest", {5}, t);
    auto idx = g.tensor("idx", {4}, DType::I64);
    auto src = g.tensor("src", {4}, t);
    auto out = dest.scatter_flat(idx, src).output("out");
    ReferenceRuntime rt(g);
    rt.set(dest, std::vector<int>{1, 0, 1, 0, 1});
    rt.set(idx, std::vector<int64_t>{4, -1, 2, 5});
    rt.set(src, std::vector<int>{0, 1, 0, 1});
    rt.execute();
    EXPECT_EQ(rt.get<double>(out), (std::vector<double>{1, 0, 0, 0, 0})) << name(t);
  }
}

TEST(Primitive, ScatterLaterWriteWins) {
  Graph g;
  auto dest = g.zeros({3});
  auto idx = g.tensor("idx", {3}, DType::I32);
  auto src = g.tensor("src", {3});
  auto out = dest.scatter_flat(idx, src).output("out");
  ReferenceRuntime rt(g);
  rt.set(idx, std::vector<int>{1, 1, 1});
  rt.set(src, std::vector<float>{5, 6, 7});
  rt.execute();
  EXPECT_EQ(rt.get<float>(out), (std::vector<float>{0, 7, 0}));
}

TEST(Primitive, DynamicDimsAtSeveralValues) {
  Graph g;
  auto x = g.tensor("x", {"s", 2});
  auto y = prim::reduce(OpKind::SumReduce, x, 0).output("y");
  ReferenceRuntime rt(g);
  for (int64_t s : {1, 2, 5, 17}) {
    std::vector<float> v(s * 2);
    for (int64_t i = 0; i < s * 2; ++i)
      v[i] = static_cast<float>(i);
    rt.set(x, v);
    rt.execute({{"s", s}});
    float even = 0, odd = 0;
    for (int64_t i = 0; i < s; ++i) {
      even += static_cast<float>(2 * i);
      odd += static_cast<float>(2 * i + 1);
    }
    EXPECT_EQ(rt.get<float>(y), (std::vector<float>{even, odd})) << "s=" << s;
  }
}

}  // namespace
}  // namespace luminal
