// Randomised properties of luminal::Expr: canonicalisation, simplify(), bounds() and substitute()
// preserve values, and differently spelled polynomials intern to the same node.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "luminal/core/error.hpp"
#include "luminal/core/expr.hpp"

namespace {

using luminal::DynMap;
using luminal::Error;
using luminal::Expr;
using luminal::Facts;
using luminal::Interval;

// Collects failures and reports the count plus the first few.
class Failures {
 public:
  void add(const std::string& msg) {
    if (count_++ < 10) first_ += msg + "\n";
  }
  int count() const { return count_; }
  const std::string& first() const { return first_; }

 private:
  int count_ = 0;
  std::string first_;
};

bool contains(const std::string& s, const char* what) { return s.find(what) != std::string::npos; }

// LUMINAL_EXPR_SEED=<n> reruns the randomised tests with another seed (for fuzzing by hand).
uint64_t seed(uint64_t fixed) {
  const char* env = std::getenv("LUMINAL_EXPR_SEED");
  return env ? fixed ^ std::strtoull(env, nullptr, 10) : fixed;
}

// ---------------------------------------------------------------------------------------------
// A random expression tree and its reference semantics (plain int64, floor division).

enum class Op {
  Const,
  Var,
  Add,
  Sub,
  Mul,
  Neg,
  Div,
  Mod,
  CeilDiv,
  Min,
  Max,
  Lt,
  Le,
  Gt,
  Ge,
  Eq,
  Ne,
  And,
  Or,
};

struct Tree {
  Op op;
  int64_t value = 0;
  int var = 0;
  std::vector<Tree> kids;
};

struct VarSpec {
  const char* name;
  int64_t lo, hi;
};
// "d" never is 0 (a divisor); "z" exercises eval(dyn, z) and is never negative.
constexpr int kNumVars = 5;
using Domain = std::array<VarSpec, kNumVars>;
constexpr Domain kSmall = {{{"a", -8, 8}, {"b", 0, 12}, {"c", -5, 5}, {"d", 1, 6}, {"z", 0, 20}}};
// Values up to the int64 limits, where overflow handling and the interval saturation matter.
constexpr Domain kExtreme = {{{"a", -(int64_t{1} << 40), int64_t{1} << 40},
                              {"b", 0, 12},
                              {"c", INT64_MIN, 5},
                              {"d", 1, INT64_MAX},
                              {"z", 0, 20}}};
const Domain& kVars = kSmall;  // names are the same in both domains

using Values = std::array<int64_t, kNumVars>;

std::optional<int64_t> fdiv(int64_t a, int64_t b) {
  if (b == 0 || (a == INT64_MIN && b == -1)) return std::nullopt;
  int64_t q = a / b;
  if (a % b != 0 && ((a < 0) != (b < 0))) --q;
  return q;
}
std::optional<int64_t> fmod(int64_t a, int64_t b) {
  if (b == 0) return std::nullopt;
  if (b == -1) return 0;
  int64_t r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}

std::optional<int64_t> ref_eval(const Tree& t, const Values& v) {
  if (t.op == Op::Const) return t.value;
  if (t.op == Op::Var) return v[t.var];
  std::optional<int64_t> a = ref_eval(t.kids[0], v);
  if (!a) return std::nullopt;
  if (t.op == Op::Neg) {
    if (*a == INT64_MIN) return std::nullopt;
    return -*a;
  }
  std::optional<int64_t> b = ref_eval(t.kids[1], v);
  if (!b) return std::nullopt;
  int64_t x = *a, y = *b, r = 0;
  switch (t.op) {
    case Op::Add:
      if (__builtin_add_overflow(x, y, &r)) return std::nullopt;
      return r;
    case Op::Sub:
      if (__builtin_sub_overflow(x, y, &r)) return std::nullopt;
      return r;
    case Op::Mul:
      if (__builtin_mul_overflow(x, y, &r)) return std::nullopt;
      return r;
    case Op::Div: return fdiv(x, y);
    case Op::Mod: return fmod(x, y);
    case Op::CeilDiv: {  // -floor(-x / y)
      if (x == INT64_MIN) return std::nullopt;
      std::optional<int64_t> q = fdiv(-x, y);
      if (!q || *q == INT64_MIN) return std::nullopt;
      return -*q;
    }
    case Op::Min: return std::min(x, y);
    case Op::Max: return std::max(x, y);
    case Op::Lt: return x < y;
    case Op::Le: return x <= y;
    case Op::Gt: return x > y;
    case Op::Ge: return x >= y;
    case Op::Eq: return x == y;
    case Op::Ne: return x != y;
    case Op::And: return x != 0 && y != 0;
    case Op::Or: return x != 0 || y != 0;
    default: return std::nullopt;
  }
}

Expr build(const Tree& t) {
  switch (t.op) {
    case Op::Const: return Expr(t.value);
    case Op::Var: return Expr::var(kVars[t.var].name);
    case Op::Neg: return -build(t.kids[0]);
    default: break;
  }
  Expr a = build(t.kids[0]), b = build(t.kids[1]);
  switch (t.op) {
    case Op::Add: return a + b;
    case Op::Sub: return a - b;
    case Op::Mul: return a * b;
    case Op::Div: return a / b;
    case Op::Mod: return a % b;
    case Op::CeilDiv: return ceil_div(a, b);
    case Op::Min: return min(a, b);
    case Op::Max: return max(a, b);
    case Op::Lt: return lt(a, b);
    case Op::Le: return le(a, b);
    case Op::Gt: return gt(a, b);
    case Op::Ge: return ge(a, b);
    case Op::Eq: return eq(a, b);
    case Op::Ne: return ne(a, b);
    case Op::And: return logical_and(a, b);
    case Op::Or: return logical_or(a, b);
    default: return Expr();
  }
}

std::string show(const Tree& t) {
  static const char* names[] = {"",    "",  "+",  "-", "*",  "neg", "/",  "%",  "cdiv", "min",
                                "max", "<", "<=", ">", ">=", "==",  "!=", "&&", "||"};
  if (t.op == Op::Const) return std::to_string(t.value);
  if (t.op == Op::Var) return kVars[t.var].name;
  std::string s = std::string("(") + names[static_cast<int>(t.op)];
  for (const Tree& k : t.kids)
    s += " " + show(k);
  return s + ")";
}

class Gen {
 public:
  explicit Gen(uint64_t seed, const Domain& domain = kSmall)
      : rng_(seed), domain_(domain), extreme_(&domain == &kExtreme) {}

