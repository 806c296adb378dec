#pragma once
// The instruction set the quantized kernels run on, chosen at run time.
//
// detect() reads cpuid and, for the vector registers, what the OS saves (xgetbv): an ISA the CPU
// reports but the OS has not enabled is never picked, and AMX is never used. active() is the
// environment's LUMINAL_CPU_ISA (portable | avx2 | avxvnni | avx512vnni) when it is set, else the
// best the machine has (avx512vnni > avxvnni > avx2 > portable). Every ISA gives bitwise the same
// results (kernels.hpp), so the choice changes speed only.
#include <string>
#include <vector>

#include "luminal/cpu/quant/kernels.hpp"

namespace luminal::cpu::quant {

enum class QuantIsa { Portable, Avx2, AvxVnni, Avx512Vnni };

/// Every ISA, portable first.
inline constexpr QuantIsa kAllQuantIsas[] = {QuantIsa::Portable, QuantIsa::Avx2, QuantIsa::AvxVnni,
                                             QuantIsa::Avx512Vnni};

/// "portable", "avx2", "avxvnni", "avx512vnni" (the values of LUMINAL_CPU_ISA).
const char* isa_name(QuantIsa isa);
/// True when this CPU and OS support `isa` and this build has its kernels (portable: always).
bool isa_available(QuantIsa isa);
/// The ISAs available here, portable first.
std::vector<QuantIsa> available_isas();
/// The best available ISA (cpuid + xgetbv, computed once).
QuantIsa detect();
/// The ISA the kernels use: a ScopedQuantIsa's, else LUMINAL_CPU_ISA's, else detect().
/// Throws luminal::Error for an unknown LUMINAL_CPU_ISA or one this machine lacks.
QuantIsa active();
/// The kernels of `isa` (throws luminal::Error when it is not available).
const QuantKernels& kernels_for(QuantIsa isa);
/// kernels_for(active()).
const QuantKernels& active_kernels();

/// Overrides active() while it lives (tests); throws luminal::Error when `isa` is not available.
/// Not nested across threads: the override is process-wide.
class ScopedQuantIsa {
 public:
  explicit ScopedQuantIsa(QuantIsa isa);
  ~ScopedQuantIsa();
  ScopedQuantIsa(const ScopedQuantIsa&) = delete;
  ScopedQuantIsa& operator=(const ScopedQuantIsa&) = delete;

 private:
  int previous_;
};

}  // namespace luminal::cpu::quant
