#include "luminal/program/fold.hpp"

#include "luminal/egraph/extract.hpp"

namespace luminal {

const OpDef* fold_op() {
  // The fewest-kernels seeds never fold (kAvoided); random genomes and mutations may.
  static const OpDef op{.name = "Fold", .seed_cost = SearchSpace::kAvoided};
  return &op;
}

}  // namespace luminal
