// The memory planner on synthetic 10,000-node programs: plan_memory (first fit over the live
// buffers found through an interval index) against the planner it replaced (first fit that scans
// every placed buffer for each new one, copied below).
//
//   build/bench/bench_memory_plan [nodes=10000] [runs=9]
//
// Prints, per program, the median time of each planner, both arena sizes and whether the offsets
// are the same, then one summary line for the transformer-shaped program.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <random>
#include <string>
#include <vector>

#include "bench/timing.hpp"
#include "first_fit_baseline.hpp"
#include "luminal/program/memory_plan.hpp"

namespace {

using luminal::BufferUse;
using luminal::MemoryPlan;

using luminal::baseline::old_first_fit;

// ---- Synthetic programs. ----

// A program in execution order: node i is written at step i and read by later nodes.
struct Program {
  std::string name;
  std::vector<BufferUse> uses;
  std::vector<int64_t> bytes;

  int size() const { return static_cast<int>(uses.size()); }

  int add(int64_t b, std::initializer_list<int> inputs, int alias = -1, bool in_arena = true) {
    const int i = size();
    BufferUse u;
    u.bytes = luminal::Expr(b);
    u.first = i;
    u.last = i;
    u.alias_of = alias;
    u.in_arena = alias >= 0 ? uses[alias].in_arena : in_arena;
    for (int in : inputs)
      uses[in].last = std::max(uses[in].last, i);
    uses.push_back(u);
    bytes.push_back(b);
    return i;
  }
  int input(int64_t b) { return add(b, {}, -1, false); }

