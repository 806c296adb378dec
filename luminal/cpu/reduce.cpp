// SumReduce and MaxReduce on the CPU.
//
// Numerics as the reference: float sums accumulate in double and round once on store; integer
// sums wrap (two's complement) at the dtype's width; MaxReduce propagates NaN and an empty max is
// -inf (floats) or the dtype's minimum.
//
// Two loop orders:
//   - per output, walking the reduced axis (when that axis is the unit-stride one, or there are
//     few outputs: then the axis is split across threads and the partial results combined);
//   - per block of outputs, walking the axis outside and the outputs inside (when the reduced
//     axis is strided, e.g. a column sum), so that memory is read row by row.
#include <cmath>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "luminal/core/error.hpp"
#include "luminal/cpu/primitive_util.hpp"
#include "luminal/cpu/vec_math.hpp"

namespace luminal::cpu {

namespace {

/// Reduction state for dtype T: double for floats, int64 for integers and Bool.
template <DType T, bool kSum>
struct Reducer {
  using A = std::conditional_t<std::is_floating_point_v<compute_t<T>>, double, int64_t>;
  static constexpr bool kFloat = std::is_floating_point_v<A>;

  static A init() {
    if constexpr (kSum)
      return A(0);
    else if constexpr (kFloat)
      return -std::numeric_limits<double>::infinity();
    else
      return static_cast<int64_t>(min_value(T));
  }
  static A combine(A acc, A e) {
    if constexpr (kSum) {
      if constexpr (kFloat)
        return acc + e;
      else
        return static_cast<int64_t>(static_cast<uint64_t>(acc) + static_cast<uint64_t>(e));
    } else if constexpr (kFloat) {
      if (std::isnan(e) || std::isnan(acc)) return std::numeric_limits<double>::quiet_NaN();
      return acc < e ? e : acc;
    } else {
      return acc < e ? e : acc;
    }
  }
  static A load(const uint8_t* base, int64_t off) {
    return static_cast<A>(load_elem<T>(base, off));
  }
  static void store(uint8_t* out, int64_t i, A acc) {
    if constexpr (kFloat && T != DType::F64)
      store_elem<T>(out, i, static_cast<float>(acc));  // rounds once through f32
    else
      store_elem<T>(out, i, acc);
  }

  /// Reduces x[base + k] for k in [k0, k1) (unit-stride axis).
  static A unit_range(const uint8_t* x, int64_t base, int64_t k0, int64_t k1) {
    if constexpr (T == DType::F32 && kSum) {
      return vec::sum_f32(reinterpret_cast<const float*>(x) + base + k0, k1 - k0);
    } else if constexpr (kNativeFloat<T> && kSum) {
      const storage_t<T>* p = reinterpret_cast<const storage_t<T>*>(x) + base;
      double acc = 0;
#pragma omp simd reduction(+ : acc)
      for (int64_t k = k0; k < k1; ++k)
        acc += static_cast<double>(p[k]);
      return acc;
    } else if constexpr (T == DType::F32) {
      // In f32 lanes (the max of floats widens to the same double), as the reference keeps it.
      return vec::max_f32(reinterpret_cast<const float*>(x) + base + k0, k1 - k0);
    } else if constexpr (kNativeFloat<T>) {
      const storage_t<T>* p = reinterpret_cast<const storage_t<T>*>(x) + base;
      double m = -std::numeric_limits<double>::infinity();
      bool nan = false;
      for (int64_t k = k0; k < k1; ++k) {
        const double e = p[k];
        nan = nan || std::isnan(e);
        m = m < e ? e : m;
      }
      return nan ? std::numeric_limits<double>::quiet_NaN() : m;
    } else {
      A acc = init();
      for (int64_t k = k0; k < k1; ++k)
        acc = combine(acc, load(x, base + k));
      return acc;
    }
  }
  /// Reduces x[base + ax[k]] for k in [k0, k1).
  static A table_range(const uint8_t* x, int64_t base, const int64_t* ax, int64_t k0, int64_t k1) {
    A acc = init();
    for (int64_t k = k0; k < k1; ++k)
      acc = combine(acc, load(x, base + ax[k]));
    return acc;
  }
};

class ReduceKernel final : public Kernel {
 public:
  explicit ReduceKernel(const LlirNode& n)
      : sum_(n.op->kind == OpKind::SumReduce),
        t_(n.attrs.dtype),
        axis_(n.attrs.axis),
        view_(n.attrs.views.at(0)) {
    LUMINAL_ASSERT(axis_ >= 0 && axis_ < view_.rank(),
                   std::string(n.op->name) + ": axis out of range of the input view");
    outer_view_ = view_;
    outer_view_.dims.erase(outer_view_.dims.begin() + axis_);
    outer_view_.strides.erase(outer_view_.strides.begin() + axis_);
    axis_view_.dims = {view_.dims[axis_]};
    axis_view_.strides = {view_.strides[axis_]};
  }

  void run(const KernelContext& k) override {
    update(k.dyn, k.dims_version);
    if (out_n_ == 0) return;
    dispatch_dtype(t_, [&](auto tag) {
      constexpr DType T = decltype(tag)::value;
      if (sum_)
        run_t<T, true>(k);
      else
        run_t<T, false>(k);
    });
  }

