#pragma once
// SlotExpr: an Expr compiled for evaluation from a dense array of dim values, for hot paths that
// must not look names up (a session's execute, a backend's launch parameters). Names are resolved
// once, at construction; eval() reads the values from an array, with no allocation.
// Example: examples/snippets/core/slot_expr.cpp.
//
// Semantics are Expr::eval's (floor division and modulo, comparisons as 0/1); an overflow or a
// division by zero throws luminal::Error naming the expression. A variable missing from the slot
// list is an error at construction that names it.
#include <cstdint>
#include <string>
#include <vector>

#include "luminal/core/expr.hpp"

namespace luminal {

class SlotExpr {
 public:
  SlotExpr() = default;
  /// Compiles `e` with variable `slots[i]` read from dims[i]. Throws luminal::Error if `e` uses a
  /// variable that is not in `slots` (including `z`).
  SlotExpr(const Expr& e, const std::vector<std::string>& slots);

  int64_t eval(const int64_t* dims) const;
  /// True when the value does not depend on any slot.
  bool is_const() const { return code_.size() == 1 && code_[0].op == Expr::Kind::Const; }
  const Expr& expr() const { return expr_; }

 private:
  struct Step {
    Expr::Kind op;  // Const, Var (read from a slot), or the operation
    int64_t arg;    // constant, slot index, or operand count (Add/Mul)
  };
  void emit(const Expr& e, const std::vector<std::string>& slots, int depth);

  Expr expr_;
  std::vector<Step> code_;  // postfix
  int max_depth_ = 0;
};

}  // namespace luminal
