// luminal/core/expr.hpp: an Expr is canonical, so values that differ only by commutativity,
// associativity, folding or like terms are the same node; interval facts go to simplify().
#include "luminal/core/expr.hpp"
#include "snippet.hpp"

using luminal::Expr;

int main() {
  Expr s = Expr::var("s");
  expect(s * 8 == 8 * s, "s * 8 == 8 * s");
  expect((s + 1) * 2 == 2 * s + 2, "(s + 1) * 2 == 2 * s + 2");
  expect((s * 4 + 3) / 4 == s, "floor division pulls out multiples of the divisor");
  expect(luminal::min(s, 1024).simplify({{"s", {1, 512}}}) == s, "min(s, 1024) is s for s <= 512");
  expect((s * 4 + 3).eval({{"s", 2}}) == 11, "eval with s = 2");
}
