// Run-time choice of the quantized kernels' instruction set (isa.hpp).
#include "luminal/cpu/quant/isa.hpp"

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "luminal/core/error.hpp"

#if defined(__x86_64__) || defined(_M_X64)
#include <cpuid.h>
#define LUMINAL_QUANT_X86 1
#endif

namespace luminal::cpu::quant {

namespace {

struct CpuFeatures {
  bool avx2 = false, avxvnni = false, avx512vnni = false;
};

#ifdef LUMINAL_QUANT_X86
uint64_t xgetbv0() {
  uint32_t lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (static_cast<uint64_t>(hi) << 32) | lo;
}

bool bit(unsigned v, int i) { return ((v >> i) & 1u) != 0; }

CpuFeatures probe() {
  CpuFeatures f;
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return f;
  const bool osxsave = bit(c, 27), avx = bit(c, 28), fma = bit(c, 12), f16c = bit(c, 29);
  if (!osxsave) return f;
  const uint64_t xcr0 = xgetbv0();
  const bool ymm_saved = (xcr0 & 0x6) == 0x6;    // SSE and AVX state
  const bool zmm_saved = (xcr0 & 0xE6) == 0xE6;  // and opmask, ZMM0-15 upper, ZMM16-31
  if (__get_cpuid_max(0, nullptr) < 7) return f;
  unsigned b7 = 0, c7 = 0, max_sub = 0;
  __cpuid_count(7, 0, max_sub, b7, c7, d);
  f.avx2 = avx && fma && f16c && ymm_saved && bit(b7, 5);
  const bool avx512 = bit(b7, 16) && bit(b7, 30) && bit(b7, 31);  // F, BW, VL
  f.avx512vnni = f.avx2 && zmm_saved && avx512 && bit(c7, 11);
  if (max_sub >= 1) {
    unsigned a71 = 0;
    __cpuid_count(7, 1, a71, b, c, d);
    f.avxvnni = f.avx2 && bit(a71, 4);
  }
  return f;
}
#else
CpuFeatures probe() { return {}; }
#endif

const CpuFeatures& features() {
  static const CpuFeatures f = probe();
  return f;
}

const QuantKernels* compiled(QuantIsa isa) {
  switch (isa) {
    case QuantIsa::Portable: return kernels_portable();
    case QuantIsa::Avx2: return kernels_avx2();
    case QuantIsa::AvxVnni: return kernels_avxvnni();
    case QuantIsa::Avx512Vnni: return kernels_avx512vnni();
  }
  return nullptr;
}

bool cpu_has(QuantIsa isa) {
  switch (isa) {
    case QuantIsa::Portable: return true;
    case QuantIsa::Avx2: return features().avx2;
    case QuantIsa::AvxVnni: return features().avxvnni;
    case QuantIsa::Avx512Vnni: return features().avx512vnni;
  }
  return false;
}

std::string available_list() {
  std::string s;
  for (QuantIsa i : available_isas())
    s += (s.empty() ? "" : ", ") + std::string(isa_name(i));
  return s;
}

// Why `isa` cannot run here (empty when it can).
std::string unavailable_reason(QuantIsa isa) {
  if (!cpu_has(isa)) return std::string("this CPU has ") + available_list();
  if (compiled(isa) == nullptr)
    return std::string("this build has no ") + isa_name(isa) +
           " kernels (the compiler lacks its flags); available: " + available_list();
  return {};
}

constexpr int kNoOverride = -1;
std::atomic<int> g_override{kNoOverride};

}  // namespace

const char* isa_name(QuantIsa isa) {
  switch (isa) {
    case QuantIsa::Portable: return "portable";
    case QuantIsa::Avx2: return "avx2";
    case QuantIsa::AvxVnni: return "avxvnni";
    case QuantIsa::Avx512Vnni: return "avx512vnni";
  }
  return "?";
}

bool isa_available(QuantIsa isa) { return cpu_has(isa) && compiled(isa) != nullptr; }

std::vector<QuantIsa> available_isas() {
  std::vector<QuantIsa> v;
  for (QuantIsa i : kAllQuantIsas)
    if (isa_available(i)) v.push_back(i);
  return v;
}

QuantIsa detect() {
  static const QuantIsa best = [] {
    for (QuantIsa i : {QuantIsa::Avx512Vnni, QuantIsa::AvxVnni, QuantIsa::Avx2})
      if (isa_available(i)) return i;
    return QuantIsa::Portable;
  }();
  return best;
}

QuantIsa active() {
  if (const int o = g_override.load(); o != kNoOverride) return static_cast<QuantIsa>(o);
  const char* env = std::getenv("LUMINAL_CPU_ISA");
  if (env == nullptr || *env == '\0') return detect();
  const std::string_view v(env);
  for (QuantIsa i : kAllQuantIsas) {
    if (v != isa_name(i)) continue;
    if (const std::string why = unavailable_reason(i); !why.empty())
      throw Error("LUMINAL_CPU_ISA=" + std::string(v) + ": " + why);
    return i;
  }
  throw Error("LUMINAL_CPU_ISA=" + std::string(v) +
              ": not one of portable, avx2, avxvnni, avx512vnni");
}

const QuantKernels& kernels_for(QuantIsa isa) {
  if (const std::string why = unavailable_reason(isa); !why.empty())
    throw Error(std::string("quantized kernels for ") + isa_name(isa) + ": " + why);
  return *compiled(isa);
}

const QuantKernels& active_kernels() { return kernels_for(active()); }

ScopedQuantIsa::ScopedQuantIsa(QuantIsa isa) : previous_(g_override.load()) {
  if (const std::string why = unavailable_reason(isa); !why.empty())
    throw Error(std::string("ScopedQuantIsa(") + isa_name(isa) + "): " + why);
  g_override.store(static_cast<int>(isa));
}

ScopedQuantIsa::~ScopedQuantIsa() { g_override.store(previous_); }

}  // namespace luminal::cpu::quant
