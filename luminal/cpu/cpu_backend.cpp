#include "luminal/cpu/cpu_backend.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "luminal/core/error.hpp"
#include "luminal/cpu/cpu_op.hpp"
#include "luminal/cpu/fused.hpp"
#include "luminal/cpu/plan.hpp"
#include "luminal/cpu/quant/isa.hpp"
#include "luminal/cpu/row.hpp"
#include "luminal/cpu/seed_work.hpp"
#include "luminal/cpu/thread_pool.hpp"

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

namespace {

double seed_byte_cost_from_env() {
  const char* v = std::getenv("LUMINAL_CPU_SEED_BYTES");
  if (v != nullptr && std::string(v) == "off") return 0;
  return 1.0 / 65536;
}

}  // namespace

CpuBackend::CpuBackend(int threads)
    : RegistryBackend(cpu_registry()),
      threads_(threads > 0 ? threads : default_threads()),
      seed_byte_cost_(seed_byte_cost_from_env()) {}

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
  return "cpu threads=" + std::to_string(threads_) + " isa=" + isa +
         " quant=" + quant::isa_name(quant::active());
}

double CpuBackend::seed_byte_cost() const { return seed_byte_cost_; }

double CpuBackend::seed_work(const EGraph& eg, ENodeId n) const {
  if (seed_byte_cost() == 0) return 0;
  const OpDef* op = eg.node(n).op;
  return op == fused_op() || op == row_op() || op->is_hlir ? region_seed_work(eg, n) : 0.0;
}

bool CpuBackend::reads_blocks(DType t) const {
  if (t == DType::BF16 || t == DType::F16) return true;  // cpu.MatmulW16
  for (DType w : kWeightBlockDTypes)
    if (w == t) return true;
  return false;
}

std::vector<KernelTime> CpuBackend::profile(Plan& plan, int parity, const int64_t* dims,
                                            int trials) {
  auto* p = dynamic_cast<CpuPlan*>(&plan);
  if (!p) throw Error("cpu: profile needs a plan loaded by the CPU backend");
  const std::vector<double> sec = p->profile(parity, dims, trials);
  const LlirGraph& g = p->llir();
  std::vector<KernelTime> out;
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    const LlirNode& n = g.nodes[i];
    if (is_op(n.op, OpKind::Input)) continue;
    if (is_op(n.op, OpKind::Output) && p->io().output_in_input[p->output_slot(i)] >= 0) continue;
    std::string shape = "[";
    const std::vector<int64_t> dims_out = eval_shape(n.attrs.shape, p->dyn());
    for (size_t d = 0; d < dims_out.size(); ++d)
      shape += (d ? ", " : "") + std::to_string(dims_out[d]);
    shape += "]";
    const bool reduces = is_op(n.op, OpKind::SumReduce) || is_op(n.op, OpKind::MaxReduce) ||
                         n.op->name == "cpu.BlasMatmul" || n.op->name == "cpu.Matmul";
    if (reduces && !n.attrs.views.empty() && n.attrs.axis >= 0 &&
        n.attrs.axis < n.attrs.views[0].rank())
      shape += " k=" + std::to_string(n.attrs.views[0].dims[n.attrs.axis].eval(p->dyn()));
    out.push_back({static_cast<int>(i), std::string(n.op->name), shape, sec[i] * 1e3});
  }
  return out;
}

std::string CpuBackend::format_profile(const std::vector<KernelTime>& times, size_t top) {
  double total = 0;
  std::vector<std::pair<std::string, std::pair<int, double>>> by_op;
  for (const KernelTime& t : times) {
    total += t.ms;
    auto it =
        std::find_if(by_op.begin(), by_op.end(), [&](const auto& e) { return e.first == t.op; });
    if (it == by_op.end()) it = by_op.insert(by_op.end(), {t.op, {0, 0.0}});
    ++it->second.first;
    it->second.second += t.ms;
  }
  std::sort(by_op.begin(), by_op.end(),
            [](const auto& a, const auto& b) { return a.second.second > b.second.second; });
  std::string out = "  op                      nodes        ms  share\n";
  char line[256];
  for (const auto& [op, v] : by_op) {
    std::snprintf(line, sizeof line, "  %-23s %5d %9.3f %5.1f%%\n", op.c_str(), v.first, v.second,
                  total > 0 ? 100.0 * v.second / total : 0.0);
    out += line;
  }
  std::snprintf(line, sizeof line, "  total %.3f ms over %zu kernels\n", total, times.size());
  out += line;
  std::vector<KernelTime> sorted = times;
  std::stable_sort(sorted.begin(), sorted.end(),
                   [](const KernelTime& a, const KernelTime& b) { return a.ms > b.ms; });
  if (top > 0 && sorted.size() > top) sorted.resize(top);
  out += "  node   op                      ms  share  shape\n";
  for (const KernelTime& t : sorted) {
    std::snprintf(line, sizeof line, "  %%%-5d %-19s %8.4f %5.1f%%  %s\n", t.node, t.op.c_str(),
                  t.ms, total > 0 ? 100.0 * t.ms / total : 0.0, t.shape.c_str());
    out += line;
  }
  return out;
}

double CpuBackend::time(Plan& plan, int parity, const int64_t* dims, int trials, double timeout_s) {
  auto* p = dynamic_cast<CpuPlan*>(&plan);
  const std::optional<std::vector<int64_t>> alt =
      p ? p->alternate_dims(dims) : std::optional<std::vector<int64_t>>();
  const std::vector<double> t =
      timed_runs(plan, parity, dims, trials, kMaxTimedRuns, kMinTimedSeconds, timeout_s,
                 alt ? alt->data() : nullptr);
  return *std::min_element(t.begin(), t.end());
}

std::string CpuBackend::profile_text(Plan& plan, const int64_t* dims) {
  return format_profile(profile(plan, 0, dims, 5), 40);
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
