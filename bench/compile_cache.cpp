// Cold and warm compile of a 32-layer Llama-shaped graph on the CPU backend: the search, then a
// second session that loads the winners from the compile cache.
//
//   build/bench/bench_compile_cache [layers=32] [search_graph_limit=10]
//
// 32 layers, hidden 512, FFN 1536, 8/4 heads, vocabulary 4096, f32, KV cache of 512 rows;
// buckets s = 1 and s in [2, 128]. The cache lives in a fresh temporary folder.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "luminal/luminal.hpp"
#include "luminal/models/decoder.hpp"
#include "luminal/models/synthetic.hpp"

int main(int argc, char** argv) {
  const int layers = argc > 1 ? std::atoi(argv[1]) : 32;
  const int limit = argc > 2 ? std::atoi(argv[2]) : 10;
  setenv("LUMINAL_CACHE", "on", 1);
  const auto cfg = luminal::models::llama_config(
      {.layers = layers, .hidden = 512, .ffn = 1536, .heads = 8, .kv_heads = 4, .vocab = 4096});
  const luminal::Graph g =
      luminal::models::build_decoder(cfg, {.slots = 512, .max_step = 128}).graph;
  const auto dir = std::filesystem::temp_directory_path() / "luminal_bench_compile_cache";
  std::filesystem::remove_all(dir);
  const auto opts = luminal::CompileOptions()
                        .search_graph_limit(limit)
                        .seed(1)
                        .verbose(false)
                        .cache_dir(dir)
                        .dim_buckets("s", {luminal::DimBucket(1, 1),
                                           luminal::DimBucket(2, 128).representative(16)})
                        .dim_buckets("c", {luminal::DimBucket(1, 512).representative(64)});
  luminal::cpu::CpuBackend cpu;
  double seconds[2];
  size_t genes = 0;
  for (int run = 0; run < 2; ++run) {
    const auto t0 = std::chrono::steady_clock::now();
    luminal::Session s(g, cpu, opts);
    s.compile();
    seconds[run] = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (run == 0) genes = s.reports()[0].genes;
    if (run == 1 && !s.reports()[0].cached) {
      std::fprintf(stderr, "the second compile did not hit the cache\n");
      return 1;
    }
  }
  std::filesystem::remove_all(dir);
  std::printf(
      "compile cache: %d-layer Llama-shaped graph (hidden 512, FFN 1536, vocab 4096, f32), %zu "
      "HLIR nodes, %zu genes, %d threads\n"
      "  cold compile (search, %d candidates per bucket, 2 buckets): %.2f s\n"
      "  warm compile (from the cache): %.3f s (target: under 1 s)\n",
      layers, g.nodes().size(), genes, cpu.threads(), limit, seconds[0], seconds[1]);
  return 0;
}
