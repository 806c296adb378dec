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

#include "luminal/cpu/cpu_backend.hpp"
#include "luminal/runtime/session.hpp"
#include "transformer.hpp"

namespace {

using Clock = std::chrono::steady_clock;

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

// Same data into any runtime: token ids, random weights (norm weights 1), empty caches.
void fill(luminal::Runtime& rt, const luminal::Graph& g, int s) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-0.5f, 0.5f);
  for (luminal::NodeId id : g.inputs()) {
    const luminal::Node& n = g.node(id);
    int64_t numel = 1;
    for (int64_t d : luminal::eval_shape(n.shape, {{"s", s}, {"c", s}}))
      numel *= d;
    if (n.label == "ids") {
      std::vector<int32_t> v(numel);
      for (auto& x : v)
        x = static_cast<int32_t>(rng() % 1000);
      rt.set(n.label, v);
    } else if (n.label.rfind("k_cache", 0) == 0 || n.label.rfind("v_cache", 0) == 0) {
      rt.set(n.label, std::vector<float>(numel, 0.f));
    } else {
      std::vector<float> v(numel);
      for (auto& x : v)
        x = u(rng);
      if (n.label.find("norm") != std::string::npos) std::fill(v.begin(), v.end(), 1.f);
      rt.set(n.label, v);
    }
  }
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
  std::vector<double> t;
  for (int i = 0; i < steps; ++i) {
    auto t0 = Clock::now();
    model.execute(dims);
    model.sync();
    t.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  const int s = argc > 1 ? std::atoi(argv[1]) : 32;
  const int limit = argc > 2 ? std::atoi(argv[2]) : 30;
  bench::TransformerConfig cfg;  // 2 layers, hidden 256, ffn 512, 8/4 heads, vocab 1000
  cfg.slots = std::max(64, s);
  luminal::Graph g;
  g.declare_dim("s", 1, cfg.slots);
  g.declare_dim("c", 1, cfg.slots);
  luminal::Tensor logits = bench::transformer(g, cfg);
  g.set_dim("s", s);
  g.set_dim("c", s);

  luminal::cpu::CpuBackend cpu;
  auto t0 = Clock::now();
  luminal::Session model(g, cpu, luminal::CompileOptions().search_graph_limit(limit).seed(1));
  fill(model, g, s);
  model.compile();
  double compile_s = std::chrono::duration<double>(Clock::now() - t0).count();
  luminal::ReferenceRuntime ref(g);
  fill(ref, g, s);

  // Carried KV caches change between runs; every input is set again (untimed) before each run.
  double ref_ms = median_ms(
      3, [&] { fill(ref, g, s); }, [&] { ref.execute(); });
  double cpu_ms = median_ms(
      21, [&] { fill(model, g, s); }, [&] { model.execute(); });
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
      cfg.hidden, cfg.ffn, cfg.heads, cfg.kv_heads, cfg.vocab, s, cpu.threads(), limit, compile_s,
      ref_ms, cpu_ms, ref_ms / cpu_ms, diff, mag);

  // Decode over a filled cache at context 128 and 512: one session, buckets s=1 and s in
  // [2, 128], cache of 512 rows.
  bench::TransformerConfig dcfg;
  dcfg.slots = 512;
  luminal::Graph dg;
  dg.declare_dim("s", 1, 128);
  dg.declare_dim("c", 1, dcfg.slots);
  bench::transformer(dg, dcfg);
  luminal::Session dec(
      dg, cpu,
      luminal::CompileOptions()
          .search_graph_limit(limit)
          .seed(1)
          .verbose(false)
          .dim_buckets("s",
                       {luminal::DimBucket(1, 1), luminal::DimBucket(2, 128).representative(32)})
          .dim_buckets("c", {luminal::DimBucket(1, dcfg.slots).representative(128)}));
  fill(dec, dg, 1);
  dec.compile();
  for (int ctx : {128, 512}) {
    const double ms = decode_ms(dec, ctx, 21);
    std::printf("  decode step at context %d: %.3f ms (%.1f tok/s)\n", ctx, ms, 1e3 / ms);
  }
  return diff <= 1e-3 * std::max(1.0, mag) ? 0 : 1;
}
