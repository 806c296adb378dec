// Expr: interval bounds, the canonicalising constructors of Div/Mod/Min/Max/comparisons/logic,
// and simplify(facts).
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
// Interval arithmetic. Endpoints are int64; lo == INT64_MIN means -inf and hi == INT64_MAX +inf.
// Computation is done in i128 where +-kInf stands for "beyond int64" and results are clamped back,
// which keeps every interval a superset of the true range.

namespace {

constexpr Interval kFull{};

int64_t lo_from(i128 v) {
  if (v <= INT64_MIN) return INT64_MIN;
  if (v >= INT64_MAX) return INT64_MAX;
  return static_cast<int64_t>(v);
}
int64_t hi_from(i128 v) {
  if (v >= INT64_MAX) return INT64_MAX;
  if (v <= INT64_MIN) return INT64_MIN;
  return static_cast<int64_t>(v);
}
Interval make_iv(i128 lo, i128 hi) { return {lo_from(lo), hi_from(hi)}; }
bool is_inf(i128 v) { return v >= kInf || v <= -kInf; }

i128 add_ext(i128 a, i128 b) {
  if (is_inf(a)) return a;
  if (is_inf(b)) return b;
  return a + b;
}
i128 mul_ext(i128 a, i128 b) {
  if (a == 0 || b == 0) return 0;
  bool negative = (a < 0) != (b < 0);
  if (is_inf(a) || is_inf(b)) return negative ? -kInf : kInf;
  i128 p = a * b;  // both within int64 range: fits
  if (p > INT64_MAX) return kInf;
  if (p < INT64_MIN) return -kInf;
  return p;
}
// floor(a / b) for b > 0 (b may be kInf).
i128 fdiv_ext(i128 a, i128 b) {
  if (is_inf(b)) return a >= 0 ? 0 : -1;
  if (is_inf(a)) return a;
  i128 q = a / b;
  if (a % b != 0 && a < 0) --q;
  return q;
}

Interval iv_add(Interval a, Interval b) {
  return make_iv(add_ext(lo_ext(a.lo), lo_ext(b.lo)), add_ext(hi_ext(a.hi), hi_ext(b.hi)));
}
Interval iv_neg(Interval a) { return make_iv(-hi_ext(a.hi), -lo_ext(a.lo)); }
Interval iv_mul(Interval a, Interval b) {
  i128 al = lo_ext(a.lo), ah = hi_ext(a.hi), bl = lo_ext(b.lo), bh = hi_ext(b.hi);
  i128 c[4] = {mul_ext(al, bl), mul_ext(al, bh), mul_ext(ah, bl), mul_ext(ah, bh)};
  return make_iv(*std::min_element(c, c + 4), *std::max_element(c, c + 4));
}
Interval iv_pow(Interval a, size_t k) {
  if (k % 2 == 0) {
    i128 lo = lo_ext(a.lo), hi = hi_ext(a.hi);
    if (hi <= 0) {
      a = iv_neg(a);
    } else if (lo < 0) {
      a = make_iv(0, std::max(-lo, hi));
    }
  }
  Interval r = a;
  for (size_t i = 1; i < k; ++i) r = iv_mul(r, a);
  return r;
}

// floor(a / b) for b entirely >= 1.
Interval iv_div_pos(Interval a, Interval b) {
  i128 al = lo_ext(a.lo), ah = hi_ext(a.hi), bl = lo_ext(b.lo), bh = hi_ext(b.hi);
  i128 lo = al >= 0 ? fdiv_ext(al, bh) : fdiv_ext(al, bl);
  i128 hi = ah >= 0 ? fdiv_ext(ah, bl) : fdiv_ext(ah, bh);
  return make_iv(lo, hi);
}
Interval iv_div(Interval a, Interval b) {
  if (b.lo >= 1) return iv_div_pos(a, b);
  if (b.hi <= -1) return iv_div_pos(iv_neg(a), iv_neg(b));
  // Divisor may be 0 or change sign: |floor(a / b)| <= |a| for every b != 0.
  i128 m = std::max(-lo_ext(a.lo), hi_ext(a.hi));
  if (m < 0) m = -m;
  return make_iv(-m, m);
}
Interval iv_mod(Interval a, Interval b) {
  if (b.lo == b.hi && b.lo != 0 && a.lo != INT64_MIN && a.hi != INT64_MAX) {
    int64_t c = b.lo;
    if (c != -1 && floor_div(a.lo, c) == floor_div(a.hi, c)) {
      return {floor_mod(a.lo, c), floor_mod(a.hi, c)};
    }
  }
  if (b.lo >= 1) {
    i128 hi = hi_ext(b.hi) - 1;
    if (a.lo >= 0) hi = std::min(hi, hi_ext(a.hi));
    return make_iv(0, hi);
  }
  if (b.hi <= -1) {
    i128 lo = lo_ext(b.lo) + 1;
    if (a.hi <= 0) lo = std::max(lo, lo_ext(a.lo));
    return make_iv(lo, 0);
  }
  return make_iv(std::min<i128>(0, lo_ext(b.lo) + 1), std::max<i128>(0, hi_ext(b.hi) - 1));
}

constexpr Interval kTrue{1, 1}, kFalse{0, 0}, kBool{0, 1};

Interval iv_cmp(Kind k, Interval a, Interval b) {
  i128 al = lo_ext(a.lo), ah = hi_ext(a.hi), bl = lo_ext(b.lo), bh = hi_ext(b.hi);
  switch (k) {
    case Kind::Lt:
      return ah < bl ? kTrue : (al >= bh ? kFalse : kBool);
    case Kind::Le:
      return ah <= bl ? kTrue : (al > bh ? kFalse : kBool);
    case Kind::Eq:
    case Kind::Ne: {
      bool always = al == ah && bl == bh && al == bl && !is_inf(al);
      bool never = ah < bl || bh < al;
      bool eq = k == Kind::Eq;
      return always ? (eq ? kTrue : kFalse) : never ? (eq ? kFalse : kTrue) : kBool;
    }
    default:
      return kBool;
  }
}

// -1: definitely false, 1: definitely true, 0: unknown.
int truth(Interval a) {
  if (a.lo == 0 && a.hi == 0) return -1;
  if (a.lo > 0 || a.hi < 0) return 1;
  return 0;
}

Interval intersect(Interval a, Interval b) { return {std::max(a.lo, b.lo), std::min(a.hi, b.hi)}; }

}  // namespace

