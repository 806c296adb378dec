// luminal/cpu/strided.hpp: a View evaluated at dyn values: offsets by flat index, at random or in
// sequence.
#include <cstdint>
#include <vector>

#include "luminal/core/shape.hpp"
#include "luminal/cpu/strided.hpp"
#include "snippet.hpp"

using namespace luminal;
using namespace luminal::cpu;

int main() {
  // A [3, s] buffer read transposed: the view [s, 3].
  View view = View::contiguous({3, Expr::var("s")}).permute({1, 0});
  const DynMap dyn{{"s", 8}};
  std::vector<float> in(24), out(24);
  for (int i = 0; i < 24; ++i)
    in[i] = static_cast<float>(i);

  StridedIndex idx(view, dyn);
  int64_t off = idx.offset_of_flat(17);  // random access: element (5, 2) is at 2 * 8 + 5
  expect(off == 21, "offset of flat index 17");
  const int64_t begin = 0, end = 24;
  idx.for_range(begin, end, [&](int64_t i, int64_t off) { out[i] = in[off]; });  // sequential
  expect(out[1] == 8 && out[3] == 1, "the transposed read");
}
