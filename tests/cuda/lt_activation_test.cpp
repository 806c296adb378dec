// CI without a GPU: cuBLASLt activation epilogues (cublaslt/lt_activation.cpp, rule
// "cuda.cublaslt-activation"). The fused programs of Tensor::relu and Tensor::gelu_tanh are
// recognised (f32 and bf16) and nothing else is (erf GELU, SiLU, sigmoid, a shifted ReLU, a
// scaled GELU); a product followed by one becomes a cuBLASLt node with the epilogue (with a bias:
// RELU_BIAS / GELU_BIAS), never after C and never followed by C.
#include <gtest/gtest.h>

#if __has_include(<cublasLt.h>) && defined(LUMINAL_HAVE_CUBLASLT)
#include <algorithm>
#include <functional>

#include "cuda/cuda_test_util.hpp"
#include "cuda/lt_util.hpp"
#include "luminal/compiler/build_space.hpp"
#include "luminal/cuda/cublaslt/lt_activation.hpp"
#include "luminal/cuda/cublaslt/lt_matmul.hpp"
#include "luminal/luminal.hpp"
#include "luminal/program/llir_serial.hpp"

namespace luminal {
namespace {

using cuda::LtActivation;

/// The activation recognised in the fused program of f(x) over an input x of dtype t (the
/// program with the fewest kernels: one fused node).
LtActivation activation_of(DType t, const std::function<Tensor(const Tensor&)>& f) {
  Graph g;
  Tensor x = g.tensor("x", {8, 16}, t);
  f(x).output("y");
  testing::CudaRulesOnly rules(true);
  BuiltSpace b = build_search_space(g, rules, g.dim_facts());
  const LlirGraph p = to_llir(*b.space, b.space->fewest_kernels_genome());
  // (relu and gelu_tanh are one fused node; the erf GELU takes three)
  LtActivation found = LtActivation::None;
  for (const LlirNode& n : p.nodes)
    if (const auto* prog = dynamic_cast<const FusedProgram*>(n.attrs.payload.get()))
      if (const LtActivation a = cuda::lt_activation_of(*prog); a != LtActivation::None) {
        EXPECT_EQ(found, LtActivation::None) << p.to_text();
        found = a;
      }
  return found;
}

TEST(LtActivation, RecognisesTheGraphsReluAndTanhGeluOnly) {
  for (DType t : {DType::F32, DType::BF16}) {
    SCOPED_TRACE(std::string(name(t)));
    EXPECT_EQ(activation_of(t, [](const Tensor& x) { return x.relu(); }), LtActivation::Relu);
    EXPECT_EQ(activation_of(t, [](const Tensor& x) { return x.gelu_tanh(); }),
              LtActivation::GeluTanh);
    EXPECT_EQ(activation_of(t, [](const Tensor& x) { return x.gelu(); }), LtActivation::None);
    EXPECT_EQ(activation_of(t, [](const Tensor& x) { return x.silu(); }), LtActivation::None);
    EXPECT_EQ(activation_of(t, [](const Tensor& x) { return x.sigmoid(); }), LtActivation::None);
    EXPECT_EQ(activation_of(t, [](const Tensor& x) { return x.clamp(1.0, 2.0); }),
              LtActivation::None);
    EXPECT_EQ(activation_of(t, [](const Tensor& x) { return x.clamp(-1.0, 0.0); }),
              LtActivation::None);
    EXPECT_EQ(activation_of(t, [](const Tensor& x) { return x.relu() + 1.0; }), LtActivation::None);
    EXPECT_EQ(activation_of(t, [](const Tensor& x) { return x.gelu_tanh() * 1.001; }),
              LtActivation::None);
    // A rounding to FP8 (or f16 in f32) inside is not an activation's: it changes values.
    EXPECT_EQ(activation_of(
                  t, [](const Tensor& x) { return x.cast(DType::F8E4M3).cast(x.dtype()).relu(); }),
              LtActivation::None);
    EXPECT_EQ(
        activation_of(
            t, [](const Tensor& x) { return x.cast(DType::F8E4M3).cast(x.dtype()).gelu_tanh(); }),
        LtActivation::None);
    EXPECT_EQ(activation_of(t, [](const Tensor& x) { return (x - 0.01).relu(); }),
              LtActivation::None);
  }
}

TEST(LtActivation, EvaluatesProgramsInDouble) {
  // 2 x + 1 over a load, with an f32 -> bf16 cast in between (set aside).
  FusedProgram p({{FusedOpcode::Load, DType::F32, 0},
                  {FusedOpcode::Const, DType::F32, -1, -1, -1, 2.0},
                  {FusedOpcode::Mul, DType::F32, 0, 1},
                  {FusedOpcode::Cast, DType::BF16, 2},
                  {FusedOpcode::Const, DType::BF16, -1, -1, -1, 1.0},
                  {FusedOpcode::Add, DType::BF16, 3, 4}});
  EXPECT_EQ(cuda::eval_fused(p, 3.0), 7.0);
  p.insts[3].dtype = DType::I32;  // a cast to an integer: not modelled
  p.insts[4].dtype = DType::I32;
  p.insts[5].dtype = DType::I32;
  EXPECT_FALSE(cuda::eval_fused(p, 3.0));
}

/// The program taking the cuBLASLt node with an activation, then the most inputs, wherever
/// one exists (`row`: the row family's first).
LlirGraph prefer_activation(const Graph& g, bool row = false) {
  testing::CudaRulesOnly rules(true);
  return cuda::testing::prefer(g, rules, [&](const EGraph& eg, ENodeId n) {
    if (!cuda::is_lt_op(eg.node(n).op)) return 0.0;
    const bool act = cuda::lt_epilogue(eg.attrs_of(n)).act != LtActivation::None;
    return 1.0 + (act ? 10.0 : 0.0) + (cuda::testing::lt_row(eg, n) == row ? 0.5 : 0.0) +
           static_cast<double>(eg.node(n).children.size());
  });
}

using cuda::testing::lt_nodes;

TEST(LtRules, ActivationsAfterAProductBecomeEpilogues) {
  for (DType t : {DType::F32, DType::BF16}) {
    SCOPED_TRACE(std::string(name(t)));
    Graph g;
    g.declare_dim("s", 1, 16);
    Tensor x = g.tensor("x", {Expr::var("s"), Expr(128)}, t);
    Tensor w = g.tensor("w", {96, 128}, t);
    Tensor b = g.tensor("b", {96}, t);
    Tensor y = x.matmul(w.transpose(0, 1));
    y.relu().output("relu");
    y.gelu_tanh().output("gelu_tanh");
    (y + b).relu().output("bias_relu");
    (y + b).gelu_tanh().output("bias_gelu");
    y.gelu().output("gelu");  // erf: no epilogue (the plain product)
    const LlirGraph col = prefer_activation(g);
    const std::vector<std::string> got = lt_nodes(col);
    for (const char* want :
         {"cuda.LtMatmul:bg", "cuda.LtMatmul:br", "cuda.LtMatmul:g", "cuda.LtMatmul:r"})
      EXPECT_EQ(std::count(got.begin(), got.end(), want), 1) << want << "\n" << col.to_text();
    EXPECT_EQ(std::count(got.begin(), got.end(), "cuda.LtMatmul:"), t == DType::F32 ? 1 : 2)
        << "(the erf GELU reads the plain product; in bf16 also its f32 product)\n"
        << col.to_text();
    for (const LlirNode& n : col.nodes)
      if (cuda::is_lt_op(n.op)) {
        const cuda::LtEpilogue e = cuda::lt_epilogue(n.attrs);
        const cublasLtEpilogue_t k = cuda::lt_epilogue_kind(e);
        if (e.act == LtActivation::Relu) {
          EXPECT_EQ(k, e.bias ? CUBLASLT_EPILOGUE_RELU_BIAS : CUBLASLT_EPILOGUE_RELU);
        }
        if (e.act == LtActivation::GeluTanh) {
          EXPECT_EQ(k, e.bias ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_GELU);
        }
        if (e.act != LtActivation::None) {
          EXPECT_EQ(n.attrs.dtype, t);  // (bf16: act(x) in 16 bits is the bf16 D's epilogue)
        }
      }
    testing::CudaRulesOnly rules(true);
    EXPECT_EQ(read_llir(write_llir(col), rules).to_text(), col.to_text());
    // The row family takes activations without a bias (in f32 both; a bf16 GELU, computed
    // over the f32 product cast down, only in the column family).
    const std::vector<std::string> row = lt_nodes(prefer_activation(g, true));
    EXPECT_NE(std::find(row.begin(), row.end(), "cuda.LtMatmulRow:r"), row.end())
        << ::testing::PrintToString(row);
    if (t == DType::F32) {
      EXPECT_NE(std::find(row.begin(), row.end(), "cuda.LtMatmulRow:g"), row.end())
          << ::testing::PrintToString(row);
    }
    for (const std::string& n : row)
      EXPECT_EQ(n.find("Row:b"), std::string::npos) << n;
  }
}

// A bias read through a reshape of the product (a fused program's loads keep their producers'
// dims) is not the product's bias: (y.reshape([2s, 48]) + b48).relu() gets no bias epilogue.
TEST(LtRules, ABiasOverAReshapedProductIsNotABias) {
  for (DType t : {DType::F32, DType::BF16}) {
    Graph g;
    g.declare_dim("s", 1, 16);
    const Expr s = Expr::var("s");
    Tensor x = g.tensor("x", {s, Expr(128)}, t);
    Tensor w = g.tensor("w", {96, 128}, t);
    Tensor b = g.tensor("b", {48}, t);
    Tensor y = x.matmul(w.transpose(0, 1)).reshape({s * 2, Expr(48)});
    (y + b).relu().output("y");
    for (const std::string& n : lt_nodes(prefer_activation(g)))
      EXPECT_EQ(n.find('b', n.find(':')), std::string::npos) << name(t) << " " << n;
  }
}

// cuBLASLt adds C before the activation, so relu(x W^T + r) keeps its Add (the product may take
// C, the activation then stays a kernel), and relu(x W^T) + r keeps its Add after the epilogue.
TEST(LtRules, NoActivationWithCAndNothingAddedAfterOne) {
  Graph g;
  g.declare_dim("s", 1, 16);
  Tensor x = g.tensor("x", {Expr::var("s"), Expr(128)});
  Tensor w = g.tensor("w", {96, 128});
  Tensor r = g.tensor("r", {Expr::var("s"), Expr(96)});
  Tensor b = g.tensor("b", {96});
  Tensor y = x.matmul(w.transpose(0, 1));
  (y + r).relu().output("inside");
  (y.relu() + r).output("after");
  (y.relu() + b).output("bias_after");
  for (const std::string& n : lt_nodes(prefer_activation(g))) {
    const std::string e = n.substr(n.find(':') + 1);
    const bool act = e.find('r') != std::string::npos;
    EXPECT_FALSE(act && (e.find('c') != std::string::npos || e.find('b') != std::string::npos))
        << n;
  }
}

}  // namespace
}  // namespace luminal
#else
TEST(LtActivation, NoCublasLtHeader) { GTEST_SKIP() << "built without cublasLt.h"; }
#endif
