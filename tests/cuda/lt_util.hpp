#pragma once
// Shared by the cuBLASLt GPU suites (lt_test.cpp, lt_epilogue_test.cpp): cuBLASLt or a skip, a
// backend with cuBLASLt on each executor, and programs that take cuBLASLt nodes where offered.
#include <cstdio>
#include <functional>
#include <string>

#include "luminal/compiler/build_space.hpp"
#include "luminal/cuda/cublaslt/lt_api.hpp"
#include "luminal/cuda/cublaslt/lt_matmul.hpp"
#include "luminal/luminal.hpp"

namespace luminal::cuda::testing {

inline const LtApi* lt_or_skip() {
  std::string why;
  const LtApi* lt = lt_api(&why);
  if (!lt) std::printf("[lt] %s\n", why.c_str());
  return lt;
}

/// A backend with cuBLASLt in the search, on the given executor (one per executor, kept until
/// exit).
inline CudaBackend& lt_backend(CudaOptions::Executor e) {
  static CudaBackend* graph = nullptr;
  static CudaBackend* stream = nullptr;
  CudaBackend*& b = e == CudaOptions::Executor::Graph ? graph : stream;
  if (!b) {
    CudaOptions o;
    o.cublaslt = true;
    o.executor = e;
    b = new CudaBackend(o);
  }
  return *b;
}

/// `g`'s program on `be` choosing, in every class, the e-node `score` rates highest.
inline LlirGraph prefer(const Graph& g, Backend& be,
                        const std::function<double(const EGraph&, ENodeId)>& score) {
  BuiltSpace b = build_search_space(g, be, g.dim_facts());
  const EGraph& eg = b.space->egraph();
  return to_llir(*b.space, b.space->best_scoring_genome([&](ENodeId n) { return score(eg, n); }));
}

/// `g`'s program on `be` taking a cuBLASLt op wherever one is offered.
inline LlirGraph prefer_lt(const Graph& g, Backend& be) {
  return prefer(g, be,
                [](const EGraph& eg, ENodeId n) { return is_lt_op(eg.node(n).op) ? 1.0 : 0.0; });
}

}  // namespace luminal::cuda::testing
