#pragma once
// Helpers of the CUDA tests: a Backend that has the CUDA rules and ops but no device (CI builds
// CUDA search spaces and compiles their kernels with NVRTC on machines without a GPU), and the
// skip every GPU suite starts with.
//
//   LUMINAL_REQUIRE_GPU();                       // GTEST_SKIP() with the reason, without a GPU
//   LUMINAL_REQUIRE_NVRTC();                     // the same without NVRTC (host compile tests)
//   testing::CudaRulesOnly rules;                // for build_search_space
//   cuda::CudaBackend& gpu = testing::gpu();     // one backend per test process
//   testing::add_kernels(program, testing::spec_of(facts), sources, whats);
//   testing::expect_compiles(sources, "a kernel"); // NVRTC for sm_90, as a search would
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "luminal/compiler/build_space.hpp"
#include "luminal/core/error.hpp"
#include "luminal/cuda/compile_batch.hpp"
#include "luminal/cuda/cuda_backend.hpp"
#include "luminal/cuda/nvrtc.hpp"
#include "luminal/kernels/fused_program.hpp"
#include "luminal/program/backend.hpp"

namespace luminal::testing {

/// The CUDA backend's rules without a device (with the cuBLASLt alternatives when asked); load()
/// and memory throw.
class CudaRulesOnly : public Backend {
 public:
  explicit CudaRulesOnly(bool cublaslt = false) : cublaslt_(cublaslt) {}
  std::string name() const override { return "cuda"; }
  std::vector<RuleSet> rulesets() const override { return cuda::cuda_rulesets(cublaslt_); }
  bool executes(const OpDef* op) const override { return cuda::cuda_executes(op); }
  double seed_path_weight() const override { return cuda::cuda_seed_path_weight(); }
  std::unique_ptr<Plan> load(const LlirGraph&, const PlanSpec&) override {
    throw Error("CudaRulesOnly cannot load programs");
  }
  std::string device_key() const override { return "cuda rules only"; }
  const OpDef* op_named(std::string_view n) const override {
    if (const OpDef* op = cuda::cuda_op_named(n)) return op;
    return Backend::op_named(n);
  }
  std::shared_ptr<const Payload> read_payload(std::string_view k,
                                              std::string_view t) const override {
    if (auto p = cuda::cuda_read_payload(k, t)) return p;
    return Backend::read_payload(k, t);
  }
  Buffer allocate(uint64_t) override { throw Error("CudaRulesOnly has no memory"); }
  void release(Buffer) override {}
  void upload(Buffer, uint64_t, const void*, uint64_t, Queue* = nullptr) override {}
  void download(void*, Buffer, uint64_t, uint64_t, Queue* = nullptr) override {}
  void copy(Buffer, Buffer, uint64_t, Queue* = nullptr) override {}
  void sync(Queue* = nullptr) override {}

