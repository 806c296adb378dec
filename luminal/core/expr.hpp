#pragma once
// Symbolic integer expressions for shapes, strides and index maps.
//
// An Expr is an immutable, interned node. Construction always returns the canonical form, so
// equality is pointer equality and values that differ only by commutativity, associativity,
// constant folding or like-term collection compare equal (s * 8 == 8 * s; (s * 4 + 3) / 4 == s,
// floor division pulling out multiples of the divisor).
// Example: examples/snippets/core/expr.cpp.
//
// Semantics: 64-bit signed integers; `/` is floor division and `%` floor modulo (Python's, the
// result of % takes the divisor's sign); comparisons and logical and/or give 0 or 1. `z` is the
// reserved index variable used by stride expressions (see shape.hpp).
//
// Interval facts (`s in [1, 512]`) are not part of an Expr; they are passed to simplify(),
// bounds() and to_c(), which may use them to drop min/max/div/mod/comparisons whose outcome the
// ranges decide: `min(s, 1024).simplify({{"s", {1, 512}}}) == s`.
//
// The intern table is process-wide, thread-safe and never cleared, so an Expr stays valid for the
// life of the process.
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace luminal {

/// Values of named dynamic dimensions (and of `z` where an evaluation needs it).
using DynMap = std::map<std::string, int64_t, std::less<>>;

/// An inclusive integer range [lo, hi].
struct Interval {
  int64_t lo = INT64_MIN;
  int64_t hi = INT64_MAX;
  bool contains(int64_t v) const { return lo <= v && v <= hi; }
  bool operator==(const Interval&) const = default;
};

/// Known ranges of variables. A variable not listed is unbounded.
using Facts = std::map<std::string, Interval, std::less<>>;

struct ExprNode;  // defined in expr_node.hpp (internal)

/// Integer types other than int and int64_t (and bool) that convert implicitly to an Expr.
template <typename T>
concept ExprOtherInteger = std::is_integral_v<T> && !std::is_same_v<T, bool> &&
                           !std::is_same_v<T, int> && !std::is_same_v<T, int64_t>;

class Expr {
 public:
  enum class Kind : uint8_t {
    Const,  // value
    Var,    // name
    Add,    // n-ary sum, >= 2 terms, at most one constant term
    Mul,    // n-ary product, >= 2 factors, at most one constant factor; never contains an Add
    Div,    // floor division, 2 children
    Mod,    // floor modulo, 2 children
    Min,    // 2 children
    Max,    // 2 children
    Lt,     // a < b as 0/1, 2 children
    Le,     // a <= b as 0/1
    Eq,     // a == b as 0/1
    Ne,     // a != b as 0/1
    And,    // logical and of two 0/1-valued children (nonzero is true)
    Or,     // logical or
  };

  /// The constant 0.
  Expr();
  /// A constant (implicit, so `s * 4` and `Expr(4)` both work).
  Expr(int64_t value);                                    // NOLINT(google-explicit-constructor)
  Expr(int value) : Expr(static_cast<int64_t>(value)) {}  // NOLINT
  /// Any other integer type (long long, size_t, unsigned, ...), so `s * 3LL` and
  /// `s * v.size()` are not ambiguous. Throws luminal::Error for an unsigned value above
  /// INT64_MAX.
  template <ExprOtherInteger T>
  Expr(T value)  // NOLINT(google-explicit-constructor)
      : Expr(std::is_signed_v<T> ? static_cast<int64_t>(value)
                                 : from_unsigned(static_cast<unsigned long long>(value))) {}
  /// A named variable. Throws luminal::Error for an empty name or one that is not an identifier
  /// ([A-Za-z_][A-Za-z0-9_]*).
  static Expr var(std::string_view name);
  /// The reserved index variable `z`.
  static Expr z();

  Kind kind() const;
  bool is_const() const { return kind() == Kind::Const; }
  bool is_var() const { return kind() == Kind::Var; }
  /// The value of a constant; throws if not a constant.
  int64_t as_const() const;
  /// The name of a variable; throws if not a variable.
  const std::string& var_name() const;
  /// Children in canonical order (empty for Const and Var).
  std::vector<Expr> children() const;

  /// Every variable the expression mentions, sorted, without duplicates.
  std::vector<std::string> vars() const;
  bool has_var(std::string_view name) const;

  /// Replaces a variable by an expression and re-canonicalises.
  Expr substitute(std::string_view name, const Expr& with) const;
  /// Replaces several variables at once (simultaneously, not one after another).
  Expr substitute(const std::map<std::string, Expr, std::less<>>& with) const;

  /// Evaluates with every variable taken from `dyn`. Throws luminal::Error naming a missing
  /// variable, on division or modulo by zero, and on 64-bit overflow.
  int64_t eval(const DynMap& dyn) const;
  /// As eval(), with `z` bound to `z_value` in addition to `dyn`.
  int64_t eval(const DynMap& dyn, int64_t z_value) const;
  /// As eval(), but returns nothing instead of throwing for a missing variable.
  std::optional<int64_t> try_eval(const DynMap& dyn) const;

  /// Range of values over all assignments consistent with `facts` (conservative).
  Interval bounds(const Facts& facts = {}) const;
  /// Rewrites min/max/div/mod/comparisons that the facts decide.
  Expr simplify(const Facts& facts) const;

  /// If the expression is `a * v + b` with `a`, `b` free of variable `v`, returns {a, b}.
  std::optional<std::pair<Expr, Expr>> as_linear(std::string_view v) const;

  /// Human-readable form, e.g. "4096*s + z" or "min(s, 1024)".
  std::string to_string() const;
  /// A C/CUDA expression of type long long. Variables print as `var_name(name)` (default: the
  /// name itself). Floor division/modulo print as `/`, `%` where `facts` prove the dividend is
  /// non-negative and the divisor positive, else as luminal_floordiv(a, b) / luminal_floormod(a, b)
  /// (defined by c_prelude()).
  std::string to_c(const Facts& facts = {},
                   const std::function<std::string(const std::string&)>& var_name = {}) const;
  /// C definitions of the helper functions to_c() may reference.
  static std::string c_prelude();

  bool operator==(const Expr& o) const { return node_ == o.node_; }
  bool operator!=(const Expr& o) const { return node_ != o.node_; }
  /// A total structural order (deterministic across runs; not numeric order).
  bool operator<(const Expr& o) const;
  size_t hash() const;
  const ExprNode* node() const { return node_; }

  friend Expr operator+(const Expr& a, const Expr& b);
  friend Expr operator-(const Expr& a, const Expr& b);
  friend Expr operator-(const Expr& a);
  friend Expr operator*(const Expr& a, const Expr& b);
  friend Expr operator/(const Expr& a, const Expr& b);  // floor division
  friend Expr operator%(const Expr& a, const Expr& b);  // floor modulo
  Expr& operator+=(const Expr& b) { return *this = *this + b; }
  Expr& operator-=(const Expr& b) { return *this = *this - b; }
  Expr& operator*=(const Expr& b) { return *this = *this * b; }

 private:
  explicit Expr(const ExprNode* n) : node_(n) {}
  // Throws if v > INT64_MAX.
  static int64_t from_unsigned(unsigned long long v);
  friend struct ExprBuilder;  // expr.cpp
  const ExprNode* node_;
};

Expr ceil_div(const Expr& a, const Expr& b);
Expr min(const Expr& a, const Expr& b);
Expr max(const Expr& a, const Expr& b);
Expr lt(const Expr& a, const Expr& b);
Expr le(const Expr& a, const Expr& b);
Expr gt(const Expr& a, const Expr& b);
Expr ge(const Expr& a, const Expr& b);
Expr eq(const Expr& a, const Expr& b);
Expr ne(const Expr& a, const Expr& b);
Expr logical_and(const Expr& a, const Expr& b);
Expr logical_or(const Expr& a, const Expr& b);

std::ostream& operator<<(std::ostream& os, const Expr& e);

}  // namespace luminal

template <>
struct std::hash<luminal::Expr> {
  size_t operator()(const luminal::Expr& e) const { return e.hash(); }
};
