#pragma once
// How cpu.QMatmul cuts a product's weight rows into tasks for the thread pool and, in prefill,
// into panels (internal; bench_quant_gemv times the kernels cut the same way).
#include <algorithm>
#include <cstdint>

namespace luminal::cpu {

/// Weight bytes a prefill panel holds: every activation row passes over it while it stays in L2.
inline constexpr int64_t kQPanelBytes = 128 << 10;

/// Weight rows of a prefill panel of rows of `row_bytes`: about kQPanelBytes, a multiple of 4, at
/// least 16.
inline int64_t qpanel_rows(int64_t row_bytes) {
  return std::max<int64_t>(16, kQPanelBytes / row_bytes / 4 * 4);
}

/// Weight rows a task takes of `n` on `threads` threads: two tasks a thread, at least 16 rows, a
/// multiple of 4; at most `panel` rows when panel > 0 (a prefill, which goes in panels anyway: a
/// task of one panel calls the kernel as often, and more tasks share out more evenly when a
/// thread is slowed: SmolLM2's gate/up, 8 tasks of a panel instead of 4 of two).
inline int64_t qtask_rows(int64_t n, int threads, int64_t panel) {
  int64_t rows = std::max<int64_t>(16, n / (2 * static_cast<int64_t>(threads)));
  if (panel > 0) rows = std::min(rows, panel);
  return (rows + 3) / 4 * 4;
}

}  // namespace luminal::cpu
