// The quantized kernels for AVX-512 VNNI with VL: vpdpbusd / vpdpwssd on ymm (32 ymm registers)
// (kernels_x86.inc). luminal/CMakeLists.txt gives this unit its -m flags and
// LUMINAL_QUANT_ISA_ENABLED; without them (not x86-64, or a compiler without the flags) the getter
// returns null.
#if defined(LUMINAL_QUANT_ISA_ENABLED)
#define LUMINAL_QUANT_DOT 1
#define LUMINAL_QUANT_NAME "avx512vnni"
#define LUMINAL_QUANT_GETTER kernels_avx512vnni
#define LUMINAL_QUANT_MAX_ACC 16
#include "luminal/cpu/quant/kernels_x86.inc"
#else
#include "luminal/cpu/quant/kernels.hpp"

namespace luminal::cpu::quant {
const QuantKernels* kernels_avx512vnni() { return nullptr; }
}  // namespace luminal::cpu::quant
#endif
