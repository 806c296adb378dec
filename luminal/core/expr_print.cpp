// Expr: to_string(), to_c() and c_prelude().
#include <string>
#include <utility>

#include "luminal/core/expr.hpp"
#include "luminal/core/expr_node.hpp"

namespace luminal {
namespace expr_detail {
namespace {

// Precedence levels (C's order): a subexpression below the level its context needs is
// parenthesised.
enum Prec : int {
  kOr = 1,
  kAnd = 2,
  kEquality = 3,
  kRelational = 4,
  kAdditive = 5,
  kMultiplicative = 6,
  kPrimary = 7,
};

using Text = std::pair<std::string, int>;

bool is_identifier(const std::string& s) {
  if (s.empty()) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    char c = s[i];
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
              (i > 0 && c >= '0' && c <= '9');
    if (!ok) return false;
  }
  return true;
}

class Printer {
 public:
  // C mode when ctx != nullptr.
  Printer(BoundsCtx* ctx, const std::function<std::string(const std::string&)>* var_name)
      : ctx_(ctx), var_name_(var_name) {}

  std::string full(Node n) { return print(n).first; }

 private:
  bool c_mode() const { return ctx_ != nullptr; }
  const char* mul_sep() const { return c_mode() ? " * " : "*"; }

  std::string at(Node n, int min_prec) {
    Text t = print(n);
    return t.second < min_prec ? "(" + t.first + ")" : t.first;
  }

  // A non-negative magnitude, as a literal.
  std::string magnitude(uint64_t m) const {
    std::string s = std::to_string(m);
    if (c_mode() && m > static_cast<uint64_t>(INT32_MAX)) s += "LL";
    return s;
  }

  Text constant(int64_t v) const {
    if (v >= 0) return {magnitude(static_cast<uint64_t>(v)), kPrimary};
    if (c_mode() && v == INT64_MIN) return {"(-9223372036854775807LL - 1)", kPrimary};
    std::string s = "-" + std::to_string(0 - static_cast<uint64_t>(v));
    if (c_mode() && v < INT32_MIN) s += "LL";
    return {s, kAdditive};
  }

  // Sum of terms (in the given order) and a trailing constant.
  Text sum(const std::vector<Term>& terms, int64_t k) {
    std::string out;
    int count = 0, single = kPrimary;
    bool leading_minus = false;
    auto emit = [&](bool negative, const std::string& m) {
      if (count == 0) {
        if (negative) out += "-";
        leading_minus = negative;
      } else {
        out += negative ? " - " : " + ";
      }
      out += m;
      ++count;
    };
    for (const Term& t : terms) {
      uint64_t a = t.coef < 0 ? 0 - static_cast<uint64_t>(t.coef) : static_cast<uint64_t>(t.coef);
      if (a == 1 && t.atoms.size() == 1) {
        Text f = print(t.atoms[0]);
        // Parenthesise below * and, after a leading minus, anything but a primary: "-(s/4)".
        int need = (count == 0 && t.coef < 0) ? kPrimary : kMultiplicative;
        if (f.second < need) f = {"(" + f.first + ")", kPrimary};
        single = f.second;
        emit(t.coef < 0, f.first);
        continue;
      }
      std::string m;
      bool negative = t.coef < 0;
      if (a != 1) {
        if (c_mode() && t.coef == INT64_MIN) {
          m = "(-9223372036854775807LL - 1)";
          negative = false;
        } else {
          m = magnitude(a);
        }
      }
      for (Node f : t.atoms) {
        if (!m.empty()) m += mul_sep();
        m += at(f, kPrimary);
      }
      single = kMultiplicative;
      emit(negative, m);
    }
    if (k != 0 || count == 0) {
      Text c = constant(k);
      if (k < 0 && !(c_mode() && k == INT64_MIN)) {
        emit(true, c.first.substr(1));
      } else {
        emit(false, c.first);
      }
      single = c.second;
    }
    return {out, count > 1 || leading_minus ? kAdditive : single};
  }

  Text poly(const Poly& p) { return sum(p.terms, p.constant); }

