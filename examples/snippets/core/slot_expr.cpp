// luminal/core/slot_expr.hpp: an Expr compiled against a fixed list of dim slots, evaluated from
// an array of values with no lookup by name and no allocation.
#include <cstdint>
#include <string>
#include <vector>

#include "luminal/core/expr.hpp"
#include "luminal/core/slot_expr.hpp"
#include "snippet.hpp"

using luminal::Expr;

int main() {
  std::vector<std::string> slots = {"c", "s"};
  luminal::SlotExpr n(Expr::var("s") * 64 + Expr::var("c"), slots);  // names resolved once, here
  int64_t dims[] = {128, 1};                                         // c = 128, s = 1
  int64_t v = n.eval(dims);
  expect(v == 192, "s * 64 + c is 192 at c = 128, s = 1");
}
