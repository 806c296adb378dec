// Compile-time benchmark: the HLIR of a Llama-3-8B-shaped model (no weights) through lowering,
// e-graph saturation with the CPU backend's rules, pruning and the first extraction.
//
//   build/bench/bench_llama_hlir [layers=32]
//
// Prints per phase times, HLIR nodes, e-nodes / e-classes, and the genes of the search space for
// the full model and for a single layer (they must be equal: repeated layers share genes).
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "luminal/compiler/build_space.hpp"
#include "luminal/cpu/cpu_backend.hpp"
#include "transformer.hpp"

namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

struct Result {
  size_t hlir = 0, enodes = 0, eclasses = 0, genes = 0, llir_nodes = 0;
  double build_ms = 0, lower_ms = 0, saturate_ms = 0, prune_ms = 0, space_ms = 0, extract_ms = 0;
  std::string saturation;
};

Result run(int layers) {
  bench::TransformerConfig cfg;
  cfg.layers = layers;
  cfg.hidden = 4096;
  cfg.ffn = 14336;
  cfg.heads = 32;
  cfg.kv_heads = 8;
  cfg.vocab = 128256;
  cfg.slots = 8192;
  cfg.dtype = luminal::DType::BF16;
  Result r;
  auto t0 = Clock::now();
  luminal::Graph g;
  g.declare_dim("s", 1, 512);
  g.declare_dim("c", 1, 8192);
  bench::transformer(g, cfg);
  r.build_ms = ms_since(t0);
  r.hlir = g.nodes().size();
  luminal::cpu::CpuBackend cpu;
  luminal::BuiltSpace b = luminal::build_search_space(g, cpu, g.dim_facts());
  r.lower_ms = b.lower_s * 1e3;
  r.saturate_ms = b.saturate_s * 1e3;
  r.prune_ms = b.prune_s * 1e3;
  r.space_ms = b.space_s * 1e3;
  r.enodes = b.pruning.live_nodes;
  r.eclasses = b.pruning.live_classes;
  r.genes = b.space->num_genes();
  r.saturation = b.saturation.to_string();
  t0 = Clock::now();
  luminal::LlirGraph first = luminal::to_llir(*b.space, b.space->first_genome());
  r.extract_ms = ms_since(t0);
  r.llir_nodes = first.nodes.size();
  return r;
}

void print(const char* name, const Result& r) {
  double total = r.lower_ms + r.saturate_ms + r.prune_ms + r.space_ms + r.extract_ms;
  std::printf(
      "%s: %zu HLIR nodes -> %zu e-nodes / %zu e-classes after pruning; %zu genes; first program "
      "%zu LLIR nodes\n  graph build %.0f ms | lower %.0f ms, saturate %.0f ms, prune %.0f ms, "
      "search space %.0f ms, first extraction %.0f ms = %.0f ms\n%s",
      name, r.hlir, r.enodes, r.eclasses, r.genes, r.llir_nodes, r.build_ms, r.lower_ms,
      r.saturate_ms, r.prune_ms, r.space_ms, r.extract_ms, total, r.saturation.c_str());
}

}  // namespace

int main(int argc, char** argv) {
  int layers = argc > 1 ? std::atoi(argv[1]) : 32;
  Result one = run(1);
  print("1 layer", one);
  Result full = run(layers);
  print((std::to_string(layers) + " layers").c_str(), full);
  std::printf("genes: %zu with %d layers vs %zu with 1 layer (%s)\n", full.genes, layers, one.genes,
              full.genes == one.genes ? "shared" : "NOT shared");
  return 0;
}
