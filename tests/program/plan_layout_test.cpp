// The backend-neutral plan layout: structure checks and their messages, where each node's value
// lives (bound inputs and outputs, the arena, straight into an Output's buffer), the same
// addresses as pointers and as device integers, and the errors for unbounded buffers and
// mismatched bindings.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "luminal/program/memory_plan.hpp"
#include "luminal/program/plan_layout.hpp"
#include "support/expect_error.hpp"
#include "support/llir_direct.hpp"

namespace luminal {
namespace {

// x[s, 4] -> a = x + 1 -> b = a * 2 -> outputs "y" (b) and "a2" (a, read again by b).
struct Program {
  Graph g;
  LlirGraph llir;
  PlanSpec spec;
  Program() {
    g.declare_dim("s", 1, 8);
    Tensor x = g.tensor("x", {"s", 4});
    Tensor a = x + 1.0;
    (a * 2.0).output("y");
    a.output("a2");
    llir = testing::llir_direct(g);
    llir.fill_input_dtypes();
    spec.facts = {{"s", Interval{1, 8}}};
    spec.dim_names = {"s"};
  }
  int node(OpKind k, int nth = 0) const {
    for (int i = 0; i < static_cast<int>(llir.nodes.size()); ++i)
      if (is_op(llir.nodes[i].op, k) && nth-- == 0) return i;
    return -1;
  }
};

Bindings bindings(std::vector<uint8_t>& arena, std::vector<uint8_t>& x, std::vector<uint8_t>& y,
                  std::vector<uint8_t>& a2) {
  Bindings b;
  b.inputs = {Buffer{x.data(), x.size()}};
  b.outputs = {Buffer{y.data(), y.size()}, Buffer{a2.data(), a2.size()}};
  b.arena = Buffer{arena.data(), arena.size()};
  return b;
}

TEST(PlanLayout, EachValueLivesInItsBindingOrTheArena) {
  const Program p;
  ASSERT_NO_THROW(check_llir(p.llir, "test", LlirChecks{.output_dtypes = true}));
  const PlanLayout layout(p.llir, p.spec, {.backend = "test", .alignment = 64});
  EXPECT_EQ(layout.io().inputs, (std::vector<std::string>{"x"}));
  EXPECT_EQ(layout.io().outputs, (std::vector<std::string>{"y", "a2"}));
  std::vector<uint8_t> arena(layout.arena_bytes()), x(8 * 4 * 4), y(x.size()), a2(x.size());
  const Bindings b = bindings(arena, x, y, a2);

  std::vector<uint8_t*> ptr;
  layout.addresses(b, ptr);
  ASSERT_EQ(ptr.size(), p.llir.nodes.size());
  const int in = p.node(OpKind::Input), add = p.node(OpKind::Add), mul = p.node(OpKind::Mul);
  EXPECT_EQ(ptr[in], x.data());
  EXPECT_EQ(ptr[p.node(OpKind::Output, 0)], y.data());
  EXPECT_EQ(ptr[p.node(OpKind::Output, 1)], a2.data());
  for (int i : {add, mul}) {
    EXPECT_EQ(layout.input_slot(i), -1);
    EXPECT_EQ(layout.root(i), i);
    EXPECT_EQ(layout.direct_output(i), -1);
    EXPECT_GE(ptr[i], arena.data());
    EXPECT_LE(ptr[i] + 8 * 4 * 4, arena.data() + arena.size()) << "sized at s = 8";
    EXPECT_EQ((ptr[i] - arena.data()) % 64, 0);
  }
  EXPECT_EQ(layout.input_slot(in), 0);
  EXPECT_EQ(layout.output_slot(p.node(OpKind::Output, 1)), 1);

  // The same addresses as device integers (CUdeviceptr).
  std::vector<unsigned long long> dev;
  layout.addresses(b, dev);
  for (size_t i = 0; i < ptr.size(); ++i)
    EXPECT_EQ(dev[i], reinterpret_cast<uintptr_t>(ptr[i])) << "node " << i;
}

TEST(PlanLayout, DirectOutputsWriteStraightIntoTheOutputBuffer) {
  const Program p;
  const int add = p.node(OpKind::Add), mul = p.node(OpKind::Mul);
  const std::vector<int> direct = direct_outputs(p.llir, PlanIo::of(p.llir));
  EXPECT_EQ(direct[mul], 0);  // y
  EXPECT_EQ(direct[add], 1);  // a2 (read again by the product: still its own whole value)
  const PlanLayout layout(p.llir, p.spec, {.backend = "test", .direct_outputs = true});
  EXPECT_EQ(layout.direct_output(mul), 0);
  std::vector<uint8_t> arena(layout.arena_bytes()), x(8 * 4 * 4), y(x.size()), a2(x.size());
  std::vector<uint8_t*> ptr;
  layout.addresses(bindings(arena, x, y, a2), ptr);
  EXPECT_EQ(ptr[mul], y.data());
  EXPECT_EQ(ptr[add], a2.data());
}

TEST(PlanLayout, ChecksNameTheBackendAndTheNode) {
  const Program p;
  LlirGraph later = p.llir;
  later.nodes[p.node(OpKind::Add)].inputs[0] = p.node(OpKind::Mul);
  testing::expect_error([&] { check_llir(later, "cpu"); },
                        {"cpu: node %", " (Add) reads %", "which does not run before it"});
  LlirGraph views = p.llir;
  views.nodes[p.node(OpKind::Add)].attrs.views.pop_back();
  testing::expect_error([&] { check_llir(views, "cuda"); },
                        {"cuda: node %", "2 inputs but 1 views"});
  LlirGraph dtype = p.llir;
  dtype.nodes[p.node(OpKind::Output)].attrs.dtype = DType::F16;
  EXPECT_NO_THROW(check_llir(dtype, "cuda"));
  testing::expect_error([&] { check_llir(dtype, "cpu", LlirChecks{.output_dtypes = true}); },
                        "cpu: Output 'y' is f16 but its input is f32");
  EXPECT_EQ(node_name(p.llir, p.node(OpKind::Mul)),
            "%" + std::to_string(p.node(OpKind::Mul)) + " (Mul)");

  PlanSpec no_slot = p.spec;
  no_slot.dim_names.clear();
  testing::expect_error([&] { check_dim_slots(p.llir, no_slot, "cpu"); },
                        "cpu: the program uses dynamic dimension 's' but the plan has no slot");
}

TEST(PlanLayout, UnboundedBuffersAndShortBindingsAreErrors) {
  const Program p;
  PlanSpec open = p.spec;
  open.facts["s"] = Interval{1, INT64_MAX};
  testing::expect_error(
      [&] { PlanLayout(p.llir, open, {.backend = "cpu"}); },
      {"cpu: the buffer of node %", "has no upper bound in this bucket; give 's' a range"});

  const PlanLayout layout(p.llir, p.spec, {.backend = "cpu"});
  std::vector<uint8_t> arena(layout.arena_bytes() - 1), x(8 * 4 * 4), y(x.size()), a2(x.size());
  Bindings b = bindings(arena, x, y, a2);
  std::vector<uint8_t*> ptr;
  testing::expect_error([&] { layout.addresses(b, ptr); },
                        "cpu: the bound arena has " + std::to_string(arena.size()) + " bytes");
  EXPECT_TRUE(ptr.empty()) << "unchanged when the check throws";
  b.outputs.pop_back();
  testing::expect_error([&] { layout.check(b); },
                        "cpu: bind got 1 inputs and 1 outputs; the plan has 1 and 2");
}

// Each node's extent: a bound Input's or Output's whole buffer (no size given: everything from its
// address), an arena buffer's size at the bucket's upper bound.
TEST(PlanLayout, ExtentsCoverEachValue) {
  const Program p;
  const PlanLayout layout(p.llir, p.spec, {.backend = "test"});
  std::vector<uint8_t> arena(layout.arena_bytes()), x(8 * 4 * 4 + 12), y(8 * 4 * 4), a2(y.size());
  Bindings b = bindings(arena, x, y, a2);
  std::vector<uint64_t> ext = layout.extents(b);
  ASSERT_EQ(ext.size(), p.llir.nodes.size());
  EXPECT_EQ(ext[p.node(OpKind::Input)], x.size());
  EXPECT_EQ(ext[p.node(OpKind::Output, 0)], y.size());
  EXPECT_EQ(ext[p.node(OpKind::Add)], 8u * 4 * 4) << "f32 [s, 4] at s = 8";
  EXPECT_EQ(ext[p.node(OpKind::Mul)], 8u * 4 * 4);
  b.inputs[0].bytes = 0;
  EXPECT_EQ(layout.extents(b)[p.node(OpKind::Input)], UINT64_MAX);
}

// x -> a0 -> a1 -> ... -> a11 -> y, each a step of [64] f32 read only by the next: at once, two
// ranges alternate; with a reuse gap of 4, no range is taken over within 4 steps of its last
// reader; a gap whose arena would grow past reuse_gap_bytes is not taken.
TEST(PlanLayout, ReuseGapDelaysTakingOverARange) {
  Graph g;
  Tensor t = g.tensor("x", {64});
  for (int k = 0; k < 12; ++k)
    t = t * 1.5 + 1.0;
  t.output("y");
  LlirGraph llir = testing::llir_direct(g);
  llir.fill_input_dtypes();
  const PlanSpec spec;
  const PlanLayout plain(llir, spec, {.backend = "test", .alignment = 256});
  const PlanLayout gapped(llir, spec, {.backend = "test", .alignment = 256, .reuse_gap = 4});
  const PlanLayout capped(
      llir, spec, {.backend = "test", .alignment = 256, .reuse_gap = 4, .reuse_gap_bytes = 256});
  EXPECT_LE(plain.arena_bytes(), 3u * 256);
  EXPECT_GT(gapped.arena_bytes(), plain.arena_bytes());
  EXPECT_EQ(capped.arena_bytes(), plain.arena_bytes()) << "the gap's arena is over the cap";
  // Last reader of each node, and its arena offset in the gapped layout.
  const std::vector<BufferUse> uses = buffer_uses(llir);
  const std::vector<int64_t>& off = gapped.memory().offsets;
  int checked = 0;
  for (size_t i = 0; i < llir.nodes.size(); ++i)
    for (size_t j = i + 1; j < llir.nodes.size(); ++j) {
      if (off[i] < 0 || off[j] < 0 || off[i] != off[j]) continue;
      EXPECT_GT(static_cast<int>(j), uses[i].last + 4) << "node " << j << " takes over " << i;
      ++checked;
    }
  EXPECT_GT(checked, 0) << "some range is still reused";
}

}  // namespace
}  // namespace luminal
