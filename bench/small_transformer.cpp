// CPU backend vs ReferenceRuntime on a 2-layer small transformer forward (prefill).
//
//   build/bench/bench_small_transformer [s=32] [search_graph_limit=30]
//
// Prints the search report, the median time of each runtime, the speedup and the largest
// difference between their logits.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>

#include "bench/timing.hpp"
#include "luminal/cpu/cpu_backend.hpp"
#include "luminal/models/decoder.hpp"
#include "luminal/models/synthetic.hpp"
#include "luminal/runtime/reference.hpp"
#include "luminal/runtime/session.hpp"

namespace {

using luminal::bench::Clock;

// Median of `runs` timings of run(), each after an untimed setup().
template <class S, class F>
double median_ms(int runs, S&& setup, F&& f) {
  std::vector<double> t;
  for (int i = 0; i < runs; ++i) {
    setup();
    auto t0 = Clock::now();
    f();
    t.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

// Token ids and an empty context into any runtime (the weights are set once, before).
void fill(luminal::Runtime& rt, const luminal::models::Decoder& d, int s) {
  std::mt19937 rng(7);
  std::vector<int32_t> ids(static_cast<size_t>(s));
  for (auto& x : ids)
    x = static_cast<int32_t>(rng() % static_cast<uint32_t>(d.config.vocab_size));
  rt.set("ids", ids);
  luminal::models::init_state(rt, d);
}

// Decode over a filled cache: prefill ctx-1 tokens (chunks of up to 128), then time decode
// steps at context ctx (each rewrites position ctx-1, so the context stays ctx).
double decode_ms(luminal::Session& model, int ctx, int steps) {
  const luminal::DimSlot S = model.dim("s"), C = model.dim("c");
  std::vector<int64_t> dims = model.dims();
  int done = 0;
  while (done < ctx - 1) {
    const int n = std::min(128, ctx - 1 - done);
    model.set("ids", std::vector<int32_t>(n, 3));
    dims[S] = n;
    dims[C] = done + n;
    model.execute(dims);
    done += n;
  }
  model.set("ids", std::vector<int32_t>{5});
  dims[S] = 1;
  dims[C] = ctx;
  auto step = [&] {
    model.execute(dims);
    model.sync();
  };
  return 1e3 * luminal::bench::median_seconds(step, 0, steps);
}

}  // namespace

int main(int argc, char** argv) {
  const int s = argc > 1 ? std::atoi(argv[1]) : 32;
  const int limit = argc > 2 ? std::atoi(argv[2]) : 30;
  // The Llama implementation of luminal::models with seeded random weights: 2 layers, hidden
  // 256, ffn 512, 8/4 heads, vocab 1000.
  const luminal::models::LlamaSize size;
  const luminal::io::ModelConfig cfg = luminal::models::llama_config(size);
  const int slots = std::max(64, s);
  luminal::models::Decoder d =
      luminal::models::build_decoder(cfg, {.slots = slots, .max_step = slots});
  luminal::Graph& g = d.graph;
  luminal::Tensor logits = d.logits;
  g.set_dim("s", s);
  g.set_dim("c", s);

  luminal::cpu::CpuBackend cpu;
  auto t0 = Clock::now();
  luminal::Session model(g, cpu, luminal::CompileOptions().search_graph_limit(limit).seed(1));
  luminal::models::random_weights(model, 1);
  fill(model, d, s);
  model.compile();
  double compile_s = luminal::bench::seconds_since(t0);
  luminal::ReferenceRuntime ref(g);
  luminal::models::random_weights_host(ref, 1);
  fill(ref, d, s);

  // Carried KV caches change between runs; every input is set again (untimed) before each run.
  double ref_ms = median_ms(
      3, [&] { fill(ref, d, s); }, [&] { ref.execute(); });
  double cpu_ms = median_ms(
      21, [&] { fill(model, d, s); }, [&] { model.execute(); });
  auto a = ref.get<float>(logits);
  auto b = model.get<float>(logits);
  double diff = 0, mag = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff = std::max(diff, static_cast<double>(std::fabs(a[i] - b[i])));
    mag = std::max(mag, static_cast<double>(std::fabs(a[i])));
  }
  std::printf("%s", model.report().c_str());
  std::printf(
      "2-layer transformer (hidden %d, ffn %d, %d/%d heads, vocab %d), s=c=%d, %d threads\n"
      "  compile (search of %d candidates): %.2f s\n"
      "  reference: %.2f ms   cpu backend: %.3f ms   speedup: %.1fx\n"
      "  max |logit difference| %.3g (max |logit| %.3g)\n",
      int(size.hidden), int(size.ffn), int(size.heads), int(size.kv_heads), int(size.vocab), s,
      cpu.threads(), limit, compile_s, ref_ms, cpu_ms, ref_ms / cpu_ms, diff, mag);

  // Decode over a filled cache at context 128 and 512: one session, buckets s=1 and s in
  // [2, 128], cache of 512 rows.
  luminal::models::Decoder dd =
      luminal::models::build_decoder(cfg, {.slots = 512, .max_step = 128});
  luminal::Graph& dg = dd.graph;
  luminal::Session dec(dg, cpu,
                       luminal::CompileOptions()
                           .search_graph_limit(limit)
                           .seed(1)
                           .verbose(false)
                           .dim_buckets("s", {luminal::DimBucket(1, 1),
                                              luminal::DimBucket(2, 128).representative(32)})
                           .dim_buckets("c", {luminal::DimBucket(1, 512).representative(128)}));
  luminal::models::random_weights(dec, 1);
  fill(dec, dd, 1);
  dec.compile();
  for (int ctx : {128, 512}) {
    const double ms = decode_ms(dec, ctx, 21);
    std::printf("  decode step at context %d: %.3f ms (%.1f tok/s)\n", ctx, ms, 1e3 / ms);
  }
  return diff <= 1e-3 * std::max(1.0, mag) ? 0 : 1;
}