 private:
  bool cublaslt_;
};

/// Why the GPU suites skip here ("" when a GPU is usable).
inline const std::string& gpu_missing() {
  static const std::string why = [] {
    std::string w;
    return cuda::cuda_available(&w) ? std::string() : w;
  }();
  return why;
}

/// The process's CUDA backend (created on first use; requires a GPU).
inline cuda::CudaBackend& gpu() {
  static cuda::CudaBackend* b = new cuda::CudaBackend();  // lives until exit
  return *b;
}

/// `g`'s program on `be` (a CudaBackend, or CudaRulesOnly without a GPU) choosing, in every
/// class, the e-node `score` rates highest.
inline LlirGraph prefer(const Graph& g, Backend& be,
                        const std::function<double(const EGraph&, ENodeId)>& score) {
  BuiltSpace b = build_search_space(g, be, g.dim_facts());
  const EGraph& eg = b.space->egraph();
  return to_llir(*b.space, b.space->best_scoring_genome([&](ENodeId n) { return score(eg, n); }));
}

/// `g`'s fewest-kernels program (the search's seed) over the CUDA rules, no device needed.
inline LlirGraph cuda_seed_program(const Graph& g) {
  CudaRulesOnly rules;
  BuiltSpace b = build_search_space(g, rules, g.dim_facts());
  return to_llir(*b.space, b.space->fewest_kernels_genome());
}

/// A program's kernels: its LLIR nodes other than inputs and outputs.
inline size_t kernel_count(const LlirGraph& l) {
  size_t n = 0;
  for (const auto& [op, count] : l.op_mix())
    n += static_cast<size_t>(count);
  return n;
}

/// `g`'s program on `be` with the most e-nodes whose op name `hit` accepts, and how many of its
/// nodes it accepts.
inline std::pair<LlirGraph, int> prefer_ops(const Graph& g, Backend& be,
                                            const std::function<bool(std::string_view)>& hit) {
  LlirGraph l = prefer(
      g, be, [&](const EGraph& eg, ENodeId n) { return hit(eg.node(n).op->name) ? 1.0 : 0.0; });
  int n = 0;
  for (const LlirNode& node : l.nodes)
    n += hit(node.op->name);
  return {std::move(l), n};
}

/// prefer_ops, where each accepted e-node scores one more for every child that is not f32: the
/// program reads 16-bit operands directly where an accepted op can (not through the graph's casts
/// up to f32, which would run as cast kernels).
/// With `avoid`, e-nodes it accepts score below every other (the program takes them only where a
/// class has nothing else).
inline std::pair<LlirGraph, int> prefer_ops_16(
    const Graph& g, Backend& be, const std::function<bool(std::string_view)>& hit,
    const std::function<bool(std::string_view)>& avoid = nullptr) {
  LlirGraph l = prefer(g, be, [&](const EGraph& eg, ENodeId id) {
    const ENode& node = eg.node(id);
    if (avoid && avoid(node.op->name)) return -1.0;
    if (!hit(node.op->name)) return 0.0;
    double s = 1;
    for (ClassId c : node.children)
      s += eg.dtype(c) != DType::F32 ? 1 : 0;
    return s;
  });
  int n = 0;
  for (const LlirNode& node : l.nodes)
    n += hit(node.op->name);
  return {std::move(l), n};
}

/// The plan spec of a graph's dim facts: every dim named, in the facts' order.
inline PlanSpec spec_of(const Facts& facts) {
  PlanSpec spec{facts, {}};
  for (const auto& [name, range] : facts)
    spec.dim_names.push_back(name);
  return spec;
}

/// Appends program `l`'s generated kernels under `spec`: their sources and names.
inline void add_kernels(const LlirGraph& l, const PlanSpec& spec, std::vector<std::string>& sources,
                        std::vector<std::string>& whats) {
  for (cuda::GeneratedKernel& k : cuda::generate_kernels(l, spec)) {
    sources.push_back(std::move(k.source));
    whats.push_back(std::move(k.what));
  }
}

/// Compiles `sources` (each named by its `whats` entry) for sm_90 through the backend's batching
/// on 2 threads, as a search would, and expects every source in a batch; NVRTC's error fails the
/// test (then the result has no batches).
inline cuda::CompiledBatches expect_compiles(const std::vector<std::string>& sources,
                                             const std::vector<std::string>& whats) {
  cuda::CompiledBatches c;
  try {
    c = cuda::compile_batched(sources, whats, "sm_90", 2);
  } catch (const std::exception& e) {
    ADD_FAILURE() << e.what();
    return {};
  }
  EXPECT_EQ(c.batch_of.size(), sources.size());
  return c;
}

/// The same, every source named `what`.
inline cuda::CompiledBatches expect_compiles(const std::vector<std::string>& sources,
                                             const std::string& what) {
  return expect_compiles(sources, std::vector<std::string>(sources.size(), what));
}

}  // namespace luminal::testing

/// GTEST_SKIP() with the reason where NVRTC cannot be loaded (host tests that compile kernels).
#define LUMINAL_REQUIRE_NVRTC()                                                 \
  do {                                                                          \
    std::string lmn_why_;                                                       \
    if (!::luminal::cuda::nvrtc_available(&lmn_why_)) GTEST_SKIP() << lmn_why_; \
  } while (0)

#define LUMINAL_REQUIRE_GPU()                                          \
  do {                                                                 \
    if (!::luminal::testing::gpu_missing().empty())                    \
      GTEST_SKIP() << "no GPU: " << ::luminal::testing::gpu_missing(); \
  } while (0)
