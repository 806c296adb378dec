#pragma once
// Helpers for the tests of the rule-driven CPU ops (fused, matmul, scatter in place): random
// data, reference runs, comparisons (bitwise or with a tolerance), and programs that pick given
// ops out of a saturated, pruned e-graph.
//
//   BuiltSpace b = build_search_space(g, cpu, {});
//   LlirGraph p = opstest::choose(b, opstest::prefer_op("cpu.Fused"));
//   opstest::check_program(g, p, {{{"s", 3}}}, exact_tol);
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "luminal/compiler/build_space.hpp"
#include "luminal/cpu/cpu_backend.hpp"
#include "luminal/cpu/cpu_op.hpp"
#include "luminal/cpu/fused.hpp"
#include "luminal/luminal.hpp"
#include "support/check.hpp"
#include "support/llir_direct.hpp"
#include "support/random_buffer.hpp"

namespace luminal::opstest {

using testing::BufferMap;
using testing::random_buffer;
using testing::Tol;

/// Exact comparison: floats bit for bit (any NaN matches any NaN), integers equal.
inline constexpr Tol kExact{0, 0};

/// Random buffers for every input of g at `dyn` (per-label overrides of the range in `ranges`).
inline BufferMap random_inputs(const Graph& g, const DynMap& dyn, uint64_t seed, double lo = -4,
                               double hi = 4) {
  BufferMap m;
  for (NodeId id : g.inputs()) {
    const Node& n = g.node(id);
    m[n.label] = random_buffer(n.dtype, numel(n.shape).eval(dyn),
                               seed * 1000 + static_cast<uint64_t>(id), lo, hi);
  }
  return m;
}

/// Every output of g on the ReferenceRuntime.
inline BufferMap run_reference(const Graph& g, const BufferMap& in, const DynMap& dyn) {
  ReferenceRuntime rt(g);
  for (const auto& [label, buf] : in)
    rt.set_bytes(label, buf.bytes.data(), buf.bytes.size());
  rt.execute(dyn);
  BufferMap out;
  for (NodeId o : g.outputs()) {
    const Node& n = g.node(o);
    out[n.label] =
        HostBuffer{n.dtype, rt.get_bytes(Tensor(g, o, View::contiguous(n.shape), n.dtype))};
  }
  return out;
}

/// got against want: within tol (kExact: bit for bit); reports at most 5 elements.
inline void expect_same(const HostBuffer& got, const HostBuffer& want, Tol tol,
                        const std::string& what) {
  ASSERT_EQ(name(got.dtype), name(want.dtype)) << what;
  ASSERT_EQ(got.bytes.size(), want.bytes.size()) << what;
  if (is_block(want.dtype)) {  // stored blocks: byte for byte
    EXPECT_EQ(got.bytes, want.bytes) << what;
    return;
  }
  const bool exact = tol.rtol == 0 && tol.atol == 0;
  const int es = size_bytes(want.dtype);
  int failures = 0;
  for (int64_t i = 0; i < want.numel() && failures < 5; ++i) {
    bool ok;
    double a, b;
    if (is_float(want.dtype)) {
      a = load_as_double(got.dtype, got.bytes.data(), i);
      b = load_as_double(want.dtype, want.bytes.data(), i);
      if (std::isnan(b))
        ok = std::isnan(a);
      else if (exact)
        ok = std::memcmp(got.bytes.data() + i * es, want.bytes.data() + i * es, es) == 0;
      else if (std::isinf(b))
        ok = a == b;
      else
        ok = std::fabs(a - b) <= tol.atol + tol.rtol * std::fabs(b);
    } else {
      a = static_cast<double>(load_as_int64(got.dtype, got.bytes.data(), i));
      b = static_cast<double>(load_as_int64(want.dtype, want.bytes.data(), i));
      ok = load_as_int64(got.dtype, got.bytes.data(), i) ==
           load_as_int64(want.dtype, want.bytes.data(), i);
    }
    if (!ok) {
      ++failures;
      ADD_FAILURE() << what << " [" << i << "]: cpu " << a << ", reference " << b;
    }
  }
}

/// Scores an option of a class (higher is preferred; the first best wins).
using Score = std::function<double(const EGraph&, ENodeId)>;

/// Prefers e-nodes of the op named `op` (and, for cpu.Fused, regions computing more ops, then
/// reading fewer inputs).
inline Score prefer_op(std::string op) {
  return [op](const EGraph& eg, ENodeId n) -> double {
    if (eg.node(n).op->name != op) return 0;
    if (const auto* p = dynamic_cast<const FusedProgram*>(eg.attrs_of(n).payload.get())) {
      double ops = 0;  // ops computed (loads and constants not counted)
      for (const FusedInst& i : p->insts)
        ops += i.op != FusedOpcode::Load && i.op != FusedOpcode::Const;
      // on ties, fewer external inputs
      return 1 + ops + 0.01 * (kFusedMaxChildren - static_cast<double>(eg.node(n).children.size()));
    }
    return 1;
  };
}

/// A genome choosing, for every gene, the value whose options score highest over its classes.
inline Genome choose_genome(const SearchSpace& space, const Score& score) {
  return space.best_scoring_genome([&](ENodeId n) { return score(space.egraph(), n); });
}

inline LlirGraph choose(const BuiltSpace& b, const Score& score) {
  return to_llir(*b.space, choose_genome(*b.space, score));
}

/// Number of LLIR nodes of an op.
inline int count_op(const LlirGraph& p, const std::string& op) {
  auto mix = p.op_mix();
  auto it = mix.find(op);
  return it == mix.end() ? 0 : it->second;
}

/// Runs `program` (a choice for g) on the CPU backend at each dyn map and compares every output
/// with the reference.
inline void check_program(const Graph& g, const LlirGraph& program, const std::vector<DynMap>& dyns,
                          Tol tol, const std::string& what, int threads = 2, uint64_t seed = 1,
                          double lo = -4, double hi = 4) {
  cpu::CpuBackend cpu(threads);
  auto exe = testing::load_plan(cpu, program, dyns);
  for (const DynMap& dyn : dyns) {
    std::string at = what;
    for (const auto& [k, v] : dyn)
      at += " " + k + "=" + std::to_string(v);
    BufferMap in = random_inputs(g, dyn, seed, lo, hi);
    BufferMap want = run_reference(g, in, dyn);
    BufferMap got = testing::run_executable(exe, g, in, dyn);
    for (const auto& [label, buf] : want)
      expect_same(got.at(label), buf, tol, at + " output " + label + "\n" + program.to_text());
  }
}

/// Every e-node of `op` in the e-graph that is not removed.
inline std::vector<ENodeId> live_nodes_of(const EGraph& eg, const OpDef* op) {
  std::vector<ENodeId> out;
  for (ENodeId n : eg.nodes_with_op(op))
    if (!eg.is_removed(n)) out.push_back(n);
  return out;
}

}  // namespace luminal::opstest