  int64_t uniform(int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng_);
  }
  bool chance(double p) { return std::bernoulli_distribution(p)(rng_); }
  std::mt19937_64& rng() { return rng_; }

  Tree constant() {
    static const int64_t special[] = {16, 32, 64, -16, 1000, 4096};
    if (chance(0.15)) return {Op::Const, special[uniform(0, 5)], 0, {}};
    if (extreme_ && chance(0.1)) return {Op::Const, chance(0.5) ? INT64_MIN : INT64_MAX, 0, {}};
    if (extreme_ && chance(0.4)) {
      return {Op::Const, uniform(-(int64_t{1} << 33), int64_t{1} << 33), 0, {}};
    }
    return {Op::Const, uniform(-6, 9), 0, {}};
  }

  Tree divisor(int depth) {
    static const int64_t ks[] = {1, 2, 3, 4, 5, 7, 8, 16, -1, -2, -3, -4};
    double p = std::uniform_real_distribution<double>(0, 1)(rng_);
    if (p < 0.55) return {Op::Const, ks[uniform(0, 11)], 0, {}};
    if (p < 0.7) return {Op::Var, 0, 3, {}};  // d in [1, 6]
    if (p < 0.8) return {Op::Max, 0, 0, {tree(depth), {Op::Const, 1, 0, {}}}};
    if (p < 0.9) return {Op::Min, 0, 0, {tree(depth), {Op::Const, -1, 0, {}}}};
    return tree(depth);  // may be 0: such cases are skipped
  }

