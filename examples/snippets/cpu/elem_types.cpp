// luminal/cpu/elem_types.hpp: value-level numerics for kernels that compute several ops per
// element: round_to<T> is what storing and reloading a value as T gives.
#include <cstdint>

#include "luminal/cpu/elem_types.hpp"
#include "snippet.hpp"

using namespace luminal;
using namespace luminal::cpu;

int main() {
  const float x = 1.0f / 3.0f, y = 3.0f;
  float p = num::round_to<DType::BF16>(x * y);     // the Mul as the reference stores it
  int64_t w = num::convert_to<DType::I8>(300.5f);  // Cast f32 -> i8: 44
  expect(p == 1.0f, "1/3 * 3 in bf16 is 1");
  expect(w == 44, "300.5 truncates to 300 and wraps to 44");
}
