// The CPU backend's seed weighs bytes read beside kernel counts (Backend::seed_byte_cost,
// SearchSpace::set_seed_byte_cost): a value computed from five wide inputs and read by four
// reductions is stored once by its own kernel, where the kernels-only seed (LUMINAL_CPU_SEED_BYTES
// =off) computes it again inside each reduction's kernel from all five inputs. Both programs
// match the reference. (The readers share a gene; readers in different roles would each need a
// change the one-gene descent does not make alone.)
#include <gtest/gtest.h>

#include <string>

#include "luminal/compiler/build_space.hpp"
#include "luminal/kernels/fused_program.hpp"
#include "ops_test_util.hpp"
#include "support/env_scope.hpp"

namespace luminal {
namespace {

Graph wide_value_read_four_times() {
  constexpr int64_t n = 65536;  // 256 KiB an input
  Graph g;
  Tensor a = g.tensor("a", {1, n}), b = g.tensor("b", {1, n}), c = g.tensor("c", {1, n});
  Tensor d = g.tensor("d", {1, n}), e = g.tensor("e", {1, n});
  const Tensor z = (a * b + c * d) * e;
  for (int i = 0; i < 4; ++i)  // (alike but for their inputs: one gene of the seed)
    (z * g.tensor("k" + std::to_string(i), {1, 1}).expand({1, n}))
        .max(-1)
        .output("m" + std::to_string(i));
  return g;
}

/// The kernels of `l` that read the input labelled `label`.
int readers_of_input(const LlirGraph& l, const std::string& label) {
  int count = 0;
  for (const LlirNode& n : l.nodes)
    for (int in : n.inputs)
      if (l.nodes[static_cast<size_t>(in)].attrs.label == label) ++count;
  return count;
}

/// LUMINAL_CPU_SEED_BYTES for a scope (null: unset).
struct SeedBytesEnv : testing::EnvScope {
  explicit SeedBytesEnv(const char* value) : EnvScope("LUMINAL_CPU_SEED_BYTES", value) {}
};

LlirGraph seed_program(const Graph& g, bool bytes) {
  const SeedBytesEnv env(bytes ? nullptr : "off");
  cpu::CpuBackend cpu(2);  // (reads the switch when made)
  BuiltSpace b = build_search_space(g, cpu, g.dim_facts());
  return to_llir(*b.space, b.space->fewest_kernels_genome());
}

TEST(CpuSeedBytes, AValueReadByManyKernelsIsStoredOnce) {
  const Graph g = wide_value_read_four_times();
  const LlirGraph kernels_only = seed_program(g, false);
  const LlirGraph with_bytes = seed_program(g, true);
  EXPECT_EQ(readers_of_input(kernels_only, "a"), 4) << kernels_only.to_text();
  EXPECT_EQ(readers_of_input(with_bytes, "a"), 1) << with_bytes.to_text();
  for (const LlirGraph* l : {&kernels_only, &with_bytes})
    opstest::check_program(g, *l, {DynMap{}}, {1e-6, 1e-6}, "seed", 2, 3);
}

/// Kernels of `l` that compute a remainder (a primitive Mod, or a Mod in a fused program).
int kernels_with_mod(const LlirGraph& l) {
  int count = 0;
  for (const LlirNode& n : l.nodes) {
    bool mod = is_op(n.op, OpKind::Mod);
    if (const auto* p = dynamic_cast<const FusedProgram*>(n.attrs.payload.get()))
      for (const FusedInst& in : p->insts)
        mod = mod || in.op == FusedOpcode::Mod;
    count += mod;
  }
  return count;
}

TEST(CpuSeedBytes, HeavyArithmeticReadByTwoKernelsRunsOnce) {
  // A counter hash over an iota (nothing wide to read: only its arithmetic is priced), read by
  // two reductions: the kernels-only seed computes it inside both.
  constexpr int64_t n = 65536;
  Graph g;
  Tensor h = g.arange(n).cast(DType::I64).reshape({1, n});
  for (int round = 0; round < 4; ++round)
    h = (h * 1103515245.0 + 12345.0) % 2147483647.0;
  const Tensor f = h.cast(DType::F32);
  for (int i = 0; i < 2; ++i)
    (f * g.tensor("k" + std::to_string(i), {1, 1}).expand({1, n}))
        .max(-1)
        .output("m" + std::to_string(i));
  const LlirGraph kernels_only = seed_program(g, false);
  const LlirGraph priced = seed_program(g, true);
  EXPECT_EQ(kernels_with_mod(kernels_only), 2) << kernels_only.to_text();
  EXPECT_EQ(kernels_with_mod(priced), 1) << priced.to_text();
  for (const LlirGraph* l : {&kernels_only, &priced})
    opstest::check_program(g, *l, {DynMap{}}, {0, 0}, "hash", 2, 3);
}

TEST(CpuSeedBytes, OnByDefaultOffByTheSwitch) {
  {
    const SeedBytesEnv env(nullptr);
    EXPECT_GT(cpu::CpuBackend(1).seed_byte_cost(), 0);
  }
  const SeedBytesEnv env("off");
  EXPECT_EQ(cpu::CpuBackend(1).seed_byte_cost(), 0);
}

}  // namespace
}  // namespace luminal
