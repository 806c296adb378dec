#pragma once
// The random graph generator of random_graph.hpp (internal to the luminal_test_support library:
// random_graph.cpp holds its setup, inputs, operands and outputs, random_graph_ops.cpp its ops).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "support/random_graph.hpp"

namespace luminal::testing::detail {

/// Builds one random graph (see random_graph.hpp).
class RandomGraphBuilder {
 public:
  /// `expert`: the graph has one expert op (random_expert_graph).
  explicit RandomGraphBuilder(uint64_t seed, bool expert = false)
      : rng_(seed * 0x9E3779B97F4A7C15ULL + 0x1234567ULL + (expert ? 0xE8E8E8E8ULL : 0)),
        expert_(expert) {
    fg_.seed = seed;
  }

  FuzzGraph build();

 private:
  struct Val {
    Tensor t;
    double lo = 0, hi = 0;  // bounds of the values
    double err = 0;         // absolute error bound in units of epsilon(dtype); 0: exact
    double mag() const { return std::max(std::fabs(lo), std::fabs(hi)); }
    bool exact() const { return err == 0; }
    const Shape& shape() const { return t.shape(); }
    int rank() const { return t.rank(); }
  };

  // Roundings charged per op (composite ops are several primitives). Errors coming in propagate
  // with the op's Lipschitz constant (k times for a sum of k terms); the roundings of a sum or a
  // matmul of k terms count sqrt(k) times (rtol = eps * sqrt(k), the project tolerance for
  // matmuls).
  static constexpr double kRound = 3;

  // ---------------------------------------------------------------- randomness and dims
  int uniform(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  bool chance(double p) { return std::uniform_real_distribution<double>(0, 1)(rng_) < p; }
  double real(double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng_); }
  bool is_int() const { return !is_float(dt_); }

  int64_t dmax(const Expr& e) const;
  int64_t dmin(const Expr& e) const;
  int64_t max_numel(const Shape& s) const { return dmax(numel(s)); }

  void log(const std::string& line) { fg_.recipe += line + "\n"; }
  static std::string str(const Shape& s) { return shape_to_string(s); }

  // ---------------------------------------------------------------- inputs
  std::string next_label(const char* prefix) { return prefix + std::to_string(fg_.inputs.size()); }

  Val new_input(const Shape& shape, bool positive = false);

  /// An input read as `shape`: sometimes stored with its axes permuted, tiled or strided (read
  /// through a view).
  Val new_full_input(const Shape& shape);

  Tensor index_input(const Shape& shape, const Expr& hi);

  // ---------------------------------------------------------------- operands
  Val pick_operand();

  /// A value that broadcasts against `a`: an earlier value (same or broadcastable shape, bigger
  /// ones only where `may_be_bigger`) or a fresh input (full, row, column) or a scalar.
  Val partner(const Val& a, bool need_exact = false, bool may_be_bigger = true);

  /// Whether shape `from` broadcasts to `to` (numpy rules, `to` unchanged).
  static bool broadcasts(const Shape& from, const Shape& to);

  /// Values in [0.5, 2] (floats) for log / sqrt / reciprocal / division.
  Val positive(const Val& v);

  /// Values within [-m, m].
  Val bounded(const Val& v, double m);

  /// Keeps magnitudes small after an op that grows them.
  Val normalized(const Val& v);

  static double sigmoid(double x) { return 1 / (1 + std::exp(-x)); }

  // ---------------------------------------------------------------- ops
  Val random_op(const Val& a);

  Val unary(const Val& a);

  Val binary(const Val& a);

  /// A Bool condition broadcastable to `shape`, from comparisons of exact values.
  Tensor condition(const Val& a);

  Val where_op(const Val& a);

  Val reduce(const Val& in);

  Val matmul_of(const Val& x, const Val& y, const Tensor& t, const Expr& k,
                const std::string& what);

  Val matmul(const Val& a);

  Val gather(const Val& a);
  /// The mixture-of-experts matmul (nn::expert_linear) over `a`'s rows.
  Val expert(const Val& a);

  /// An I32 input of `len` distinct row indexes in [0, rows).
  Tensor distinct_rows_input(const Expr& len, const Expr& rows);

  Val scatter(const Val& a);

  Val movement(const Val& a);

  static std::vector<std::pair<Dim, Dim>> pad_last(int rank);

  /// softmax, argmax/argmin, cumsum, fmod, float -> int -> float, repeat.
  Val misc(const Val& a);

  Val cast_op(const Val& a);

  // ---------------------------------------------------------------- outputs
  void choose_outputs();

  std::mt19937_64 rng_;
  FuzzGraph fg_;
  DType dt_ = DType::F32;
  bool dyn_ = false;
  bool large_ = false;
  bool expert_ = false;                // build() draws one expert op (random_expert_graph)
  std::vector<Val> pool_;              // inputs and produced values
  std::vector<Val> produced_;          // values made by ops
  std::vector<Tensor> bools_;          // conditions
  std::vector<Tensor> extra_outputs_;  // integer results read directly (argmax)
};

}  // namespace luminal::testing::detail
