// Genes: the same op in every layer shares one gene, same-shape ops in different roles of a layer
// (gate/up, k/v projections) get their own, and keys are exact (compared for equality).
#include <gtest/gtest.h>

#include "luminal/compiler/build_space.hpp"
#include "luminal/cpu/cpu_backend.hpp"
#include "luminal/ir/tensor.hpp"

namespace luminal {
namespace {

struct Layers {
  Graph g;
  std::vector<Tensor> gate, up, k, v;
  explicit Layers(int n) {
    g.declare_dim("s", 1, 64);
    Tensor x = g.tensor("x", {"s", 32});
    for (int l = 0; l < n; ++l) {
      auto w = [&](const std::string& name, int a, int b) {
        return g.tensor(name + "." + std::to_string(l), {a, b});
      };
      Tensor h = x.rms_norm(g.tensor("norm." + std::to_string(l), {32}), 1e-5);
      k.push_back(h.matmul(w("wk", 32, 16)));
      v.push_back(h.matmul(w("wv", 32, 16)));
      Tensor att = (k.back() * v.back()).sum(1).reshape({"s", 1});
      Tensor h2 = (x + att).rms_norm(g.tensor("norm2." + std::to_string(l), {32}), 1e-5);
      gate.push_back(h2.matmul(w("w_gate", 32, 64)));
      up.push_back(h2.matmul(w("w_up", 32, 64)));
      x = x + (gate.back().silu() * up.back()).matmul(w("w_down", 64, 32));
    }
    x.rms_norm(g.tensor("final_norm", {32}), 1e-5).matmul(g.tensor("head", {32, 100})).output("y");
  }
};

int gene(const BuiltSpace& b, const Tensor& t) {
  return b.space->gene_of(b.lowered.class_of.at(t.id()));
}

TEST(Genes, OneLayerOfGenesHoweverDeepAndRolesApart) {
  cpu::CpuBackend cpu(1);
  std::vector<size_t> genes;
  for (int n : {2, 3, 8, 32}) {
    Layers m(n);
    BuiltSpace b = build_search_space(m.g, cpu, m.g.dim_facts());
    genes.push_back(b.space->num_genes());
    // Roles apart inside a layer; the same role shares its gene from layer 1 on (layer 0 reads
    // the embedding-side input rather than a residual sum, so its first ops may differ).
    for (int l = 1; l < n; ++l) {
      ASSERT_GE(gene(b, m.gate[l]), 0);
      EXPECT_NE(gene(b, m.gate[l]), gene(b, m.up[l])) << "layer " << l;
      EXPECT_NE(gene(b, m.k[l]), gene(b, m.v[l])) << "layer " << l;
      EXPECT_EQ(gene(b, m.gate[l]), gene(b, m.gate[1])) << "layer " << l;
      EXPECT_EQ(gene(b, m.up[l]), gene(b, m.up[1])) << "layer " << l;
      EXPECT_EQ(gene(b, m.k[l]), gene(b, m.k[1])) << "layer " << l;
    }
  }
  // A role looks two levels down, so the first two layers (near the input) have a few genes of
  // their own; from 3 layers on the count no longer grows: 8 and 32 layers have exactly the
  // genes of 3 (the first layers, one repeated layer, the head).
  EXPECT_LE(genes[0], genes[1]);
  EXPECT_EQ(genes[2], genes[1]);
  EXPECT_EQ(genes[3], genes[1]);
}

// The fewest-kernels genome: an elementwise chain becomes one fused kernel, a matmul one library
// call, in every layer alike; the first genome (every gene 0) keeps more nodes.
TEST(Genes, FewestKernelsGenomeFusesTheChains) {
  cpu::CpuBackend cpu(1);
  Graph g;
  Tensor a = g.tensor("a", {64}), b = g.tensor("b", {64}), c = g.tensor("c", {64});
  (((a + b) * c).exp() - a).output("y");
  BuiltSpace s = build_search_space(g, cpu, g.dim_facts());
  const LlirGraph fewest = to_llir(*s.space, s.space->fewest_kernels_genome());
  const LlirGraph first = to_llir(*s.space, s.space->first_genome());
  auto kernels = [](const LlirGraph& l) {
    int n = 0;
    for (const LlirNode& node : l.nodes)
      n += !is_op(node.op, OpKind::Input) && !is_op(node.op, OpKind::Output);
    return n;
  };
  EXPECT_EQ(kernels(fewest), 1) << fewest.to_text();
  EXPECT_EQ(fewest.op_mix().count("cpu.Fused"), 1u) << fewest.to_text();
  EXPECT_GT(kernels(first), 1) << first.to_text();

  Layers three(3);
  BuiltSpace t = build_search_space(three.g, cpu, three.g.dim_facts());
  const LlirGraph model = to_llir(*t.space, t.space->fewest_kernels_genome());
  const LlirGraph model_first = to_llir(*t.space, t.space->first_genome());
  EXPECT_LT(kernels(model), kernels(model_first));
  EXPECT_EQ(model.op_mix().count("cpu.Matmul"), 0u) << "BLAS for every projection";
}

}  // namespace
}  // namespace luminal
