// luminal/core/expr_serial.hpp: an Expr as exact text and back (the same canonical node).
#include <string>

#include "luminal/core/expr.hpp"
#include "luminal/core/expr_serial.hpp"
#include "snippet.hpp"

using luminal::Expr;

int main() {
  Expr e = Expr::var("s") * 4 + Expr::var("z");
  std::string t = luminal::write_expr(e);  // "(+ (* 4 s) z)"-like prefix form
  Expr back = luminal::read_expr(t);
  expect(back == e, "read_expr(write_expr(e)) == e");
}
