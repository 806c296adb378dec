// Expr: bounds(facts) by interval arithmetic.
#include <algorithm>

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
constexpr Interval kTrue{1, 1}, kFalse{0, 0}, kBool{0, 1};

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
  for (size_t i = 1; i < k; ++i)
    r = iv_mul(r, a);
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

}  // namespace

Interval cmp_bounds(Kind k, Interval a, Interval b) {
  i128 al = lo_ext(a.lo), ah = hi_ext(a.hi), bl = lo_ext(b.lo), bh = hi_ext(b.hi);
  switch (k) {
    case Kind::Lt: return ah < bl ? kTrue : (al >= bh ? kFalse : kBool);
    case Kind::Le: return ah <= bl ? kTrue : (al > bh ? kFalse : kBool);
    case Kind::Eq:
    case Kind::Ne: {
      bool always = al == ah && bl == bh && al == bl && !is_inf(al);
      bool never = ah < bl || bh < al;
      bool eq = k == Kind::Eq;
      return always ? (eq ? kTrue : kFalse) : never ? (eq ? kFalse : kTrue) : kBool;
    }
    default: return kBool;
  }
}

namespace {

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
    case Kind::Const: return {n->value, n->value};
    case Kind::Var: return kFull;
    case Kind::Add: {
      Interval r = child[0];
      for (size_t i = 1; i < kids.size(); ++i)
        r = iv_add(r, child[i]);
      return r;
    }
    case Kind::Mul: {
      Interval r{1, 1};
      for (size_t i = 0; i < kids.size();) {
        size_t j = i + 1;
        while (j < kids.size() && kids[j] == kids[i])
          ++j;
        r = iv_mul(r, iv_pow(child[i], j - i));
        i = j;
      }
      return r;
    }
    case Kind::Div: return iv_div(child[0], child[1]);
    case Kind::Mod: return iv_mod(child[0], child[1]);
    case Kind::Min: return {std::min(child[0].lo, child[1].lo), std::min(child[0].hi, child[1].hi)};
    case Kind::Max: return {std::max(child[0].lo, child[1].lo), std::max(child[0].hi, child[1].hi)};
    case Kind::Lt:
    case Kind::Le:
    case Kind::Eq:
    case Kind::Ne: return cmp_bounds(n->kind, child[0], child[1]);
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
  for (Node c : n->children)
    kids.push_back(bounds(c, ctx));
  Interval r = intersect(local_bounds(n, kids.data()), n->ubounds);
  ctx->memo.emplace(n, r);
  return r;
}
}  // namespace expr_detail

Interval Expr::bounds(const Facts& facts) const {
  expr_detail::BoundsCtx ctx;
  ctx.facts = &facts;
  return expr_detail::bounds(node_, &ctx);
}

}  // namespace luminal
