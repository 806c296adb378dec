// Compile-time benchmark: the HLIR of a Llama-3-8B-shaped model (no weights) through lowering,
// e-graph saturation with the CPU backend's rules, pruning and the first extraction.
//
//   build/bench/bench_llama_hlir [layers=32]
//
// The graph is luminal::models' Llama (build_decoder). Prints per phase times, HLIR nodes, e-nodes
// / e-classes, and the genes of the search space for 1, 2 and all layers (2 and all must be equal:
// repeated layers share genes).
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "luminal/compiler/build_space.hpp"
#include "luminal/cpu/cpu_backend.hpp"
#include "luminal/models/decoder.hpp"
#include "luminal/models/synthetic.hpp"

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
  Result r;
  auto t0 = Clock::now();
  const auto cfg = luminal::models::llama_config({.layers = layers,
                                                  .hidden = 4096,
                                                  .ffn = 14336,
                                                  .heads = 32,
                                                  .kv_heads = 8,
                                                  .vocab = 128256,
                                                  .rope_theta = 500000.0});
  const luminal::Graph g = luminal::models::build_decoder(
                               cfg, {.slots = 8192, .max_step = 512, .dtype = luminal::DType::BF16})
                               .graph;
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
  Result two = run(2);
  Result full = run(layers);
  print((std::to_string(layers) + " layers").c_str(), full);
  // The first layer reads the embedding (a gather), the others a residual sum: they differ by a
  // few genes, and every later layer shares the second one's.
  std::printf("genes: %zu with 1 layer, %zu with 2, %zu with %d (%s)\n", one.genes, two.genes,
              full.genes, layers, full.genes == two.genes ? "shared" : "NOT shared");
  return 0;
}