  // P op 0 written as `lhs op' rhs` with every coefficient positive.
  Text comparison(Kind kind, Node n) {
    Node a = n->children[0], b = n->children[1];
    const char* op = kind == Kind::Lt   ? " < "
                     : kind == Kind::Le ? " <= "
                     : kind == Kind::Eq ? " == "
                                        : " != ";
    int prec = (kind == Kind::Eq || kind == Kind::Ne) ? kEquality : kRelational;
    Poly p = to_poly(a);
    bool split = is_const(b) && b->value == 0 && p.constant != INT64_MIN && kind != Kind::Lt;
    for (const Term& t : p.terms)
      split = split && t.coef != INT64_MIN;
    if (!split) return {at(a, kAdditive) + op + at(b, kAdditive), prec};
    Poly lhs, rhs;
    for (const Term& t : p.terms) {
      if (t.coef > 0)
        lhs.terms.push_back(t);
      else
        rhs.terms.push_back({-t.coef, t.atoms});
    }
    int64_t k = p.constant;
    if (kind == Kind::Le && k >= 1) {
      op = " < ";  // L + k <= R  <=>  L + k - 1 < R
      lhs.constant = k - 1;
    } else if (k > 0) {
      lhs.constant = k;
    } else {
      rhs.constant = -k;
    }
    return {poly(lhs).first + op + poly(rhs).first, prec};
  }

  Text logic(Kind kind, Node n) {
    std::vector<Node> ops;
    Node cur = n;
    while (cur->kind == kind) {
      ops.push_back(cur->children[0]);
      cur = cur->children[1];
    }
    ops.push_back(cur);
    const char* op = kind == Kind::And ? " && " : " || ";
    std::string out;
    for (size_t i = 0; i < ops.size(); ++i) {
      if (i > 0) out += op;
      out += c_mode() ? at(ops[i], kPrimary) + " != 0" : at(ops[i], kAnd + 1);
    }
    if (c_mode()) return {"(" + out + ")", kPrimary};
    return {out, kind == Kind::And ? kAnd : kOr};
  }

  Text div_mod(Node n) {
    Node a = n->children[0], b = n->children[1];
    bool is_div = n->kind == Kind::Div;
    if (!c_mode())
      return {at(a, kPrimary) + (is_div ? "/" : "%") + at(b, kPrimary), kMultiplicative};
    if (bounds(a, ctx_).lo >= 0 && bounds(b, ctx_).lo >= 1) {
      return {at(a, kPrimary) + (is_div ? " / " : " % ") + at(b, kPrimary), kMultiplicative};
    }
    return {std::string(is_div ? "luminal_floordiv(" : "luminal_floormod(") + full(a) + ", " +
                full(b) + ")",
            kPrimary};
  }

  Text minmax(Node n) {
    bool is_min = n->kind == Kind::Min;
    Node a = n->children[0], b = n->children[1];
    if (!c_mode())
      return {std::string(is_min ? "min(" : "max(") + full(a) + ", " + full(b) + ")", kPrimary};
    std::string sa = at(a, kAdditive), sb = at(b, kAdditive);
    return {"(" + sa + (is_min ? " < " : " > ") + sb + " ? " + sa + " : " + sb + ")", kPrimary};
  }

  Text print(Node n) {
    switch (n->kind) {
      case Kind::Const: return constant(n->value);
      case Kind::Var: {
        if (!c_mode() || var_name_ == nullptr || !*var_name_) return {n->name, kPrimary};
        std::string s = (*var_name_)(n->name);
        return {is_identifier(s) ? s : "(" + s + ")", kPrimary};
      }
      case Kind::Add:
      case Kind::Mul: return poly(to_poly(n));
      case Kind::Div:
      case Kind::Mod: return div_mod(n);
      case Kind::Min:
      case Kind::Max: return minmax(n);
      case Kind::Lt:
      case Kind::Le:
      case Kind::Eq:
      case Kind::Ne: return comparison(n->kind, n);
      case Kind::And:
      case Kind::Or: return logic(n->kind, n);
    }
    return {"?", kPrimary};
  }

  BoundsCtx* ctx_;
  const std::function<std::string(const std::string&)>* var_name_;
};

}  // namespace

std::string node_to_string(Node n) { return Printer(nullptr, nullptr).full(n); }

}  // namespace expr_detail

std::string Expr::to_string() const { return expr_detail::node_to_string(node_); }

std::string Expr::to_c(const Facts& facts,
                       const std::function<std::string(const std::string&)>& var_name) const {
  expr_detail::BoundsCtx ctx;
  ctx.facts = &facts;
  return expr_detail::Printer(&ctx, &var_name).full(node_);
}

std::string Expr::c_prelude() {
  return R"(#ifndef LUMINAL_FLOOR_HELPERS
#define LUMINAL_FLOOR_HELPERS
#ifdef __CUDACC__
#define LUMINAL_HD __device__ __host__
#else
#define LUMINAL_HD
#endif
/* Floor division and modulo (Python semantics: the remainder takes the divisor's sign). */
static inline LUMINAL_HD long long luminal_floordiv(long long a, long long b) {
  long long q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) q -= 1;
  return q;
}
static inline LUMINAL_HD long long luminal_floormod(long long a, long long b) {
  long long r = a % b;
  if (r != 0 && ((r < 0) != (b < 0))) r += b;
  return r;
}
#endif
)";
}

}  // namespace luminal
