#pragma once
// What cpu.QMatmul and cpu.MatmulW16 share (internal): a linear layer's output offsets per
// activation row (m) and weight row (n), and its walk over tiles of at most 4 x 4 whose offsets
// are evenly spaced, which is what their dot kernels take.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "luminal/core/shape.hpp"

namespace luminal::cpu {

/// Activation rows up to which a kernel reading the weight as stored dominates widening it
/// first (a decode step): the widened copy would be written and read again every step.
inline constexpr int64_t kFewRows = 8;

/// True when the rows [m axes..., K] are static and at most kFewRows.
inline bool few_rows(const Shape& act_rows) {
  int64_t m = 1;
  for (size_t i = 0; i + 1 < act_rows.size(); ++i) {
    if (!act_rows[i].is_const()) return false;
    m *= act_rows[i].as_const();
  }
  return m <= kFewRows;
}

/// True when off[at + j] - off[at] == j * step for j < count.
inline bool linear_offsets(const std::vector<int64_t>& off, int64_t at, int count, int64_t step) {
  for (int j = 1; j < count; ++j)
    if (off[at + j] - off[at] != j * step) return false;
  return true;
}

/// Offsets in an output row-major over every axis of `dims` but `axis` (k), at each index of
/// `axes` (row-major over them).
inline std::vector<int64_t> output_offsets(const std::vector<int64_t>& dims, int axis,
                                           const std::vector<int>& axes) {
  std::vector<int64_t> stride(dims.size(), 0);
  int64_t step = 1;
  for (size_t i = dims.size(); i-- > 0;) {
    if (static_cast<int>(i) == axis) continue;
    stride[i] = step;
    step *= dims[i];
  }
  int64_t count = 1;
  for (int a : axes)
    count *= dims[static_cast<size_t>(a)];
  std::vector<int64_t> out(static_cast<size_t>(count), 0);
  std::vector<int64_t> idx(axes.size(), 0);
  for (int64_t f = 0; f < count; ++f) {
    int64_t off = 0;
    for (size_t j = 0; j < axes.size(); ++j)
      off += idx[j] * stride[static_cast<size_t>(axes[j])];
    out[static_cast<size_t>(f)] = off;
    for (size_t j = axes.size(); j-- > 0;) {
      if (++idx[j] < dims[static_cast<size_t>(axes[j])]) break;
      idx[j] = 0;
    }
  }
  return out;
}

/// Calls fn(n0, rows, n_step, m0, mm, m_step) for weight rows [begin, end) in tiles of at most
/// 4 whose output offsets (n_off) are evenly spaced, and within each, activation rows in tiles of
/// at most 4 likewise (m_off).
template <class F>
void for_each_tile(int64_t begin, int64_t end, const std::vector<int64_t>& n_off,
                   const std::vector<int64_t>& m_off, F&& fn) {
  const int64_t M = static_cast<int64_t>(m_off.size());
  for (int64_t n0 = begin; n0 < end;) {
    int rows = static_cast<int>(std::min<int64_t>(4, end - n0));
    const int64_t ns = rows > 1 ? n_off[n0 + 1] - n_off[n0] : 1;
    while (rows > 1 && !linear_offsets(n_off, n0, rows, ns))
      --rows;
    for (int64_t m0 = 0; m0 < M;) {
      int mm = static_cast<int>(std::min<int64_t>(4, M - m0));
      const int64_t ms = mm > 1 ? m_off[m0 + 1] - m_off[m0] : 1;
      while (mm > 1 && !linear_offsets(m_off, m0, mm, ms))
        --mm;
      fn(n0, rows, ns, m0, mm, ms);
      m0 += mm;
    }
    n0 += rows;
  }
}

}  // namespace luminal::cpu
