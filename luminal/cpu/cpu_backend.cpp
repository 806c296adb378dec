#include "luminal/cpu/cpu_backend.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "luminal/core/error.hpp"
#include "luminal/cpu/cpu_op.hpp"
#include "luminal/cpu/fused.hpp"
#include "luminal/cpu/plan.hpp"
#include "luminal/cpu/thread_pool.hpp"
#include "luminal/egraph/rule_sets.hpp"

namespace luminal::cpu {

namespace {
int default_threads() {
  if (const char* v = std::getenv("LUMINAL_CPU_THREADS"); v && *v) {
    char* end = nullptr;
    long n = std::strtol(v, &end, 10);
    if (*end != '\0' || n < 1 || n > 4096) {
      throw Error("LUMINAL_CPU_THREADS='" + std::string(v) +
                  "' is not a thread count: give a number from 1 to 4096, or unset it");
    }
    return static_cast<int>(n);
  }
  return hardware_threads();
}
}  // namespace

CpuBackend::CpuBackend(int threads) : threads_(threads > 0 ? threads : default_threads()) {}

std::vector<RuleSet> CpuBackend::rulesets() const {
  std::vector<RuleSet> sets;
  for (const CpuOp* op : cpu_ops())
    if (op->rules) add_rules(sets, op->ruleset, op->rules());
  return sets;
}

bool CpuBackend::executes(const OpDef* op) const {
  return is_op(op, OpKind::Input) || is_op(op, OpKind::Output) || find_cpu_op(op) != nullptr;
}

std::unique_ptr<Plan> CpuBackend::load(const LlirGraph& g, const PlanSpec& spec) {
  return std::make_unique<CpuPlan>(g, spec, threads_);
}

std::string CpuBackend::device_key() const {
  std::string isa;
#if defined(__x86_64__)
  isa = "x86_64";
#elif defined(__aarch64__)
  isa = "aarch64";
#else
  isa = "other";
#endif
#if defined(__AVX512F__)
  isa += "+avx512f";
#endif
#if defined(__AVX2__)
  isa += "+avx2";
#endif
#if defined(__FMA__)
  isa += "+fma";
#endif
  return "cpu threads=" + std::to_string(threads_) + " isa=" + isa;
}

const OpDef* CpuBackend::op_named(std::string_view name) const {
  for (const CpuOp* op : cpu_ops())
    if (op->def->name == name) return op->def;
  return Backend::op_named(name);
}

std::shared_ptr<const Payload> CpuBackend::read_payload(std::string_view kind,
                                                        std::string_view text) const {
  if (kind == "fused_program") return FusedProgram::deserialize(text);
  return Backend::read_payload(kind, text);
}

Buffer CpuBackend::allocate(uint64_t bytes) {
  constexpr uint64_t a = CpuPlan::kAlignment;
  const uint64_t cap = (std::max<uint64_t>(bytes, 1) + a - 1) / a * a;
  void* p = std::aligned_alloc(a, cap);
  if (!p) {
    throw Error("cpu: cannot allocate " + std::to_string(bytes) +
                " bytes of host memory; lower max_memory or the dim ranges");
  }
  return Buffer{p, bytes};
}

void CpuBackend::release(Buffer b) { std::free(b.ptr); }

void CpuBackend::upload(Buffer dst, uint64_t offset, const void* src, uint64_t bytes, Queue*) {
  LUMINAL_ASSERT(offset + bytes <= dst.bytes, "cpu: upload past the end of a buffer");
  if (bytes) std::memcpy(static_cast<uint8_t*>(dst.ptr) + offset, src, bytes);
}

void CpuBackend::download(void* dst, Buffer src, uint64_t offset, uint64_t bytes, Queue*) {
  LUMINAL_ASSERT(offset + bytes <= src.bytes, "cpu: download past the end of a buffer");
  if (bytes) std::memcpy(dst, static_cast<const uint8_t*>(src.ptr) + offset, bytes);
}

void CpuBackend::copy(Buffer dst, Buffer src, uint64_t bytes, Queue*) {
  LUMINAL_ASSERT(bytes <= dst.bytes && bytes <= src.bytes, "cpu: copy past the end of a buffer");
  if (bytes && dst.ptr != src.ptr) std::memmove(dst.ptr, src.ptr, bytes);
}

Buffer CpuBackend::wrap_host(const void* data, uint64_t bytes) {
  if (reinterpret_cast<uintptr_t>(data) % 8 != 0) return {};
  return Buffer{const_cast<void*>(data), bytes};
}

}  // namespace luminal::cpu
