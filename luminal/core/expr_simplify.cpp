// Expr: the canonicalising constructors of Div/Mod/Min/Max/comparisons/logic, and
// simplify(facts).
//
// Every rule applied without facts holds for all integer values of the variables. With facts
// (simplify(), to_c()) rules may additionally use the ranges the facts give.
#include <algorithm>
#include <optional>

#include "luminal/core/error.hpp"
#include "luminal/core/expr.hpp"
#include "luminal/core/expr_node.hpp"

namespace luminal {
namespace expr_detail {

// ---------------------------------------------------------------------------------------------
// Div and Mod.

namespace {

uint64_t gcd_u(uint64_t a, uint64_t b) {
  while (b != 0) {
    uint64_t t = a % b;
    a = b;
    b = t;
  }
  return a;
}
uint64_t mag(int64_t v) { return v < 0 ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v); }

// If every value in iv lies in one block [k*c, k*c + c - 1] (c > 0), returns k.
std::optional<int64_t> same_block(Interval iv, int64_t c) {
  if (iv.lo == INT64_MIN || iv.hi == INT64_MAX || iv.lo > iv.hi) return std::nullopt;
  int64_t k = floor_div(iv.lo, c);
  if (k != floor_div(iv.hi, c)) return std::nullopt;
  return k;
}

uint64_t coef_gcd(const Poly& p, uint64_t start) {
  uint64_t g = start;
  for (const Term& t : p.terms)
    g = gcd_u(g, mag(t.coef));
  return g;
}

bool any_min_coef(const Poly& p) {
  for (const Term& t : p.terms)
    if (t.coef == INT64_MIN) return true;
  return false;
}

// -p + (c - 1) for a polynomial with constant in [0, c) and no INT64_MIN coefficient.
Poly reflect(const Poly& p, int64_t c) {
  Poly n;
  n.terms.reserve(p.terms.size());
  for (const Term& t : p.terms)
    n.terms.push_back({-t.coef, t.atoms});
  n.constant = c - 1 - p.constant;
  return n;
}

// (p - p mod g) / g: every coefficient divided by g (which divides them), constant floored.
Poly divide_by_gcd(const Poly& p, int64_t g) {
  Poly q;
  for (const Term& t : p.terms)
    q.terms.push_back({t.coef / g, t.atoms});
  q.constant = floor_div(p.constant, g);
  return q;
}

Node div_pos(const Poly& p, int64_t c, BoundsCtx* ctx);

// Splits p = c*q + r where q takes the terms whose coefficients are multiples of c and r keeps
// the rest with its constant in [0, c).
void split_multiples(const Poly& p, int64_t c, Poly* q, Poly* r) {
  for (const Term& t : p.terms) {
    if (t.coef % c == 0) {
      if (q) q->terms.push_back({t.coef / c, t.atoms});
    } else {
      r->terms.push_back(t);
    }
  }
  if (q) q->constant = floor_div(p.constant, c);
  r->constant = floor_mod(p.constant, c);
}

Node div_pos(const Poly& p, int64_t c, BoundsCtx* ctx) {
  Poly q, r;
  split_multiples(p, c, &q, &r);
  // (c*q + r) / c = q + r / c.
  if (!q.terms.empty() || q.constant != 0) return add(from_poly(q), div_pos(r, c, ctx));
  if (r.terms.empty()) return intern_const(0);  // 0 <= r < c
  Node rn = from_poly(r);
  if (auto k = same_block(bounds(rn, ctx), c)) return intern_const(*k);
  // (g*x + k) / (g*d) = (x + floor(k/g)) / d.
  if (uint64_t g = coef_gcd(r, static_cast<uint64_t>(c)); g > 1) {
    int64_t gi = static_cast<int64_t>(g);
    return div_pos(divide_by_gcd(r, gi), c / gi, ctx);
  }
  // floor(-x / c) = -floor((x + c - 1) / c): make the leading coefficient positive.
  if (r.terms.front().coef < 0 && !any_min_coef(r)) return neg(div_pos(reflect(r, c), c, ctx));
  // (x / a + k) / c = (x + k*a) / (a*c) for a, c > 0.
  if (r.terms.size() == 1 && r.terms[0].coef == 1 && r.terms[0].atoms.size() == 1) {
    Node at = r.terms[0].atoms[0];
    if (at->kind == Kind::Div && is_const(at->children[1]) && at->children[1]->value > 0) {
      int64_t a = at->children[1]->value, ac;
      if (!__builtin_mul_overflow(a, c, &ac)) {
        try {
          Node x = add(at->children[0], intern_const(checked_mul(r.constant, a)));
          return div_pos(to_poly(x), ac, ctx);
        } catch (const Overflow&) {
        }
      }
    }
  }
  return intern(Kind::Div, {rn, intern_const(c)});
}

Node mod_pos(const Poly& p_in, int64_t c, BoundsCtx* ctx) {
  // (x % m) == x (mod c) when c divides m: replace such a single-atom term by coef * x.
  for (size_t i = 0; i < p_in.terms.size(); ++i) {
    const Term& t = p_in.terms[i];
    if (t.atoms.size() != 1) continue;
    Node at = t.atoms[0];
    if (at->kind != Kind::Mod || !is_const(at->children[1]) || at->children[1]->value <= 0 ||
        at->children[1]->value % c != 0) {
      continue;
    }
    try {
      Poly rest = p_in;
      rest.terms.erase(rest.terms.begin() + static_cast<std::ptrdiff_t>(i));
      Poly k;
      k.constant = t.coef;
      return mod_pos(poly_combine(rest, poly_mul(to_poly(at->children[0]), k), false), c, ctx);
    } catch (const Overflow&) {
    }
  }

  Poly r;
  split_multiples(p_in, c, nullptr, &r);
  if (r.terms.empty()) return intern_const(r.constant);
  Node rn = from_poly(r);
  if (auto k = same_block(bounds(rn, ctx), c)) {
    int64_t kc;
    if (!__builtin_mul_overflow(*k, c, &kc)) {
      try {
        return sub(rn, intern_const(kc));
      } catch (const Overflow&) {
      }
    }
  }
  // (g*x + k) % (g*d) = g*((x + floor(k/g)) % d) + k mod g.
  if (uint64_t g = coef_gcd(r, static_cast<uint64_t>(c)); g > 1) {
    int64_t gi = static_cast<int64_t>(g);
    return add(mul(intern_const(gi), mod_pos(divide_by_gcd(r, gi), c / gi, ctx)),
               intern_const(floor_mod(r.constant, gi)));
  }
  // (-x) mod c = c - 1 - ((x + c - 1) mod c).
  if (r.terms.front().coef < 0 && !any_min_coef(r))
    return sub(intern_const(c - 1), mod_pos(reflect(r, c), c, ctx));
  return intern(Kind::Mod, {rn, intern_const(c)});
}

[[noreturn]] void throw_div_zero(const char* op, Node a) {
  throw Error(std::string(op) + " by zero: the expression '" + node_to_string(a) +
              (op[0] == 'd' ? "/0" : "%0") + "' has the constant divisor 0");
}

// For a non-constant divisor: 0 <= a < b gives a / b = 0 and a % b = a.
bool dividend_below_divisor(Node a, Node b, BoundsCtx* ctx) {
  Interval ia = bounds(a, ctx), ib = bounds(b, ctx);
  return ia.lo >= 0 && ib.lo >= 1 && hi_ext(ia.hi) < lo_ext(ib.lo);
}

// x / x = 1 and x % x = 0 where the bounds exclude x == 0.
bool same_nonzero(Node a, Node b, BoundsCtx* ctx) {
  if (a != b) return false;
  Interval ib = bounds(b, ctx);
  return ib.lo > 0 || ib.hi < 0;
}

}  // namespace

Node make_div(Node a, Node b, BoundsCtx* ctx) {
  if (!is_const(b)) {
    if (dividend_below_divisor(a, b, ctx)) return intern_const(0);
    if (same_nonzero(a, b, ctx)) return intern_const(1);
    return intern(Kind::Div, {a, b});
  }
  int64_t c = b->value;
  if (c == 0) throw_div_zero("division", a);
  if (is_const(a)) {
    if (a->value == INT64_MIN && c == -1) throw_overflow("division", a->value, c);
    return intern_const(floor_div(a->value, c));
  }
  if (c == 1) return a;
  if (c < 0) {
    // floor(a / c) = floor(-a / -c).
    if (c != INT64_MIN) {
      try {
        return div_pos(to_poly(neg(a)), -c, ctx);
      } catch (const Overflow&) {
      }
    }
    return intern(Kind::Div, {a, b});
  }
  return div_pos(to_poly(a), c, ctx);
}

Node make_mod(Node a, Node b, BoundsCtx* ctx) {
  if (!is_const(b)) {
    if (dividend_below_divisor(a, b, ctx)) return a;
    if (same_nonzero(a, b, ctx)) return intern_const(0);
    return intern(Kind::Mod, {a, b});
  }
  int64_t c = b->value;
  if (c == 0) throw_div_zero("modulo", a);
  if (is_const(a)) return intern_const(floor_mod(a->value, c));
  if (c == 1 || c == -1) return intern_const(0);
  if (c < 0) {
    // a mod c = -((-a) mod -c).
    if (c != INT64_MIN) {
      try {
        return neg(mod_pos(to_poly(neg(a)), -c, ctx));
      } catch (const Overflow&) {
      }
    }
    return intern(Kind::Mod, {a, b});
  }
  return mod_pos(to_poly(a), c, ctx);
}

// ---------------------------------------------------------------------------------------------
// Associative-commutative chains (Min, Max, And, Or).

namespace {

void flatten(Kind k, Node n, std::vector<Node>& out) {
  if (n->kind == k) {
    for (Node c : n->children)
      flatten(k, c, out);
  } else if (std::find(out.begin(), out.end(), n) == out.end()) {
    out.push_back(n);
  }
}

bool operand_less(Node a, Node b) {
  if (is_const(a) != is_const(b)) return is_const(b);  // constants last
  return compare(a, b) < 0;
}

Node build_chain(Kind k, std::vector<Node> ops) {
  std::sort(ops.begin(), ops.end(), operand_less);
  Node r = ops.back();
  for (size_t i = ops.size() - 1; i-- > 0;)
    r = intern(k, {ops[i], r});
  return r;
}

// 1: x <= y for every assignment, -1: x >= y, 0: unknown.
int order_of(Node x, Node y, BoundsCtx* ctx) {
  try {
    Poly d = poly_combine(to_poly(x), to_poly(y), true);
    if (d.terms.empty()) return d.constant <= 0 ? 1 : -1;
  } catch (const Overflow&) {
  }
  Interval bx = bounds(x, ctx), by = bounds(y, ctx);
  if (hi_ext(bx.hi) <= lo_ext(by.lo)) return 1;
  if (hi_ext(by.hi) <= lo_ext(bx.lo)) return -1;
  if (has_facts(ctx)) {
    try {
      Interval bd = bounds(sub(x, y), ctx);
      if (hi_ext(bd.hi) <= 0) return 1;
      if (lo_ext(bd.lo) >= 0) return -1;
    } catch (const Overflow&) {
    }
  }
  // min(x, max(x, ...)) = x, max(x, min(x, ...)) = x.
  auto inside = [](Node outer, Node v, Kind k) {
    if (outer->kind != k) return false;
    std::vector<Node> ops;
    flatten(k, outer, ops);
    return std::find(ops.begin(), ops.end(), v) != ops.end();
  };
  if (inside(y, x, Kind::Max) || inside(x, y, Kind::Min)) return 1;
  if (inside(x, y, Kind::Max) || inside(y, x, Kind::Min)) return -1;
  return 0;
}

}  // namespace

Node make_minmax(Kind k, Node a, Node b, BoundsCtx* ctx) {
  bool is_min = k == Kind::Min;
  if (is_const(a) && is_const(b)) {
    return intern_const(is_min ? std::min(a->value, b->value) : std::max(a->value, b->value));
  }
  if (a == b) return a;
  std::vector<Node> ops;
  flatten(k, a, ops);
  flatten(k, b, ops);
  std::vector<bool> dead(ops.size(), false);
  for (size_t i = 0; i < ops.size(); ++i) {
    for (size_t j = i + 1; j < ops.size() && !dead[i]; ++j) {
      if (dead[j]) continue;
      int o = order_of(ops[i], ops[j], ctx);
      if (o == 0) continue;
      // o == 1: ops[i] <= ops[j].
      bool keep_i = (o == 1) == is_min;
      dead[keep_i ? j : i] = true;
    }
  }
  std::vector<Node> live;
  for (size_t i = 0; i < ops.size(); ++i)
    if (!dead[i]) live.push_back(ops[i]);
  return build_chain(k, std::move(live));
}

Node make_logic(Kind k, Node a, Node b) {
  bool is_and = k == Kind::And;
  auto boolify = [](Node x) -> Node {
    if (is_const(x)) return intern_const(x->value != 0 ? 1 : 0);
    if (is_bool_kind(x->kind)) return x;
    return make_eq(Kind::Ne, x, intern_const(0), nullptr);
  };
  std::vector<Node> ops, live;
  flatten(k, boolify(a), ops);
  flatten(k, boolify(b), ops);
  for (Node x : ops) {
    if (is_const(x)) {
      if (is_and && x->value == 0) return intern_const(0);
      if (!is_and && x->value != 0) return intern_const(1);
      continue;  // the neutral element
    }
    live.push_back(x);
  }
  if (live.empty()) return intern_const(is_and ? 1 : 0);
  return build_chain(k, std::move(live));
}

// ---------------------------------------------------------------------------------------------
// Comparisons.

namespace {

Node le_poly(Poly p, BoundsCtx* ctx) {
  if (p.terms.empty()) return intern_const(p.constant <= 0 ? 1 : 0);
  // g*x + k <= 0  <=>  x + ceil(k/g) <= 0.
  if (uint64_t g = coef_gcd(p, 0); g > 1 && g <= uint64_t{INT64_MAX}) {
    int64_t gi = static_cast<int64_t>(g);
    for (Term& t : p.terms)
      t.coef /= gi;
    p.constant = ceil_div_pos(p.constant, gi);
  }
  Node pn = from_poly(p);
  Interval iv = bounds(pn, ctx);
  if (hi_ext(iv.hi) <= 0) return intern_const(1);
  if (lo_ext(iv.lo) > 0) return intern_const(0);
  return intern(Kind::Le, {pn, intern_const(0)});
}

Node eq_poly(Kind k, Poly p, BoundsCtx* ctx) {
  bool is_eq = k == Kind::Eq;
  if (p.terms.empty()) return intern_const((p.constant == 0) == is_eq ? 1 : 0);
  if (uint64_t g = coef_gcd(p, 0); g > 1 && g <= uint64_t{INT64_MAX}) {
    int64_t gi = static_cast<int64_t>(g);
    if (p.constant % gi != 0) return intern_const(is_eq ? 0 : 1);
    for (Term& t : p.terms)
      t.coef /= gi;
    p.constant /= gi;
  }
  if (p.terms.front().coef < 0 && !any_min_coef(p) && p.constant != INT64_MIN) {
    for (Term& t : p.terms)
      t.coef = -t.coef;
    p.constant = -p.constant;
  }
  Node pn = from_poly(p);
  Interval r = cmp_bounds(k, bounds(pn, ctx), {0, 0});
  if (r.lo == r.hi) return intern_const(r.lo);
  return intern(k, {pn, intern_const(0)});
}

}  // namespace

Node make_le(Node a, Node b, BoundsCtx* ctx) {
  if (is_const(a) && is_const(b)) return intern_const(a->value <= b->value ? 1 : 0);
  Poly p;
  try {
    p = poly_combine(to_poly(a), to_poly(b), true);
  } catch (const Overflow&) {
    return intern(Kind::Le, {a, b});
  }
  return le_poly(std::move(p), ctx);
}

Node make_lt(Node a, Node b, BoundsCtx* ctx) {
  if (is_const(a) && is_const(b)) return intern_const(a->value < b->value ? 1 : 0);
  // a < b  <=>  a - b + 1 <= 0.
  Poly p;
  try {
    p = poly_combine(to_poly(a), to_poly(b), true);
    p.constant = checked_add(p.constant, 1);
  } catch (const Overflow&) {
    return intern(Kind::Lt, {a, b});
  }
  return le_poly(std::move(p), ctx);
}

Node make_eq(Kind k, Node a, Node b, BoundsCtx* ctx) {
  bool is_eq = k == Kind::Eq;
  if (is_const(a) && is_const(b)) return intern_const((a->value == b->value) == is_eq ? 1 : 0);
  if (a == b) return intern_const(is_eq ? 1 : 0);
  // a == b  <=>  a - b == 0  <=>  b - a == 0 (whichever does not overflow).
  Poly p;
  try {
    p = poly_combine(to_poly(a), to_poly(b), true);
  } catch (const Overflow&) {
    try {
      p = poly_combine(to_poly(b), to_poly(a), true);
    } catch (const Overflow&) {
      if (compare(b, a) < 0) std::swap(a, b);
      return intern(k, {a, b});
    }
  }
  return eq_poly(k, std::move(p), ctx);
}

}  // namespace expr_detail

