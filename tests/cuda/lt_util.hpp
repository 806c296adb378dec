#pragma once
// Shared by the cuBLASLt suites (GPU: lt_test.cpp, lt_epilogue_test.cpp, lt_fp8_test.cpp,
// lt_external_test.cpp, lt_islands_test.cpp; CI: lt_rule_test.cpp, lt_activation_test.cpp):
// cuBLASLt or a skip, a backend with cuBLASLt on each executor, programs that take the cuBLASLt
// nodes a score prefers, their cuBLASLt nodes as text, attention's two products whose operands
// need 16-bit copies, input values, and a plan run beside the reference runtime.
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "cuda/cuda_test_util.hpp"
#include "luminal/compiler/build_space.hpp"
#include "luminal/cuda/cublaslt/lt_api.hpp"
#include "luminal/cuda/cublaslt/lt_matmul.hpp"
#include "luminal/luminal.hpp"
#include "support/llir_direct.hpp"

namespace luminal::cuda::testing {

inline const LtApi* lt_or_skip() {
  std::string why;
  const LtApi* lt = lt_api(&why);
  if (!lt) std::printf("[lt] %s\n", why.c_str());
  return lt;
}

/// A backend with cuBLASLt in the search, on the given executor, doing `nd` at new dims (one per
/// executor and choice, kept until exit). Capture: the suites of the recapture itself.
inline CudaBackend& lt_backend(CudaOptions::Executor e,
                               CudaOptions::NewDims nd = CudaOptions::NewDims::Stream) {
  static CudaBackend* made[2][2] = {};
  CudaBackend*& b = made[e == CudaOptions::Executor::Graph][nd == CudaOptions::NewDims::Stream];
  if (!b) {
    CudaOptions o;
    o.cublaslt = true;
    o.executor = e;
    o.new_dims = nd;
    b = new CudaBackend(o);
  }
  return *b;
}

using luminal::testing::prefer;

/// `g`'s program on `be` taking a cuBLASLt op wherever one is offered.
inline LlirGraph prefer_lt(const Graph& g, Backend& be) {
  return prefer(g, be,
                [](const EGraph& eg, ENodeId n) { return is_lt_op(eg.node(n).op) ? 1.0 : 0.0; });
}

/// Whether e-node `id` is a cuBLASLt node of the row family.
inline bool lt_row(const EGraph& eg, ENodeId id) {
  return eg.node(id).op->name == std::string_view("cuda.LtMatmulRow");
}

/// Whether e-node `id` is a cuBLASLt node reading FP8 operands.
inline bool lt_reads_fp8(const EGraph& eg, ENodeId id) {
  const ENode& n = eg.node(id);
  if (!is_lt_op(n.op)) return false;
  const DType t = eg.dtype(n.children[0]);
  return t == DType::F8E4M3 || t == DType::F8E5M2;
}

/// The cuBLASLt nodes of `p` as "op:epilogue" (epilogue "" for a plain product), in program order.
inline std::vector<std::string> lt_nodes(const LlirGraph& p) {
  std::vector<std::string> out;
  for (const LlirNode& n : p.nodes)
    if (is_lt_op(n.op))
      out.push_back(std::string(n.op->name) + ":" + lt_epilogue(n.attrs).serialize());
  return out;
}

/// `n` input values, scale * sin(salt * (i + 1)).
inline std::vector<double> values(size_t n, double salt, double scale = 1.0) {
  std::vector<double> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = scale * std::sin(salt * static_cast<double>(i + 1));
  return v;
}

/// The cuBLASLt nodes of `p`.
inline int lt_count(const LlirGraph& p) {
  int n = 0;
  for (const LlirNode& node : p.nodes)
    n += is_lt_op(node.op);
  return n;
}

/// Two products with a kernel between, in `t`, s in [1, 16]: "y" = x [s, 128] @ w [96, 128]^T
/// and "z" = exp(0.05 y) @ v [32, 96]^T.
inline Graph two_products(DType t) {
  Graph g;
  g.declare_dim("s", 1, 16);
  Tensor x = g.tensor("x", {Expr::var("s"), Expr(128)}, t);
  Tensor w = g.tensor("w", {96, 128}, t);
  Tensor v = g.tensor("v", {32, 96}, t);
  Tensor y = x.matmul(w.transpose(0, 1));
  ((y * 0.05).exp()).matmul(v.transpose(0, 1)).output("z");
  y.output("y");
  return g;
}

/// Attention's two products whose 16-bit operands are no single gemm as they stand (bf16, s in
/// [1, 16]): "scores" = Q K^T with Q the heads of q [s, 4, 16] regrouped over 2 KV heads (a
/// permuted view) and K broadcast over the groups; "proj" = o @ w^T with o [2, 2, s, 16] permuted
/// and merged to [s, 64] (attention's output before o_proj).
inline Graph attention_products() {
  Graph g;
  g.declare_dim("s", 1, 16);
  const Expr s = Expr::var("s");
  Tensor q = g.tensor("q", {s, Expr(4), Expr(16)}, DType::BF16);
  Tensor k = g.tensor("k", {2, 24, 16}, DType::BF16);
  Tensor o = g.tensor("o", {Expr(2), Expr(2), s, Expr(16)}, DType::BF16);
  Tensor w = g.tensor("w", {48, 64}, DType::BF16);
  const Tensor Q = q.reshape({s, Expr(2), Expr(2), Expr(16)}).permute({1, 2, 0, 3});
  const Tensor K = k.reshape({2, 1, 24, 16}).expand({2, 2, 24, 16});
  Q.matmul(K.transpose(2, 3)).output("scores");
  o.permute({2, 0, 1, 3}).reshape({s, Expr(64)}).matmul(w.transpose(0, 1)).output("proj");
  return g;
}

/// Whether cuBLASLt e-node `id` reads both operands in 16 bits.
inline bool lt_reads_16_bits(const EGraph& eg, ENodeId id) {
  const ENode& n = eg.node(id);
  if (!is_lt_op(n.op)) return false;
  for (int k = 0; k < 2; ++k) {
    const DType t = eg.dtype(n.children[static_cast<size_t>(k)]);
    if (t != DType::BF16 && t != DType::F16) return false;
  }
  return true;
}

struct Compared {
  std::vector<double> got, want;
};

/// `g` on the reference runtime and plan `lp` over the same inputs `in` at dims `dyn`, each input
/// handed to the plan in `dtype_of(name)`: each of `outputs` as (plan, reference) values.
inline std::map<std::string, Compared> run_with_reference(
    const Graph& g, luminal::testing::LoadedPlan& lp,
    const std::map<std::string, std::vector<double>>& in,
    const std::function<DType(const std::string&)>& dtype_of, const DynMap& dyn,
    const std::vector<std::string>& outputs) {
  ReferenceRuntime rt(g);
  luminal::testing::BufferMap host;
  for (const auto& [nm, v] : in) {
    rt.set(nm, v);
    host[nm] = to_host_buffer(v.data(), v.size(), dtype_of(nm), nm);
  }
  rt.execute(dyn);
  const luminal::testing::PlanRun run = luminal::testing::run_plan(lp, host, dyn);
  std::map<std::string, Compared> out;
  for (const std::string& o : outputs)
    out[o] = {from_host_buffer<double>(run.outputs.at(o), o, "double"), rt.get<double>(o)};
  return out;
}

}  // namespace luminal::cuda::testing