  Tree tree(int depth) {
    if (depth <= 0 || chance(0.2)) {
      if (chance(0.6)) return {Op::Var, 0, static_cast<int>(uniform(0, kNumVars - 1)), {}};
      return constant();
    }
    static const Op ops[] = {Op::Add, Op::Add,     Op::Add, Op::Sub, Op::Sub, Op::Mul,
                             Op::Mul, Op::Mul,     Op::Neg, Op::Div, Op::Div, Op::Mod,
                             Op::Mod, Op::CeilDiv, Op::Min, Op::Max, Op::Lt,  Op::Le,
                             Op::Gt,  Op::Ge,      Op::Eq,  Op::Ne,  Op::And, Op::Or};
    Op op = ops[uniform(0, std::size(ops) - 1)];
    if (op == Op::Neg) return {op, 0, 0, {tree(depth - 1)}};
    if (op == Op::Div || op == Op::Mod || op == Op::CeilDiv)
      return {op, 0, 0, {tree(depth - 1), divisor(depth - 2)}};
    return {op, 0, 0, {tree(depth - 1), tree(depth - 1)}};
  }

  Facts facts() {
    Facts f;
    for (const VarSpec& v : domain_) {
      int64_t lo = uniform(v.lo, v.hi), hi = uniform(v.lo, v.hi);
      if (lo > hi) std::swap(lo, hi);
      if (chance(0.3)) lo = v.lo;
      if (chance(0.3)) hi = v.hi;
      f[v.name] = {lo, hi};
    }
    return f;
  }

  Values assignment(const Facts& f) {
    Values v{};
    for (int i = 0; i < kNumVars; ++i) {
      const Interval& iv = f.at(kVars[i].name);
      v[i] = uniform(iv.lo, iv.hi);
    }
    return v;
  }

 private:
  std::mt19937_64 rng_;
  const Domain& domain_;
  bool extreme_;
};

DynMap dyn_of(const Values& v, bool with_z) {
  DynMap m;
  for (int i = 0; i < kNumVars; ++i) {
    if (with_z || std::string(kVars[i].name) != "z") m[kVars[i].name] = v[i];
  }
  return m;
}

// Evaluates, treating a 64-bit overflow (which canonicalisation may expose for products that
// the original computed in another order) as "no value".
// z_value < 0 means "z is in the map".
std::optional<int64_t> eval_or_overflow(const Expr& e, const DynMap& dyn, int64_t z_value,
                                        Failures& fails, const std::string& what) {
  try {
    return z_value >= 0 ? e.eval(dyn, z_value) : e.eval(dyn);
  } catch (const Error& err) {
    if (!contains(err.what(), "overflow")) fails.add(what + ": unexpected error: " + err.what());
    return std::nullopt;
  }
}

struct Stats {
  int checked = 0, skipped_construction = 0, overflow_evals = 0;
};