 private:
  void update(const DynMap& dyn, uint64_t version) {
    if (version_ == version) return;
    version_ = 0;
    std::vector<int64_t> dims = eval_shape(view_.dims, dyn);
    len_ = dims[axis_];
    out_n_ = 1;
    for (size_t i = 0; i < dims.size(); ++i)
      if (static_cast<int>(i) != axis_) out_n_ *= dims[i];
    ax_.clear();
    unit_axis_ = false;
    if (len_ > 0 && out_n_ > 0) {  // else no stride is evaluated (as the reference)
      outer_ = eval_view(outer_view_, dyn);
      EvalView a = eval_view(axis_view_, dyn);
      ax_.resize(static_cast<size_t>(len_));
      a.idx.for_range(0, len_, [&](int64_t i, int64_t off) { ax_[i] = off; });
      unit_axis_ = true;
      for (int64_t i = 0; i < len_ && unit_axis_; ++i)
        unit_axis_ = ax_[i] == i;
    }
    version_ = version;
  }

  template <DType T, bool kSum>
  void run_t(const KernelContext& k) {
    using R = Reducer<T, kSum>;
    using A = typename R::A;
    uint8_t* out = k.out;
    const uint8_t* x = k.in[0];
    if (len_ == 0) {
      for (int64_t o = 0; o < out_n_; ++o)
        R::store(out, o, R::init());
      return;
    }
    const int64_t work = out_n_ * len_;
    const int64_t* ax = ax_.data();
    auto range = [&](int64_t base, int64_t k0, int64_t k1) -> A {
      return unit_axis_ ? R::unit_range(x, base, k0, k1) : R::table_range(x, base, ax, k0, k1);
    };
    // Few outputs: split the reduced axis across threads.
    if (k.threads > 1 && out_n_ < 2 * k.threads && work >= kParallelMin) {
      const int64_t chunk = std::max<int64_t>(4096, (len_ + 4 * k.threads - 1) / (4 * k.threads));
      const int64_t nchunks = (len_ + chunk - 1) / chunk;
      std::vector<A> part(static_cast<size_t>(nchunks));
      for (int64_t o = 0; o < out_n_; ++o) {
        const int64_t base = outer_.idx.offset_of_flat(o);
        parallel_blocks(len_, chunk, k.threads, work,
                        [&](int64_t k0, int64_t k1) { part[k0 / chunk] = range(base, k0, k1); });
        A acc = R::init();
        for (A p : part)
          acc = R::combine(acc, p);
        R::store(out, o, acc);
      }
      return;
    }
    // Unit-stride axis (or a table): one output at a time.
    if (unit_axis_ || out_n_ < 64) {
      const int64_t per_block = std::max<int64_t>(1, 16384 / len_);
      parallel_blocks(out_n_, per_block, k.threads, work, [&](int64_t b, int64_t e) {
        outer_.idx.for_range(
            b, e, [&](int64_t o, int64_t base) { R::store(out, o, range(base, 0, len_)); });
      });
      return;
    }
    // Strided axis: a block of outputs at a time, the axis outside.
    constexpr int64_t kOut = 2048;
    parallel_blocks(out_n_, kOut, k.threads, work, [&](int64_t b, int64_t e) {
      int64_t base[kOut];
      A acc[kOut];
      const int64_t n = e - b;
      outer_.idx.for_range(b, e, [&](int64_t o, int64_t off) { base[o - b] = off; });
      bool contiguous = true;
      for (int64_t j = 0; j < n && contiguous; ++j)
        contiguous = base[j] == base[0] + j;
      for (int64_t j = 0; j < n; ++j)
        acc[j] = R::init();
      for (int64_t kk = 0; kk < len_; ++kk) {
        const int64_t off = ax[kk];
        if constexpr (kNativeFloat<T> && kSum) {
          if (contiguous) {
            const storage_t<T>* p = reinterpret_cast<const storage_t<T>*>(x) + base[0] + off;
            for (int64_t j = 0; j < n; ++j)
              acc[j] += static_cast<double>(p[j]);
            continue;
          }
        }
        for (int64_t j = 0; j < n; ++j)
          acc[j] = R::combine(acc[j], R::load(x, base[j] + off));
      }
      for (int64_t j = 0; j < n; ++j)
        R::store(out, b + j, acc[j]);
    });
  }

  bool sum_;
  DType t_;
  int axis_;
  View view_, outer_view_, axis_view_;
  // per dyn map
  uint64_t version_ = 0;
  int64_t len_ = 0, out_n_ = 0;
  EvalView outer_;
  std::vector<int64_t> ax_;
  bool unit_axis_ = false;
};

}  // namespace

std::unique_ptr<Kernel> make_reduce_kernel(const LlirNode& n) {
  LUMINAL_ASSERT(n.attrs.views.size() == 1, std::string(n.op->name) + ": needs one input view");
  return std::make_unique<ReduceKernel>(n);
}

}  // namespace luminal::cpu
