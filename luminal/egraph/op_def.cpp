#include "luminal/egraph/op_def.hpp"

#include <array>

namespace luminal {

namespace {
constexpr int kNumKinds = static_cast<int>(OpKind::Output) + 1;

std::array<OpDef, kNumKinds> make_defs() {
  std::array<OpDef, kNumKinds> defs{};
  for (int i = 0; i < kNumKinds; ++i) {
    auto k = static_cast<OpKind>(i);
    defs[i].name = op_name(k);
    defs[i].kind = k;
    defs[i].is_hlir = true;
  }
  return defs;
}
}  // namespace

const OpDef* hlir_op(OpKind k) {
  static const std::array<OpDef, kNumKinds> defs = make_defs();
  return &defs[static_cast<int>(k)];
}

}  // namespace luminal
