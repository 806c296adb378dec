// distinct_over: a proof that an index expression never takes the same value twice.
#include "luminal/core/expr_distinct.hpp"

#include <algorithm>
#include <optional>
#include <vector>

#include "luminal/core/error.hpp"

namespace luminal {

namespace {

// One place of v in a mixed radix, scaled: coef * ((v / div) % mod), or coef * (v / div) when
// the place has no modulo (the top one).
struct Place {
  Expr coef, div;
  std::optional<Expr> mod;
};

bool is_v(const Expr& e, std::string_view v) { return e.is_var() && e.var_name() == v; }

// v, v / d, v % m or (v / d) % m with d and m free of v.
std::optional<Place> parse_digit(const Expr& e, std::string_view v) {
  if (is_v(e, v)) return Place{1, 1, std::nullopt};
  const std::vector<Expr> k = e.children();
  if (e.kind() == Expr::Kind::Div && is_v(k[0], v) && !k[1].has_var(v))
    return Place{1, k[1], std::nullopt};
  if (e.kind() != Expr::Kind::Mod || k[1].has_var(v)) return std::nullopt;
  if (is_v(k[0], v)) return Place{1, 1, k[1]};
  if (k[0].kind() != Expr::Kind::Div) return std::nullopt;
  std::optional<Place> inner = parse_digit(k[0], v);
  if (!inner || inner->mod) return std::nullopt;
  return Place{1, inner->div, k[1]};
}

// A term of the sum: a digit times factors free of v.
std::optional<Place> parse_term(const Expr& t, std::string_view v) {
  if (t.kind() != Expr::Kind::Mul) return parse_digit(t, v);
  Expr coef = 1;
  std::optional<Place> digit;
  for (const Expr& f : t.children()) {
    if (!f.has_var(v)) {
      coef = coef * f;
      continue;
    }
    if (digit) return std::nullopt;  // v in two factors
    digit = parse_digit(f, v);
    if (!digit) return std::nullopt;
  }
  if (!digit) return std::nullopt;
  digit->coef = coef;
  return digit;
}

// Whether `len` is a product with dim `name` as a factor: at name = 0 there are no positions.
bool factor_of(const Expr& len, const std::string& name) {
  if (len.is_var()) return len.var_name() == name;
  if (len.kind() != Expr::Kind::Mul) return false;
  for (const Expr& f : len.children())
    if (f.is_var() && f.var_name() == name) return true;
  return false;
}

class Prover {
 public:
  // Dims range over [0, 2^40], or [1, 2^40] where 0 leaves no positions to prove anything of.
  Prover(const std::vector<Expr>& exprs, std::string_view v, const Expr& len) {
    for (const Expr& e : exprs)
      for (const std::string& name : e.vars())
        if (name != v) facts_[name] = Interval{factor_of(len, name) ? 1 : 0, int64_t{1} << 40};
  }
  // x >= 0 for every value of the dims.
  bool nonneg(const Expr& x) const { return x.bounds(facts_).lo >= 0; }

 private:
  Facts facts_;
};

bool strided(const Expr& e, std::string_view v, const Expr& len) {
  std::vector<Place> places;
  const std::vector<Expr> terms = e.kind() == Expr::Kind::Add ? e.children() : std::vector<Expr>{e};
  for (const Expr& t : terms) {
    if (!t.has_var(v)) continue;  // an offset
    std::optional<Place> p = parse_term(t, v);
    if (!p) return false;
    // The same digit in several terms (a symbolic coefficient spread over a sum): one place.
    auto same = std::find_if(places.begin(), places.end(), [&](const Place& q) {
      return q.div == p->div && q.mod.has_value() == p->mod.has_value() &&
             (!q.mod || *q.mod == *p->mod);
    });
    if (same != places.end())
      same->coef = same->coef + p->coef;
    else
      places.push_back(*p);
  }
  if (places.empty()) return false;  // constant: one value at every position

  std::vector<Expr> all{len};
  for (const Place& p : places) {
    all.push_back(p.coef);
    all.push_back(p.div);
    if (p.mod) all.push_back(*p.mod);
  }
  const Prover prove(all, v, len);

  // The places in radix order: each divisor the product of the places below, from 1. Then v is
  // the sum of div_i * digit_i, so the digits determine v.
  std::vector<Place> chain;
  Expr place = 1;
  while (chain.size() < places.size()) {
    auto it =
        std::find_if(places.begin(), places.end(), [&](const Place& p) { return p.div == place; });
    if (it == places.end()) return false;  // a gap: digits that do not cover v
    if (std::count_if(places.begin(), places.end(),
                      [&](const Place& p) { return p.div == place; }) != 1)
      return false;  // the same digit twice
    chain.push_back(*it);
    if (!it->mod) {
      if (chain.size() != places.size()) return false;  // a place above the unbounded one
      break;
    }
    if (!prove.nonneg(*it->mod - 1)) return false;  // a modulo that may be 0
    place = place * *it->mod;
  }
  // Positions past the top place would wrap around.
  if (chain.back().mod && !prove.nonneg(place - len)) return false;

  // Each digit's count of values (the top one: as many as len allows).
  std::vector<Expr> range;
  for (const Place& p : chain)
    range.push_back(p.mod ? *p.mod : ceil_div(len, p.div));

  // The coefficients, smallest first (numerically when all are constants, else in radix order):
  // each must exceed the largest sum the smaller places reach, so the digits are recovered from
  // the value one place at a time, from the top.
  std::vector<size_t> order(chain.size());
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  const bool constant =
      std::all_of(chain.begin(), chain.end(), [](const Place& p) { return p.coef.is_const(); });
  if (constant) {
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
      return chain[a].coef.as_const() < chain[b].coef.as_const();
    });
  }
  Expr reach = 0;  // the largest value the places so far add up to
  for (size_t i : order) {
    if (prove.nonneg(1 - range[i])) continue;  // a digit that is always 0
    if (!prove.nonneg(chain[i].coef - reach - 1)) return false;
    reach = reach + chain[i].coef * (range[i] - 1);
  }
  return true;
}

}  // namespace

bool distinct_over(const Expr& e, std::string_view v, const Expr& len) {
  if (len.is_const() && len.as_const() <= 1) return true;
  try {
    if (const auto lin = e.as_linear(v); lin && lin->first.is_const())
      return lin->first.as_const() != 0;
    return strided(e, v, len);
  } catch (const Error&) {
    return false;  // an overflow on the way: not proven
  }
}

}  // namespace luminal
