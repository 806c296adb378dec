#pragma once
// Strided access for CPU kernels (internal): a View evaluated at dyn values (StridedIndex), read
// at random (offset_of_flat) or in sequence (for_range).
// Example: examples/snippets/cpu/strided.cpp (a transposed read).
//
// Every stride of a View is a function of its own axis index only, so a view is one offset table
// per axis (offset contribution of each index along the axis) or, for the common linear stride
// c*z (and a table that turns out to be c*i at these dims), just the coefficient.
// offset(i0, i1, ...) = base + sum_k axis_k(i_k) (base: the view's element offset).
#include <algorithm>
#include <cstdint>
#include <vector>

#include "luminal/core/shape.hpp"

namespace luminal::cpu {

class StridedIndex {
 public:
  StridedIndex() = default;
  StridedIndex(const View& v, const DynMap& dyn);

  int rank() const { return static_cast<int>(dims_.size()); }
  const std::vector<int64_t>& dims() const { return dims_; }
  int64_t numel() const { return numel_; }
  /// True when offset(flat) == flat for every element (so base is 0).
  bool is_identity() const { return identity_; }
  /// The view's element offset (of index 0); axis_offset leaves it out, every other offset has it.
  int64_t base() const { return base_; }
  int64_t axis_offset(int axis, int64_t i) const {
    const Axis& a = axes_[axis];
    return a.linear ? a.coef * i : a.table[i];
  }
  int64_t offset_of_flat(int64_t flat) const;

  /// Calls fn(flat, offset, len, step) for the runs of [begin, end) in order: elements flat ..
  /// flat + len - 1 lie at offset + step * j: a stretch of the last axis when it is linear, the
  /// stretches of consecutive offsets of its table otherwise (heads merged back into rows: a
  /// head's values), one element at a time (step 0) where rows are shorter than 8. A loop over a
  /// run can then copy (step 1) or fill (step 0) without per-element calls.
  template <class F>
  void for_runs(int64_t begin, int64_t end, F&& fn) const {
    if (begin >= end) return;
    if (identity_) {
      fn(begin, begin, end - begin, int64_t{1});
      return;
    }
    // (runs shorter than a few elements: for_range's carries beat a division per run)
    if (rank() == 0 || dims_.back() < 8) {
      for_range(begin, end, [&](int64_t i, int64_t off) { fn(i, off, int64_t{1}, int64_t{0}); });
      return;
    }
    const Axis& last = axes_.back();
    const int64_t inner = dims_.back();
    int64_t i = begin;
    while (i < end) {
      const int64_t row = i / inner, j = i - row * inner;
      const int64_t len = std::min(inner - j, end - i);
      // (the row's offset without the last axis's own, which the table holds)
      const int64_t at = offset_of_flat(row * inner) - (last.linear ? 0 : last.table[0]);
      if (last.linear) {
        fn(i, at + last.coef * j, len, last.coef);
      } else {
        const int64_t* t = last.table.data();
        for (int64_t a = j, b = j; a < j + len; a = b) {
          for (b = a + 1; b < j + len && t[b] == t[b - 1] + 1; ++b) {
          }
          fn(i + (a - j), at + t[a], b - a, int64_t{1});
        }
      }
      i += len;
    }
  }

  /// Calls fn(flat, offset) for flat in [begin, end), in order, without divisions per element.
  template <class F>
  void for_range(int64_t begin, int64_t end, F&& fn) const {
    if (begin >= end) return;
    if (identity_) {
      for (int64_t i = begin; i < end; ++i)
        fn(i, i);
      return;
    }
    const int r = rank();
    if (r == 0) {
      fn(begin, base_);
      return;
    }
    std::vector<int64_t> idx(r);
    int64_t rem = begin;
    for (int k = r - 1; k >= 0; --k) {
      idx[k] = rem % dims_[k];
      rem /= dims_[k];
    }
    int64_t base = base_;  // offset of all axes but the last
    for (int k = 0; k < r - 1; ++k)
      base += axis_offset(k, idx[k]);
    const Axis& last = axes_[r - 1];
    const int64_t inner = dims_[r - 1];
    int64_t i = begin;
    while (i < end) {
      int64_t j = idx[r - 1];
      int64_t stop = std::min<int64_t>(inner, j + (end - i));
      if (last.linear) {
        for (; j < stop; ++j, ++i)
          fn(i, base + last.coef * j);
      } else {
        for (; j < stop; ++j, ++i)
          fn(i, base + last.table[j]);
      }
      if (i >= end) break;
      // carry into the outer axes
      idx[r - 1] = 0;
      for (int k = r - 2; k >= 0; --k) {
        base -= axis_offset(k, idx[k]);
        if (++idx[k] < dims_[k]) {
          base += axis_offset(k, idx[k]);
          break;
        }
        idx[k] = 0;
        base += axis_offset(k, 0);
      }
    }
  }

 private:
  struct Axis {
    bool linear = true;
    int64_t coef = 0;
    std::vector<int64_t> table;  // when not linear
  };
  std::vector<int64_t> dims_;
  std::vector<Axis> axes_;
  int64_t numel_ = 1;
  int64_t base_ = 0;
  bool identity_ = true;
};

}  // namespace luminal::cpu
