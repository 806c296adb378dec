#pragma once
// Inputs and outputs of the CUDA quantized-kernel tests (quant_test.cpp, qgemm_test.cpp): random
// valid blocks with random f16 scales, their f32 values, f32 buffers; and which integer GEMV
// layout a program takes (row_q8_test.cpp, fused_q8_test.cpp).
#include <cmath>
#include <cstring>
#include <random>
#include <string_view>
#include <vector>

#include "luminal/core/blocks.hpp"
#include "luminal/luminal.hpp"
#include "luminal/nn/linear.hpp"
#include "support/llir_direct.hpp"
#include "support/quant_bound.hpp"

namespace luminal::testing {

/// Whether `op` is the integer GEMV (and its weight's repack) of one layout: over the split layout
/// (cuda.QGemvQ8S over cuda.QRepack, the activation in the split Q8_1 layout) or the GGUF one.
/// A preference for both would take the first by name, cuda.QGemvQ8, never the split layout.
inline bool gemv_op(std::string_view op, bool split) {
  return split ? op == "cuda.QGemvQ8S" || op == "cuda.QRepack" : op == "cuda.QGemvQ8";
}

/// Whether `l`'s node of op `producer` writes the split Q8_1 layout (int_value 1) when `split`,
/// the plain one when not (false without such a node).
inline bool writes_layout(const LlirGraph& l, std::string_view producer, bool split) {
  for (const LlirNode& node : l.nodes)
    if (node.op->name == producer) return node.attrs.int_value == (split ? 1 : 0);
  return false;
}

/// Valid blocks of `t` with random quants and random f16 scales and mins (a few subnormal).
inline HostBuffer random_blocks(DType t, int64_t values, uint64_t seed) {
  HostBuffer b{t, std::vector<uint8_t>(storage_bytes(t, values))};
  blocks::fill_valid_blocks(t, b.bytes, seed);
  std::mt19937_64 rng(seed * 7 + 1);
  std::uniform_real_distribution<float> ex(-12, -4);
  auto scale = [&](bool sub) {
    float v = std::exp2(sub ? -20.0f : ex(rng));
    if (rng() & 1) v = -v;
    return f32_to_f16_bits(v);
  };
  const int64_t bb = block_bytes(t);
  for (size_t o = 0; o < b.bytes.size(); o += static_cast<size_t>(bb)) {
    uint8_t* p = b.bytes.data() + o;
    const bool sub = rng() % 16 == 0;
    const uint16_t d = scale(sub), m = scale(false);
    set_block_scales(t, p, d, m);
  }
  return b;
}

/// The f32 values of blocks (blocks::dequantize).
inline std::vector<float> decode(const HostBuffer& b) {
  std::vector<float> v(static_cast<size_t>(b.numel()));
  blocks::dequantize(b.dtype, b.bytes.data(), v.data(), b.numel());
  return v;
}

/// x [rows, K] @ Dequantize(w [n, K])^T (output "y"); rows `m`, or a dynamic "s" in [1, 256]
/// when m is 0: the prefill GEMM tests' layer.
inline Graph quant_linear_graph(DType t, int64_t m, int64_t n, int64_t K) {
  Graph g;
  Tensor x = g.tensor("x", {m > 0 ? Expr(m) : Expr::var("s"), Expr(K)});
  if (m == 0) g.declare_dim("s", 1, 256);
  nn::linear(x, g.tensor("w", {Expr(n), Expr(K)}, t).dequantize()).output("y");
  return g;
}

/// `n` values uniform in [-1, 1).
inline std::vector<float> random_floats(int64_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v)
    x = u(rng);
  return v;
}

inline HostBuffer f32_buffer(const std::vector<float>& v) {
  HostBuffer b{DType::F32, std::vector<uint8_t>(v.size() * 4)};
  std::memcpy(b.bytes.data(), v.data(), b.bytes.size());
  return b;
}

inline std::vector<float> floats(const HostBuffer& b) {
  std::vector<float> v(b.bytes.size() / 4);
  std::memcpy(v.data(), b.bytes.data(), b.bytes.size());
  return v;
}

/// The f32 rows "rows" of the program `l` of an embedding gather run on `backend` with its table
/// "embed" = `table` and ids "ids" = `ids`: the gathers' tests' run.
inline std::vector<float> run_gather(Backend& backend, const LlirGraph& l, const HostBuffer& table,
                                     const std::vector<int32_t>& ids) {
  HostBuffer ib{DType::I32, std::vector<uint8_t>(ids.size() * 4)};
  std::memcpy(ib.bytes.data(), ids.data(), ib.bytes.size());
  LoadedPlan lp = load_plan(backend, l);
  return floats(run_plan(lp, {{"embed", table}, {"ids", ib}}, {}).outputs.at("rows"));
}

/// How many of `got` (row ids[s] of a table of rows of K values, for each s) differ bitwise from
/// `table`, the whole table decoded: the gathers' check.
inline int gathered_mismatches(const std::vector<float>& got, const std::vector<float>& table,
                               const std::vector<int32_t>& ids, int64_t K) {
  int bad = 0;
  for (size_t s = 0; s < ids.size(); ++s)
    for (int64_t k = 0; k < K; ++k)
      bad += std::memcmp(&got[s * static_cast<size_t>(K) + static_cast<size_t>(k)],
                         &table[static_cast<size_t>(ids[s] * K + k)], 4) != 0;
  return bad;
}

}  // namespace luminal::testing
