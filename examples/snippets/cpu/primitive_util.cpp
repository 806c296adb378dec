// luminal/cpu/primitive_util.hpp: typed element access with the reference's numerics: a value is
// loaded in its dtype's compute type and rounded or wrapped once when stored.
#include <cstdint>

#include "luminal/cpu/primitive_util.hpp"
#include "snippet.hpp"

using namespace luminal;
using namespace luminal::cpu;

int main() {
  uint8_t buf[2 * 2] = {};
  store_elem<DType::BF16>(buf, 1, 1.5f);
  const int64_t off = 1;
  compute_t<DType::BF16> x = load_elem<DType::BF16>(buf, off);  // float
  expect(x == 1.5f, "bf16 elements load as float");
  uint8_t out[4] = {};
  const int64_t i = 2;
  store_elem<DType::I8>(out, i, int64_t{300});  // wraps to 44
  expect(load_elem<DType::I8>(out, i) == 44, "300 wraps to 44 in i8");
}
