#pragma once
// The index of a weight block type in QuantKernels::dot and of an activation format in
// QuantKernels::quantize (kernels.hpp cannot see luminal::DType).
#include <string>

#include "luminal/core/dtype.hpp"
#include "luminal/core/error.hpp"
#include "luminal/cpu/quant/kernels.hpp"

namespace luminal::cpu::quant {

/// Q4_0 .. Q6_K (asserts on any other dtype).
inline WeightIndex weight_index(DType t) {
  switch (t) {
    case DType::Q4_0: return kQ4_0;
    case DType::Q4_1: return kQ4_1;
    case DType::Q5_0: return kQ5_0;
    case DType::Q5_1: return kQ5_1;
    case DType::Q8_0: return kQ8_0;
    case DType::Q4_K: return kQ4_K;
    case DType::Q5_K: return kQ5_K;
    case DType::Q6_K: return kQ6_K;
    default:
      LUMINAL_ASSERT(false, "weight_index: " + std::string(name(t)) +
                                " has no quantized dot kernel (Q4_0 .. Q6_K do)");
      return kQ4_0;
  }
}

/// Q8_0, Q8_1 or Q8_K (asserts on any other dtype).
inline ActIndex act_index(DType t) {
  switch (t) {
    case DType::Q8_0: return kA8_0;
    case DType::Q8_1: return kA8_1;
    case DType::Q8_K: return kA8_K;
    default:
      LUMINAL_ASSERT(false, "act_index: " + std::string(name(t)) +
                                " is not an activation format (Q8_0, Q8_1, Q8_K)");
      return kA8_0;
  }
}

}  // namespace luminal::cpu::quant