// Properties (1)-(4) over `exprs` random expressions, each at kAssignments random assignments
// inside random facts.
Stats check_values(Gen& gen, int exprs, Failures& fails) {
  constexpr int kAssignments = 24;
  Stats st;
  int& checked = st.checked;
  int& skipped_construction = st.skipped_construction;
  int& overflow_evals = st.overflow_evals;
  for (int i = 0; i < exprs; ++i) {
    Tree tree = gen.tree(static_cast<int>(gen.uniform(1, 5)));
    Facts facts = gen.facts();
    std::vector<Values> assigns;
    for (int k = 0; k < kAssignments; ++k)
      assigns.push_back(gen.assignment(facts));

    Expr e;
    try {
      e = build(tree);
    } catch (const Error& err) {
      ++skipped_construction;
      // Only overflow, or a divisor that is identically 0, may fail construction.
      if (contains(err.what(), "by zero")) {
        for (const Values& v : assigns) {
          if (ref_eval(tree, v)) fails.add("construction claimed a zero divisor: " + show(tree));
        }
      } else if (!contains(err.what(), "overflow")) {
        fails.add("construction of " + show(tree) + " threw: " + err.what());
      }
      continue;
    }
    std::string label = show(tree) + " => " + e.to_string();
    std::optional<Expr> simplified;
    try {
      simplified = e.simplify(facts);
    } catch (const Error& err) {
      if (!contains(err.what(), "overflow")) fails.add(label + ": simplify threw " + err.what());
    }
    Interval b = e.bounds(facts);
    Interval sb = simplified ? simplified->bounds(facts) : Interval{};

    for (const Values& v : assigns) {
      std::optional<int64_t> ref = ref_eval(tree, v);
      if (!ref) continue;
      ++checked;
      std::ostringstream where;
      where << label << " at a=" << v[0] << " b=" << v[1] << " c=" << v[2] << " d=" << v[3]
            << " z=" << v[4];
      bool z_separate = gen.chance(0.5);
      DynMap dyn = dyn_of(v, !z_separate);
      int64_t zv = z_separate ? v[4] : -1;  // z is never negative here
      // (1) The canonical form has the reference value.
      std::optional<int64_t> got = eval_or_overflow(e, dyn, zv, fails, where.str());
      if (!got) {
        ++overflow_evals;
        continue;
      }
      if (*got != *ref)
        fails.add(where.str() + ": eval " + std::to_string(*got) + " != ref " +
                  std::to_string(*ref));
      // (2) simplify(facts) keeps the value inside the facts.
      if (simplified) {
        std::optional<int64_t> s =
            eval_or_overflow(*simplified, dyn, zv, fails, where.str() + " (simplified)");
        if (s && *s != *ref) {
          fails.add(where.str() + ": simplified " + simplified->to_string() + " gives " +
                    std::to_string(*s) + " != " + std::to_string(*ref));
        }
      }
      // (3) bounds(facts) contain the value.
      if (!b.contains(*ref) || !sb.contains(*ref)) {
        fails.add(where.str() + ": value " + std::to_string(*ref) + " outside bounds [" +
                  std::to_string(b.lo) + ", " + std::to_string(b.hi) + "] / simplified [" +
                  std::to_string(sb.lo) + ", " + std::to_string(sb.hi) + "]");
      }
      // (4) Substituting a variable by its value keeps the value; substituting all folds it.
      int which = static_cast<int>(gen.uniform(0, kNumVars - 1));
      try {
        Expr sub = e.substitute(kVars[which].name, Expr(v[which]));
        std::optional<int64_t> s =
            eval_or_overflow(sub, dyn_of(v, true), -1, fails, where.str() + " (subst)");
        if (s && *s != *ref) {
          fails.add(where.str() + ": substitute " + kVars[which].name + " gives " +
                    sub.to_string() + " = " + std::to_string(*s));
        }
        std::map<std::string, Expr, std::less<>> all;
        for (int k = 0; k < kNumVars; ++k)
          all.emplace(kVars[k].name, Expr(v[k]));
        Expr folded = e.substitute(all);
        if (!folded.is_const() || folded.as_const() != *ref) {
          fails.add(where.str() + ": full substitution gives " + folded.to_string());
        }
      } catch (const Error& err) {
        if (!contains(err.what(), "overflow"))
          fails.add(where.str() + ": substitute threw " + err.what());
      }
    }
  }
  if (std::getenv("LUMINAL_EXPR_STATS")) {
    std::printf("checked %d, overflow evals %d, construction skipped %d\n", checked, overflow_evals,
                skipped_construction);
  }
  return st;
}

TEST(ExprProperty, RandomExpressionsKeepTheirValue) {
  Gen gen(seed(0x5eed1234abcdULL));
  Failures fails;
  constexpr int kExprs = 3000;
  Stats st = check_values(gen, kExprs, fails);
  EXPECT_EQ(fails.count(), 0) << fails.first();
  EXPECT_GT(st.checked, kExprs * 8);
  // Overflow exposed by canonicalisation and construction failures are rare.
  EXPECT_LT(st.overflow_evals, st.checked / 100);
  EXPECT_LT(st.skipped_construction, kExprs / 20);
}

TEST(ExprProperty, ExtremeValuesKeepTheirValue) {
  Gen gen(seed(0xe7e7e7e7ULL), kExtreme);
  Failures fails;
  constexpr int kExprs = 1500;
  Stats st = check_values(gen, kExprs, fails);
  EXPECT_EQ(fails.count(), 0) << fails.first();
  EXPECT_GT(st.checked, kExprs * 4);
}

// ---------------------------------------------------------------------------------------------
// Shuffled spellings of one polynomial intern to the same node.

