// The memory planner: lifetimes from an LLIR program, reuse of dead space, alignment, in-place
// aliases (lifetime extension), the no-overlap property on random lifetimes and programs, the
// placement against the planner it replaced (first fit scanning every placed buffer, copied
// below), a 10,000-node program, concrete sizes, and the max_bytes error.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <queue>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "bench/first_fit_baseline.hpp"
#include "luminal/program/memory_plan.hpp"
#include "support/expect_error.hpp"
#include "support/llir_direct.hpp"

namespace luminal {
namespace {

BufferUse use(int64_t bytes, int first, int last, int alias_of = -1, bool in_arena = true) {
  BufferUse u;
  u.bytes = Expr(bytes);
  u.first = first;
  u.last = last;
  u.alias_of = alias_of;
  u.in_arena = in_arena;
  return u;
}

bool overlap(int64_t a, int64_t as, int64_t b, int64_t bs) { return a < b + bs && b < a + as; }

TEST(MemoryPlan, ReusesDeadBuffers) {
  // A chain: each buffer is read by the next step only.
  std::vector<BufferUse> u = {use(1000, 0, 1), use(1000, 1, 2), use(1000, 2, 3), use(1000, 3, 4),
                              use(1000, 4, 4)};
  MemoryPlan p = plan_memory(u, {}, 64);
  EXPECT_EQ(p.naive_bytes, 5 * 1024);
  EXPECT_EQ(p.arena_bytes, 2 * 1024);  // two live at a time
  for (size_t i = 0; i + 1 < u.size(); ++i)
    EXPECT_NE(p.offsets[i], p.offsets[i + 1]);
  EXPECT_EQ(p.offsets[0], p.offsets[2]);
}

TEST(MemoryPlan, ABufferReadAtTheStepAnotherIsWrittenIsStillLive) {
  std::vector<BufferUse> u = {use(64, 0, 1), use(64, 1, 1)};
  MemoryPlan p = plan_memory(u, {}, 64);
  EXPECT_NE(p.offsets[0], p.offsets[1]);
  EXPECT_EQ(p.arena_bytes, 128);
}

TEST(MemoryPlan, AlignsEveryBuffer) {
  std::vector<BufferUse> u = {use(10, 0, 3), use(300, 1, 3), use(1, 2, 3), use(0, 2, 3)};
  for (int64_t align : {1, 8, 64, 256, 4096}) {
    MemoryPlan p = plan_memory(u, {}, align);
    for (int64_t off : p.offsets) {
      EXPECT_GE(off, 0);
      EXPECT_EQ(off % align, 0) << "alignment " << align;
    }
    EXPECT_EQ(p.arena_bytes % align, 0);
  }
  EXPECT_EQ(plan_memory(u, {}, 256).arena_bytes, 256 + 512 + 256);
}

TEST(MemoryPlan, LargestFirstFirstFit) {
  // Two small buffers live early, one large one later: placed first (largest first), the large
  // one takes offset 0, and the small ones reuse its space since their lifetimes do not meet.
  std::vector<BufferUse> u = {use(256, 0, 1), use(256, 0, 1), use(512, 2, 3)};
  MemoryPlan p = plan_memory(u, {}, 256);
  EXPECT_EQ(p.offsets[2], 0);
  EXPECT_EQ(p.arena_bytes, 512);
}

TEST(MemoryPlan, AliasSharesTheBufferAndExtendsItsLifetime) {
  // 0 is written at step 0 and read at step 1 by the in-place node 1, whose value is read at 5.
  // Buffer 2 (steps 2..3) must not reuse 0's space: 0 lives on as 1 until step 5.
  std::vector<BufferUse> u = {use(1024, 0, 1), use(1024, 1, 5, 0), use(1024, 2, 3),
                              use(1024, 3, 5)};
  MemoryPlan p = plan_memory(u, {}, 256);
  EXPECT_EQ(p.offsets[1], p.offsets[0]);
  EXPECT_FALSE(overlap(p.offsets[2], 1024, p.offsets[0], 1024));
  EXPECT_FALSE(overlap(p.offsets[3], 1024, p.offsets[0], 1024));
  EXPECT_EQ(p.naive_bytes, 3 * 1024);  // the alias adds no buffer
  // Without the alias, 2 could reuse 0's space.
  std::vector<BufferUse> v = {use(1024, 0, 1), use(1024, 1, 5), use(1024, 2, 3), use(1024, 3, 5)};
  MemoryPlan q = plan_memory(v, {}, 256);
  EXPECT_EQ(q.offsets[2], q.offsets[0]);
}

TEST(MemoryPlan, BuffersOutsideTheArenaHaveNoOffset) {
  std::vector<BufferUse> u = {use(1 << 20, 0, 2, -1, false), use(100, 1, 2),
                              use(1 << 20, 2, 2, 0, false)};
  MemoryPlan p = plan_memory(u, {}, 64);
  EXPECT_EQ(p.offsets[0], -1);
  EXPECT_EQ(p.offsets[2], -1);
  EXPECT_EQ(p.offsets[1], 0);
  EXPECT_EQ(p.arena_bytes, 128);
}

TEST(MemoryPlan, DynamicSizes) {
  Expr s = Expr::var("s");
  std::vector<BufferUse> u = {use(0, 0, 1), use(0, 1, 2), use(0, 2, 2)};
  u[0].bytes = s * 4;
  u[1].bytes = s * 8;
  u[2].bytes = Expr(16);
  EXPECT_EQ(plan_memory(u, {{"s", 100}}, 1).arena_bytes, 400 + 800);
  EXPECT_EQ(plan_memory(u, {{"s", 1}}, 1).arena_bytes, 8 + 16);
  EXPECT_EQ(plan_memory(u, {{"s", 0}}, 1).arena_bytes, 16);
  testing::expect_error([&] { plan_memory(u, {}, 1); }, "'s'");
}

TEST(MemoryPlan, NoTwoLiveBuffersOverlapOnRandomLifetimes) {
  std::mt19937_64 rng(12345);
  for (int trial = 0; trial < 200; ++trial) {
    const int n = 1 + static_cast<int>(rng() % 80);
    const int64_t align = int64_t{1} << (rng() % 9);
    std::vector<BufferUse> u;
    for (int i = 0; i < n; ++i) {
      const int last = i + static_cast<int>(rng() % 12);
      int64_t bytes = static_cast<int64_t>(rng() % 5000);
      if (rng() % 10 == 0) bytes = 0;
      int alias = -1;
      if (i > 0 && rng() % 5 == 0) alias = static_cast<int>(rng() % i);
      const bool in_arena = alias >= 0 ? u[alias].in_arena : rng() % 10 != 0;
      u.push_back(use(bytes, i, last, alias, in_arena));
    }
    MemoryPlan p = plan_memory(u, {}, align);
    ASSERT_EQ(p.offsets.size(), u.size());
    // The effective buffer of each root: size and lifetime over all its aliases.
    std::vector<int> root(n);
    std::vector<int64_t> size(n, 0);
    std::vector<int> first(n), last(n);
    for (int i = 0; i < n; ++i) {
      root[i] = u[i].alias_of >= 0 ? root[u[i].alias_of] : i;
      first[i] = u[i].first;
      last[i] = u[i].last;
    }
    for (int i = 0; i < n; ++i) {
      const int r = root[i];
      size[r] = std::max(size[r], u[i].bytes.eval({}));
      first[r] = std::min(first[r], u[i].first);
      last[r] = std::max(last[r], u[i].last);
    }
    int64_t naive = 0;
    for (int i = 0; i < n; ++i) {
      if (!u[i].in_arena) {
        EXPECT_EQ(p.offsets[i], -1);
        continue;
      }
      EXPECT_EQ(p.offsets[i], p.offsets[root[i]]);
      EXPECT_EQ(p.offsets[i] % align, 0);
      EXPECT_LE(p.offsets[i] + u[i].bytes.eval({}), p.arena_bytes);
      if (root[i] == i) naive += (size[i] + align - 1) / align * align;
    }
    EXPECT_EQ(p.naive_bytes, naive);
    EXPECT_LE(p.arena_bytes, p.naive_bytes);
    for (int a = 0; a < n; ++a) {
      for (int b = a + 1; b < n; ++b) {
        if (!u[a].in_arena || !u[b].in_arena || root[a] != a || root[b] != b) continue;
        if (first[a] > last[b] || first[b] > last[a]) continue;  // never live together
        EXPECT_FALSE(overlap(p.offsets[a], size[a], p.offsets[b], size[b]))
            << "trial " << trial << ": buffers " << a << " [" << p.offsets[a] << ", +" << size[a]
            << ") and " << b << " [" << p.offsets[b] << ", +" << size[b] << ") overlap";
      }
    }
  }
}

TEST(MemoryPlan, MaxBytesErrorGivesBothSizes) {
  std::vector<BufferUse> u = {use(3 << 20, 0, 1), use(2 << 20, 1, 1)};
  EXPECT_EQ(plan_memory(u, {}, 256, 5 << 20).arena_bytes, 5 << 20);
  testing::expect_error([&] { plan_memory(u, {}, 256, 4 << 20); },
                        {"memory plan needs 5.00 MiB", "max_memory is 4.00 MiB"});
}

using baseline::align_up;
using baseline::old_first_fit;  // the planner before (bench/first_fit_baseline.hpp)

// What is wrong with `p` as a plan of `uses` (sizes `bytes`), or "" when nothing is: offsets
// (-1 outside the arena, aliases at their root's, aligned, inside the arena), the arena and naive
// sizes, and that no two buffers live at the same step overlap. The overlap check sweeps the
// steps keeping the live buffers ordered by offset (O(n log n), for 10,000 nodes); small
// programs are also checked pair by pair.
std::string plan_error(const std::vector<BufferUse>& uses, const std::vector<int64_t>& bytes,
                       int64_t align, const MemoryPlan& p) {
  const int n = static_cast<int>(uses.size());
  if (p.offsets.size() != uses.size()) return "offsets has the wrong length";
  std::vector<int> root(n), first(n), last(n);
  std::vector<int64_t> size(n, 0);
  for (int i = 0; i < n; ++i) {
    root[i] = uses[i].alias_of >= 0 ? root[uses[i].alias_of] : i;
    first[i] = uses[i].first;
    last[i] = std::max(uses[i].first, uses[i].last);
  }
  for (int i = 0; i < n; ++i) {
    if (!uses[i].in_arena) continue;
    const int r = root[i];
    size[r] = std::max(size[r], align_up(bytes[i], align));
    first[r] = std::min(first[r], first[i]);
    last[r] = std::max(last[r], last[i]);
  }
  std::vector<int> roots;  // in the arena
  int64_t naive = 0, top = 0;
  for (int i = 0; i < n; ++i) {
    const std::string at = "buffer " + std::to_string(i) + ": ";
    const int64_t off = p.offsets[i];
    if (!uses[i].in_arena || !uses[root[i]].in_arena) {
      if (off != -1) return at + "offset " + std::to_string(off) + " but not in the arena";
      continue;
    }
    if (off != p.offsets[root[i]]) return at + "not at its root's offset";
    if (root[i] != i) continue;
    roots.push_back(i);
    if (off < 0 || off % align != 0) return at + "bad offset " + std::to_string(off);
    if (off + size[i] > p.arena_bytes) return at + "ends past the arena";
    naive += size[i];
    top = std::max(top, off + size[i]);
  }
  if (p.naive_bytes != naive) return "naive_bytes " + std::to_string(p.naive_bytes);
  if (p.arena_bytes != top) return "arena_bytes " + std::to_string(p.arena_bytes) + " not tight";
  auto clash = [&](int a, int b) {
    return "buffers " + std::to_string(a) + " [" + std::to_string(p.offsets[a]) + ", +" +
           std::to_string(size[a]) + ") steps " + std::to_string(first[a]) + ".." +
           std::to_string(last[a]) + " and " + std::to_string(b) + " [" +
           std::to_string(p.offsets[b]) + ", +" + std::to_string(size[b]) + ") steps " +
           std::to_string(first[b]) + ".." + std::to_string(last[b]) + " overlap";
  };
  if (roots.size() <= 400) {
    for (size_t x = 0; x < roots.size(); ++x) {
      for (size_t y = x + 1; y < roots.size(); ++y) {
        const int a = roots[x], b = roots[y];
        if (first[a] > last[b] || first[b] > last[a]) continue;
        if (overlap(p.offsets[a], size[a], p.offsets[b], size[b])) return clash(a, b);
      }
    }
  }
  std::vector<int> by_first;
  for (int r : roots)
    if (size[r] > 0) by_first.push_back(r);
  std::sort(by_first.begin(), by_first.end(), [&](int a, int b) { return first[a] < first[b]; });
  std::map<int64_t, int> live;  // offset -> buffer, pairwise disjoint
  using Ends = std::pair<int, int>;
  std::priority_queue<Ends, std::vector<Ends>, std::greater<>> ends;  // (last step, buffer)
  for (int b : by_first) {
    while (!ends.empty() && ends.top().first < first[b]) {
      live.erase(p.offsets[ends.top().second]);
      ends.pop();
    }
    const int64_t off = p.offsets[b];
    auto next = live.lower_bound(off);
    if (next != live.end() && next->first < off + size[b]) return clash(b, next->second);
    if (next != live.begin()) {
      const int prev = std::prev(next)->second;
      if (p.offsets[prev] + size[prev] > off) return clash(b, prev);
    }
    live.emplace(off, b);
    ends.push({last[b], b});
  }
  return "";
}

// A program in execution order: node i is written at step i and read by later nodes.
struct Program {
  std::vector<BufferUse> uses;
  std::vector<int64_t> bytes;

