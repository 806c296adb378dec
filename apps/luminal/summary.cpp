// The lines `run` and `bench` print about a loaded model's weights, the kernels reading them and
// its memory:
//   weights         92.1 MiB resident: q4_1 63.3 MiB (210), q8_0 28.7 MiB (1), f32 0.1 MiB (61)
//   weight kernels  q4_1 x q8_1 GEMV (210), q8_0 x q8_1 ... on avx512vnni (CUDA: "; prefill
//                   q4_1 x q8_1 GEMM (210)" where the prefill program reads them otherwise)
//   session         122.1 MiB: weights 92.1 MiB, KV cache 11.2 MiB, arena 7.3 MiB, other ...
#include <algorithm>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "apps/luminal/commands.hpp"
#include "luminal/cpu/quant/isa.hpp"
#include "luminal/models/causal_lm.hpp"
#include "luminal/models/synthetic.hpp"
#include "luminal/runtime/session.hpp"

namespace luminal::cli {

namespace {

std::string mib(uint64_t b) {
  std::ostringstream s;
  s.setf(std::ios::fixed);
  s.precision(1);
  s << static_cast<double>(b) / (1 << 20) << " MiB";
  return s.str();
}

}  // namespace

std::string weights_line(const models::CausalLM& lm) {
  const Graph& g = lm.decoder().graph;
  std::map<std::string, std::pair<uint64_t, int>> by_type;  // bytes, tensors
  uint64_t total = 0;
  for (NodeId id : g.inputs()) {
    const Node& n = g.node(id);
    if (!models::is_weight(n.label)) continue;
    const uint64_t b = static_cast<uint64_t>(storage_bytes(n.dtype, n.shape).as_const());
    auto& e = by_type[std::string(name(n.dtype))];
    e.first += b;
    e.second += 1;
    total += b;
  }
  std::string out = mib(total) + " resident:";
  bool first = true;
  for (const auto& [t, e] : by_type) {
    out += (first ? " " : ", ") + t + " " + mib(e.first) + " (" + std::to_string(e.second) + ")";
    first = false;
  }
  return out;
}

namespace {

/// What reads the weights in one program: "<weight> x <activation> GEMV" per quantized or 16-bit
/// product (GEMM for cuda.QGemmQ8, the tensor-core prefill form), quantized gathers, per-step
/// dequantisations, by count.
std::map<std::string, int> weight_kernels(const LlirGraph& p) {
  std::map<std::string, int> count;
  for (const LlirNode& n : p.nodes) {
    const std::string_view op = n.op->name;
    const bool reads_weight = n.input_dtypes.size() >= 2 &&
                              (is_block(n.input_dtypes[1]) || n.input_dtypes[1] == DType::BF16 ||
                               n.input_dtypes[1] == DType::F16);
    if (reads_weight && (op == "cpu.QMatmul" || op == "cpu.MatmulW16" ||
                         op.starts_with("cuda.QGemv") || op.starts_with("cuda.QGemm")))
      ++count[std::string(name(n.input_dtypes[1])) + " x " + std::string(name(n.input_dtypes[0])) +
              (op.starts_with("cuda.QGemm") ? " GEMM" : " GEMV")];
    else if (op == "cpu.QGather" || op == "cuda.QGather")
      ++count["quantized gather"];
    else if (op == "Dequantize")
      ++count["dequantize"];
  }
  return count;
}

std::string joined(const std::map<std::string, int>& count) {
  std::string out;
  for (const auto& [k, c] : count)
    out += (out.empty() ? "" : ", ") + k + " (" + std::to_string(c) + ")";
  return out;
}

}  // namespace

std::string kernels_line(models::CausalLM& lm, const Backend& backend) {
  // The decode program (one token) and the prefill program (the longest step) say which ops
  // read the weights.
  const std::map<std::string, int> decode = weight_kernels(lm.session().llir({{"s", 1}, {"c", 1}}));
  if (decode.empty()) return "f32 (no block-quantized or 16-bit weights read as stored)";
  std::string out = joined(decode);
  const int64_t max_step = lm.decoder().shape.max_step;
  if (max_step > 1) {
    const std::map<std::string, int> prefill =
        weight_kernels(lm.session().llir({{"s", max_step}, {"c", max_step}}));
    if (prefill != decode) out += "; prefill " + (prefill.empty() ? "f32" : joined(prefill));
  }
  if (backend.name() == "cpu")
    out += " on " + std::string(cpu::quant::isa_name(cpu::quant::active()));
  return out;
}

}  // namespace luminal::cli

namespace luminal::cli {

SessionMemory session_memory(models::CausalLM& lm) {
  Session& s = lm.session();
  SessionMemory m;
  m.total = s.memory_bytes();
  const Graph& g = lm.decoder().graph;
  for (NodeId id : g.inputs()) {
    const Node& n = g.node(id);
    const Expr b = storage_bytes(n.dtype, n.shape);
    if (!b.is_const()) continue;  // the ids: [s]
    if (models::is_weight(n.label))
      m.weights += static_cast<uint64_t>(b.as_const());
    else if (n.label.ends_with("_cache"))
      m.kv_cache += static_cast<uint64_t>(b.as_const());
  }
  // The buckets: decode (s = 1) and prefill (s up to max_step); they share one arena.
  const int64_t max_step = lm.decoder().shape.max_step;
  for (int64_t step : {int64_t{1}, max_step}) {
    const Plan& p = s.plan({{"s", step}, {"c", step}});
    m.arena = std::max(m.arena, p.arena_bytes());
    m.workspaces += p.workspace_bytes();
    if (max_step == 1) break;
  }
  return m;
}

std::string memory_line(const SessionMemory& m) {
  const uint64_t known = m.weights + m.kv_cache + m.arena + m.workspaces;
  std::string out = mib(m.total) + ": weights " + mib(m.weights) + ", KV cache " + mib(m.kv_cache) +
                    ", arena " + mib(m.arena);
  if (m.workspaces) out += ", workspaces " + mib(m.workspaces);
  return out + ", other buffers " + mib(m.total > known ? m.total - known : 0);
}

uint64_t peak_rss_bytes() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::stoull(line.substr(6)) * 1024;
  return 0;
}

}  // namespace luminal::cli
