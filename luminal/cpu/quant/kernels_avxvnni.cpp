// The quantized kernels for AVX-VNNI: the VEX vpdpbusd / vpdpwssd on ymm (kernels_x86.inc).
// luminal/CMakeLists.txt gives this unit its -m flags and LUMINAL_QUANT_ISA_ENABLED; without
// them (not x86-64, or a compiler without the flags) the getter returns null.
#if defined(LUMINAL_QUANT_ISA_ENABLED)
#define LUMINAL_QUANT_DOT 2
#define LUMINAL_QUANT_NAME "avxvnni"
#define LUMINAL_QUANT_GETTER kernels_avxvnni
#define LUMINAL_QUANT_MAX_ACC 8
#include "luminal/cpu/quant/kernels_x86.inc"
#else
#include "luminal/cpu/quant/kernels.hpp"

namespace luminal::cpu::quant {
const QuantKernels* kernels_avxvnni() { return nullptr; }
}  // namespace luminal::cpu::quant
#endif
