#pragma once
// Seeded random graphs over the Tensor API, for equivalence fuzzing (a compiled program against
// the ReferenceRuntime).
//
//   FuzzGraph fg = random_graph(seed);
//   for (const DynMap& dyn : fg.dyn_points)
//     for (const FuzzInput& in : fg.inputs) HostBuffer b = make_input_data(in, dyn, data_seed);
//
// A graph mixes elementwise chains (unary and binary, where/comparisons/masked_fill), broadcasts
// (rows, columns, scalars, earlier values of broadcastable shapes), inputs read permuted, tiled
// or with a step, permutes and reshapes, reductions (sum/max/min/mean, and contractions: the sum
// of a product, matmul-like with any views), matmuls (2-D, batched, transposed operands, over
// the dynamic dim, by a vector), gathers (index_select, embedding, gather_elements) and row
// scatters with in-range indexes (distinct ones for scatters; some into a carried state input,
// so the scatter may run in place), slices/concat/pad/repeat/expand, softmax, argmax/argmin,
// cumsum, fmod, and casts. Most graphs are f32; some are f64, f16/bf16 or integer. Most use a
// dynamic dim `s` (declared [1, 8]) at 2-3 values; ~15% are large (8k-50k elements, s up to
// 256) to cross the kernels' block and threading thresholds.
//
// Values stay well-conditioned: the generator tracks an interval bounding every value and an
// absolute error bound (in units of the dtype's epsilon) that grows with each op by its Lipschitz
// constant on the interval plus a few roundings (sqrt(k) of them for a sum of k terms). Ops with
// a restricted domain (log, sqrt, reciprocal, division) first map their operand into [0.5, 2];
// exp gets a bounded operand; comparisons, argmax, fmod, float->int and narrowing casts only
// read exactly computed values, so no discontinuity can split two correct implementations. The
// bound is what the equivalence test compares with.
//
// The generator is compiled once, in the luminal_test_support library (random_graph.cpp and
// random_graph_ops.cpp; tests/CMakeLists.txt links it).
#include <cstdint>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "luminal/ir/graph.hpp"
#include "luminal/ir/tensor.hpp"
#include "luminal/runtime/host_buffer.hpp"

namespace luminal::testing {

/// One input of a fuzz graph and how its data is made.
struct FuzzInput {
  std::string label;
  DType dtype = DType::F32;
  Shape shape;
  double lo = -1, hi = 1;        // uniform range (floats); inclusive range (integers); block
                                 // types get valid random blocks (blocks::fill_valid_blocks)
  std::optional<Expr> index_hi;  // integers uniform in [0, index_hi(dyn)] (in-range indexes)
  /// Overrides the above: the `n` values of the input at these dims.
  std::function<std::vector<double>(const DynMap& dyn, int64_t n, std::mt19937_64& rng)> fill;
};

/// One output and its tolerance: |got - want| <= epsilon(dtype) * (err + rtol_eps * |want|).
/// Integer and Bool outputs compare exactly.
struct FuzzOutput {
  std::string label;
  DType dtype = DType::F32;
  double err = 0;       // absolute error bound, in units of epsilon(dtype)
  double rtol_eps = 4;  // relative part, in units of epsilon(dtype)
};

struct FuzzGraph {
  std::string name;
  uint64_t seed = 0;
  Graph graph;
  std::vector<FuzzInput> inputs;
  std::vector<FuzzOutput> outputs;
  /// Where the graph is run: several values of its dynamic dims ({} once for static graphs).
  std::vector<DynMap> dyn_points{DynMap{}};
  /// What the generator built, one op a line (for failure messages).
  std::string recipe;
};

/// The data of `in` at `dyn`, deterministic in `seed`.
HostBuffer make_input_data(const FuzzInput& in, const DynMap& dyn, uint64_t seed);

/// `n` distinct values in [0, hi] in random order (n <= hi + 1): scatter targets.
std::vector<double> distinct_indexes(int64_t n, int64_t hi, std::mt19937_64& rng);

/// A random graph, deterministic in `seed` (see the file comment).
FuzzGraph random_graph(uint64_t seed);
/// A random float graph with one mixture-of-experts matmul among its ops (nn::expert_linear: rows
/// of a stacked [E, N, D] weight picked by expert ids, what cpu.ExpertMatmul runs).
FuzzGraph random_expert_graph(uint64_t seed);

namespace detail {

inline std::vector<Dim> dims_of(const Shape& s) { return std::vector<Dim>(s.begin(), s.end()); }

}  // namespace detail

}  // namespace luminal::testing
