#include "luminal/cuda/view_order.hpp"

#include <cstdint>
#include <optional>
#include <vector>

#include "luminal/core/error.hpp"

namespace luminal::cuda {

bool reads_in_order(const View& v) {
  if (v.has_base()) return false;
  if (v.is_contiguous()) return true;
  constexpr int64_t kMaxChecked = int64_t{1} << 16;
  std::vector<int64_t> dims;
  int64_t count = 1;
  for (const Expr& d : v.dims) {
    if (!d.is_const() || d.as_const() < 0 || d.as_const() > kMaxChecked) return false;
    dims.push_back(d.as_const());
    count *= d.as_const();
    if (count > kMaxChecked) return false;
  }
  for (const Expr& s : v.strides)
    for (const std::string& name : s.vars())
      if (name != "z") return false;
  // Each axis' offsets once per index (the strides are functions of that axis' index alone).
  std::vector<std::vector<int64_t>> at(dims.size());
  try {
    for (size_t k = 0; k < dims.size(); ++k)
      for (int64_t i = 0; i < dims[k]; ++i)
        at[k].push_back(v.strides[k].eval({}, i));
  } catch (const Error&) {
    return false;  // (a stride that does not evaluate: not proven in order)
  }
  std::vector<int64_t> index(dims.size(), 0);
  for (int64_t flat = 0; flat < count; ++flat) {
    int64_t off = 0;
    for (size_t k = 0; k < dims.size(); ++k)
      off += at[k][static_cast<size_t>(index[k])];
    if (off != flat) return false;
    for (size_t k = dims.size(); k-- > 0;) {
      if (++index[k] < dims[k]) break;
      index[k] = 0;
    }
  }
  return true;
}

}  // namespace luminal::cuda