namespace luminal::opstest {

/// Runs one node's kernel directly (no executable): `in` are the node's input buffers; the
/// output (numel of attrs.shape at dyn) starts as `init` when given, zeros otherwise.
inline HostBuffer run_kernel(const OpDef* op, const Attrs& attrs,
                             const std::vector<const HostBuffer*>& in, const DynMap& dyn = {},
                             int threads = 2, const HostBuffer* init = nullptr) {
  LlirNode n;
  n.op = op;
  n.attrs = attrs;
  for (size_t i = 0; i < in.size(); ++i) {  // inputs as if produced by earlier nodes
    n.inputs.push_back(static_cast<int>(i));
    n.input_dtypes.push_back(in[i]->dtype);
  }
  const cpu::CpuOp* cop = cpu::find_cpu_op(op);
  if (!cop) throw Error("no CPU op " + std::string(op->name));
  auto kernel = cop->make(n);
  const int64_t count = numel(attrs.shape).eval(dyn);
  HostBuffer o =
      init ? *init
           : HostBuffer{attrs.dtype,
                        std::vector<uint8_t>(static_cast<size_t>(count * size_bytes(attrs.dtype)))};
  std::vector<const uint8_t*> ptrs;
  for (const HostBuffer* b : in)
    ptrs.push_back(b->bytes.data());
  cpu::KernelContext k{n, dyn, 1, ptrs, o.bytes.data(), threads};
  kernel->run(k);
  return o;
}

/// The OpDef of a registered CPU op by name.
inline const OpDef* cpu_op_named(std::string_view name) {
  for (const cpu::CpuOp* op : cpu::cpu_ops())
    if (op->def->name == name) return op->def;
  throw Error("no CPU op named " + std::string(name));
}

}  // namespace luminal::opstest
