#include "luminal/core/expr.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <sstream>
#include <string>
#include <thread>
#include <unordered_set>
#include <vector>

#include "luminal/core/error.hpp"

namespace {

using luminal::DynMap;
using luminal::Error;
using luminal::Expr;
using luminal::Facts;
using luminal::Interval;
using Kind = luminal::Expr::Kind;

// Runs f and returns the luminal::Error message it throws ("" if it does not throw).
template <typename F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

class ExprTest : public ::testing::Test {
 protected:
  Expr s = Expr::var("s");
  Expr t = Expr::var("t");
  Expr u = Expr::var("u");
  Expr z = Expr::z();
};

// ---------------------------------------------------------------------------------------------
// Construction and canonical form.

TEST_F(ExprTest, ConstantsAndVariables) {
  EXPECT_EQ(Expr().as_const(), 0);
  EXPECT_EQ(Expr(42).as_const(), 42);
  EXPECT_EQ(Expr(int64_t{1} << 40).as_const(), int64_t{1} << 40);
  EXPECT_EQ(Expr(7), Expr(int64_t{7}));
  EXPECT_EQ(Expr(7LL), Expr(7));
  EXPECT_EQ(Expr(size_t{7}), Expr(7));
  EXPECT_EQ(Expr(uint8_t{7}), Expr(7));
  EXPECT_EQ(Expr(short{-7}), Expr(-7));
  EXPECT_EQ(s * std::vector<int>(3).size(), 3 * s);
  EXPECT_THROW(Expr(UINT64_MAX), Error);
  EXPECT_EQ(Expr(123456789012), Expr(int64_t{123456789012}));
  EXPECT_TRUE(Expr(3).is_const());
  EXPECT_TRUE(s.is_var());
  EXPECT_EQ(s.var_name(), "s");
  EXPECT_EQ(s, Expr::var("s"));
  EXPECT_NE(s, t);
  EXPECT_EQ(z, Expr::var("z"));
  EXPECT_EQ(Expr::var("_x9").var_name(), "_x9");
  EXPECT_TRUE(s.children().empty());
}

TEST_F(ExprTest, InvalidVariableNamesThrow) {
  for (const char* bad : {"", "1a", "a-b", "a b", "ä", "x.y"}) {
    std::string msg = error_of([&] { Expr::var(bad); });
    EXPECT_NE(msg.find("identifier"), std::string::npos) << bad << ": " << msg;
  }
}

TEST_F(ExprTest, AccessorsThrowOnWrongKind) {
  EXPECT_NE(error_of([&] { (void)s.as_const(); }).find("'s'"), std::string::npos);
  EXPECT_NE(error_of([&] { (void)(s + 1).var_name(); }).find("s + 1"), std::string::npos);
}

TEST_F(ExprTest, CommutativityAssociativityLikeTerms) {
  EXPECT_EQ(s * 8, 8 * s);
  EXPECT_EQ((s + t) + u, s + (t + u));
  EXPECT_EQ((s * t) * u, s * (t * u));
  EXPECT_EQ(s + t, t + s);
  EXPECT_EQ(2 * s + 3 * s, 5 * s);
  EXPECT_EQ((s + 1) * 2, 2 * s + 2);
  EXPECT_EQ(s - s, Expr(0));
  EXPECT_EQ(s * 0, Expr(0));
  EXPECT_EQ(s * 1, s);
  EXPECT_EQ(s + 0, s);
  EXPECT_EQ(-(-s), s);
  EXPECT_EQ((s + t) * (s - t), s * s - t * t);
  EXPECT_EQ((s + 1) * (s + 1), s * s + 2 * s + 1);
  EXPECT_EQ(3 * (s + t) - 3 * t, 3 * s);
  EXPECT_EQ(Expr(2) + Expr(3), Expr(5));
  Expr e = s;
  e += 4;
  e *= 2;
  e -= s;
  EXPECT_EQ(e, s + 8);
}

TEST_F(ExprTest, CanonicalShape) {
  Expr e = 4096 * s + z + 7;
  EXPECT_EQ(e.kind(), Kind::Add);
  ASSERT_EQ(e.children().size(), 3u);
  EXPECT_EQ(e.children()[0], 4096 * s);
  EXPECT_EQ(e.children()[1], z);
  EXPECT_EQ(e.children()[2], Expr(7));  // the constant comes last
  Expr m = 3 * s * t;
  EXPECT_EQ(m.kind(), Kind::Mul);
  ASSERT_EQ(m.children().size(), 3u);
  EXPECT_EQ(m.children()[0], Expr(3));  // the coefficient comes first
  // A Mul never contains an Add.
  Expr p = (s + 1) * t;
  EXPECT_EQ(p.kind(), Kind::Add);
  for (const Expr& c : p.children())
    EXPECT_NE(c.kind(), Kind::Add);
}

TEST_F(ExprTest, FloorDivisionRules) {
  EXPECT_EQ((s * 4 + 3) / 4, s);
  EXPECT_EQ((s * 4 + 3) % 4, Expr(3));
  EXPECT_EQ((s * 4) / 4, s);
  EXPECT_EQ((s * 8 + t) / 4, 2 * s + t / 4);
  EXPECT_EQ((s * 8 + t) % 4, t % 4);
  EXPECT_EQ(s / 1, s);
  EXPECT_EQ(s % 1, Expr(0));
  EXPECT_EQ(s / -1, -s);
  EXPECT_EQ(s % -1, Expr(0));
  EXPECT_EQ((s / 2) / 3, s / 6);
  EXPECT_EQ((s % 8) % 4, s % 4);
  EXPECT_EQ((s % 4) % 8, s % 4);
  EXPECT_EQ((s % 4) / 4, Expr(0));
  EXPECT_EQ((2 * s) / 4, s / 2);
  EXPECT_EQ((s - 1) / 4 + 1, (s + 3) / 4);
  EXPECT_EQ(ceil_div(s * 4, 4), s);
  EXPECT_EQ(ceil_div(s, 4), (s + 3) / 4);
  EXPECT_EQ(-((-s) / 4), (s + 3) / 4);
  EXPECT_EQ(s / t, s / t);
  EXPECT_NE(s / t, t / s);
  // Constant folding with floor semantics.
  EXPECT_EQ(Expr(-7) / 2, Expr(-4));
  EXPECT_EQ(Expr(-7) % 2, Expr(1));
  EXPECT_EQ(Expr(7) % -2, Expr(-1));
  EXPECT_EQ(Expr(7) / -2, Expr(-4));
  EXPECT_EQ(ceil_div(Expr(7), Expr(2)), Expr(4));
  EXPECT_EQ(ceil_div(Expr(-7), Expr(2)), Expr(-3));
}

TEST_F(ExprTest, DivisionByConstantZeroThrows) {
  EXPECT_NE(error_of([&] { (void)(s / 0); }).find("division by zero"), std::string::npos);
  EXPECT_NE(error_of([&] { (void)(s % 0); }).find("modulo by zero"), std::string::npos);
  EXPECT_NE(error_of([&] { (void)(Expr(3) / (s - s)); }).find("by zero"), std::string::npos);
}

TEST_F(ExprTest, MinMax) {
  EXPECT_EQ(min(s, s), s);
  EXPECT_EQ(max(s, s), s);
  EXPECT_EQ(min(s, t), min(t, s));
  EXPECT_EQ(min(Expr(3), Expr(5)), Expr(3));
  EXPECT_EQ(max(Expr(3), Expr(-5)), Expr(3));
  EXPECT_EQ(min(s + 1, s + 3), s + 1);
  EXPECT_EQ(max(s + 1, s + 3), s + 3);
  EXPECT_EQ(min(s, min(s, t)), min(s, t));
  EXPECT_EQ(min(min(s, t), u), min(s, min(t, u)));
  EXPECT_EQ(min(s, max(s, t)), s);
  EXPECT_EQ(max(s, min(s, t)), s);
  EXPECT_EQ(min(s % 4, Expr(8)), s % 4);  // s % 4 <= 3 always
  EXPECT_EQ(max(s % 4, Expr(-1)), s % 4);
  EXPECT_EQ(min(s, 1024).kind(), Kind::Min);
}

TEST_F(ExprTest, Comparisons) {
  EXPECT_EQ(lt(s, 4), gt(4, s));
  EXPECT_EQ(le(s, 4), ge(4, s));
  EXPECT_EQ(lt(s, 4), le(s, 3));
  EXPECT_EQ(lt(s, t), le(s + 1, t));
  EXPECT_EQ(lt(2 * s, 4), lt(s, 2));
  EXPECT_EQ(eq(s, t), eq(t, s));
  EXPECT_EQ(ne(s, t), ne(t, s));
  EXPECT_EQ(eq(2 * s, 4), eq(s, 2));
  EXPECT_EQ(eq(2 * s, 3), Expr(0));
  EXPECT_EQ(ne(2 * s, 3), Expr(1));
  EXPECT_EQ(lt(Expr(3), Expr(4)), Expr(1));
  EXPECT_EQ(le(Expr(5), Expr(4)), Expr(0));
  EXPECT_EQ(eq(s, s), Expr(1));
  EXPECT_EQ(ne(s, s), Expr(0));
  EXPECT_EQ(lt(s, s), Expr(0));
  EXPECT_EQ(le(s, s + 1), Expr(1));
  EXPECT_EQ(lt(s % 4, 4), Expr(1));  // decided without facts
  EXPECT_EQ(lt(s, 4).kind(), Kind::Le);
  EXPECT_EQ(eq(s, 4).kind(), Kind::Eq);
}

TEST_F(ExprTest, Logic) {
  EXPECT_EQ(logical_and(Expr(0), lt(s, 3)), Expr(0));
  EXPECT_EQ(logical_and(Expr(5), lt(s, 3)), lt(s, 3));
  EXPECT_EQ(logical_and(Expr(5), s), ne(s, 0));
  EXPECT_EQ(logical_or(Expr(2), lt(s, 3)), Expr(1));
  EXPECT_EQ(logical_or(Expr(0), lt(s, 3)), lt(s, 3));
  EXPECT_EQ(logical_and(lt(s, 3), lt(t, 4)), logical_and(lt(t, 4), lt(s, 3)));
  EXPECT_EQ(logical_and(lt(s, 3), lt(s, 3)), lt(s, 3));
  EXPECT_EQ(logical_and(logical_and(lt(s, 3), lt(t, 4)), lt(u, 5)),
            logical_and(lt(s, 3), logical_and(lt(t, 4), lt(u, 5))));
  EXPECT_EQ(logical_and(Expr(2), Expr(3)), Expr(1));
  EXPECT_EQ(logical_or(Expr(0), Expr(0)), Expr(0));
}

TEST_F(ExprTest, StructuralOrderAndHash) {
  std::vector<Expr> xs = {Expr(3), s, t, s + 1, s * t, s / 4, min(s, t), lt(s, t)};
  for (const Expr& a : xs) {
    EXPECT_FALSE(a < a);
    EXPECT_EQ(a.hash(), std::hash<Expr>{}(a));
    for (const Expr& b : xs) {
      if (a != b) {
        EXPECT_NE(a < b, b < a) << a << " vs " << b;
      }
    }
  }
  EXPECT_TRUE(Expr(3) < s);  // Const sorts before Var
  EXPECT_TRUE(s < t);        // variables by name
  EXPECT_EQ((s + 1).hash(), (1 + s).hash());
  std::unordered_set<Expr> set = {s + 1, 1 + s, s * 2};
  EXPECT_EQ(set.size(), 2u);
}

TEST_F(ExprTest, ConstructionOverflowThrows) {
  std::string msg = error_of([] { (void)(Expr(INT64_MAX) + 1); });
  EXPECT_NE(msg.find("overflow"), std::string::npos);
  EXPECT_NE(msg.find("addition"), std::string::npos);
  msg = error_of([] { (void)(Expr(INT64_MAX / 2 + 1) * 2); });
  EXPECT_NE(msg.find("multiplication"), std::string::npos);
  msg = error_of([] { (void)(Expr(INT64_MIN) - 1); });
  EXPECT_NE(msg.find("subtraction"), std::string::npos);
  msg = error_of([] { (void)(Expr(INT64_MIN) / -1); });
  EXPECT_NE(msg.find("division"), std::string::npos);
  EXPECT_NE(error_of([&] { (void)(s * INT64_MAX + s); }).find("overflow"), std::string::npos);
  EXPECT_EQ(Expr(-1) - Expr(INT64_MIN), Expr(INT64_MAX));
  // Coefficients at the int64 limit: the gcd 2^63 must not be used as a divisor.
  Expr huge = Expr(INT64_MIN) * s - 1;
  EXPECT_EQ(le(huge, 0).eval({{"s", 1}}), 1);
  EXPECT_EQ(le(huge, 0).simplify({{"s", {1, 5}}}), Expr(1));
  EXPECT_EQ(eq(huge, 0).eval({{"s", 1}}), 0);
  EXPECT_EQ(eq(Expr(INT64_MIN) * s, Expr(0)).eval({{"s", 1}}), 0);
  EXPECT_EQ(ne(s, Expr(INT64_MIN)), ne(Expr(INT64_MIN), s));  // either orientation
  // A comparison whose difference would overflow keeps its operands instead of throwing.
  Expr cmp = lt(INT64_MAX * s, -s);
  EXPECT_EQ(cmp.kind(), Kind::Lt);
  EXPECT_EQ(cmp.eval({{"s", 0}}), 0);
  EXPECT_EQ(cmp.eval({{"s", -1}}), 1);
  EXPECT_EQ(Expr(INT64_MIN) % -1, Expr(0));
}

// ---------------------------------------------------------------------------------------------
// Facts: bounds and simplify.

TEST_F(ExprTest, SimplifyWithFacts) {
  Facts f{{"s", {1, 512}}, {"t", {0, 3}}};
  EXPECT_EQ(min(s, 1024).simplify(f), s);
  EXPECT_EQ(max(s, 1024).simplify(f), Expr(1024));
  EXPECT_EQ(max(s, 1).simplify(f), s);
  EXPECT_EQ((s / 1024).simplify(f), Expr(0));
  EXPECT_EQ((s % 1024).simplify(f), s);
  EXPECT_EQ((s / 512).simplify(f), s / 512);
  EXPECT_EQ(lt(s, 1000).simplify(f), Expr(1));
  EXPECT_EQ(lt(s, 1).simplify(f), Expr(0));
  EXPECT_EQ(eq(s, 0).simplify(f), Expr(0));
  EXPECT_EQ(ne(s, 0).simplify(f), Expr(1));
  EXPECT_EQ(lt(s, 100).simplify(f), lt(s, 100));
  // (c*q + r)/c = q + r/c, and r/c = 0 for r in [0, c-1].
  EXPECT_EQ(((s * 4 + t) / 4).simplify(f), s);
  EXPECT_EQ(((s * 4 + t) % 4).simplify(f), t);
  EXPECT_EQ(((t + 4) / 4).simplify(f), Expr(1));
  EXPECT_EQ(((t + 4) % 4).simplify(f), t);
  EXPECT_EQ(((t - 4) / 4).simplify(f), Expr(-1));
  EXPECT_EQ((u / u).simplify({{"u", {1, 10}}}), Expr(1));
  EXPECT_EQ((u % u).simplify({{"u", {-10, -1}}}), Expr(0));
  EXPECT_EQ((u / u).simplify({{"u", {0, 10}}}), u / u);  // u may be 0
  EXPECT_EQ(max(u, 1) / max(u, 1), Expr(1));             // no facts needed
  EXPECT_EQ((s / u).simplify({{"s", {0, 3}}, {"u", {4, 10}}}), Expr(0));
  EXPECT_EQ((s % u).simplify({{"s", {0, 3}}, {"u", {4, 10}}}), s);
  EXPECT_EQ(min(s, t).simplify(f), min(s, t));
  EXPECT_EQ(min(s + t, s + 4).simplify(f), s + t);
  EXPECT_EQ(logical_and(lt(s, 1000), lt(t, 2)).simplify(f), lt(t, 2));
  EXPECT_EQ((s * u).simplify({{"u", {3, 3}}}), 3 * s);  // a pinned variable becomes a constant
  EXPECT_EQ((min(s, 1024) * 2 + u).simplify(f), 2 * s + u);
  // Without facts nothing changes.
  EXPECT_EQ(min(s, 1024).simplify({}), min(s, 1024));
  // A divisor the facts pin to 0 is left alone (eval reports it), simplify does not throw.
  Expr bad = s / (u - 3);
  EXPECT_EQ(bad.simplify({{"u", {3, 3}}}), bad);
  EXPECT_THROW((void)bad.eval({{"s", 1}, {"u", 3}}), Error);
}

TEST_F(ExprTest, Bounds) {
  Facts f{{"s", {1, 512}}, {"t", {-3, 3}}};
  EXPECT_EQ(s.bounds(f), (Interval{1, 512}));
  EXPECT_EQ(s.bounds(), Interval{});
  EXPECT_EQ((2 * s + 1).bounds(f), (Interval{3, 1025}));
  EXPECT_EQ((s - t).bounds(f), (Interval{-2, 515}));
  EXPECT_EQ((t * t).bounds(f), (Interval{0, 9}));
  EXPECT_EQ((s * t).bounds(f), (Interval{-1536, 1536}));
  EXPECT_EQ((s / 4).bounds(f), (Interval{0, 128}));
  EXPECT_EQ((s % 4).bounds(f), (Interval{0, 3}));
  EXPECT_EQ((u % 4).bounds(), (Interval{0, 3}));
  EXPECT_EQ((u % -4).bounds(), (Interval{-3, 0}));
  EXPECT_EQ((t % 8).bounds({{"t", {9, 12}}}), (Interval{1, 4}));
  EXPECT_EQ(min(s, 100).bounds(f), (Interval{1, 100}));
  EXPECT_EQ(max(s, 100).bounds(f), (Interval{100, 512}));
  EXPECT_EQ(lt(s, t).bounds(f), (Interval{0, 1}));
  EXPECT_EQ(lt(u, u + 1).bounds(f), (Interval{1, 1}));
  EXPECT_EQ((s / u).bounds({{"s", {0, 100}}, {"u", {2, 10}}}), (Interval{0, 50}));
  EXPECT_EQ((z * 4).bounds(f), Interval{});  // z is unbounded unless in the facts
  EXPECT_EQ((z * 4).bounds({{"z", {0, 9}}}), (Interval{0, 36}));
  // Saturation at the int64 limits.
  Interval big = (s * s * s * s).bounds({{"s", {0, 1'000'000}}});
  EXPECT_EQ(big.lo, 0);
  EXPECT_EQ(big.hi, INT64_MAX);
}

// ---------------------------------------------------------------------------------------------
// Evaluation.

TEST_F(ExprTest, Eval) {
  DynMap dyn{{"s", 5}, {"t", -3}};
  EXPECT_EQ((4096 * s + 7).eval(dyn), 4096 * 5 + 7);
  EXPECT_EQ((s * t).eval(dyn), -15);
  EXPECT_EQ((t / 2).eval(dyn), -2);
  EXPECT_EQ((t % 2).eval(dyn), 1);
  EXPECT_EQ((s % t).eval(dyn), -1);
  EXPECT_EQ((s / t).eval(dyn), -2);
  EXPECT_EQ((Expr::var("a") / Expr::var("b")).eval({{"a", -7}, {"b", 2}}), -4);
  EXPECT_EQ((Expr::var("a") % Expr::var("b")).eval({{"a", -7}, {"b", 2}}), 1);
  EXPECT_EQ((Expr::var("a") % Expr::var("b")).eval({{"a", 7}, {"b", -2}}), -1);
  EXPECT_EQ(ceil_div(s, 2).eval(dyn), 3);
  EXPECT_EQ(ceil_div(t, 2).eval(dyn), -1);
  EXPECT_EQ(min(s, t).eval(dyn), -3);
  EXPECT_EQ(max(s, t).eval(dyn), 5);
  EXPECT_EQ(lt(t, s).eval(dyn), 1);
  EXPECT_EQ(ge(t, s).eval(dyn), 0);
  EXPECT_EQ(eq(s + t, 2).eval(dyn), 1);
  EXPECT_EQ(ne(s + t, 2).eval(dyn), 0);
  EXPECT_EQ(logical_and(lt(t, s), s).eval(dyn), 1);
  EXPECT_EQ(logical_or(eq(t, s), eq(s, 4)).eval(dyn), 0);
  EXPECT_EQ(Expr(9).eval({}), 9);
  EXPECT_EQ((4096 * s + z).eval(dyn, 11), 4096 * 5 + 11);
  EXPECT_EQ(z.eval({{"z", 3}}), 3);
  EXPECT_EQ(z.eval({{"z", 3}}, 4), 4);  // the explicit z wins
}

TEST_F(ExprTest, EvalErrors) {
  std::string msg = error_of([&] { (void)(s * 4 + 1).eval({}); });
  EXPECT_NE(msg.find("'4*s + 1'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("dynamic dimension 's'"), std::string::npos) << msg;
  msg = error_of([&] { (void)(s + z).eval({{"s", 1}}); });
  EXPECT_NE(msg.find("'z'"), std::string::npos) << msg;
  msg = error_of([&] { (void)(s / t).eval({{"s", 1}, {"t", 0}}); });
  EXPECT_NE(msg.find("division by zero"), std::string::npos) << msg;
  EXPECT_NE(msg.find("'t'"), std::string::npos) << msg;
  msg = error_of([&] { (void)(s % t).eval({{"s", 1}, {"t", 0}}); });
  EXPECT_NE(msg.find("modulo by zero"), std::string::npos) << msg;
  msg = error_of([&] { (void)(s * t).eval({{"s", INT64_MAX}, {"t", 2}}); });
  EXPECT_NE(msg.find("overflow"), std::string::npos) << msg;
  msg = error_of([&] { (void)(s + 1).eval({{"s", INT64_MAX}}); });
  EXPECT_NE(msg.find("overflow"), std::string::npos) << msg;
  msg = error_of([&] { (void)(s / t).eval({{"s", INT64_MIN}, {"t", -1}}); });
  EXPECT_NE(msg.find("overflow"), std::string::npos) << msg;
  // Intermediate products that cancel do not overflow; comparisons of huge values work.
  EXPECT_EQ(((s + 1) * t - s * t).eval({{"s", INT64_MAX - 1}, {"t", 3}}), 3);
  EXPECT_EQ(lt(s, t).eval({{"s", INT64_MAX}, {"t", INT64_MIN}}), 0);
  EXPECT_EQ(eq(s, t).eval({{"s", INT64_MAX}, {"t", INT64_MIN}}), 0);
  EXPECT_EQ((s % t).eval({{"s", INT64_MIN}, {"t", -1}}), 0);
}

TEST_F(ExprTest, TryEval) {
  EXPECT_EQ((s + 1).try_eval({{"s", 2}}), 3);
  EXPECT_EQ((s + t).try_eval({{"s", 2}}), std::nullopt);
  EXPECT_EQ(Expr(4).try_eval({}), 4);
  EXPECT_THROW((void)(s / t).try_eval({{"s", 1}, {"t", 0}}), Error);
}

// ---------------------------------------------------------------------------------------------
// vars, substitute, as_linear.

TEST_F(ExprTest, Vars) {
  EXPECT_EQ((z + 4096 * s + t * s + s / u).vars(), (std::vector<std::string>{"s", "t", "u", "z"}));
  EXPECT_TRUE(Expr(3).vars().empty());
  EXPECT_TRUE((s / 4).has_var("s"));
  EXPECT_FALSE((s / 4).has_var("t"));
  EXPECT_FALSE(s.has_var("not a name"));
}

TEST_F(ExprTest, Substitute) {
  Expr e = 4096 * s + z;
  EXPECT_EQ(e.substitute("s", Expr(2)), z + 8192);
  EXPECT_EQ(e.substitute("z", s), 4097 * s);
  EXPECT_EQ(e.substitute("q", s), e);
  EXPECT_EQ(((s * 4 + t) / 4).substitute("t", Expr(3)), s);
  EXPECT_EQ(min(s, t).substitute("t", s), s);
  EXPECT_EQ(lt(s, t).substitute("t", s + 1), Expr(1));
  // Simultaneous: s -> t and t -> s swap.
  EXPECT_EQ((2 * s + t).substitute({{"s", t}, {"t", s}}), 2 * t + s);
  EXPECT_EQ((s * t).substitute({{"s", Expr(3)}, {"t", Expr(5)}}), Expr(15));
  EXPECT_THROW((void)(s / t).substitute("t", Expr(0)), Error);
}

TEST_F(ExprTest, AsLinear) {
  auto lin = (4096 * s + 3 * z + 7).as_linear("z");
  ASSERT_TRUE(lin.has_value());
  EXPECT_EQ(lin->first, Expr(3));
  EXPECT_EQ(lin->second, 4096 * s + 7);
  lin = (s * z + t * z + s).as_linear("z");
  ASSERT_TRUE(lin.has_value());
  EXPECT_EQ(lin->first, s + t);
  EXPECT_EQ(lin->second, s);
  lin = (s + 1).as_linear("z");
  ASSERT_TRUE(lin.has_value());
  EXPECT_EQ(lin->first, Expr(0));
  EXPECT_EQ(lin->second, s + 1);
  EXPECT_FALSE((z / 4 + z).as_linear("z").has_value());
  EXPECT_FALSE((z * z).as_linear("z").has_value());
  EXPECT_FALSE((s * z + min(z, s)).as_linear("z").has_value());
  lin = ((s / 4) * z).as_linear("z");
  ASSERT_TRUE(lin.has_value());
  EXPECT_EQ(lin->first, s / 4);
}

// ---------------------------------------------------------------------------------------------
// Printing.

TEST_F(ExprTest, ToString) {
  EXPECT_EQ((4096 * s + z).to_string(), "4096*s + z");
  EXPECT_EQ((s * 4 + 1).to_string(), "4*s + 1");
  EXPECT_EQ((3 - 3 * s).to_string(), "-3*s + 3");
  EXPECT_EQ((s - 3 * t).to_string(), "s - 3*t");
  EXPECT_EQ((s - 1).to_string(), "s - 1");
  EXPECT_EQ((-s).to_string(), "-s");
  EXPECT_EQ((s * t * t).to_string(), "s*t*t");
  EXPECT_EQ(((s + 3) / 4).to_string(), "(s + 3)/4");
  EXPECT_EQ(ceil_div(s, 4).to_string(), "(s + 3)/4");
  EXPECT_EQ((s % 4).to_string(), "s%4");
  EXPECT_EQ((-((s + 1) / 2)).to_string(), "-((s + 1)/2)");
  EXPECT_EQ((4 * t * (s / 4)).to_string(), "4*t*(s/4)");
  EXPECT_EQ((s / t).to_string(), "s/t");
  EXPECT_EQ((s / (t + 1)).to_string(), "s/(t + 1)");
  EXPECT_EQ(min(s, 1024).to_string(), "min(s, 1024)");
  EXPECT_EQ(max(s + 1, t).to_string(), "max(t, s + 1)");
  EXPECT_EQ(min(min(s, t), u).to_string(), "min(s, min(t, u))");
  EXPECT_EQ(lt(s, 4).to_string(), "s <= 3");
  EXPECT_EQ(lt(s, t).to_string(), "s < t");
  EXPECT_EQ(le(s, t).to_string(), "s <= t");
  EXPECT_EQ(gt(s, 0).to_string(), "0 < s");
  EXPECT_EQ(eq(s, 3).to_string(), "s == 3");
  EXPECT_EQ(ne(s + 1, t).to_string(), "s + 1 != t");
  EXPECT_EQ(logical_and(lt(s, 4), eq(t, 1)).to_string(), "s <= 3 && t == 1");
  EXPECT_EQ(logical_or(lt(s, 4), logical_and(eq(t, 1), ne(u, 0))).to_string(),
            "s <= 3 || (t == 1 && u != 0)");
  EXPECT_EQ((2 * lt(s, t)).to_string(), "2*(s < t)");
  EXPECT_EQ(Expr(-5).to_string(), "-5");
  EXPECT_EQ(Expr(INT64_MIN).to_string(), "-9223372036854775808");
  std::ostringstream os;
  os << (s + 1);
  EXPECT_EQ(os.str(), "s + 1");
}

TEST_F(ExprTest, ToC) {
  Facts nonneg{{"s", {0, 1 << 20}}, {"t", {1, 64}}};
  EXPECT_EQ((4096 * s + z).to_c(), "4096 * s + z");
  EXPECT_EQ((s / 4).to_c(), "luminal_floordiv(s, 4)");
  EXPECT_EQ((s / 4).to_c(nonneg), "s / 4");
  EXPECT_EQ((s % t).to_c(nonneg), "s % t");
  EXPECT_EQ((s % t).to_c(), "luminal_floormod(s, t)");
  EXPECT_EQ(((s + 3) / 4 * 2).to_c(nonneg), "2 * ((s + 3) / 4)");
  EXPECT_EQ((s * 3000000000LL).to_c(), "3000000000LL * s");
  EXPECT_EQ((s - 3000000000LL).to_c(), "s - 3000000000LL");
  EXPECT_EQ(Expr(INT64_MIN).to_c(), "(-9223372036854775807LL - 1)");
  EXPECT_EQ(Expr(-4).to_c(), "-4");
  EXPECT_EQ(min(s, 1024).to_c(), "(s < 1024 ? s : 1024)");
  EXPECT_EQ(max(s, t + 1).to_c(), "(s > t + 1 ? s : t + 1)");
  EXPECT_EQ(lt(s, t).to_c(), "s < t");
  EXPECT_EQ(logical_and(lt(s, 4), eq(t, 1)).to_c(), "((s <= 3) != 0 && (t == 1) != 0)");
  EXPECT_EQ((2 * s + t).to_c({}, [](const std::string& n) { return "dims." + n; }),
            "2 * (dims.s) + (dims.t)");
  EXPECT_EQ((2 * s + t).to_c({}, [](const std::string& n) { return n + "_v"; }), "2 * s_v + t_v");
  std::string prelude = Expr::c_prelude();
  EXPECT_NE(prelude.find("luminal_floordiv"), std::string::npos);
  EXPECT_NE(prelude.find("luminal_floormod"), std::string::npos);
  EXPECT_NE(prelude.find("__CUDACC__"), std::string::npos);
  EXPECT_NE(prelude.find("long long"), std::string::npos);
}

TEST_F(ExprTest, ConcurrentInterningGivesOneNode) {
  std::vector<Expr> results(8);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < results.size(); ++i) {
    threads.emplace_back([&results, i] {
      Expr e;
      for (int k = 0; k < 200; ++k)
        e = e + Expr::var("v" + std::to_string(k % 17)) * (k + 1);
      results[i] = min(e / 7, Expr::var("cap"));
    });
  }
  for (auto& th : threads)
    th.join();
  for (const Expr& r : results)
    EXPECT_EQ(r, results[0]);
}

}  // namespace