  void truncate(int n) {
    uses.resize(static_cast<size_t>(n));
    bytes.resize(static_cast<size_t>(n));
    for (BufferUse& u : uses)
      u.last = std::min(u.last, n - 1);
  }
};

// A decoder-only transformer forward (prefill of s tokens after p cached ones): RMSNorm, rotary
// q/k, a KV cache concatenated and exposed as outputs, softmax attention, SwiGLU MLP, residual
// adds in place. Layers repeat until n nodes. The rotary tables and the mask live the whole
// program, the residual stream across each layer; reductions are tiny, scores and the MLP large.
Program transformer(int n, int64_t s = 256, int64_t p = 256) {
  const int64_t d = 2048, dkv = 512, h = 16, ff = 5632, vocab = 32000, f = 4;
  const int64_t t = s + p;
  Program g;
  g.name = "transformer s=" + std::to_string(s) + " p=" + std::to_string(p);
  const int tokens = g.input(s * 4);
  const int embed = g.input(vocab * d * f);
  int x = g.add(s * d * f, {tokens, embed});
  const int pos = g.input(s * 4);
  const int freq = g.add(64 * f, {});
  const int angle = g.add(s * 64 * f, {pos, freq});
  const int cos = g.add(s * 64 * f, {angle});
  const int sin = g.add(s * 64 * f, {angle});
  const int mask = g.add(s * t * f, {pos});
  auto rmsnorm = [&](int in) {
    const int w = g.input(d * f);
    const int sq = g.add(s * d * f, {in, in});
    const int sum = g.add(s * f, {sq});
    const int c = g.add(f, {});
    const int mean = g.add(s * f, {sum, c}, sum);
    const int eps = g.add(f, {});
    const int add = g.add(s * f, {mean, eps}, mean);
    const int r = g.add(s * f, {add}, add);
    const int y = g.add(s * d * f, {in, r});
    return g.add(s * d * f, {y, w}, y);
  };
  auto matmul = [&](int in, int64_t out_bytes, int64_t w_bytes) {
    const int w = g.input(w_bytes);
    return g.add(out_bytes, {in, w});
  };
  auto rope = [&](int in, int64_t width) {
    const int c = g.add(s * width * f, {in, cos});
    const int rot = g.add(s * width * f, {in});
    const int sn = g.add(s * width * f, {rot, sin}, rot);
    return g.add(s * width * f, {c, sn}, c);
  };
  const int tail = 4;
  for (int layer = 0; g.size() < n - tail; ++layer) {
    const int a = rmsnorm(x);
    const int q = rope(matmul(a, s * d * f, d * d * f), d);
    const int k = rope(matmul(a, s * dkv * f, d * dkv * f), dkv);
    const int v = matmul(a, s * dkv * f, d * dkv * f);
    const int kcache = g.input(p * dkv * f);
    const int vcache = g.input(p * dkv * f);
    const int kc = g.add(t * dkv * f, {kcache, k}, -1, false);  // exposed by an Output
    const int vc = g.add(t * dkv * f, {vcache, v}, -1, false);
    g.add(t * dkv * f, {kc}, -1, false);
    g.add(t * dkv * f, {vc}, -1, false);
    const int scores = g.add(h * s * t * f, {q, kc});
    const int c = g.add(f, {});
    const int scaled = g.add(h * s * t * f, {scores, c}, scores);
    const int masked = g.add(h * s * t * f, {scaled, mask}, scaled);
    const int mx = g.add(h * s * f, {masked});
    const int sub = g.add(h * s * t * f, {masked, mx});
    const int ex = g.add(h * s * t * f, {sub}, sub);
    const int sum = g.add(h * s * f, {ex});
    const int pr = g.add(h * s * t * f, {ex, sum}, ex);
    const int att = g.add(s * d * f, {pr, vc});
    const int o = matmul(att, s * d * f, d * d * f);
    const int x2 = g.add(s * d * f, {x, o}, x);
    const int m = rmsnorm(x2);
    const int gate = matmul(m, s * ff * f, d * ff * f);
    const int up = matmul(m, s * ff * f, d * ff * f);
    const int sig = g.add(s * ff * f, {gate});
    const int silu = g.add(s * ff * f, {gate, sig}, sig);
    const int prod = g.add(s * ff * f, {silu, up}, silu);
    const int down = matmul(prod, s * d * f, ff * d * f);
    x = g.add(s * d * f, {x2, down}, x2);
    (void)layer;
  }
  const int last = rmsnorm(x);
  const int logits = matmul(last, s * vocab * f, d * vocab * f);
  g.add(s * vocab * f, {logits}, -1, false);
  g.truncate(n);
  return g;
}

int64_t log_uniform_bytes(std::mt19937_64& rng, int max_log2) {
  const int e = static_cast<int>(rng() % static_cast<uint64_t>(max_log2 + 1));
  return (int64_t{1} << e) + static_cast<int64_t>(rng() % (uint64_t{1} << e));
}

// Random lifetimes: mostly a few steps, 2% until a random later step; sizes from 1 byte to
// 128 MiB (log-uniform); 5% zero; 5% in place on a recent node; 5% outside the arena.
Program random_lifetimes(int n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::geometric_distribution<int> short_life(0.25);
  Program g;
  g.name = "random lifetimes";
  for (int i = 0; i < n; ++i) {
    BufferUse u;
    u.first = i;
    u.last = std::min(n - 1, i + short_life(rng));
    if (rng() % 50 == 0) u.last = i + static_cast<int>(rng() % static_cast<uint64_t>(n - i));
    int64_t b = log_uniform_bytes(rng, 26);
    if (rng() % 20 == 0) b = 0;
    if (i > 0 && rng() % 20 == 0) u.alias_of = std::max(0, i - 1 - static_cast<int>(rng() % 16));
    u.in_arena = u.alias_of >= 0 ? g.uses[u.alias_of].in_arena : rng() % 20 != 0;
    u.bytes = luminal::Expr(b);
    g.uses.push_back(u);
    g.bytes.push_back(b);
  }
  return g;
}

// A random DAG: each node reads 1 to 3 earlier nodes, 97% among the 8 before it and 3% anywhere
// before (which makes long lifetimes), sizes log-uniform up to 64 MiB, 5% in place.
Program random_dag(int n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  Program g;
  g.name = "random dag";
  g.input(1024);
  for (int i = 1; i < n; ++i) {
    const int reads = 1 + static_cast<int>(rng() % 3);
    int in[3] = {i - 1, i - 1, i - 1};
    for (int r = 0; r < reads; ++r) {
      if (rng() % 100 < 97)
        in[r] = std::max(0, i - 1 - static_cast<int>(rng() % 8));
      else
        in[r] = static_cast<int>(rng() % static_cast<uint64_t>(i));
    }
    const int alias = rng() % 20 == 0 ? in[0] : -1;
    g.add(log_uniform_bytes(rng, 25), {in[0], in[1], in[2]}, alias);
  }
  return g;
}

struct Result {
  double new_ms, old_ms;
  int64_t arena, old_arena;
};

Result run(const Program& g, int runs) {
  MemoryPlan plan, old;
  using luminal::bench::median_seconds;
  const double new_ms =
      1e3 * median_seconds([&] { plan = luminal::plan_memory(g.uses, g.bytes); }, 0, runs);
  const double old_ms = 1e3 * median_seconds([&] { old = old_first_fit(g.uses, g.bytes, 256); }, 0,
                                             std::max(1, runs / 3));
  std::printf(
      "%-28s %6d nodes: new %8.3f ms, old %9.3f ms, arena %12lld bytes (old %12lld, "
      "naive %13lld), same offsets: %s\n",
      g.name.c_str(), g.size(), new_ms, old_ms, static_cast<long long>(plan.arena_bytes),
      static_cast<long long>(old.arena_bytes), static_cast<long long>(plan.naive_bytes),
      plan.offsets == old.offsets ? "yes" : "no");
  return {new_ms, old_ms, plan.arena_bytes, old.arena_bytes};
}

}  // namespace

int main(int argc, char** argv) {
  const int n = argc > 1 ? std::atoi(argv[1]) : 10000;
  const int runs = argc > 2 ? std::atoi(argv[2]) : 9;
  if (n < 100 || runs < 1) {
    std::fprintf(stderr, "usage: bench_memory_plan [nodes>=100] [runs>=1]\n");
    return 2;
  }
  const Result tr = run(transformer(n), runs);
  run(transformer(n, 32, 2048), runs);
  run(transformer(n, 1, 4095), runs);
  run(transformer(n / 10), runs);
  for (uint64_t seed : {1, 2, 3})
    run(random_lifetimes(n, seed), runs);
  for (uint64_t seed : {1, 2})
    run(random_dag(n, seed), runs);
  std::printf("memory plan %d nodes: %.3f ms (old %.3f ms), arena %lld bytes (old %lld)\n", n,
              tr.new_ms, tr.old_ms, static_cast<long long>(tr.arena),
              static_cast<long long>(tr.old_arena));
  return 0;
}