Interval local_bounds(Node n, const Interval* child) {
  const auto& kids = n->children;
  switch (n->kind) {
    case Kind::Const:
      return {n->value, n->value};
    case Kind::Var:
      return kFull;
    case Kind::Add: {
      Interval r = child[0];
      for (size_t i = 1; i < kids.size(); ++i) r = iv_add(r, child[i]);
      return r;
    }
    case Kind::Mul: {
      Interval r{1, 1};
      for (size_t i = 0; i < kids.size();) {
        size_t j = i + 1;
        while (j < kids.size() && kids[j] == kids[i]) ++j;
        r = iv_mul(r, iv_pow(child[i], j - i));
        i = j;
      }
      return r;
    }
    case Kind::Div:
      return iv_div(child[0], child[1]);
    case Kind::Mod:
      return iv_mod(child[0], child[1]);
    case Kind::Min:
      return {std::min(child[0].lo, child[1].lo), std::min(child[0].hi, child[1].hi)};
    case Kind::Max:
      return {std::max(child[0].lo, child[1].lo), std::max(child[0].hi, child[1].hi)};
    case Kind::Lt:
    case Kind::Le:
    case Kind::Eq:
    case Kind::Ne:
      return iv_cmp(n->kind, child[0], child[1]);
    case Kind::And: {
      int a = truth(child[0]), b = truth(child[1]);
      return (a < 0 || b < 0) ? kFalse : (a > 0 && b > 0) ? kTrue : kBool;
    }
    case Kind::Or: {
      int a = truth(child[0]), b = truth(child[1]);
      return (a > 0 || b > 0) ? kTrue : (a < 0 && b < 0) ? kFalse : kBool;
    }
  }
  return kFull;
}

