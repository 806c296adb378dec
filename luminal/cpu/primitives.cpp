// The HLIR primitives as CPU ops (no rules: the extracted program may keep any primitive), and
// the helpers their kernels share. The kernels live by family: elementwise.cpp, reduce.cpp,
// gather_scatter.cpp, iota_constant.cpp.
#include <algorithm>
#include <climits>
#include <cstring>
#include <string>
#include <vector>

#include "luminal/cpu/cpu_op.hpp"
#include "luminal/cpu/primitive_util.hpp"

namespace luminal::cpu {

EvalView eval_view(const View& v, const DynMap& dyn) {
  EvalView e;
  e.dims = eval_shape(v.dims, dyn);
  e.numel = 1;
  for (int64_t d : e.dims)
    e.numel *= d;
  if (e.numel > 0) e.idx = StridedIndex(v, dyn);
  return e;
}

bool ViewCache::update(const std::vector<View>& views, const DynMap& dyn, uint64_t version) {
  if (version_ == version) return false;
  auto value = [&](const std::string& name) {
    const auto it = dyn.find(name);
    return it == dyn.end() ? INT64_MIN : it->second;
  };
  if (version_ != 0 && views_.size() == views.size()) {
    bool same = true;
    for (size_t i = 0; i < names_.size() && same; ++i)
      same = value(names_[i]) == values_[i];
    if (same) {
      version_ = version;
      return false;
    }
  }
  if (version_ == 0) {
    names_.clear();
    for (const View& v : views) {
      for (const std::vector<Expr>* exprs : {&v.dims, &v.strides})
        for (const Expr& e : *exprs)
          for (std::string& n : e.vars())
            if (n != Expr::z().var_name()) names_.push_back(std::move(n));
      for (std::string& n : v.base.vars())
        names_.push_back(std::move(n));
    }
    std::sort(names_.begin(), names_.end());
    names_.erase(std::unique(names_.begin(), names_.end()), names_.end());
  }
  version_ = 0;
  views_.clear();
  for (const View& v : views)
    views_.push_back(eval_view(v, dyn));
  values_.clear();
  for (const std::string& n : names_)
    values_.push_back(value(n));
  version_ = version;
  return true;
}

namespace {

/// The axis (not the last) read with unit stride, when the last axis is not: a transpose-like
/// view, copied in tiles so that both sides stay in cache. -1 when there is none.
int transpose_axis(const StridedIndex& idx) {
  const int r = idx.rank();
  if (r < 2) return -1;
  const int64_t dl = idx.dims()[r - 1];
  if (dl < 8 || idx.axis_offset(r - 1, 1) == 1) return -1;
  for (int p = r - 2; p >= 0; --p) {
    const int64_t dp = idx.dims()[p];
    if (dp < 8) continue;
    bool unit = true;
    for (int64_t i = 0; i < dp && unit; ++i)
      unit = idx.axis_offset(p, i) == i;
    if (unit) return p;
  }
  return -1;
}

template <class S>
void copy_tiled(const S* src, const StridedIndex& idx, S* dst, int p, int threads) {
  constexpr int64_t kTile = 32;
  const std::vector<int64_t>& dims = idx.dims();
  const int r = idx.rank();
  const int l = r - 1;
  std::vector<int64_t> ostride(static_cast<size_t>(r));
  int64_t s = 1;
  for (int k = r - 1; k >= 0; --k) {
    ostride[k] = s;
    s *= dims[k];
  }
  std::vector<int> outer;
  for (int k = 0; k < r; ++k)
    if (k != p && k != l) outer.push_back(k);
  const int64_t dp = dims[p], dl = dims[l];
  std::vector<int64_t> loff(static_cast<size_t>(dl));
  for (int64_t j = 0; j < dl; ++j)
    loff[j] = idx.axis_offset(l, j);
  const int64_t tp = (dp + kTile - 1) / kTile, tl = (dl + kTile - 1) / kTile;
  const int64_t ntiles = idx.numel() / (dp * dl) * tp * tl;
  const int64_t osp = ostride[p];
  parallel_blocks(ntiles, 1, threads, idx.numel(), [&](int64_t t, int64_t) {
    int64_t rem = t;
    const int64_t jt = rem % tl;
    rem /= tl;
    const int64_t it = rem % tp;
    rem /= tp;
    int64_t in_base = idx.base(), out_base = 0;
    for (size_t k = outer.size(); k-- > 0;) {
      const int ax = outer[k];
      const int64_t i = rem % dims[ax];
      rem /= dims[ax];
      in_base += idx.axis_offset(ax, i);
      out_base += i * ostride[ax];
    }
    // Through a local tile, so that each side reads or writes whole cache lines at once (power-of-
    // two strides would otherwise thrash one cache set).
    const int64_t i0 = it * kTile, j0 = jt * kTile;
    const int64_t ni = std::min(dp, i0 + kTile) - i0, nj = std::min(dl, j0 + kTile) - j0;
    S tile[kTile * kTile];
    for (int64_t j = 0; j < nj; ++j) {
      const S* scol = src + in_base + loff[j0 + j] + i0;
      for (int64_t i = 0; i < ni; ++i)
        tile[i * kTile + j] = scol[i];
    }
    for (int64_t i = 0; i < ni; ++i) {
      S* drow = dst + out_base + (i0 + i) * osp + j0;
      if (nj == kTile) {
        std::memcpy(drow, tile + i * kTile, sizeof(S) * kTile);  // constant size: vector moves
      } else {
        for (int64_t j = 0; j < nj; ++j)
          drow[j] = tile[i * kTile + j];
      }
    }
  });
}

}  // namespace

void copy_view(const uint8_t* src, const EvalView& v, uint8_t* dst, int es, int threads) {
  if (v.numel == 0) return;
  if (v.idx.is_identity()) {
    const int64_t bytes = v.numel * es;
    constexpr int64_t kChunk = int64_t{1} << 20;
    parallel_blocks(bytes, kChunk, threads, bytes / 4, [&](int64_t b, int64_t e) {
      std::memcpy(dst + b, src + b, static_cast<size_t>(e - b));
    });
    return;
  }
  const int p = transpose_axis(v.idx);
  constexpr int64_t kBlock = 4096;
  auto run = [&](auto tag) {
    using S = decltype(tag);
    const S* s = reinterpret_cast<const S*>(src);
    S* d = reinterpret_cast<S*>(dst);
    if (p >= 0) {
      copy_tiled(s, v.idx, d, p, threads);
      return;
    }
    parallel_blocks(v.numel, kBlock, threads, v.numel, [&](int64_t b, int64_t e) {
      v.idx.for_range(b, e, [&](int64_t i, int64_t off) { d[i] = s[off]; });
    });
  };
  dispatch_size(es, run);
}

DType input_dtype(const LlirNode& n, int i) {
  LUMINAL_ASSERT(i >= 0 && i < static_cast<int>(n.inputs.size()),
                 "input_dtype: " + std::string(n.op->name) + " has no input " + std::to_string(i));
  if (n.input_dtypes.size() != n.inputs.size()) {
    throw Error("cpu kernel for " + std::string(n.op->name) +
                " needs its inputs' dtypes: LlirNode::input_dtypes is not filled (call "
                "LlirGraph::fill_input_dtypes)");
  }
  return n.input_dtypes[static_cast<size_t>(i)];
}

namespace {

template <OpKind K>
const CpuOp* primitive(std::unique_ptr<Kernel> (*make)(const LlirNode&)) {
  static const CpuOp op{hlir_op(K), "", nullptr, make};
  return &op;
}

}  // namespace

void register_primitive_ops(std::vector<const CpuOp*>& ops) {
  ops.push_back(primitive<OpKind::Constant>(make_constant_kernel));
  ops.push_back(primitive<OpKind::Iota>(make_iota_kernel));
  ops.push_back(primitive<OpKind::Cast>(make_elementwise_kernel));
  ops.push_back(primitive<OpKind::Exp2>(make_elementwise_kernel));
  ops.push_back(primitive<OpKind::Log2>(make_elementwise_kernel));
  ops.push_back(primitive<OpKind::Sin>(make_elementwise_kernel));
  ops.push_back(primitive<OpKind::Recip>(make_elementwise_kernel));
  ops.push_back(primitive<OpKind::Sqrt>(make_elementwise_kernel));
  ops.push_back(primitive<OpKind::Add>(make_elementwise_kernel));
  ops.push_back(primitive<OpKind::Mul>(make_elementwise_kernel));
  ops.push_back(primitive<OpKind::Mod>(make_elementwise_kernel));
  ops.push_back(primitive<OpKind::LessThan>(make_elementwise_kernel));
  ops.push_back(primitive<OpKind::SumReduce>(make_reduce_kernel));
  ops.push_back(primitive<OpKind::MaxReduce>(make_reduce_kernel));
  ops.push_back(primitive<OpKind::Gather>(make_gather_kernel));
  ops.push_back(primitive<OpKind::Scatter>(make_scatter_kernel));
  ops.push_back(primitive<OpKind::Dequantize>(make_dequantize_kernel));
}

}  // namespace luminal::cpu
