// Gather and Scatter on the CPU.
//
//   Gather(indexes, data):     out[i] = data_view_flat[indexes[i]]; an index outside the data
//                              throws luminal::Error naming the index and its position (the first
//                              such position, as the reference).
//   Scatter(dest, indexes, src): out = dest; then out[indexes[i]] = src[i] in order (later writes
//                              win), skipping indices outside the output.
// Elements are moved as raw bytes, so every dtype works and values are bit-exact.
#include <memory>
#include <string>
#include <vector>

#include "luminal/core/error.hpp"
#include "luminal/cpu/primitive_util.hpp"

namespace luminal::cpu {

namespace {

constexpr int64_t kBlock = 2048;

using IndexLoadFn = void (*)(const uint8_t* base, const EvalView& v, int64_t b, int64_t e,
                             int64_t* dst);

template <DType T>
int64_t index_value(const uint8_t* base, int64_t off) {
  const auto v = load_elem<T>(base, off);
  if constexpr (std::is_floating_point_v<decltype(v)>)
    return float_to_int64_sat(static_cast<double>(v));  // as load_as_int64
  else
    return v;
}

template <DType T>
void load_indexes(const uint8_t* base, const EvalView& v, int64_t b, int64_t e, int64_t* dst) {
  if (v.idx.is_identity()) {
    for (int64_t i = b; i < e; ++i)
      dst[i - b] = index_value<T>(base, i);
    return;
  }
  v.idx.for_range(b, e, [&](int64_t i, int64_t off) { dst[i - b] = index_value<T>(base, off); });
}

IndexLoadFn index_load_fn(DType t) {
  return dispatch_dtype(
      t, [](auto tag) -> IndexLoadFn { return &load_indexes<decltype(tag)::value>; });
}

[[noreturn]] void gather_out_of_range(int64_t j, int64_t pos, int64_t n) {
  throw Error("Gather: index " + std::to_string(j) + " at position " + std::to_string(pos) +
              " is out of range for data of " + std::to_string(n) + " elements");
}

// What Gather and Scatter keep: the index loader, the element size and the views.
class IndexedKernel : public Kernel {
 public:
  IndexedKernel(const LlirNode& n, DType index_t)
      : load_(index_load_fn(index_t)), es_(size_bytes(n.attrs.dtype)), views_(n.attrs.views) {}

 protected:
  IndexLoadFn load_;
  int es_;
  std::vector<View> views_;
  ViewCache cache_;
};

class GatherKernel final : public IndexedKernel {
 public:
  using IndexedKernel::IndexedKernel;

  void run(const KernelContext& k) override {
    cache_.update(views_, k.dyn, k.dims_version);
    const EvalView& iv = cache_[0];
    const EvalView& dv = cache_[1];
    const int64_t n = iv.numel;
    const int64_t limit = dv.numel;
    const bool direct = dv.identity();
    dispatch_size(es_, [&](auto tag) {
      using S = decltype(tag);
      const S* data = reinterpret_cast<const S*>(k.in[1]);
      S* out = reinterpret_cast<S*>(k.out);
      parallel_blocks(n, kBlock, k.threads, n, [&](int64_t b, int64_t e) {
        int64_t idx[kBlock];
        load_(k.in[0], iv, b, e, idx);
        for (int64_t i = b; i < e; ++i) {
          const int64_t j = idx[i - b];
          if (j < 0 || j >= limit) gather_out_of_range(j, i, limit);
          out[i] = data[direct ? j : dv.idx.offset_of_flat(j)];
        }
      });
    });
  }
};

class ScatterKernel final : public IndexedKernel {
 public:
  using IndexedKernel::IndexedKernel;

  void run(const KernelContext& k) override {
    cache_.update(views_, k.dyn, k.dims_version);
    const EvalView& dest = cache_[0];
    const EvalView& iv = cache_[1];
    const EvalView& sv = cache_[2];
    const int64_t limit = dest.numel;
    const int64_t n = iv.numel;
    if (k.out != k.in[0] || !dest.identity()) copy_view(k.in[0], dest, k.out, es_, k.threads);
    if (n == 0 || limit == 0) return;
    dispatch_size(es_, [&](auto tag) {
      using S = decltype(tag);
      const S* src = reinterpret_cast<const S*>(k.in[2]);
      S* out = reinterpret_cast<S*>(k.out);
      // Writes, in index order, the elements whose target lies in [lo, hi).
      auto scatter_range = [&](int64_t lo, int64_t hi) {
        std::vector<int64_t> idx(kBlock), soff(kBlock);
        for (int64_t b = 0; b < n; b += kBlock) {
          const int64_t e = std::min(n, b + kBlock);
          load_(k.in[1], iv, b, e, idx.data());
          if (sv.identity()) {
            for (int64_t i = b; i < e; ++i)
              soff[i - b] = i;
          } else {
            sv.idx.for_range(b, e, [&](int64_t i, int64_t off) { soff[i - b] = off; });
          }
          for (int64_t i = 0; i < e - b; ++i) {
            const int64_t j = idx[i];
            if (j >= lo && j < hi) out[j] = src[soff[i]];
          }
        }
      };
      const int t = k.threads;
      if (t <= 1 || n < kParallelMin) {
        scatter_range(0, limit);
        return;
      }
      // Each thread owns a slice of the output and applies, in order, the writes landing there.
      parallel_blocks(t, 1, t, n, [&](int64_t b, int64_t) {
        scatter_range(limit * b / t, limit * (b + 1) / t);
      });
    });
  }
};

}  // namespace

std::unique_ptr<Kernel> make_gather_kernel(const LlirNode& n) {
  LUMINAL_ASSERT(n.inputs.size() == 2 && n.attrs.views.size() == 2,
                 "Gather: needs (indexes, data)");
  return std::make_unique<GatherKernel>(n, input_dtype(n, 0));
}

std::unique_ptr<Kernel> make_scatter_kernel(const LlirNode& n) {
  LUMINAL_ASSERT(n.inputs.size() == 3 && n.attrs.views.size() == 3,
                 "Scatter: needs (dest, indexes, src)");
  return std::make_unique<ScatterKernel>(n, input_dtype(n, 1));
}

}  // namespace luminal::cpu