bool has_facts(const BoundsCtx* ctx) {
  return ctx != nullptr && ctx->facts != nullptr && !ctx->facts->empty();
}

Interval bounds(Node n, BoundsCtx* ctx) {
  if (!has_facts(ctx)) return n->ubounds;
  if (n->kind == Kind::Const) return n->ubounds;
  if (n->kind == Kind::Var) {
    auto it = ctx->facts->find(n->name);
    return it == ctx->facts->end() ? kFull : it->second;
  }
  auto it = ctx->memo.find(n);
  if (it != ctx->memo.end()) return it->second;
  std::vector<Interval> kids;
  kids.reserve(n->children.size());
  for (Node c : n->children) kids.push_back(bounds(c, ctx));
  Interval r = intersect(local_bounds(n, kids.data()), n->ubounds);
  ctx->memo.emplace(n, r);
  return r;
}

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
  for (const Term& t : p.terms) g = gcd_u(g, mag(t.coef));
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
  for (const Term& t : p.terms) n.terms.push_back({-t.coef, t.atoms});
  n.constant = c - 1 - p.constant;
  return n;
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
    Poly r2;
    for (const Term& t : r.terms) r2.terms.push_back({t.coef / gi, t.atoms});
    r2.constant = floor_div(r.constant, gi);
    return div_pos(r2, c / gi, ctx);
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
    Poly r2;
    for (const Term& t : r.terms) r2.terms.push_back({t.coef / gi, t.atoms});
    r2.constant = floor_div(r.constant, gi);
    return add(mul(intern_const(gi), mod_pos(r2, c / gi, ctx)),
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
    for (Node c : n->children) flatten(k, c, out);
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
  for (size_t i = ops.size() - 1; i-- > 0;) r = intern(k, {ops[i], r});
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
  if (uint64_t g = coef_gcd(p, 0); g > 1) {
    int64_t gi = static_cast<int64_t>(g);
    for (Term& t : p.terms) t.coef /= gi;
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
  if (uint64_t g = coef_gcd(p, 0); g > 1) {
    int64_t gi = static_cast<int64_t>(g);
    if (p.constant % gi != 0) return intern_const(is_eq ? 0 : 1);
    for (Term& t : p.terms) t.coef /= gi;
    p.constant /= gi;
  }
  if (p.terms.front().coef < 0 && !any_min_coef(p) && p.constant != INT64_MIN) {
    for (Term& t : p.terms) t.coef = -t.coef;
    p.constant = -p.constant;
  }
  Node pn = from_poly(p);
  Interval r = iv_cmp(k, bounds(pn, ctx), {0, 0});
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
  Poly p;
  try {
    p = poly_combine(to_poly(a), to_poly(b), true);
  } catch (const Overflow&) {
    if (compare(b, a) < 0) std::swap(a, b);
    return intern(k, {a, b});
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
  for (Node c : n->children) kids.push_back(simplify_rec(c, ctx, memo));
  Node r;
  try {
    r = rebuild(n, kids, &ctx);
  } catch (const Error&) {
    // A divisor the facts pin to 0, or an overflow: keep the operation as it is (eval reports
    // the error for the assignments that reach it).
    r = intern(n->kind, kids);
  }
  memo.emplace(n, r);
  return r;
}
}  // namespace

Interval Expr::bounds(const Facts& facts) const {
  BoundsCtx ctx;
  ctx.facts = &facts;
  return expr_detail::bounds(node_, &ctx);
}

Expr Expr::simplify(const Facts& facts) const {
  BoundsCtx ctx;
  ctx.facts = &facts;
  std::unordered_map<Node, Node> memo;
  return Expr(simplify_rec(node_, ctx, memo));
}

}  // namespace luminal
