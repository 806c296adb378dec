// The memory planner: lifetimes from an LLIR program, reuse of dead space, alignment, in-place
// aliases (lifetime extension), the no-overlap property on random lifetimes, and the max_bytes
// error.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <string>
#include <vector>

#include "luminal/runtime/memory_plan.hpp"
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
