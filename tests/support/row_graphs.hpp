#pragma once
// Test helper: the row ops the row rule (kernels/row_rule.hpp) and the CPU's cpu.Row are tested
// on, as graphs y = op(x) over a shape whose last dim is the row (tests/kernels/row_rule_test,
// tests/cpu/row_test).
//
//   for (RowKind k : kRowKinds) { Graph g = row_graph(k, DType::F32, {"s", 33}, 4, 1024); ... }
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "luminal/luminal.hpp"

namespace luminal::testing {

enum class RowKind { Softmax, LogSoftmax, RmsNorm, LayerNorm, MaskedSoftmax, ResidualRmsNorm };
inline constexpr RowKind kRowKinds[] = {RowKind::Softmax,       RowKind::LogSoftmax,
                                        RowKind::RmsNorm,       RowKind::LayerNorm,
                                        RowKind::MaskedSoftmax, RowKind::ResidualRmsNorm};

inline std::string row_kind_name(RowKind k) {
  const char* names[] = {"Softmax",   "LogSoftmax",    "RmsNorm",
                         "LayerNorm", "MaskedSoftmax", "ResidualRmsNorm"};
  return names[static_cast<int>(k)];
}

/// The graph y = op(x) over `shape` (last dim L), with inputs x, w, b, r (a residual) and m (a
/// Bool mask) as the op needs them; dims s in [1, s_max] and c in [1, c_max] declared.
inline Graph row_graph(RowKind k, DType t, const std::vector<Dim>& shape, int64_t s_max,
                       int64_t c_max) {
  Graph g;
  g.declare_dim("s", 1, s_max);
  g.declare_dim("c", 1, c_max);
  const Dim L = shape.back();
  Tensor x = g.tensor("x", shape, t);
  Tensor y;
  switch (k) {
    case RowKind::Softmax: y = x.softmax(-1); break;
    case RowKind::LogSoftmax: y = x.log_softmax(-1); break;
    case RowKind::RmsNorm: y = x.rms_norm(g.tensor("w", {L}, t), 1e-5); break;
    case RowKind::LayerNorm:
      y = x.layer_norm(g.tensor("w", {L}, t), g.tensor("b", {L}, t), 1e-5);
      break;
    case RowKind::MaskedSoftmax:
      y = x.masked_fill(g.tensor("m", shape, DType::Bool), -std::numeric_limits<double>::infinity())
              .softmax(-1);
      break;
    case RowKind::ResidualRmsNorm:
      y = (x + g.tensor("r", shape, t)).rms_norm(g.tensor("w", {L}, t), 1e-5);
  }
  y.output("y");
  return g;
}

}  // namespace luminal::testing
