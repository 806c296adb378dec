#pragma once
// Test helper: the model of the load-time folding tests (tests/compiler/fold_test.cpp, the GPU's
// tests/cuda/fold_test.cpp) and its reference.
//
//   testing::FoldModel m;                       // y = x [s, 64] @ (w * 2 + 1)^T, w [256, 64]
//   auto want = testing::fold_reference(m, x, w, 4);
#include <cstdint>
#include <random>
#include <vector>

#include "luminal/luminal.hpp"

namespace luminal::testing {

/// n uniform values in [-1, 1) from `seed`.
inline std::vector<float> random_values(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> v(n);
  for (float& x : v)
    x = u(rng);
  return v;
}

/// x [s, 64] times f(w), where f(w) = transpose(w * 2 + 1) is computed from the weight w
/// [rows, 64] alone (64 KiB at 256 f32 rows): a value worth folding. s is in [1, 8], set to 4.
struct FoldModel {
  Graph g;
  Tensor x, w, y;
  explicit FoldModel(bool persist = true, int64_t rows = 256, DType t = DType::F32) {
    g.declare_dim("s", 1, 8);
    x = g.tensor("x", {Dim("s"), 64}, t);
    w = g.tensor("w", {rows, 64}, t);
    if (persist) w = w.persist();
    Tensor f = (w * 2.0 + 1.0).transpose(0, 1).contiguous();
    y = x.matmul(f).output("y");
    g.set_dim("s", 4);
  }
};

/// The model's y on the reference runtime.
inline std::vector<float> fold_reference(const FoldModel& m, const std::vector<float>& x,
                                         const std::vector<float>& w, int64_t s) {
  ReferenceRuntime rt(m.g);
  rt.set(m.x, x);
  rt.set(m.w, w);
  rt.execute({{"s", s}});
  return rt.get<float>(m.y);
}

}  // namespace luminal::testing