TEST(ExprProperty, SpellingsOfOnePolynomialAreIdentical) {
  Gen gen(seed(0xfeedfaceULL));
  Failures fails;
  Expr a = Expr::var("a"), b = Expr::var("b"), c = Expr::var("c"), z = Expr::z();
  const std::vector<Expr> atoms = {a, b, c, z, a / 3, b % 4, min(a, c), lt(a, b), (a + b) / 8};
  struct T {
    int64_t coef;
    std::vector<Expr> factors;
  };
  constexpr int kPolys = 2000;
  for (int i = 0; i < kPolys; ++i) {
    std::vector<T> terms;
    int n = static_cast<int>(gen.uniform(1, 6));
    for (int k = 0; k < n; ++k) {
      T t{gen.uniform(-9, 9), {}};
      int f = static_cast<int>(gen.uniform(0, 3));
      for (int j = 0; j < f; ++j)
        t.factors.push_back(atoms[gen.uniform(0, atoms.size() - 1)]);
      terms.push_back(t);
    }
    // Spelling 1: left to right, coefficient first.
    Expr one;
    for (const T& t : terms) {
      Expr m = Expr(t.coef);
      for (const Expr& f : t.factors)
        m = m * f;
      one = one + m;
    }
    // Spelling 2: shuffled terms and factors, coefficient split in two and placed anywhere,
    // random grouping, and a cancelling junk term.
    std::vector<Expr> parts;
    for (T t : terms) {
      std::shuffle(t.factors.begin(), t.factors.end(), gen.rng());
      int64_t c1 = gen.uniform(-5, 5);
      Expr coef = gen.chance(0.5) ? Expr(t.coef) : (Expr(c1) + Expr(t.coef - c1));
      size_t pos = static_cast<size_t>(gen.uniform(0, static_cast<int64_t>(t.factors.size())));
      Expr m = Expr(1);
      for (size_t j = 0; j <= t.factors.size(); ++j) {
        if (j == pos) m = gen.chance(0.5) ? m * coef : coef * m;
        if (j < t.factors.size()) m = gen.chance(0.5) ? m * t.factors[j] : t.factors[j] * m;
      }
      parts.push_back(m);
    }
    Expr junk = atoms[gen.uniform(0, atoms.size() - 1)] * gen.uniform(-3, 3);
    parts.push_back(junk);
    parts.push_back(-junk);
    std::shuffle(parts.begin(), parts.end(), gen.rng());
    while (parts.size() > 1) {
      size_t k = static_cast<size_t>(gen.uniform(0, static_cast<int64_t>(parts.size()) - 2));
      Expr merged = gen.chance(0.5) ? parts[k] + parts[k + 1] : parts[k + 1] + parts[k];
      parts.erase(parts.begin() + static_cast<std::ptrdiff_t>(k) + 1);
      parts[k] = merged;
    }
    Expr two = parts[0];
    if (one != two) fails.add(one.to_string() + " != " + two.to_string());
    // Atoms built from equal polynomials are equal too, and so is a distributed product.
    Expr d = atoms[gen.uniform(0, atoms.size() - 1)];
    if (one / 4 != two / 4 || min(one, z) != min(z, two) || lt(one, c) != gt(c, two))
      fails.add("atoms over " + one.to_string() + " differ");
    if ((one + d) * d != one * d + d * d) fails.add("distribution over " + one.to_string());
    if (one - two != Expr(0)) fails.add("difference of " + one.to_string());
  }
  EXPECT_EQ(fails.count(), 0) << fails.first();
}

// Canonical forms are idempotent: simplify({}) rebuilds every node from its children with the
// unconditional rules and must give the same node back.
TEST(ExprProperty, RebuildingIsIdentity) {
  Failures fails;
  for (const Domain* domain : {&kSmall, &kExtreme}) {
    Gen gen(seed(42), *domain);
    for (int i = 0; i < 1000; ++i) {
      Expr e;
      try {
        e = build(gen.tree(5));
      } catch (const Error&) {
        continue;
      }
      Expr again = e.simplify({});
      if (again != e) fails.add(e.to_string() + " rebuilds as " + again.to_string());
    }
  }
  EXPECT_EQ(fails.count(), 0) << fails.first();
}

}  // namespace
