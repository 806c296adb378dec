#include "luminal/cpu/strided.hpp"

#include <algorithm>

namespace luminal::cpu {

StridedIndex::StridedIndex(const View& v, const DynMap& dyn) {
  dims_ = eval_shape(v.dims, dyn);
  numel_ = 1;
  for (int64_t d : dims_)
    numel_ *= d;
  axes_.resize(dims_.size());
  if (numel_ > 0) base_ = v.base.eval(dyn);
  identity_ = base_ == 0;
  int64_t expect = 1;  // contiguous stride of the current axis
  for (int k = rank() - 1; k >= 0; --k) {
    Axis& a = axes_[k];
    const Expr& s = v.strides[k];
    auto lin = s.as_linear("z");
    if (lin && lin->second.try_eval(dyn) == std::optional<int64_t>(0) && !lin->first.has_var("z")) {
      a.linear = true;
      a.coef = lin->first.eval(dyn);
    } else {
      a.linear = false;
      a.table.resize(static_cast<size_t>(dims_[k]));
      for (int64_t i = 0; i < dims_[k]; ++i)
        a.table[i] = s.eval(dyn, i);
      // A table that is c*i after all (64*(z/64) + z%64 is z: heads merged back) is linear.
      const int64_t c = dims_[k] > 1 ? a.table[1] : 0;
      bool is_linear = true;
      for (int64_t i = 0; i < dims_[k] && is_linear; ++i)
        is_linear = a.table[i] == c * i;
      if (is_linear) {
        a.linear = true;
        a.coef = c;
        a.table.clear();
      }
    }
    if (dims_[k] != 1 && !(a.linear && a.coef == expect)) identity_ = false;
    expect *= dims_[k];
  }
}

int64_t StridedIndex::offset_of_flat(int64_t flat) const {
  if (identity_) return flat;
  int64_t off = base_;
  for (int k = rank() - 1; k >= 0; --k) {
    int64_t i = flat % dims_[k];
    flat /= dims_[k];
    off += axis_offset(k, i);
  }
  return off;
}

}  // namespace luminal::cpu
