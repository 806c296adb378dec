// Expr: evaluation. Recursive, no allocation on the success path. Sums and products are
// accumulated in 128 bits so that canonicalisation (which distributes products) never reports an
// overflow the final value does not have; every node's value must still fit in int64, except a
// polynomial compared directly by a comparison.
#include <string>

#include "luminal/core/error.hpp"
#include "luminal/core/expr.hpp"
#include "luminal/core/expr_node.hpp"

namespace luminal {

using namespace expr_detail;  // NOLINT(google-build-using-namespace)

namespace {

struct MissingVar {};

struct EvalCtx {
  const DynMap* dyn;
  bool has_z;
  int64_t z;
  Node root;
  bool try_mode;
};

std::string i128_to_string(i128 v) {
  if (v == 0) return "0";
  bool negative = v < 0;
  std::string s;
  while (v != 0) {
    int d = static_cast<int>(v % 10);
    s.push_back(static_cast<char>('0' + (d < 0 ? -d : d)));
    v /= 10;
  }
  if (negative) s.push_back('-');
  return {s.rbegin(), s.rend()};
}

[[noreturn]] void eval_overflow(const EvalCtx& c, const char* op, i128 a, i128 b) {
  throw Error("integer overflow evaluating '" + node_to_string(c.root) + "': " + op + " of " +
              i128_to_string(a) + " and " + i128_to_string(b) +
              " does not fit in a signed 64-bit integer");
}

[[noreturn]] void eval_overflow_value(const EvalCtx& c, Node n, i128 v) {
  throw Error("integer overflow evaluating '" + node_to_string(c.root) + "': the value " +
              i128_to_string(v) + " of '" + node_to_string(n) +
              "' does not fit in a signed 64-bit integer");
}

[[noreturn]] void missing_var(const EvalCtx& c, const std::string& name) {
  if (c.try_mode) throw MissingVar{};
  if (name == "z") {
    throw Error("expression '" + node_to_string(c.root) +
                "' needs a value for the index variable 'z' (pass it in the dyn map or use "
                "eval(dyn, z_value))");
  }
  throw Error("expression '" + node_to_string(c.root) + "' needs a value for dynamic dimension '" +
              name + "' (pass it in the dyn map / set_dim)");
}

[[noreturn]] void div_zero(const EvalCtx& c, Node n) {
  const char* what = n->kind == Kind::Div ? "division" : "modulo";
  throw Error(std::string(what) + " by zero evaluating '" + node_to_string(c.root) +
              "': the divisor '" + node_to_string(n->children[1]) + "' is 0");
}

int64_t ev(Node n, const EvalCtx& c);

bool fits(i128 v) { return v >= INT64_MIN && v <= INT64_MAX; }

// Folds the children of a sum or product with `op`: in 64 bits while every value fits, then, from
// the child that did not fit, in 128 bits. `child` evaluates a child (a sum's terms may be wide).
template <class Child, class Op>
i128 fold_wide(Node n, const EvalCtx& c, int64_t identity, Child&& child, Op&& op,
               const char* what) {
  int64_t acc64 = identity;
  size_t i = 0;
  const auto& k = n->children;
  i128 v = 0;
  for (; i < k.size(); ++i) {
    v = child(k[i]);
    int64_t next;
    if (!fits(v) || op(acc64, static_cast<int64_t>(v), &next)) break;
    acc64 = next;
  }
  if (i == k.size()) return acc64;
  i128 acc = acc64;  // continue from the child that did not fit, in 128 bits
  for (size_t j = i; j < k.size(); ++j) {
    if (j > i) v = child(k[j]);
    i128 prev = acc;
    if (op(prev, v, &acc)) eval_overflow(c, what, prev, v);
  }
  return acc;
}

// Sums and products in 128 bits; the common case stays in 64-bit arithmetic.
i128 ev_wide(Node n, const EvalCtx& c) {
  if (n->kind == Kind::Add) {
    return fold_wide(
        n, c, 0, [&](Node t) { return ev_wide(t, c); },
        [](auto a, auto b, auto* r) { return __builtin_add_overflow(a, b, r); }, "addition");
  }
  if (n->kind == Kind::Mul) {
    return fold_wide(
        n, c, 1, [&](Node f) { return i128{ev(f, c)}; },
        [](auto a, auto b, auto* r) { return __builtin_mul_overflow(a, b, r); }, "multiplication");
  }
  return ev(n, c);
}

int64_t ev(Node n, const EvalCtx& c) {
  const auto& k = n->children;
  switch (n->kind) {
    case Kind::Const: return n->value;
    case Kind::Var: {
      if (c.has_z && n->name.size() == 1 && n->name[0] == 'z') return c.z;
      auto it = c.dyn->find(n->name);
      if (it == c.dyn->end()) missing_var(c, n->name);
      return it->second;
    }
    case Kind::Add:
    case Kind::Mul: {
      i128 v = ev_wide(n, c);
      if (v < INT64_MIN || v > INT64_MAX) eval_overflow_value(c, n, v);
      return static_cast<int64_t>(v);
    }
    case Kind::Div: {
      int64_t a = ev(k[0], c), b = ev(k[1], c);
      if (b == 0) div_zero(c, n);
      if (a == INT64_MIN && b == -1) eval_overflow(c, "division", a, b);
      return floor_div(a, b);
    }
    case Kind::Mod: {
      int64_t a = ev(k[0], c), b = ev(k[1], c);
      if (b == 0) div_zero(c, n);
      return floor_mod(a, b);
    }
    case Kind::Min: {
      int64_t a = ev(k[0], c), b = ev(k[1], c);
      return a < b ? a : b;
    }
    case Kind::Max: {
      int64_t a = ev(k[0], c), b = ev(k[1], c);
      return a > b ? a : b;
    }
    case Kind::Lt: return ev_wide(k[0], c) < ev_wide(k[1], c) ? 1 : 0;
    case Kind::Le: return ev_wide(k[0], c) <= ev_wide(k[1], c) ? 1 : 0;
    case Kind::Eq: return ev_wide(k[0], c) == ev_wide(k[1], c) ? 1 : 0;
    case Kind::Ne: return ev_wide(k[0], c) != ev_wide(k[1], c) ? 1 : 0;
    case Kind::And: {
      bool a = ev(k[0], c) != 0, b = ev(k[1], c) != 0;
      return a && b ? 1 : 0;
    }
    case Kind::Or: {
      bool a = ev(k[0], c) != 0, b = ev(k[1], c) != 0;
      return a || b ? 1 : 0;
    }
  }
  internal_error(__FILE__, __LINE__, "unknown expression kind");
}

}  // namespace

int64_t Expr::eval(const DynMap& dyn) const {
  if (node_->kind == Kind::Const) return node_->value;
  return ev(node_, EvalCtx{&dyn, false, 0, node_, false});
}

int64_t Expr::eval(const DynMap& dyn, int64_t z_value) const {
  if (node_->kind == Kind::Const) return node_->value;
  return ev(node_, EvalCtx{&dyn, true, z_value, node_, false});
}

std::optional<int64_t> Expr::try_eval(const DynMap& dyn) const {
  if (node_->kind == Kind::Const) return node_->value;
  try {
    return ev(node_, EvalCtx{&dyn, false, 0, node_, true});
  } catch (const MissingVar&) {
    return std::nullopt;
  }
}

}  // namespace luminal
