#pragma once
// Internal: the interned node behind luminal::Expr and the helpers shared by expr*.cpp.
// Not part of the public API; include only from luminal/core/expr*.cpp and their tests.
//
// Canonical form (what every constructor returns):
//   - Atoms are Var, Div, Mod, Min, Max, Lt, Le, Eq, Ne, And, Or nodes.
//   - A monomial is an atom, or a Mul whose children are [coefficient (omitted when 1), atoms...]
//     with the atoms sorted by the structural order (repeated for powers).
//   - A polynomial is a Const, a monomial, or an Add of monomials sorted by their atom lists with
//     the constant (if nonzero) last. Like terms are combined and zero terms dropped.
//   - Min/Max/And/Or with more than two operands are right-nested chains
//     op(x1, op(x2, ... op(xn-1, xn))) of operands sorted by the structural order, constants last.
//   - Comparisons are Le(P, 0), Eq(P, 0) and Ne(P, 0) for a polynomial P (Lt/Le/Eq/Ne(a, b) with
//     b != 0 only where forming a - b would overflow).
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "luminal/core/error.hpp"
#include "luminal/core/expr.hpp"

namespace luminal {

struct ExprNode {
  Expr::Kind kind = Expr::Kind::Const;
  int64_t value = 0;                      // Const
  std::string name;                       // Var
  std::vector<const ExprNode*> children;  // canonical order
  size_t hash = 0;
  // Bounds over every assignment (no facts), computed once when the node is interned.
  // Interval endpoints INT64_MIN (as lo) and INT64_MAX (as hi) mean "unbounded".
  Interval ubounds;
};

struct ExprBuilder {
  static Expr wrap(const ExprNode* n) { return Expr(n); }
};

namespace expr_detail {

using Node = const ExprNode*;
using Kind = Expr::Kind;
__extension__ typedef __int128 i128;

// 64-bit overflow while building an expression. Derives from luminal::Error, which is what users
// see; internal callers that can fall back to a less simplified form catch it.
class Overflow : public Error {
 public:
  using Error::Error;
};
[[noreturn]] void throw_overflow(const char* op, int64_t a, int64_t b);
int64_t checked_add(int64_t a, int64_t b);
int64_t checked_sub(int64_t a, int64_t b);
int64_t checked_mul(int64_t a, int64_t b);
// Floor division / modulo; b != 0 and not (a == INT64_MIN && b == -1) for floor_div.
int64_t floor_div(int64_t a, int64_t b);
int64_t floor_mod(int64_t a, int64_t b);
// Smallest integer >= a / b for b > 0.
int64_t ceil_div_pos(int64_t a, int64_t b);

// Interning (thread-safe, never freed).
Node intern_const(int64_t v);
Node intern_var(std::string_view name);  // name must already be validated
Node intern(Kind kind, std::vector<Node> children);

// Structural order: <0, 0, >0. Deterministic across runs.
int compare(Node a, Node b);
inline bool node_less(Node a, Node b) { return compare(a, b) < 0; }
inline bool is_const(Node n) { return n->kind == Kind::Const; }
inline bool is_bool_kind(Kind k) {
  return k == Kind::Lt || k == Kind::Le || k == Kind::Eq || k == Kind::Ne || k == Kind::And ||
         k == Kind::Or;
}

// Polynomial view of a canonical node.
struct Term {
  int64_t coef = 0;
  std::vector<Node> atoms;  // sorted, non-empty
};
struct Poly {
  std::vector<Term> terms;  // sorted by atoms, nonzero coefficients, distinct atom lists
  int64_t constant = 0;
};
int compare_atoms(const std::vector<Node>& a, const std::vector<Node>& b);
Poly to_poly(Node n);
Node from_poly(const Poly& p);  // p must be normalised
void normalize(Poly& p);        // sorts, combines like terms, drops zeros
// a + b or a - b of normalised polynomials (throws Overflow).
Poly poly_combine(const Poly& a, const Poly& b, bool subtract);
Poly poly_mul(const Poly& a, const Poly& b);

Node add(Node a, Node b);
Node sub(Node a, Node b);
Node neg(Node a);
Node mul(Node a, Node b);

// Interval helpers with the "endpoint at the int64 limit = unbounded" convention.
constexpr i128 kInf = static_cast<i128>(1) << 100;
inline i128 lo_ext(int64_t lo) { return lo == INT64_MIN ? -kInf : static_cast<i128>(lo); }
inline i128 hi_ext(int64_t hi) { return hi == INT64_MAX ? kInf : static_cast<i128>(hi); }

// Bounds with facts. ctx == nullptr (or no facts) gives the cached unconditional bounds.
struct BoundsCtx {
  const Facts* facts = nullptr;
  std::unordered_map<Node, Interval> memo;
};
bool has_facts(const BoundsCtx* ctx);
Interval bounds(Node n, BoundsCtx* ctx);
// Range of `a op b` (op a comparison kind) for a, b in the given ranges: {0,0}, {1,1} or {0,1}.
Interval cmp_bounds(Kind op, Interval a, Interval b);
// Bounds of n from its children's bounds (not used for Const/Var).
Interval local_bounds(Node n, const Interval* child);

// Constructors of the non-polynomial kinds. ctx supplies facts for simplify(); nullptr for plain
// construction (then only rules valid for every assignment apply).
Node make_div(Node a, Node b, BoundsCtx* ctx);
Node make_mod(Node a, Node b, BoundsCtx* ctx);
Node make_minmax(Kind k, Node a, Node b, BoundsCtx* ctx);
Node make_lt(Node a, Node b, BoundsCtx* ctx);
Node make_le(Node a, Node b, BoundsCtx* ctx);
Node make_eq(Kind k, Node a, Node b, BoundsCtx* ctx);  // k is Eq or Ne
Node make_logic(Kind k, Node a, Node b);               // k is And or Or
// Re-canonicalises `orig` with its children replaced by `kids` (same count).
Node rebuild(Node orig, const std::vector<Node>& kids, BoundsCtx* ctx);

std::string node_to_string(Node n);

}  // namespace expr_detail
}  // namespace luminal