  int size() const { return static_cast<int>(uses.size()); }
  int add(int64_t b, std::vector<int> inputs, int alias = -1, bool in_arena = true) {
    const int i = size();
    BufferUse u = use(b, i, i, alias, alias >= 0 ? uses[alias].in_arena : in_arena);
    for (int in : inputs)
      uses[in].last = std::max(uses[in].last, i);
    uses.push_back(u);
    bytes.push_back(b);
    return i;
  }
};

// Random programs of several shapes: lifetimes short, mixed or long (some last < first); steps
// dense, sparse, out of order or shared by many buffers; sizes from 0 to 1 MiB (zeros common);
// alias chains (in place on in-place nodes); buffers outside the arena, and aliases whose arena
// membership differs from their root's.
Program random_program(std::mt19937_64& rng) {
  const int n = 1 + static_cast<int>(rng() % 300);
  const int life = static_cast<int>(rng() % 3);   // short, mixed, long
  const int steps = static_cast<int>(rng() % 4);  // dense, sparse, shuffled, crowded
  const int sizes = static_cast<int>(rng() % 3);  // log-uniform, few distinct, tiny
  std::vector<int> step(n);
  for (int i = 0; i < n; ++i)
    step[i] = steps == 1 ? 3 * i + static_cast<int>(rng() % 3) : i;
  if (steps == 2) std::shuffle(step.begin(), step.end(), rng);
  if (steps == 3)
    for (int i = 0; i < n; ++i)
      step[i] = static_cast<int>(rng() % (1 + n / 8)) - 5;
  Program g;
  for (int i = 0; i < n; ++i) {
    int len = static_cast<int>(rng() % 6);
    if (life == 2 || (life == 1 && rng() % 10 == 0)) len = static_cast<int>(rng() % (3 * n));
    if (rng() % 20 == 0) len = -1;  // read before written: lives at its first step only
    int64_t b = 0;
    if (sizes == 0) b = static_cast<int64_t>(rng() % (uint64_t{1} << (rng() % 21)));
    if (sizes == 1) b = int64_t{1000} * (1 + static_cast<int64_t>(rng() % 4));
    if (sizes == 2) b = static_cast<int64_t>(rng() % 64);
    if (rng() % 8 == 0) b = 0;
    int alias = -1;
    if (i > 0 && rng() % 4 == 0) alias = rng() % 2 ? i - 1 : static_cast<int>(rng() % i);
    bool in_arena = alias >= 0 ? g.uses[alias].in_arena : rng() % 10 != 0;
    if (rng() % 20 == 0) in_arena = !in_arena;
    g.uses.push_back(use(b, step[i], step[i] + len, alias, in_arena));
    g.bytes.push_back(b);
  }
  return g;
}

// A transformer-like program of n nodes: per layer a chain of elementwise, reduction and matmul
// nodes (sizes over four orders of magnitude, some in place) around a residual stream that lives
// the whole layer, plus three tables read by every layer; weights outside the arena.
Program layered_program(int n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  const int64_t sizes[] = {4, 2048, 8 << 20, 22 << 20, 64 << 20};
  Program g;
  const int table0 = g.add(1 << 16, {}), table1 = g.add(1 << 16, {}), mask = g.add(1 << 20, {});
  int x = g.add(8 << 20, {});
  while (g.size() < n) {
    int prev = x, prev2 = x;
    const int ops = 20 + static_cast<int>(rng() % 20);
    for (int k = 0; k < ops && g.size() < n - 2; ++k) {
      const int w = rng() % 4 == 0 ? g.add(1 << 20, {}, -1, false) : -1;
      std::vector<int> in = {prev};
      if (rng() % 3 == 0) in.push_back(prev2);
      if (w >= 0) in.push_back(w);
      if (rng() % 10 == 0) in.push_back(rng() % 2 ? table0 : (rng() % 2 ? table1 : mask));
      const int alias = rng() % 6 == 0 && g.uses[prev].in_arena ? prev : -1;
      prev2 = prev;
      prev = g.add(sizes[rng() % 5], in, alias);
    }
    if (g.size() >= n) break;
    x = g.add(8 << 20, {x, prev}, x);  // the residual add, in place
  }
  return g;
}

TEST(MemoryPlan, NoTwoLiveBuffersOverlapOnRandomPrograms) {
  std::mt19937_64 rng(2024);
  for (int trial = 0; trial < 600; ++trial) {
    Program g = random_program(rng);
    const int64_t align = int64_t{1} << (rng() % 10);
    MemoryPlan p = plan_memory(g.uses, g.bytes, align);
    ASSERT_EQ(plan_error(g.uses, g.bytes, align, p), "") << "trial " << trial;
  }
}

TEST(MemoryPlan, TheCheckerFindsAPlantedOverlap) {
  // Guards plan_error: a buffer moved onto one live with it is reported, by the pair check
  // (few buffers) and by the sweep (many).
  std::vector<BufferUse> two = {use(512, 0, 3), use(256, 2, 5)};
  MemoryPlan q = plan_memory(two, {}, 256);
  ASSERT_EQ(plan_error(two, {512, 256}, 256, q), "");
  q.offsets[1] = 256;
  q.arena_bytes = 512;
  EXPECT_EQ(plan_error(two, {512, 256}, 256, q),
            "buffers 0 [0, +512) steps 0..3 and 1 [256, +256) steps 2..5 overlap");
  Program chain;  // each node read by the next: offsets alternate 0, 256
  for (int i = 0; i < 1000; ++i)
    chain.add(256, i > 0 ? std::vector<int>{i - 1} : std::vector<int>{});
  MemoryPlan p = plan_memory(chain.uses, chain.bytes, 256);
  ASSERT_EQ(plan_error(chain.uses, chain.bytes, 256, p), "");
  EXPECT_EQ(p.arena_bytes, 512);
  EXPECT_EQ(p.offsets[500], 0);
  EXPECT_EQ(p.offsets[501], 256);
  p.offsets[501] = 0;
  EXPECT_EQ(plan_error(chain.uses, chain.bytes, 256, p),
            "buffers 501 [0, +256) steps 501..502 and 500 [0, +256) steps 500..501 overlap");
}

TEST(MemoryPlan, NeverLargerThanTheOldFirstFit) {
  // The interval index finds the same lowest gap as scanning every placed buffer: the same
  // offsets, so never a larger arena.
  std::mt19937_64 rng(777);
  int reused = 0;
  for (int trial = 0; trial < 600; ++trial) {
    Program g = random_program(rng);
    const int64_t align = int64_t{1} << (rng() % 10);
    MemoryPlan p = plan_memory(g.uses, g.bytes, align);
    MemoryPlan old = old_first_fit(g.uses, g.bytes, align);
    ASSERT_LE(p.arena_bytes, old.arena_bytes) << "trial " << trial;
    EXPECT_EQ(p.offsets, old.offsets) << "trial " << trial;
    EXPECT_EQ(p.naive_bytes, old.naive_bytes);
    if (p.arena_bytes < p.naive_bytes) ++reused;
  }
  EXPECT_GT(reused, 300);  // the programs do exercise reuse
}

TEST(MemoryPlan, PlansATenThousandNodeProgram) {
  for (uint64_t seed : {1, 2}) {
    Program g = layered_program(10000, seed);
    ASSERT_EQ(g.size(), 10000);
    MemoryPlan p = plan_memory(g.uses, g.bytes, 256);
    ASSERT_EQ(plan_error(g.uses, g.bytes, 256, p), "");
    MemoryPlan old = old_first_fit(g.uses, g.bytes, 256);
    EXPECT_LE(p.arena_bytes, old.arena_bytes);
    EXPECT_EQ(p.offsets, old.offsets);
    // The peak of live bytes at one step is a lower bound; reuse keeps the arena near it, far
    // below no reuse at all.
    std::vector<int64_t> live(10001, 0);
    std::vector<int> root(10000);
    std::vector<int64_t> size(10000, 0);
    std::vector<int> last(10000);
    for (int i = 0; i < 10000; ++i) {
      root[i] = g.uses[i].alias_of >= 0 ? root[g.uses[i].alias_of] : i;
      last[i] = g.uses[i].last;
      if (!g.uses[i].in_arena) continue;
      size[root[i]] = std::max(size[root[i]], align_up(g.bytes[i], 256));
      last[root[i]] = std::max(last[root[i]], last[i]);
    }
    for (int i = 0; i < 10000; ++i) {
      if (!g.uses[i].in_arena || root[i] != i) continue;
      live[i] += size[i];
      live[last[i] + 1] -= size[i];
    }
    int64_t peak = 0, cur = 0;
    for (int64_t d : live)
      peak = std::max(peak, cur += d);
    EXPECT_GE(p.arena_bytes, peak);
    EXPECT_LT(p.arena_bytes, 2 * peak);
    EXPECT_LT(p.arena_bytes * 50, p.naive_bytes);
  }
}

TEST(MemoryPlan, ConcreteSizesAgreeWithDims) {
  std::mt19937_64 rng(99);
  Expr s = Expr::var("s"), t = Expr::var("t");
  for (int trial = 0; trial < 200; ++trial) {
    Program g = random_program(rng);
    for (BufferUse& u : g.uses) {
      const int64_t c = static_cast<int64_t>(rng() % 300);
      switch (rng() % 4) {
        case 0: u.bytes = Expr(c); break;
        case 1: u.bytes = s * c; break;
        case 2: u.bytes = s * t * 4 + c; break;
        default: u.bytes = (t + 7) / 8 * c; break;
      }
    }
    const DynMap dyn = {{"s", static_cast<int64_t>(rng() % 100)},
                        {"t", static_cast<int64_t>(rng() % 1000)}};
    std::vector<int64_t> bytes(g.uses.size());
    for (size_t i = 0; i < bytes.size(); ++i)
      bytes[i] = g.uses[i].in_arena ? g.uses[i].bytes.eval(dyn) : -1;  // ignored outside
    const int64_t align = int64_t{1} << (rng() % 9);
    MemoryPlan a = plan_memory(g.uses, dyn, align);
    MemoryPlan b = plan_memory(g.uses, bytes, align);
    EXPECT_EQ(a.offsets, b.offsets) << "trial " << trial;
    EXPECT_EQ(a.arena_bytes, b.arena_bytes);
    EXPECT_EQ(a.naive_bytes, b.naive_bytes);
    EXPECT_EQ(plan_error(g.uses, bytes, align, b), "");
  }
  // Sizes evaluated at a bucket's upper bound (s = 512) plan as the dims do; max_bytes and bad
  // sizes are reported.
  std::vector<BufferUse> u = {use(0, 0, 1), use(0, 1, 2), use(16, 2, 2)};
  u[0].bytes = s * 4;
  u[1].bytes = s * 8;
  MemoryPlan hi = plan_memory(u, std::vector<int64_t>{512 * 4, 512 * 8, 16}, 1);
  EXPECT_EQ(hi.arena_bytes, 512 * 4 + 512 * 8);
  EXPECT_EQ(hi.arena_bytes, plan_memory(u, {{"s", 512}}, 1).arena_bytes);
  EXPECT_EQ(plan_memory(u, std::vector<int64_t>{3 << 20, 2 << 20, 16}, 256, 5 << 20).arena_bytes,
            5 << 20);
  testing::expect_error(
      [&] {
        plan_memory(u, std::vector<int64_t>{3 << 20, 2 << 20, 16}, 256, 4 << 20);
      },
      {"memory plan needs 5.00 MiB", "(5242880 bytes)", "max_memory is 4.00 MiB",
       "(4194304 bytes)"});
  testing::expect_error([&] { plan_memory(u, std::vector<int64_t>{1, 2}); }, "2 sizes for 3");
  testing::expect_error(
      [&] {
        plan_memory(u, std::vector<int64_t>{1, -2, 3});
      },
      "negative buffer size");
}

TEST(MemoryPlan, IsDeterministic) {
  Program g = layered_program(3000, 5);
  MemoryPlan a = plan_memory(g.uses, g.bytes, 256);
  for (int k = 0; k < 3; ++k) {
    MemoryPlan b = plan_memory(g.uses, g.bytes, 256);
    EXPECT_EQ(a.offsets, b.offsets);
    EXPECT_EQ(a.arena_bytes, b.arena_bytes);
  }
}

TEST(MemoryPlan, BufferUsesOfAnLlirProgram) {
  Graph g;
  auto x = g.tensor("x", {"s", 4});
  auto y = (x + x).exp2();
  y.output("y");
  (y * 2.0).output("z");
  LlirGraph llir = testing::llir_direct(g);
  // x, add, exp2, Output y, constant, mul, Output z (graph order).
  std::vector<BufferUse> u = buffer_uses(llir);
  ASSERT_EQ(u.size(), llir.nodes.size());
  int add = -1, ex = -1, mul = -1;
  for (size_t i = 0; i < llir.nodes.size(); ++i) {
    const LlirNode& n = llir.nodes[i];
    if (is_op(n.op, OpKind::Input) || is_op(n.op, OpKind::Output))
      EXPECT_FALSE(u[i].in_arena) << i;
    else
      EXPECT_TRUE(u[i].in_arena) << i;
    EXPECT_EQ(u[i].first, static_cast<int>(i));
    EXPECT_EQ(u[i].alias_of, -1);
    if (is_op(n.op, OpKind::Add)) add = static_cast<int>(i);
    if (is_op(n.op, OpKind::Exp2)) ex = static_cast<int>(i);
    if (is_op(n.op, OpKind::Mul)) mul = static_cast<int>(i);
  }
  ASSERT_GE(add, 0);
  ASSERT_GE(mul, 0);
  EXPECT_EQ(u[add].last, ex);
  EXPECT_EQ(u[ex].last, mul);  // read by Output y, then by Mul
  EXPECT_EQ(u[ex].bytes.eval({{"s", 3}}), 3 * 4 * 4);
  // An in-place op aliases its input; on an Input, it stays outside the arena.
  static const OpDef kInPlace{"test.InPlace", OpKind::Input, false, 0};
  LlirGraph h;
  LlirNode in;
  in.op = hlir_op(OpKind::Input);
  in.attrs.shape = {Expr(8)};
  in.attrs.label = "cache";
  h.nodes.push_back(in);
  LlirNode c;
  c.op = hlir_op(OpKind::Exp2);
  c.attrs.shape = {Expr(8)};
  c.attrs.views = {View::contiguous({Expr(8)})};
  c.inputs = {0};
  h.nodes.push_back(c);  // 1: in the arena
  LlirNode ip;
  ip.op = &kInPlace;
  ip.attrs.shape = {Expr(8)};
  ip.attrs.views = {View::contiguous({Expr(8)})};
  ip.inputs = {1};
  h.nodes.push_back(ip);  // 2: aliases 1
  ip.inputs = {0};
  h.nodes.push_back(ip);  // 3: aliases the Input
  LlirNode out;
  out.op = hlir_op(OpKind::Output);
  out.attrs.shape = {Expr(8)};
  out.attrs.views = {View::contiguous({Expr(8)})};
  out.inputs = {2};
  h.nodes.push_back(out);
  out.inputs = {3};
  h.nodes.push_back(out);
  ip.inputs = {4};
  h.nodes.push_back(ip);  // 6: in place on an Output's value: gets a buffer of its own
  std::vector<BufferUse> hu = buffer_uses(h);
  EXPECT_EQ(hu[6].alias_of, -1);
  EXPECT_TRUE(hu[6].in_arena);
  EXPECT_EQ(hu[4].last, 6);
  EXPECT_EQ(hu[2].alias_of, 1);
  EXPECT_TRUE(hu[2].in_arena);
  EXPECT_EQ(hu[3].alias_of, 0);
  EXPECT_FALSE(hu[3].in_arena);
  EXPECT_EQ(hu[1].last, 2);
  EXPECT_EQ(hu[2].last, 4);
  MemoryPlan p = plan_memory(hu, {}, 64);
  EXPECT_EQ(p.offsets[2], p.offsets[1]);
  EXPECT_EQ(p.offsets[3], -1);
  EXPECT_EQ(p.arena_bytes, 64);  // 1 (and its alias 2) dies at step 4, before 6 is written
}

}  // namespace
}  // namespace luminal
