#pragma once
// Test helper: a KV cache's heads repeated for their query heads as torch's repeat_interleave
// leaves them (an expand, then a reshape merging [kv, groups]), which reads a KV head through the
// stride hd*(z/groups) along the merged heads (tests/cuda/gemv_kn_test.cpp for P @ V,
// tests/cuda/gemv_split_test.cpp for Q @ K^T).
#include <cstdint>

#include "luminal/luminal.hpp"

namespace luminal::testing {

/// The first c rows of `cache` [slots, kv * hd] as [kv * groups, c, hd].
inline Tensor repeated_kv_heads(const Tensor& cache, int64_t kv, int64_t groups, int64_t hd,
                                const Expr& c) {
  return cache.slice(0, 0, c)
      .reshape({c, Expr(kv), Expr(hd)})
      .permute({1, 0, 2})
      .reshape({Expr(kv), Expr(1), c, Expr(hd)})
      .expand({Expr(kv), Expr(groups), c, Expr(hd)})
      .reshape({Expr(kv * groups), c, Expr(hd)});
}

}  // namespace luminal::testing