// ---------------------------------------------------------------------------------------------
// Public API.

using namespace expr_detail;  // NOLINT(google-build-using-namespace)

namespace {
Node simplify_rec(Node n, BoundsCtx& ctx, std::unordered_map<Node, Node>& memo) {
  if (n->kind == Kind::Const) return n;
  if (n->kind == Kind::Var) {
    auto it = ctx.facts->find(n->name);
    if (it != ctx.facts->end() && it->second.lo == it->second.hi && it->second.lo != INT64_MIN &&
        it->second.hi != INT64_MAX) {
      return intern_const(it->second.lo);
    }
    return n;
  }
  auto it = memo.find(n);
  if (it != memo.end()) return it->second;
  std::vector<Node> kids;
  kids.reserve(n->children.size());
  for (Node c : n->children)
    kids.push_back(simplify_rec(c, ctx, memo));
  Node r;
  try {
    r = rebuild(n, kids, &ctx);
  } catch (const Error&) {
    // A divisor the facts pin to 0, or an overflow: keep this node as it was (eval reports the
    // error for the assignments that reach it).
    r = n;
  }
  memo.emplace(n, r);
  return r;
}
}  // namespace

Expr Expr::simplify(const Facts& facts) const {
  BoundsCtx ctx;
  ctx.facts = &facts;
  std::unordered_map<Node, Node> memo;
  return Expr(simplify_rec(node_, ctx, memo));
}

}  // namespace luminal
